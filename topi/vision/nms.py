"""Box selection: ``get_valid_counts``, ``non_max_suppression`` and ONNX's ``all_class_non_max_suppression``
(classic ``topi.vision``).

Each is a hybrid script (:mod:`schedule.hybrid`): a sequential greedy loop per
batch (``parallel`` over the batch), after a score ``argsort`` stage where the
boxes must be visited best first.  A box row is ``[class id, score, x1, y1,
x2, y2]`` by default (``id_index``, ``score_index``, ``coord_start`` say
where); the overlap of two boxes is their intersection over union, their
corners taken in either order.
"""

from __future__ import annotations

import te
from te.errors import OpError
from schedule.hybrid import script
from topi.sorting import argsort
from topi.utils import get_const_tuple


@script
def _valid_counts(data, score_threshold, has_id, id_index, score_index):
    valid_count = output_tensor((data.shape[0],), "int32")
    out = output_tensor(data.shape, data.dtype)
    out_indices = output_tensor((data.shape[0], data.shape[1]), "int32")
    for i in parallel(data.shape[0]):
        valid_count[i] = 0
        for j in range(data.shape[1]):
            if data[i, j, score_index] > score_threshold and (not has_id or data[i, j, id_index] >= 0):
                for k in range(data.shape[2]):
                    out[i, valid_count[i], k] = data[i, j, k]
                out_indices[i, valid_count[i]] = j
                valid_count[i] += 1
            if j >= valid_count[i]:
                for k in range(data.shape[2]):
                    out[i, j, k] = -1.0
                out_indices[i, j] = -1
    return valid_count, out, out_indices


def _id_args(id_index: int) -> tuple:
    """(whether there is a class id, the id's position clamped into the row): an index of -1 is
    never read, however the condition evaluates."""
    return te.const(int(id_index) >= 0, "bool"), te.const(max(int(id_index), 0), "int32")


def get_valid_counts(data: te.Tensor, score_threshold=0, id_index: int = 0, score_index: int = 1) -> list:
    """Move the boxes whose score exceeds ``score_threshold`` (and whose class id is not
    negative, unless ``id_index < 0``) to the front of each batch, in order.

    Returns
    -------
    [valid_count [B] int32, out [B, N, E] (the rest -1), out_indices [B, N] int32 (the rest -1)]
    """
    if len(data.shape) != 3:
        raise OpError(f"get_valid_counts: data must be [batch, boxes, elements], got {get_const_tuple(data.shape)}")
    return list(_valid_counts(data, te.const(float(score_threshold), data.dtype), *_id_args(id_index),
                              te.const(int(score_index), "int32")))


@script
def _nms(data, order, valid_count, max_output_size, iou_threshold, force_suppress, top_k, start, score_index,
         has_id, id_index):
    out = output_tensor(data.shape, data.dtype)
    box_indices = output_tensor((data.shape[0], data.shape[1]), "int32")
    for i in parallel(data.shape[0]):
        nkeep = valid_count[i]
        if top_k > 0 and top_k < nkeep:
            nkeep = top_k
        for j in range(data.shape[1]):
            if j < nkeep:
                for k in range(data.shape[2]):
                    out[i, j, k] = data[i, order[i, j], k]
                box_indices[i, j] = order[i, j]
            else:
                for k in range(data.shape[2]):
                    out[i, j, k] = -1.0
                box_indices[i, j] = -1
        kept = 0
        for j in range(data.shape[1]):
            if j < nkeep and iou_threshold > 0:
                if kept == max_output_size:
                    for k in range(data.shape[2]):
                        out[i, j, k] = -1.0
                    box_indices[i, j] = -1
                elif out[i, j, score_index] > 0:
                    a_l = min(out[i, j, start], out[i, j, start + 2])
                    a_t = min(out[i, j, start + 1], out[i, j, start + 3])
                    a_r = max(out[i, j, start], out[i, j, start + 2])
                    a_b = max(out[i, j, start + 1], out[i, j, start + 3])
                    valid = 1
                    for k in range(j):
                        if valid == 1 and out[i, k, score_index] > 0 and (not has_id or out[i, k, id_index] >= 0) and (
                                force_suppress or not has_id or out[i, j, id_index] == out[i, k, id_index]):
                            b_l = min(out[i, k, start], out[i, k, start + 2])
                            b_t = min(out[i, k, start + 1], out[i, k, start + 3])
                            b_r = max(out[i, k, start], out[i, k, start + 2])
                            b_b = max(out[i, k, start + 1], out[i, k, start + 3])
                            w = max(0.0, min(a_r, b_r) - max(a_l, b_l))
                            h = max(0.0, min(a_b, b_b) - max(a_t, b_t))
                            union = (a_r - a_l) * (a_b - a_t) + (b_r - b_l) * (b_b - b_t) - w * h
                            if union > 0.0 and w * h / union >= iou_threshold:
                                valid = 0
                    if valid == 0:
                        for k in range(data.shape[2]):
                            out[i, j, k] = -1.0
                        box_indices[i, j] = -1
                    else:
                        kept += 1
    return out, box_indices


@script
def _compact_indices(box_indices, indices):
    out = output_tensor(box_indices.shape, "int32")
    count = output_tensor((box_indices.shape[0], 1), "int32")
    for i in parallel(box_indices.shape[0]):
        count[i, 0] = 0
        for j in range(box_indices.shape[1]):
            if box_indices[i, j] >= 0:
                out[i, count[i, 0]] = indices[i, box_indices[i, j]]
                count[i, 0] += 1
        for j in range(box_indices.shape[1]):
            if j >= count[i, 0]:
                out[i, j] = -1
    return out, count


def _sort_scores(data: te.Tensor, valid_count: te.Tensor, score_index: int) -> te.Tensor:
    """Each batch's box order by descending score, the first ``valid_count`` boxes first."""
    lowest = te.min_value(data.dtype)
    score = te.compute(get_const_tuple(data.shape)[:2],
                       lambda i, j: te.if_then_else(j < valid_count[i], data[i, j, score_index], lowest),
                       name="nms_score")
    return argsort(score, axis=1, is_ascend=False, dtype="int32")


def non_max_suppression(data: te.Tensor, valid_count: te.Tensor, indices: te.Tensor, max_output_size=-1,
                        iou_threshold: float = 0.5, force_suppress: bool = False, top_k: int = -1,
                        coord_start: int = 2, score_index: int = 1, id_index: int = 0, return_indices: bool = True,
                        invalid_to_bottom: bool = False):
    """Greedy non-maximum suppression per batch (classic ``topi.vision.non_max_suppression``).

    The first ``valid_count[b]`` boxes of batch ``b`` are sorted by score (descending) and the
    best ``top_k`` kept (``top_k <= 0``: all); then each box, best first, is dropped if its
    IoU with a kept box of the same class (any class with ``force_suppress`` or
    ``id_index < 0``) is at least ``iou_threshold``, or once ``max_output_size`` boxes are
    kept (``< 0``: no limit).  ``iou_threshold <= 0`` drops nothing.

    Returns
    -------
    ``return_indices``: ``[indices [B, N] int32, count [B, 1] int32]``, the entries of ``indices``
    of the rows not dropped, in order, then -1 (a row scoring <= 0 is neither kept nor dropped:
    it stays, as in classic TVM).  Otherwise ``out [B, N, E]``: the boxes sorted, a dropped box's
    row -1 (``invalid_to_bottom``: the kept rows moved to the top).
    """
    shape = get_const_tuple(data.shape)
    if len(shape) != 3 or shape[2] < max(coord_start + 4, score_index + 1, id_index + 1):
        raise OpError(f"non_max_suppression: data {shape} does not hold coordinates from {coord_start}, "
                      f"score {score_index} and id {id_index}")
    if iou_threshold > 0:
        order = _sort_scores(data, valid_count, score_index)
    else:  # nothing is dropped: the valid boxes stay as they come
        order, top_k = te.compute(shape[:2], lambda i, j: j, name="nms_order"), -1
    out, box_indices = _nms(
        data, order, valid_count, te.const(int(max_output_size), "int32"), te.const(float(iou_threshold), data.dtype),
        te.const(bool(force_suppress), "bool"), te.const(int(top_k), "int32"), te.const(int(coord_start), "int32"),
        te.const(int(score_index), "int32"), *_id_args(id_index))
    if return_indices:
        return list(_compact_indices(box_indices, indices))
    if invalid_to_bottom:
        return _rows_to_top(out, te.const(int(score_index), "int32"))
    return out


@script
def _rows_to_top(out, score_index):
    moved = output_tensor(out.shape, out.dtype)
    for i in parallel(out.shape[0]):
        n = 0
        for j in range(out.shape[1]):
            if out[i, j, score_index] >= 0:
                for k in range(out.shape[2]):
                    moved[i, n, k] = out[i, j, k]
                n += 1
        for j in range(out.shape[1]):
            if j >= n:
                for k in range(out.shape[2]):
                    moved[i, j, k] = -1.0
    return moved


@script
def _all_class_nms(boxes, scores, order, max_per_class, iou_threshold, score_threshold):
    selected = output_tensor((scores.shape[0] * scores.shape[1] * scores.shape[2], 3), "int64")
    total = output_tensor((1,), "int64")
    for r in range(scores.shape[0] * scores.shape[1] * scores.shape[2]):
        for t in range(3):
            selected[r, t] = int64(0)
    total[0] = int64(0)
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            kept = allocate((scores.shape[2],), "int32")
            nkept = 0
            for j in range(scores.shape[2]):
                kept[j] = 0
                a = order[b, c, j]
                if scores[b, c, a] > score_threshold and nkept < max_per_class:
                    a_t = min(boxes[b, a, 0], boxes[b, a, 2])
                    a_l = min(boxes[b, a, 1], boxes[b, a, 3])
                    a_b = max(boxes[b, a, 0], boxes[b, a, 2])
                    a_r = max(boxes[b, a, 1], boxes[b, a, 3])
                    valid = 1
                    for t in range(j):
                        if valid == 1 and kept[t] == 1:
                            q = order[b, c, t]
                            b_t = min(boxes[b, q, 0], boxes[b, q, 2])
                            b_l = min(boxes[b, q, 1], boxes[b, q, 3])
                            b_b = max(boxes[b, q, 0], boxes[b, q, 2])
                            b_r = max(boxes[b, q, 1], boxes[b, q, 3])
                            w = max(0.0, min(a_r, b_r) - max(a_l, b_l))
                            h = max(0.0, min(a_b, b_b) - max(a_t, b_t))
                            union = (a_r - a_l) * (a_b - a_t) + (b_r - b_l) * (b_b - b_t) - w * h
                            if union > 0.0 and w * h / union >= iou_threshold:
                                valid = 0
                    if valid == 1:
                        kept[j] = 1
                        nkept += 1
                        selected[total[0], 0] = int64(b)
                        selected[total[0], 1] = int64(c)
                        selected[total[0], 2] = int64(a)
                        total[0] += int64(1)
    return selected, total


def all_class_non_max_suppression(boxes: te.Tensor, scores: te.Tensor, max_output_boxes_per_class=0,
                                  iou_threshold=0.0, score_threshold=0.0, output_format: str = "onnx") -> list:
    """Non-maximum suppression per batch and class (ONNX NonMaxSuppression, classic
    ``topi.vision.all_class_non_max_suppression``, ``output_format="onnx"``).

    ``boxes [B, N, 4]`` as ``(y1, x1, y2, x2)`` (corners in either order), ``scores [B, C, N]``.
    Per (batch, class), best score first, a box with score above ``score_threshold`` is
    selected unless its IoU with a selected box reaches ``iou_threshold`` or
    ``max_output_boxes_per_class`` are already selected.

    Returns
    -------
    [selected [B*C*N, 3] int64 rows (batch, class, box) by batch, class and score, the rest 0;
    count [1] int64]
    """
    if output_format != "onnx":
        raise OpError(f"all_class_non_max_suppression: output_format {output_format!r} is not supported; use 'onnx'")
    b_, n_, four = get_const_tuple(boxes.shape)
    sb, _, sn = get_const_tuple(scores.shape)
    if four != 4 or sb != b_ or sn != n_:
        raise OpError(f"all_class_non_max_suppression: boxes {get_const_tuple(boxes.shape)} and scores "
                      f"{get_const_tuple(scores.shape)} must be [B, N, 4] and [B, C, N]")
    order = argsort(scores, axis=2, is_ascend=False, dtype="int32")
    limit = max_output_boxes_per_class if isinstance(max_output_boxes_per_class, te.Tensor) else None
    if limit is not None:
        raise OpError("all_class_non_max_suppression: give max_output_boxes_per_class as an int")
    return list(_all_class_nms(boxes, scores, order, te.const(int(max_output_boxes_per_class), "int32"),
                               te.const(float(iou_threshold), boxes.dtype),
                               te.const(float(score_threshold), scores.dtype)))
