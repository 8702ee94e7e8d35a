"""SSD's anchor boxes and detection (classic ``topi.vision.ssd``).

``multibox_prior`` lays ``len(sizes) + len(ratios) - 1`` boxes ``[x1, y1, x2, y2]``
(normalised) around the centre of every feature-map cell: one per size at ratio 1, then
one per further ratio at ``sizes[0]``.  ``multibox_transform_loc`` decodes the predicted
offsets of each anchor and keeps the anchors whose best non-background class clears
``threshold``; ``multibox_detection`` follows it with :func:`non_max_suppression`.
"""

from __future__ import annotations

import math

import te
from te.errors import OpError
from schedule.hybrid import script
from topi import tag
from topi.utils import get_const_tuple
from topi.vision.nms import non_max_suppression


def _pick(k, values: list):
    """``values[k]`` for an int expression ``k`` (a chain of selects over the few entries)."""
    out = te.const(float(values[-1]), "float32")
    for j in range(len(values) - 2, -1, -1):
        out = te.if_then_else(k == j, te.const(float(values[j]), "float32"), out)
    return out


def multibox_prior(data: te.Tensor, sizes=(1,), ratios=(1,), steps=(-1, -1), offsets=(0.5, 0.5),
                   clip: bool = False) -> te.Tensor:
    """Anchor boxes ``[1, H*W*(len(sizes)+len(ratios)-1), 4]`` of an NCHW feature map.

    Box ``k`` of cell ``(i, j)`` is centred at ``((j + offsets[1]) * step_w, (i + offsets[0]) * step_h)``
    (a step of -1: ``1/W``, ``1/H``), half-extents ``(s * H / W / 2, s / 2)`` for size ``s``
    (``k < len(sizes)``), ``(sizes[0] * H / W * sqrt(r) / 2, sizes[0] / sqrt(r) / 2)`` for ratio
    ``r = ratios[k - len(sizes) + 1]``; ``clip`` clamps the corners to ``[0, 1]``.
    """
    shape = get_const_tuple(data.shape)
    if len(shape) != 4 or not sizes or not ratios:
        raise OpError(f"multibox_prior: needs NCHW data and at least one size and ratio, got {shape}, "
                      f"{sizes}, {ratios}")
    h_, w_ = shape[2], shape[3]
    per_cell = len(sizes) + len(ratios) - 1
    step_h = steps[0] if steps[0] > 0 else 1.0 / h_
    step_w = steps[1] if steps[1] > 0 else 1.0 / w_
    half_w = [s * h_ / w_ / 2.0 for s in sizes] + [sizes[0] * h_ / w_ * math.sqrt(r) / 2.0 for r in ratios[1:]]
    half_h = [s / 2.0 for s in sizes] + [sizes[0] / math.sqrt(r) / 2.0 for r in ratios[1:]]

    def body(_, n, c):
        k = n % per_cell
        cell = n // per_cell
        cy = ((cell // w_).astype("float32") + offsets[0]) * step_h
        cx = ((cell % w_).astype("float32") + offsets[1]) * step_w
        hw, hh = _pick(k, half_w), _pick(k, half_h)
        v = te.if_then_else(c == 0, cx - hw, te.if_then_else(c == 1, cy - hh, te.if_then_else(c == 2, cx + hw,
                                                                                                cy + hh)))
        if clip:
            v = te.min(te.max(v, te.const(0.0, "float32")), te.const(1.0, "float32"))
        return v.astype(data.dtype)

    return te.compute((1, h_ * w_ * per_cell, 4), body, name="multibox_prior", tag=tag.INJECTIVE)


@script
def _transform_loc(cls_prob, loc_pred, anchor, clip, threshold, vx, vy, vw, vh):
    out = output_tensor((cls_prob.shape[0], cls_prob.shape[2], 6), loc_pred.dtype)
    valid_count = output_tensor((cls_prob.shape[0],), "int32")
    for i in parallel(cls_prob.shape[0]):
        valid_count[i] = 0
        for j in range(cls_prob.shape[2]):
            score = -1.0
            cls_id = 0
            for k in range(1, cls_prob.shape[1]):
                if cls_prob[i, k, j] > score:
                    cls_id = k
                    score = cls_prob[i, k, j]
            if cls_id > 0 and score >= threshold:
                al = anchor[0, j, 0]
                at = anchor[0, j, 1]
                ar = anchor[0, j, 2]
                ab = anchor[0, j, 3]
                aw = ar - al
                ah = ab - at
                ox = loc_pred[i, j * 4] * vx * aw + (al + ar) / 2.0
                oy = loc_pred[i, j * 4 + 1] * vy * ah + (at + ab) / 2.0
                ow = exp(loc_pred[i, j * 4 + 2] * vw) * aw / 2.0
                oh = exp(loc_pred[i, j * 4 + 3] * vh) * ah / 2.0
                n = valid_count[i]
                out[i, n, 0] = float32(cls_id - 1)
                out[i, n, 1] = score
                if clip:
                    out[i, n, 2] = max(0.0, min(1.0, ox - ow))
                    out[i, n, 3] = max(0.0, min(1.0, oy - oh))
                    out[i, n, 4] = max(0.0, min(1.0, ox + ow))
                    out[i, n, 5] = max(0.0, min(1.0, oy + oh))
                else:
                    out[i, n, 2] = ox - ow
                    out[i, n, 3] = oy - oh
                    out[i, n, 4] = ox + ow
                    out[i, n, 5] = oy + oh
                valid_count[i] += 1
        for j in range(cls_prob.shape[2]):
            if j >= valid_count[i]:
                for k in range(6):
                    out[i, j, k] = -1.0
    return out, valid_count


def multibox_transform_loc(cls_prob: te.Tensor, loc_pred: te.Tensor, anchor: te.Tensor, clip: bool = True,
                           threshold: float = 0.01, variances=(0.1, 0.1, 0.2, 0.2)) -> list:
    """Decode SSD's box predictions.

    ``cls_prob [B, classes, anchors]`` (class 0 the background), ``loc_pred [B, anchors*4]``,
    ``anchor [1, anchors, 4]``.  An anchor whose best non-background class scores at least
    ``threshold`` becomes the row ``[class - 1, score, x1, y1, x2, y2]`` (centre and extent
    offsets scaled by ``variances``; ``clip`` clamps to ``[0, 1]``), rows packed to the front.

    Returns
    -------
    [out [B, anchors, 6] (the rest -1), valid_count [B] int32]
    """
    b_, classes, anchors = get_const_tuple(cls_prob.shape)
    if get_const_tuple(loc_pred.shape) != (b_, anchors * 4) or get_const_tuple(anchor.shape)[1:] != (anchors, 4):
        raise OpError(f"multibox_transform_loc: cls_prob {(b_, classes, anchors)}, loc_pred "
                      f"{get_const_tuple(loc_pred.shape)} and anchor {get_const_tuple(anchor.shape)} do not agree")
    f = loc_pred.dtype
    return list(_transform_loc(cls_prob, loc_pred, anchor, te.const(bool(clip), "bool"),
                               te.const(float(threshold), cls_prob.dtype),
                               *[te.const(float(v), f) for v in variances]))


def multibox_detection(cls_prob: te.Tensor, loc_pred: te.Tensor, anchor: te.Tensor, clip: bool = True,
                       threshold: float = 0.01, nms_threshold: float = 0.5, force_suppress: bool = False,
                       variances=(0.1, 0.1, 0.2, 0.2), nms_topk: int = -1) -> te.Tensor:
    """SSD's detections ``[B, anchors, 6]``: :func:`multibox_transform_loc`, then
    :func:`non_max_suppression` of its rows (IoU ``nms_threshold``, best ``nms_topk``)."""
    out, valid_count = multibox_transform_loc(cls_prob, loc_pred, anchor, clip, threshold, variances)
    return non_max_suppression(out, valid_count, valid_count, -1, nms_threshold, force_suppress, nms_topk,
                               coord_start=2, score_index=1, id_index=0, return_indices=False)
