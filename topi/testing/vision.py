"""Numpy references of the classic ``topi.vision`` operators (direct loops, slow, plain)."""

from __future__ import annotations

import math

import numpy as np


def reorg_python(a_np: np.ndarray, stride: int) -> np.ndarray:
    """Darknet's reorg: the input-shaped walk reads the offsets of :mod:`topi.vision.reorg`."""
    b_, c_, h_, w_ = a_np.shape
    flat = a_np.reshape(-1)
    out_c = c_ // (stride * stride)
    b, k, j, i = np.indices(a_np.shape)
    c2, off = k % out_c, k // out_c
    src = i * stride + off % stride + w_ * stride * (j * stride + off // stride + h_ * stride * (c2 + out_c * b))
    return flat[src.reshape(-1)].reshape(b_, c_ * stride * stride, h_ // stride, w_ // stride)


def _bilinear(img: np.ndarray, y: float, x: float) -> float:
    h, w = img.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return 0.0
    y, x = min(max(y, 0.0), h - 1.0), min(max(x, 0.0), w - 1.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(int(math.ceil(y)), h - 1), min(int(math.ceil(x)), w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1] + ly * (1 - lx) * img[y1, x0]
            + ly * lx * img[y1, x1])


def roi_align_nchw_python(a_np, rois_np, pooled_size, spatial_scale, sample_ratio, mode=b"avg") -> np.ndarray:
    """RoIAlign: each bin averages (``mode`` avg/0) or maxes (max/1) a grid of bilinear samples."""
    ph_, pw_ = (pooled_size, pooled_size) if isinstance(pooled_size, int) else pooled_size
    max_mode = mode in (b"max", "max", 1)
    out = np.zeros((rois_np.shape[0], a_np.shape[1], ph_, pw_), a_np.dtype)
    for r, roi in enumerate(rois_np):
        b = int(roi[0])
        x1, y1, x2, y2 = (float(v) * spatial_scale for v in roi[1:])
        roi_h, roi_w = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        bin_h, bin_w = roi_h / ph_, roi_w / pw_
        gh = sample_ratio if sample_ratio > 0 else int(math.ceil(bin_h))
        gw = sample_ratio if sample_ratio > 0 else int(math.ceil(bin_w))
        for c, ph, pw in np.ndindex(a_np.shape[1], ph_, pw_):
            vals = [_bilinear(a_np[b, c], y1 + ph * bin_h + (iy + 0.5) * bin_h / gh,
                              x1 + pw * bin_w + (ix + 0.5) * bin_w / gw) for iy in range(gh) for ix in range(gw)]
            out[r, c, ph, pw] = max(vals) if max_mode else sum(vals) / (gh * gw)
    return out


def roi_pool_nchw_python(a_np, rois_np, pooled_size, spatial_scale) -> np.ndarray:
    """RoIPool: each bin the maximum of its share of the region rounded to pixels (0 if empty)."""
    ph_, pw_ = (pooled_size, pooled_size) if isinstance(pooled_size, int) else pooled_size
    _, c_, h_, w_ = a_np.shape
    out = np.zeros((rois_np.shape[0], c_, ph_, pw_), a_np.dtype)
    for r, roi in enumerate(rois_np):
        b = int(roi[0])
        x1, y1, x2, y2 = (int(round(float(v) * spatial_scale)) for v in roi[1:])
        bin_h, bin_w = max(y2 - y1 + 1, 1) / ph_, max(x2 - x1 + 1, 1) / pw_
        for ph, pw in np.ndindex(ph_, pw_):
            h0 = min(max(int(math.floor(ph * bin_h)) + y1, 0), h_)
            h1 = min(max(int(math.ceil((ph + 1) * bin_h)) + y1, 0), h_)
            w0 = min(max(int(math.floor(pw * bin_w)) + x1, 0), w_)
            w1 = min(max(int(math.ceil((pw + 1) * bin_w)) + x1, 0), w_)
            if h0 < h1 and w0 < w1:
                out[r, :, ph, pw] = a_np[b, :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def get_valid_counts_python(data, score_threshold=0, id_index=0, score_index=1) -> tuple:
    """Reference of ``topi.vision.get_valid_counts``: (valid_count, boxes packed to the front, indices)."""
    b_, n_, e_ = data.shape
    count = np.zeros(b_, "int32")
    out = np.full(data.shape, -1, data.dtype)
    idx = np.full((b_, n_), -1, "int32")
    for i in range(b_):
        keep = [j for j in range(n_) if data[i, j, score_index] > score_threshold
                and (id_index < 0 or data[i, j, id_index] >= 0)]
        count[i] = len(keep)
        out[i, :len(keep)] = data[i, keep]
        idx[i, :len(keep)] = keep
    return count, out, idx


def _iou(a, b, plus_one: float = 0.0) -> float:
    al, at, ar, ab = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    bl, bt, br, bb = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    w = max(0.0, min(ar, br) - max(al, bl) + plus_one)
    h = max(0.0, min(ab, bb) - max(at, bt) + plus_one)
    union = (ar - al + plus_one) * (ab - at + plus_one) + (br - bl + plus_one) * (bb - bt + plus_one) - w * h
    return 0.0 if union <= 0 else w * h / union


def non_max_suppression_python(data, valid_count, indices, max_output_size=-1, iou_threshold=0.5,
                               force_suppress=False, top_k=-1, coord_start=2, score_index=1, id_index=0) -> tuple:
    """Reference of ``topi.vision.non_max_suppression``: (the sorted boxes with dropped rows -1,
    the kept boxes' ``indices`` entries packed to the front, then -1)."""
    b_, n_, _ = data.shape
    out = np.full(data.shape, -1, data.dtype)
    picked = np.full((b_, n_), -1, "int32")
    for i in range(b_):
        nv = int(valid_count[i])
        if iou_threshold <= 0:  # nothing dropped: the valid boxes as they come
            out[i, :nv] = data[i, :nv]
            picked[i, :nv] = indices[i, :nv]
            continue
        order = sorted(range(nv), key=lambda j: -data[i, j, score_index])  # stable: ties by index
        order = order[:top_k] if 0 < top_k < nv else order
        kept, alive = [], []  # boxes kept; rows not dropped (a row scoring <= 0 is left, not kept)
        for j, src in enumerate(order):
            row = data[i, src]
            out[i, j] = row if len(kept) != max_output_size else -1
            if len(kept) == max_output_size:
                continue
            if row[score_index] <= 0:
                alive.append(j)
                continue
            box = row[coord_start:coord_start + 4]
            ok = True
            for k in kept:
                other = data[i, order[k]]
                same = force_suppress or id_index < 0 or other[id_index] == row[id_index]
                if (id_index < 0 or other[id_index] >= 0) and same and \
                        _iou(box, other[coord_start:coord_start + 4]) >= iou_threshold:
                    ok = False
            if ok:
                kept.append(j)
                alive.append(j)
            else:
                out[i, j] = -1
        for slot, j in enumerate(alive):
            picked[i, slot] = indices[i, order[j]]
    return out, picked


def all_class_nms_python(boxes, scores, max_output_boxes_per_class, iou_threshold, score_threshold) -> np.ndarray:
    """Reference of ``topi.vision.all_class_non_max_suppression``: the selected (batch, class, box) rows."""
    rows = []
    for b, c in np.ndindex(scores.shape[0], scores.shape[1]):
        kept = []
        for j in sorted(range(scores.shape[2]), key=lambda j: -scores[b, c, j]):
            if scores[b, c, j] <= score_threshold or len(kept) >= max_output_boxes_per_class:
                continue
            if all(_iou(boxes[b, j], boxes[b, k]) < iou_threshold for k in kept):
                kept.append(j)
        rows += [(b, c, j) for j in kept]
    return np.array(rows, "int64").reshape(-1, 3)


def multibox_prior_python(shape, sizes, ratios, steps, offsets, clip) -> np.ndarray:
    """Reference of ``topi.vision.ssd.multibox_prior`` for a feature map of NCHW ``shape``."""
    h_, w_ = shape[2], shape[3]
    step_h = steps[0] if steps[0] > 0 else 1.0 / h_
    step_w = steps[1] if steps[1] > 0 else 1.0 / w_
    halves = [(s * h_ / w_ / 2, s / 2) for s in sizes]
    halves += [(sizes[0] * h_ / w_ * math.sqrt(r) / 2, sizes[0] / math.sqrt(r) / 2) for r in ratios[1:]]
    out = []
    for i, j in np.ndindex(h_, w_):
        cy, cx = (i + offsets[0]) * step_h, (j + offsets[1]) * step_w
        out += [[cx - hw, cy - hh, cx + hw, cy + hh] for hw, hh in halves]
    out = np.array(out, "float32")[None]
    return np.clip(out, 0, 1) if clip else out


def multibox_transform_loc_python(cls_prob, loc_pred, anchor, clip=True, threshold=0.01,
                                  variances=(0.1, 0.1, 0.2, 0.2)) -> tuple:
    """Reference of ``topi.vision.ssd.multibox_transform_loc``: (rows packed to the front, counts)."""
    b_, _, n_ = cls_prob.shape
    out = np.full((b_, n_, 6), -1, loc_pred.dtype)
    count = np.zeros(b_, "int32")
    for i, j in np.ndindex(b_, n_):
        cls = 1 + int(np.argmax(cls_prob[i, 1:, j]))
        score = cls_prob[i, cls, j]
        if score < threshold:
            continue
        al, at, ar, ab = anchor[0, j]
        aw, ah = ar - al, ab - at
        px, py, pw, ph = loc_pred[i, 4 * j:4 * j + 4]
        ox, oy = px * variances[0] * aw + (al + ar) / 2, py * variances[1] * ah + (at + ab) / 2
        ow, oh = math.exp(pw * variances[2]) * aw / 2, math.exp(ph * variances[3]) * ah / 2
        box = np.array([ox - ow, oy - oh, ox + ow, oy + oh])
        out[i, count[i]] = [cls - 1, score, *(np.clip(box, 0, 1) if clip else box)]
        count[i] += 1
    return out, count


def proposal_python(cls_prob, bbox_pred, im_info, scales, ratios, feature_stride, threshold, rpn_pre_nms_top_n,
                    rpn_post_nms_top_n, rpn_min_size, iou_loss) -> np.ndarray:
    """Reference of ``topi.vision.rcnn.proposal``: rows ``[batch, x1, y1, x2, y2]``."""
    from topi.vision.rcnn import generate_anchor

    b_, _, h_, w_ = cls_prob.shape
    anchors = [generate_anchor(r, s, feature_stride) for r in ratios for s in scales]
    a_ = len(anchors)
    out = np.zeros((b_ * rpn_post_nms_top_n, 5), "float32")
    for b in range(b_):
        im_h, im_w, im_scale = (float(v) for v in im_info[b])
        least = im_scale * rpn_min_size
        boxes = []
        for h, w, k in np.ndindex(h_, w_, a_):
            x1, y1, x2, y2 = (anchors[k][c] + (w if c % 2 == 0 else h) * feature_stride for c in range(4))
            d = bbox_pred[b, 4 * k:4 * k + 4, h, w].astype(np.float64)
            if iou_loss:
                box = [x1 + d[0], y1 + d[1], x2 + d[2], y2 + d[3]]
            else:
                bw, bh = x2 - x1 + 1, y2 - y1 + 1
                cx, cy = d[0] * bw + x1 + 0.5 * (bw - 1), d[1] * bh + y1 + 0.5 * (bh - 1)
                pw, ph = math.exp(d[2]) * bw, math.exp(d[3]) * bh
                box = [cx - 0.5 * (pw - 1), cy - 0.5 * (ph - 1), cx + 0.5 * (pw - 1), cy + 0.5 * (ph - 1)]
            box = [min(max(v, 0.0), (im_w if c % 2 == 0 else im_h) - 1) for c, v in enumerate(box)]
            score = float(cls_prob[b, a_ + k, h, w])
            if h >= int(im_h / feature_stride) or w >= int(im_w / feature_stride):
                score = -1.0
            if box[2] - box[0] + 1 < least or box[3] - box[1] + 1 < least:
                box = [box[0] - least / 2, box[1] - least / 2, box[2] + least / 2, box[3] + least / 2]
                score = -1.0
            boxes.append((box, score))
        order = sorted(range(len(boxes)), key=lambda j: -boxes[j][1])
        pre = min(rpn_pre_nms_top_n, len(boxes)) if rpn_pre_nms_top_n > 0 else len(boxes)
        kept = []
        for j in order[:pre]:
            if all(_iou(boxes[j][0], boxes[q][0], 1.0) <= threshold for q in kept):
                kept.append(j)
        for r in range(rpn_post_nms_top_n if kept else 0):
            out[b * rpn_post_nms_top_n + r] = [b, *boxes[kept[r % len(kept)]][0]]
    return out
