"""topi.vision (classic TVM's detection operators) against the numpy references of topi.testing.

Box sets are random with a fixed seed, sizes that no vector width divides; the region
operators run both modes and data-dependent sampling grids.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from te.errors import OpError
from topi import generic, vision
from topi import testing as ref

RNG = np.random.default_rng(7)


def _boxes(b, n, width, id_index=0, classes=3):
    """Rows [id, score, x1, y1, x2, y2] (width 6) or [score, x1, y1, x2, y2] (width 5)."""
    xy = RNG.uniform(0, 20, (b, n, 2))
    wh = RNG.uniform(2, 12, (b, n, 2))
    coords = np.concatenate([xy, xy + wh], axis=2)
    score = RNG.uniform(-0.2, 1, (b, n, 1))
    if width == 5:
        return np.concatenate([score, coords], axis=2).astype("float32")
    ids = RNG.integers(-1 if id_index >= 0 else 0, classes, (b, n, 1))
    return np.concatenate([ids, score, coords], axis=2).astype("float32")


def test_reorg():
    a = te.placeholder((2, 8, 6, 10), name="a")
    b = vision.reorg(a, 2)
    assert tuple(int(d) for d in b.shape) == (2, 32, 3, 5)
    check_build(generic.schedule_reorg([b]), [a, b], lambda x: ref.reorg_python(x, 2), rtol=0, atol=0)
    with pytest.raises(OpError, match="reorg: data"):
        vision.reorg(te.placeholder((1, 6, 4, 4)), 2)


@pytest.mark.parametrize("threshold,id_index,score_index", [(0.3, 0, 1), (0.0, -1, 0)])
def test_get_valid_counts(threshold, id_index, score_index):
    x = _boxes(3, 37, 6 if score_index == 1 else 5, id_index)
    data = te.placeholder(x.shape, name="data")
    outs = vision.get_valid_counts(data, threshold, id_index, score_index)
    got = check_build(generic.schedule_get_valid_counts(outs), [data, *outs],
                      lambda d: ref.get_valid_counts_python(d, threshold, id_index, score_index), inputs=[x],
                      rtol=0, atol=0)
    assert got[0].max() < 37


@pytest.mark.parametrize("force,top_k,max_out,id_index", [(False, -1, -1, 0), (True, 9, -1, 0), (False, -1, 4, 0),
                                                         (False, 20, 6, -1)])
def test_non_max_suppression(force, top_k, max_out, id_index):
    width = 6 if id_index == 0 else 5
    x = _boxes(2, 29, width, id_index)
    valid = np.array([29, 17], "int32")
    idx = RNG.permutation(2 * 29).reshape(2, 29).astype("int32")
    data = te.placeholder(x.shape, name="data")
    vc = te.placeholder((2,), "int32", name="vc")
    ind = te.placeholder((2, 29), "int32", name="ind")
    start, score = (2, 1) if width == 6 else (1, 0)
    kw = dict(max_output_size=max_out, iou_threshold=0.3, force_suppress=force, top_k=top_k, coord_start=start,
              score_index=score, id_index=id_index)
    want_out, want_idx = ref.non_max_suppression_python(x, valid, idx, **kw)
    out = vision.non_max_suppression(data, vc, ind, **kw, return_indices=False)
    check_build(generic.schedule_nms(out), [data, vc, ind, out], lambda *_: want_out, inputs=[x, valid, idx])
    picked = vision.non_max_suppression(data, vc, ind, **kw, return_indices=True)
    got = check_build(generic.schedule_nms(picked), [data, vc, ind, *picked], lambda *_: (
        want_idx, (want_idx >= 0).sum(axis=1, keepdims=True).astype("int32")), inputs=[x, valid, idx])
    assert (got[0] >= 0).sum() < 46  # something was suppressed


def test_all_class_non_max_suppression():
    b_, c_, n_ = 2, 3, 23
    corners = RNG.uniform(0, 1, (b_, n_, 2))
    boxes = np.concatenate([corners, corners + RNG.uniform(0.05, 0.4, (b_, n_, 2))], axis=2).astype("float32")
    scores = RNG.uniform(0, 1, (b_, c_, n_)).astype("float32")
    bt = te.placeholder(boxes.shape, name="boxes")
    st = te.placeholder(scores.shape, name="scores")
    sel, count = vision.all_class_non_max_suppression(bt, st, 4, 0.3, 0.2)
    f_args = [bt, st, sel, count]
    want = ref.all_class_nms_python(boxes, scores, 4, 0.3, 0.2)
    got = check_build(generic.schedule_nms([sel, count]), f_args, lambda *_: (
        np.concatenate([want, np.zeros((b_ * c_ * n_ - len(want), 3), "int64")]), np.array([len(want)], "int64")),
        inputs=[boxes, scores], rtol=0, atol=0)
    assert 0 < got[1][0] <= b_ * c_ * 4


@pytest.mark.parametrize("sizes,ratios,steps,clip", [((0.5, 0.25, 0.1), (1, 2, 0.5), (-1, -1), False),
                                                     ((0.6,), (1, 3), (0.1, 0.07), True)])
def test_multibox_prior(sizes, ratios, steps, clip):
    data = te.placeholder((1, 3, 7, 11), name="data")
    out = vision.ssd.multibox_prior(data, sizes, ratios, steps, (0.5, 0.4), clip)
    check_build(generic.schedule_multibox_prior(out), [data, out],
                lambda _: ref.multibox_prior_python((1, 3, 7, 11), sizes, ratios, steps, (0.5, 0.4), clip))


def test_multibox_detection():
    b_, classes, anchors = 2, 4, 19
    prob = RNG.uniform(0, 1, (b_, classes, anchors)).astype("float32")
    loc = RNG.normal(0, 0.5, (b_, anchors * 4)).astype("float32")
    centre = RNG.uniform(0, 1, (1, anchors, 2))
    anchor = np.concatenate([centre - 0.15, centre + 0.15], axis=2).astype("float32")
    cp, lp, an = (te.placeholder(a.shape, name=n) for a, n in ((prob, "prob"), (loc, "loc"), (anchor, "anchor")))
    rows, count = ref.multibox_transform_loc_python(prob, loc, anchor, True, 0.3)
    want, _ = ref.non_max_suppression_python(rows, count, np.zeros((b_, anchors), "int32"), iou_threshold=0.45)
    out = vision.ssd.multibox_detection(cp, lp, an, threshold=0.3, nms_threshold=0.45)
    check_build(generic.schedule_multibox_detection(out), [cp, lp, an, out], lambda *_: want,
                inputs=[prob, loc, anchor], rtol=1e-5, atol=1e-5)
    assert (want[:, :, 0] == -1).any() and (want[:, :, 0] >= 0).any()


def _rois(n, batch, extent):
    xy = RNG.uniform(-0.1, 0.8, (n, 2)) * extent
    wh = RNG.uniform(0.05, 0.6, (n, 2)) * extent
    return np.concatenate([RNG.integers(0, batch, (n, 1)), xy, xy + wh], axis=1).astype("float32")


@pytest.mark.parametrize("mode,sample_ratio,scale", [("avg", -1, 1.0), ("max", 2, 0.5), (0, 3, 0.25)])
def test_roi_align(mode, sample_ratio, scale):
    a = RNG.uniform(-1, 1, (2, 3, 13, 11)).astype("float32")
    rois = _rois(9, 2, 13 / scale)
    data, r = te.placeholder(a.shape, name="a"), te.placeholder(rois.shape, name="rois")
    out = vision.roi_align_nchw(data, r, (3, 5), scale, mode, sample_ratio)
    check_build(generic.schedule_roi_align(out), [data, r, out],
                lambda *_: ref.roi_align_nchw_python(a, rois, (3, 5), scale, sample_ratio, mode),
                inputs=[a, rois], rtol=1e-4, atol=1e-5)


def test_roi_pool():
    a = RNG.uniform(size=(2, 3, 12, 15)).astype("float32")
    rois = _rois(11, 2, 24)
    data, r = te.placeholder(a.shape, name="a"), te.placeholder(rois.shape, name="rois")
    out = vision.rcnn.roi_pool_nchw(data, r, (4, 3), 0.5)
    check_build(generic.schedule_roi_pool(out), [data, r, out],
                lambda *_: ref.roi_pool_nchw_python(a, rois, (4, 3), 0.5), inputs=[a, rois], rtol=0, atol=0)


@pytest.mark.parametrize("iou_loss", [False, True])
def test_proposal(iou_loss):
    scales, ratios = (0.5, 1.0), (0.5, 2.0)
    a_ = len(scales) * len(ratios)
    prob = RNG.uniform(0, 1, (2, 2 * a_, 5, 7)).astype("float32")
    pred = RNG.normal(0, 0.4 if not iou_loss else 3, (2, 4 * a_, 5, 7)).astype("float32")
    info = np.array([[80.0, 100.0, 1.0], [64.0, 90.0, 0.8]], "float32")
    kw = dict(scales=scales, ratios=ratios, feature_stride=16, threshold=0.6, rpn_pre_nms_top_n=60,
              rpn_post_nms_top_n=13, rpn_min_size=6, iou_loss=iou_loss)
    cp, bp, im = (te.placeholder(a.shape, name=n) for a, n in ((prob, "prob"), (pred, "pred"), (info, "info")))
    out = vision.rcnn.proposal(cp, bp, im, **kw)
    check_build(generic.schedule_proposal(out), [cp, bp, im, out],
                lambda *_: ref.proposal_python(prob, pred, info, **kw), inputs=[prob, pred, info],
                rtol=1e-4, atol=1e-3)
