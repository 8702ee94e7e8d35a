"""Numpy references of ``topi.image``'s classic operators: resize1d/2d/3d, crop_and_resize,
affine_grid and grid_sample (classic names and arguments)."""

from __future__ import annotations

import numpy as np

from topi.testing.image import grid_sample_onnx_python

_ALIASES = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic", "tricubic": "cubic"}


def _coords(n_out: int, n_in: int, mode: str, roi=(0.0, 1.0)) -> np.ndarray:
    """Source coordinates of the output positions, in float32 as the operator computes them."""
    x = np.arange(n_out, dtype=np.float32)
    scale = np.float32(n_in / n_out)
    if mode == "align_corners":
        return x * np.float32((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    if mode == "asymmetric":
        return x * scale
    if mode == "tf_half_pixel_for_nn":
        return (x + np.float32(0.5)) * scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if n_out == 1:
            return np.full(1, 0.5 * (start + end) * (n_in - 1), np.float32)
        return np.float32(start * (n_in - 1)) + x * np.float32((end - start) * (n_in - 1) / (n_out - 1))
    if mode == "pytorch_half_pixel" and n_out == 1:
        return np.zeros(1, np.float32)
    return (x + np.float32(0.5)) * scale - np.float32(0.5)


def _nearest(c: np.ndarray, n: int, rounding: str) -> np.ndarray:
    f = {"round": np.rint, "round_prefer_floor": lambda v: np.ceil(v - 0.5),
         "round_prefer_ceil": lambda v: np.floor(v + 0.5), "ceil": lambda v: np.ceil(v - np.float32(1e-5))}
    i = f.get(rounding, lambda v: np.floor(v + np.float32(1e-5)))(c)
    return np.clip(i.astype(np.int64), 0, n - 1)


def _taps(c: np.ndarray, n: int, method: str, alpha: float, exclude: bool) -> list:
    lo = np.floor(c.astype(np.float64))
    t = c - lo
    base = lo.astype(np.int64)
    if method == "linear":
        return [(np.clip(base, 0, n - 1), 1 - t), (np.clip(base + 1, 0, n - 1), t)]
    t2, t3 = t * t, t * t * t
    w = [alpha * (t3 - 2 * t2 + t), (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
         -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t, -alpha * t3 + alpha * t2]
    if exclude:
        w = [np.where((base + j - 1 >= 0) & (base + j - 1 < n), wj, 0.0) for j, wj in enumerate(w)]
        total = sum(w)
        w = [wj / total for wj in w]
    return [(np.clip(base + j - 1, 0, n - 1), wj) for j, wj in enumerate(w)]


def _resample(data, axes, coords, method, rounding, alpha=-0.5, exclude=False, extrapolation_value=None):
    """``data`` sampled at ``coords`` (one float32 array per axis of ``axes``), axis by axis;
    with ``extrapolation_value``, a coordinate outside the image gives it."""
    out = data.astype(np.float64)
    outside = np.zeros([1] * data.ndim, bool)
    for a, c in zip(axes, coords):
        n = data.shape[a]
        shape = [1] * data.ndim
        shape[a] = -1
        outside = outside | ((c < 0) | (c > n - 1)).reshape(shape)
        if method == "nearest_neighbor":
            out = np.take(out, _nearest(c, n, rounding), axis=a)
        else:
            out = sum(np.take(out, i, axis=a) * w.reshape(shape) for i, w in _taps(c, n, method, alpha, exclude))
    return out if extrapolation_value is None else np.where(outside, extrapolation_value, out)


def resize_nd_python(data: np.ndarray, size, axes, method: str = "linear", mode: str = "half_pixel",
                     rounding: str = "", alpha: float = -0.5, exclude: bool = False, roi=None,
                     extrapolation_value: float = 0.0) -> np.ndarray:
    """``data`` resized to ``size`` along ``axes``, one axis at a time (every rule separates)."""
    method = _ALIASES.get(method, method)
    if method == "nearest_neighbor" and not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    k = len(axes)
    roi = list(roi) if roi is not None else [0.0] * k + [1.0] * k
    coords = [_coords(m, data.shape[a], mode, (roi[j], roi[j + k])) for j, (a, m) in enumerate(zip(axes, size))]
    out = _resample(data, axes, coords, method, rounding, alpha, exclude,
                    extrapolation_value if mode == "tf_crop_and_resize" else None)
    return np.rint(out).astype(data.dtype) if np.issubdtype(data.dtype, np.integer) else out.astype(data.dtype)


def _spatial(layout: str, rank: int) -> list:
    letters = "".join(ch for ch in layout if not ch.isdigit())
    return [letters.index(d) for d in "DHW"[3 - rank:]]


def _by_scale(data, scale, layout, method, mode, rank):
    axes = _spatial(layout, rank)
    size = [int(round(data.shape[a] * s)) for a, s in zip(axes, scale)]
    return resize_nd_python(data, size, axes, method, mode)


def resize1d_python(data, scale, layout="NCW", method="nearest_neighbor", coordinate_transformation_mode="align_corners"):
    """``data`` resized by ``scale = (sw,)`` (extents rounded) as ``topi.image.resize1d``."""
    return _by_scale(data, scale, layout, method, coordinate_transformation_mode, 1)


def resize2d_python(data, scale, layout="NCHW", method="nearest_neighbor", coordinate_transformation_mode="align_corners"):
    """``data`` resized by ``scale = (sh, sw)`` (extents rounded) as ``topi.image.resize2d``; any
    layout with unsplit ``H`` and ``W`` (``NHWC``, ``NCHW1n16c``...)."""
    return _by_scale(data, scale, layout, method, coordinate_transformation_mode, 2)


def resize3d_python(data, scale, layout="NCDHW", method="nearest_neighbor",
                    coordinate_transformation_mode="align_corners"):
    """``data`` resized by ``scale = (sd, sh, sw)`` (extents rounded) as ``topi.image.resize3d``."""
    return _by_scale(data, scale, layout, method, coordinate_transformation_mode, 3)


def crop_and_resize_python(image, boxes, box_indices, crop_size, layout, method="bilinear", extrapolation_value=0):
    """Reference of ``topi.image.crop_and_resize``: each box cropped from its image and resized;
    coordinates in float32 in the operator's order, ``y1 * (H - 1) + y * ((y2 - y1) * (H - 1) / (h - 1))``."""
    axes = (1, 2) if layout == "NHWC" else (2, 3)
    crops = []
    for box, b in zip(boxes.astype(np.float32), box_indices):
        coords = []
        for j, (a, m) in enumerate(zip(axes, crop_size)):
            n1 = np.float32(image.shape[a] - 1)
            lo, hi = box[j], box[j + 2]
            pos = np.arange(m, dtype=np.float32)
            coords.append(lo * n1 + pos * ((hi - lo) * n1 / np.float32(m - 1)) if m > 1
                          else np.full(1, (lo + hi) * np.float32(0.5) * n1, np.float32))
        crops.append(_resample(image[int(b)][None], axes, coords, _ALIASES.get(method, method), "round",
                               extrapolation_value=extrapolation_value)[0])
    return np.stack(crops).astype(image.dtype)


def affine_grid_python(data: np.ndarray, target_shape) -> np.ndarray:
    """``[N, 2, H, W]``: each target pixel's ``(x, y)`` over ``[-1, 1]`` mapped by ``data [N, 2, 3]``."""
    h, w = target_shape
    y = np.linspace(-1, 1, h) if h > 1 else np.full(1, -1.0)
    x = np.linspace(-1, 1, w) if w > 1 else np.full(1, -1.0)
    yy, xx = np.meshgrid(y, x, indexing="ij")
    pts = np.stack([xx, yy, np.ones_like(xx)])  # [3, H, W]
    return np.einsum("nkc,chw->nkhw", data.astype(np.float64), pts).astype(data.dtype)


def grid_sample_python(data, grid, method="bilinear", layout="NCHW", padding_mode="zeros", align_corners=True):
    """Reference of classic ``topi.image.grid_sample`` (grid ``[N, k, ...]``, coordinates on axis 1)."""
    mode = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic"}[method]
    return grid_sample_onnx_python(data, np.moveaxis(grid, 1, -1), mode, padding_mode, align_corners, False)
