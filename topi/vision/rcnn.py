"""R-CNN's region operators (classic ``topi.vision.rcnn``): ``roi_align_nchw``, ``roi_pool_nchw``
and the region ``proposal`` of Faster R-CNN.

A region of interest is a row ``[batch index, x1, y1, x2, y2]`` in input pixels, scaled by
``spatial_scale`` to the feature map.  The number of samples of a bin (RoIAlign with
``sample_ratio <= 0``) and the extent of a pooling window (RoIPool) depend on the region,
so both are hybrid scripts whose loops run over data-dependent ranges.
"""

from __future__ import annotations

import math

import te
from te.errors import OpError
from schedule.hybrid import script
from topi.sorting import argsort
from topi.utils import get_const_tuple


@script
def _roi_align(data, rois, pooled_h, pooled_w, spatial_scale, sample_ratio, max_mode):
    out = output_tensor((rois.shape[0], data.shape[1], pooled_h, pooled_w), data.dtype)
    height = data.shape[2]
    width = data.shape[3]
    for r in parallel(rois.shape[0]):
        b = int32(rois[r, 0])
        start_w = rois[r, 1] * spatial_scale
        start_h = rois[r, 2] * spatial_scale
        roi_w = max(rois[r, 3] * spatial_scale - start_w, 1.0)
        roi_h = max(rois[r, 4] * spatial_scale - start_h, 1.0)
        bin_h = roi_h / pooled_h
        bin_w = roi_w / pooled_w
        grid_h = sample_ratio
        grid_w = sample_ratio
        if sample_ratio <= 0:
            grid_h = int32(ceil(bin_h))
            grid_w = int32(ceil(bin_w))
        for c in range(data.shape[1]):
            for ph in range(pooled_h):
                for pw in range(pooled_w):
                    acc = 0.0
                    if max_mode:
                        acc = -3.4028234663852886e38
                    for iy in range(grid_h):
                        for ix in range(grid_w):
                            y = start_h + ph * bin_h + (iy + 0.5) * bin_h / grid_h
                            x = start_w + pw * bin_w + (ix + 0.5) * bin_w / grid_w
                            v = 0.0
                            if y >= -1.0 and x >= -1.0 and y <= height and x <= width:
                                y = min(max(y, 0.0), height - 1.0)
                                x = min(max(x, 0.0), width - 1.0)
                                y0 = int32(floor(y))
                                x0 = int32(floor(x))
                                y1 = min(int32(ceil(y)), height - 1)
                                x1 = min(int32(ceil(x)), width - 1)
                                ly = y - y0
                                lx = x - x0
                                v = (1.0 - ly) * (1.0 - lx) * data[b, c, y0, x0] + (1.0 - ly) * lx * data[b, c, y0, x1] \
                                    + ly * (1.0 - lx) * data[b, c, y1, x0] + ly * lx * data[b, c, y1, x1]
                            if max_mode:
                                acc = max(acc, v)
                            else:
                                acc += v / (grid_h * grid_w)
                    out[r, c, ph, pw] = acc
    return out


def _pooled(op: str, pooled_size) -> tuple:
    p = (pooled_size, pooled_size) if isinstance(pooled_size, int) else tuple(int(v) for v in pooled_size)
    if len(p) != 2 or min(p) < 1:
        raise OpError(f"{op}: pooled_size must be a positive int or two, got {pooled_size!r}")
    return p


def _check_rois(op: str, data: te.Tensor, rois: te.Tensor) -> None:
    if len(data.shape) != 4 or len(rois.shape) != 2 or get_const_tuple(rois.shape)[1] != 5:
        raise OpError(f"{op}: expects NCHW data and rois [R, 5], got {get_const_tuple(data.shape)} and "
                      f"{get_const_tuple(rois.shape)}")


def roi_align_nchw(data: te.Tensor, rois: te.Tensor, pooled_size, spatial_scale: float, mode="avg",
                   sample_ratio: int = -1) -> te.Tensor:
    """RoIAlign (Mask R-CNN): bin ``(ph, pw)`` of region ``r`` averages (``mode`` ``"avg"``/0) or
    maxes (``"max"``/1) ``grid_h * grid_w`` bilinear samples at the centres of a regular grid
    (``sample_ratio`` per axis; ``<= 0``: ``ceil(bin extent)``).  A region is at least 1x1; a
    sample more than a pixel outside the map reads 0.

    Returns
    -------
    te.Tensor
        ``[R, C, pooled_h, pooled_w]``.
    """
    _check_rois("roi_align_nchw", data, rois)
    if mode not in ("avg", "max", 0, 1):
        raise OpError(f"roi_align_nchw: mode must be 'avg' (0) or 'max' (1), got {mode!r}")
    ph, pw = _pooled("roi_align_nchw", pooled_size)
    f = data.dtype
    return _roi_align(data, rois, ph, pw, te.const(float(spatial_scale), f), te.const(int(sample_ratio), "int32"),
                      te.const(mode in ("max", 1), "bool"))


@script
def _roi_pool(data, rois, pooled_h, pooled_w, spatial_scale):
    out = output_tensor((rois.shape[0], data.shape[1], pooled_h, pooled_w), data.dtype)
    height = data.shape[2]
    width = data.shape[3]
    for r in parallel(rois.shape[0]):
        b = int32(rois[r, 0])
        start_w = int32(round(rois[r, 1] * spatial_scale))
        start_h = int32(round(rois[r, 2] * spatial_scale))
        roi_w = max(int32(round(rois[r, 3] * spatial_scale)) - start_w + 1, 1)
        roi_h = max(int32(round(rois[r, 4] * spatial_scale)) - start_h + 1, 1)
        bin_h = float32(roi_h) / pooled_h
        bin_w = float32(roi_w) / pooled_w
        for ph in range(pooled_h):
            h0 = min(max(int32(floor(ph * bin_h + 1e-5)) + start_h, 0), height)
            h1 = min(max(int32(ceil((ph + 1) * bin_h - 1e-5)) + start_h, 0), height)
            for pw in range(pooled_w):
                w0 = min(max(int32(floor(pw * bin_w + 1e-5)) + start_w, 0), width)
                w1 = min(max(int32(ceil((pw + 1) * bin_w - 1e-5)) + start_w, 0), width)
                for c in range(data.shape[1]):
                    acc = 0.0
                    if h0 < h1 and w0 < w1:
                        acc = -3.4028234663852886e38
                    for y in range(h1 - h0):
                        for x in range(w1 - w0):
                            acc = max(acc, data[b, c, h0 + y, w0 + x])
                    out[r, c, ph, pw] = acc
    return out


def roi_pool_nchw(data: te.Tensor, rois: te.Tensor, pooled_size, spatial_scale: float) -> te.Tensor:
    """RoIPool (Fast R-CNN): bin ``(ph, pw)`` of region ``r`` is the maximum over the pixels of
    its share of the region (corners rounded to pixels; an empty bin gives 0).

    Returns
    -------
    te.Tensor
        ``[R, C, pooled_h, pooled_w]``.
    """
    _check_rois("roi_pool_nchw", data, rois)
    ph, pw = _pooled("roi_pool_nchw", pooled_size)
    return _roi_pool(data, rois, ph, pw, te.const(float(spatial_scale), data.dtype))


def generate_anchor(ratio: float, scale: float, base_size: int) -> tuple:
    """The anchor ``(x1, y1, x2, y2)`` of ``ratio`` and ``scale`` centred in a ``base_size`` cell."""
    w = h = float(base_size)
    x_ctr, y_ctr = 0.5 * (w - 1.0), 0.5 * (h - 1.0)
    size_ratios = math.floor(w * h / ratio)
    new_w = math.floor(math.sqrt(size_ratios) + 0.5) * scale
    new_h = math.floor((new_w / scale * ratio) + 0.5) * scale
    return (x_ctr - 0.5 * (new_w - 1.0), y_ctr - 0.5 * (new_h - 1.0), x_ctr + 0.5 * (new_w - 1.0),
            y_ctr + 0.5 * (new_h - 1.0))


@script
def _predict_boxes(cls_prob, bbox_pred, im_info, anchors, feature_stride, min_size, iou_loss):
    boxes = output_tensor((cls_prob.shape[0], cls_prob.shape[2] * cls_prob.shape[3] * anchors.shape[0], 5),
                          bbox_pred.dtype)
    for b in parallel(cls_prob.shape[0]):
        im_h = im_info[b, 0]
        im_w = im_info[b, 1]
        least = im_info[b, 2] * min_size
        for h in range(cls_prob.shape[2]):
            for w in range(cls_prob.shape[3]):
                for k in range(anchors.shape[0]):
                    n = (h * cls_prob.shape[3] + w) * anchors.shape[0] + k
                    x1 = anchors[k, 0] + w * feature_stride
                    y1 = anchors[k, 1] + h * feature_stride
                    x2 = anchors[k, 2] + w * feature_stride
                    y2 = anchors[k, 3] + h * feature_stride
                    d0 = bbox_pred[b, k * 4, h, w]
                    d1 = bbox_pred[b, k * 4 + 1, h, w]
                    d2 = bbox_pred[b, k * 4 + 2, h, w]
                    d3 = bbox_pred[b, k * 4 + 3, h, w]
                    px1 = x1 + d0
                    py1 = y1 + d1
                    px2 = x2 + d2
                    py2 = y2 + d3
                    if not iou_loss:
                        bw = x2 - x1 + 1.0
                        bh = y2 - y1 + 1.0
                        cx = d0 * bw + x1 + 0.5 * (bw - 1.0)
                        cy = d1 * bh + y1 + 0.5 * (bh - 1.0)
                        pw = exp(d2) * bw
                        ph = exp(d3) * bh
                        px1 = cx - 0.5 * (pw - 1.0)
                        py1 = cy - 0.5 * (ph - 1.0)
                        px2 = cx + 0.5 * (pw - 1.0)
                        py2 = cy + 0.5 * (ph - 1.0)
                    px1 = max(min(px1, im_w - 1.0), 0.0)
                    py1 = max(min(py1, im_h - 1.0), 0.0)
                    px2 = max(min(px2, im_w - 1.0), 0.0)
                    py2 = max(min(py2, im_h - 1.0), 0.0)
                    score = cls_prob[b, anchors.shape[0] + k, h, w]
                    if h >= int32(im_h / feature_stride) or w >= int32(im_w / feature_stride):
                        score = -1.0
                    if px2 - px1 + 1.0 < least or py2 - py1 + 1.0 < least:
                        px1 = px1 - least / 2.0
                        py1 = py1 - least / 2.0
                        px2 = px2 + least / 2.0
                        py2 = py2 + least / 2.0
                        score = -1.0
                    boxes[b, n, 0] = px1
                    boxes[b, n, 1] = py1
                    boxes[b, n, 2] = px2
                    boxes[b, n, 3] = py2
                    boxes[b, n, 4] = score
    return boxes


@script
def _proposal_nms(boxes, order, pre_nms, post_nms, threshold):
    out = output_tensor((boxes.shape[0] * post_nms, 5), boxes.dtype)
    for b in parallel(boxes.shape[0]):
        removed = allocate((pre_nms,), "int32")
        for j in range(pre_nms):
            removed[j] = 0
        nkeep = 0
        for j in range(pre_nms):
            a = order[b, j]
            for t in range(j):
                q = order[b, t]
                if removed[j] == 0 and removed[t] == 0:
                    w = max(0.0, min(boxes[b, a, 2], boxes[b, q, 2]) - max(boxes[b, a, 0], boxes[b, q, 0]) + 1.0)
                    h = max(0.0, min(boxes[b, a, 3], boxes[b, q, 3]) - max(boxes[b, a, 1], boxes[b, q, 1]) + 1.0)
                    area_a = (boxes[b, a, 2] - boxes[b, a, 0] + 1.0) * (boxes[b, a, 3] - boxes[b, a, 1] + 1.0)
                    area_q = (boxes[b, q, 2] - boxes[b, q, 0] + 1.0) * (boxes[b, q, 3] - boxes[b, q, 1] + 1.0)
                    if w * h / (area_a + area_q - w * h) > threshold:
                        removed[j] = 1
            if removed[j] == 0:
                nkeep += 1
        n = 0
        for rep in range(post_nms):
            for j in range(pre_nms):
                if n < post_nms and removed[j] == 0 and nkeep > 0:
                    out[b * post_nms + n, 0] = float32(b)
                    for t in range(4):
                        out[b * post_nms + n, t + 1] = boxes[b, order[b, j], t]
                    n += 1
        for j in range(post_nms):
            if j >= n:
                for t in range(5):
                    out[b * post_nms + j, t] = 0.0
    return out


def proposal(cls_prob: te.Tensor, bbox_pred: te.Tensor, im_info: te.Tensor, scales, ratios, feature_stride: int,
             threshold: float, rpn_pre_nms_top_n: int, rpn_post_nms_top_n: int, rpn_min_size: int,
             iou_loss: bool) -> te.Tensor:
    """Faster R-CNN's region proposals.

    Every cell ``(h, w)`` of the ``[B, 2A, H, W]`` class map holds ``A = len(scales) *
    len(ratios)`` anchors (:func:`generate_anchor`, shifted by ``feature_stride``), moved by
    ``bbox_pred [B, 4A, H, W]`` (centre/extent deltas, or corner offsets with ``iou_loss``)
    and clipped to the image ``im_info [B, (height, width, scale)]``; a box narrower than
    ``rpn_min_size * scale`` (or a cell outside the image) scores -1.  The best
    ``rpn_pre_nms_top_n`` boxes go through NMS (IoU with +1 extents above ``threshold``) and
    the survivors, best first and repeated in turn, fill ``rpn_post_nms_top_n`` rows per batch.

    Returns
    -------
    te.Tensor
        ``[B * rpn_post_nms_top_n, 5]`` rows ``[batch, x1, y1, x2, y2]``.
    """
    b_, c_, h_, w_ = get_const_tuple(cls_prob.shape)
    anchors = [generate_anchor(r, s, feature_stride) for r in ratios for s in scales]
    if c_ != 2 * len(anchors) or get_const_tuple(bbox_pred.shape) != (b_, 4 * len(anchors), h_, w_):
        raise OpError(f"proposal: cls_prob {get_const_tuple(cls_prob.shape)} and bbox_pred "
                      f"{get_const_tuple(bbox_pred.shape)} must hold 2 and 4 maps per anchor ({len(anchors)})")
    num = h_ * w_ * len(anchors)
    pre = min(rpn_pre_nms_top_n, num) if rpn_pre_nms_top_n > 0 else num
    table = te.compute((len(anchors), 4), lambda k, t: _anchor_entry(anchors, k, t), name="proposal_anchors")
    f = bbox_pred.dtype
    boxes = _predict_boxes(cls_prob, bbox_pred, im_info, table, te.const(float(feature_stride), f),
                           te.const(float(rpn_min_size), f), te.const(bool(iou_loss), "bool"))
    score = te.compute((b_, num), lambda b, n: boxes[b, n, 4], name="proposal_score")
    order = argsort(score, axis=1, is_ascend=False, dtype="int32")
    return _proposal_nms(boxes, order, pre, int(rpn_post_nms_top_n), te.const(float(threshold), f))


def _anchor_entry(anchors: list, k, t):
    out = te.const(0.0, "float32")
    for j in range(len(anchors) - 1, -1, -1):
        for c in range(3, -1, -1):
            out = te.if_then_else(te.all(k == j, t == c), te.const(float(anchors[j][c]), "float32"), out)
    return out
