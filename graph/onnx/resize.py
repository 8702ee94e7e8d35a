"""Converters of Resize and Upsample.

Linear resizing maps onto ``resize`` (``topi.resize``, bilinear over H, W of
NCHW).  ``topi.resize`` maps output row ``y`` to a source coordinate with the
ratio ``in / out`` where ONNX uses the ``scale`` it was given; the two agree
when ``out = in * scale`` exactly, so a linear resize with a scale that does
not give whole extents, a coordinate mode outside ``half_pixel``,
``align_corners``, ``asymmetric`` (and their equivalents), cubic mode and
antialiased downscaling are refused.

Nearest resizing only picks source indices, which are computed at import
time exactly as ONNX defines them (every coordinate mode but
``tf_crop_and_resize``, every ``nearest_mode``).  When ``topi.resize``
picks the same indices it is used; otherwise the resize is one ``take`` per
resized axis with a constant index vector::

    Resize(X[1, 2, 3, 3], scales=[1, 1, 1.5, 1.5], nearest)   ->
    %h = take(%X, [0, 0, 1, 2], axis=2);  %Y = take(%h, [0, 0, 1, 2], axis=3)
"""

from __future__ import annotations

import math

import numpy as np

from graph.onnx.common import norm_axes
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter

_TOPI_MODES = {"half_pixel": "half_pixel", "align_corners": "align_corners", "asymmetric": "asymmetric",
               "pytorch_half_pixel": "half_pixel", "half_pixel_symmetric": "half_pixel"}
_ONNX_MODES = ("half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric",
               "tf_half_pixel_for_nn")


def _onnx_coords(mode: str, n: int, out: int, scale: float) -> np.ndarray:
    """ONNX's source coordinate of each output position along one axis (float32, as onnxruntime)."""
    x = np.arange(out, dtype=np.float32)
    s = np.float32(scale)
    if mode == "align_corners":
        return x * np.float32((n - 1) / (out - 1)) if out > 1 else np.zeros(out, np.float32)
    if mode == "asymmetric":
        return x / s
    if mode == "tf_half_pixel_for_nn":
        return (x + np.float32(0.5)) / s
    if mode == "pytorch_half_pixel" and out == 1:
        return np.zeros(out, np.float32)
    offset = np.float32(0.0)
    if mode == "half_pixel_symmetric":
        offset = np.float32(n / 2 * (1 - out / (n * scale)))
    return offset + (x + np.float32(0.5)) / s - np.float32(0.5)


def _round(c: np.ndarray, nearest_mode: str) -> np.ndarray:
    tie = c - np.floor(c) == np.float32(0.5)
    if nearest_mode == "round_prefer_floor":
        return np.where(tie, np.floor(c), np.round(c))
    if nearest_mode == "round_prefer_ceil":
        return np.where(tie, np.ceil(c), np.round(c))
    if nearest_mode in ("floor", "ceil"):
        return getattr(np, nearest_mode)(c)
    raise ValueError(nearest_mode)


def _onnx_indices(mode: str, nearest_mode: str, n: int, out: int, scale: float) -> np.ndarray:
    return np.clip(_round(_onnx_coords(mode, n, out, scale), nearest_mode), 0, n - 1).astype(np.int64)


def _topi_indices(mode: str, rounding: str, n: int, out: int) -> np.ndarray:
    """The indices ``topi.resize`` picks: its reference resizing the positions ``0..n-1``."""
    from topi.testing.resize import resize_nd_python

    return resize_nd_python(np.arange(n, dtype=np.int64), (out,), (0,), "nearest_neighbor", mode, rounding)


def _extents(node: OnnxNode, shape: tuple, scales, sizes) -> tuple:
    """(out extents, scales) per axis from full-rank ``sizes`` or ``scales``."""
    if sizes is not None:
        out = tuple(int(s) for s in sizes)
        scales = [o / n if n else 1.0 for o, n in zip(out, shape)]
    elif scales is not None:
        scales = [float(np.float32(s)) for s in scales]
        out = tuple(int(np.floor(np.float32(n) * np.float32(s))) for n, s in zip(shape, scales))  # as onnxruntime
    else:
        raise node.error("needs scales or sizes")
    if len(out) != len(shape) or min(out, default=1) < 1 or min(scales, default=1) <= 0:
        raise node.error(f"cannot resize {shape} to {out} (scales {scales})")
    return out, scales


def _nearest(ctx: Context, node: OnnxNode, x, out: tuple, scales: list, coord: str, nearest_mode: str) -> list:
    if coord not in _ONNX_MODES:
        raise node.error(f"coordinate_transformation_mode={coord!r} is not supported; use one of {_ONNX_MODES}")
    if nearest_mode not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        raise node.error(f"nearest_mode={nearest_mode!r} is not one of round_prefer_floor, round_prefer_ceil, "
                         f"floor, ceil")
    axes = [a for a, (n, o) in enumerate(zip(x.shape, out)) if n != o or scales[a] != 1.0]
    picks = {a: _onnx_indices(coord, nearest_mode, x.shape[a], out[a], scales[a]) for a in axes}
    picks = {a: p for a, p in picks.items() if not np.array_equal(p, np.arange(x.shape[a]))}
    if len(x.shape) == 4 and set(picks) <= {2, 3} and picks and coord in _TOPI_MODES:
        mode = _TOPI_MODES[coord]
        for rounding in ("round_prefer_ceil", "floor"):
            if all(np.array_equal(_topi_indices(mode, rounding, x.shape[a], out[a]), picks.get(a, np.arange(out[a])))
                   for a in (2, 3)):
                attrs = {"size": out[2:], "method": "nearest_neighbor", "coordinate_transformation_mode": mode,
                         "rounding_method": rounding}
                return [ctx.op("resize", [x], attrs)]
    for a, p in sorted(picks.items()):
        x = ctx.op("take", [x, ctx.const(p, "indices")], {"axis": a})
    return [x]


def _linear(ctx: Context, node: OnnxNode, x, out: tuple, scales: list, coord: str) -> list:
    if len(x.shape) != 4 or out[:2] != x.shape[:2]:
        raise node.error(f"linear resizing covers the H, W axes of a 4-D NCHW input only: {x.shape} -> {out}")
    for n, o, s in zip(x.shape[2:], out[2:], scales[2:]):
        if not math.isclose(o, n * s, rel_tol=1e-6) and coord != "align_corners":
            raise node.error(f"scale {s} on an axis of {n} gives {n * s}, not a whole extent; linear resizing "
                             f"supports only scales giving whole output extents (pass sizes instead)")
    if coord not in _TOPI_MODES or (coord == "pytorch_half_pixel" and min(out[2:]) == 1):
        raise node.error(f"coordinate_transformation_mode={coord!r} is not supported for linear resizing; use "
                         f"half_pixel, align_corners, asymmetric (or pytorch_half_pixel to extents above 1)")
    if out == x.shape:
        return [x]
    attrs = {"size": out[2:], "method": "bilinear", "coordinate_transformation_mode": _TOPI_MODES[coord]}
    return [ctx.op("resize", [x], attrs)]


def _resize(ctx: Context, node: OnnxNode, scales, sizes, mode: str, coord: str, nearest_mode: str) -> list:
    x = node.input(0, "X")
    out, scales = _extents(node, x.shape, scales, sizes)
    if mode == "nearest":
        return _nearest(ctx, node, x, out, scales, coord, nearest_mode)
    if mode in ("linear", "bilinear"):
        return _linear(ctx, node, x, out, scales, coord)
    raise node.error(f"mode={mode!r} is not supported; use nearest or linear")


@converter("Upsample", since=7, until=9)
def convert_upsample(ctx: Context, node: OnnxNode) -> list:
    """Scales from the attribute (version 7) or the input (version 9); asymmetric coordinates,
    nearest rounds down."""
    scales = node.attr("scales") if node.attr("scales") is not None else ctx.value(node, 1, "scales")
    return _resize(ctx, node, np.asarray(scales), None, node.attr("mode", "nearest"), "asymmetric", "floor")


@converter("Resize", since=10, until=10)
def convert_resize_v10(ctx: Context, node: OnnxNode) -> list:
    """Resize-10 is Upsample-9: asymmetric coordinates, nearest rounds down."""
    scales = ctx.value(node, 1, "scales")
    return _resize(ctx, node, scales, None, node.attr("mode", "nearest"), "asymmetric", "floor")


def _full_rank(node: OnnxNode, values, axes, fill: list) -> list | None:
    if values is None or np.asarray(values).size == 0:
        return None
    values = list(np.asarray(values).reshape(-1))
    if axes is None:
        return values
    full = list(fill)
    for a, v in zip(norm_axes(node, axes, len(fill)), values):
        full[a] = v
    return full


def _target(node: OnnxNode, shape: tuple, scales, sizes, axes) -> tuple:
    """(out extents, per-axis scales) as onnx's reference computes them, ``keep_aspect_ratio_policy``
    included: ``not_larger`` (``not_smaller``) scales every resized axis by the smallest (largest)
    ratio ``sizes / shape`` and rounds the extents half up."""
    rank = len(shape)
    resized = list(range(rank)) if axes is None else list(norm_axes(node, axes, rank))
    if sizes is None:
        return _extents(node, shape, scales, None)
    policy = node.attr("keep_aspect_ratio_policy", "stretch")
    ratios = [int(o) / n if n else 1.0 for o, n in zip(sizes, shape)]
    if policy == "stretch":
        return _extents(node, shape, None, sizes)
    if policy not in ("not_larger", "not_smaller"):
        raise node.error(f"keep_aspect_ratio_policy={policy!r} is not one of stretch, not_larger, not_smaller")
    pick = min if policy == "not_larger" else max
    scale = pick(ratios[a] for a in resized)
    scales = [scale if a in resized else 1.0 for a in range(rank)]
    out = tuple(int(scale * n + 0.5) if a in resized else n for a, n in enumerate(shape))
    if min(out, default=1) < 1:
        raise node.error(f"cannot resize {shape} to {out} (keep_aspect_ratio_policy={policy!r})")
    return out, scales


def _coeff_fn(node: OnnxNode, mode: str):
    """onnx's reference interpolation weights for ``mode`` (a function of (ratio, scale))."""
    from onnx.reference.ops import op_resize as ref

    antialias = bool(node.attr("antialias", 0))
    if mode == "nearest":
        if antialias:
            raise node.error("antialias=1 is not defined for mode='nearest'")
        nearest = node.attr("nearest_mode", "round_prefer_floor")
        if nearest not in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
            raise node.error(f"nearest_mode={nearest!r} is not one of round_prefer_floor, round_prefer_ceil, "
                             f"floor, ceil")
        return lambda ratio, scale: ref._nearest_coeffs(ratio, mode=nearest)
    if mode == "cubic":
        a = float(node.attr("cubic_coeff_a", -0.75))
        fn = ref._cubic_coeffs_antialias if antialias else ref._cubic_coeffs
        return lambda ratio, scale: fn(ratio, scale, A=a)
    if mode == "linear":
        return ref._linear_coeffs_antialias if antialias else ref._linear_coeffs
    raise node.error(f"mode={mode!r} is not one of nearest, linear, cubic")


def axis_weights(node: OnnxNode, n: int, out: int, scale: float, roi) -> tuple:
    """The resize of one axis as ``y = W @ x + b`` (W: [out, n], b: [out], float64).

    Every ONNX resize is linear in its input along each axis (nearest picks,
    linear, cubic and antialiased filters weigh neighbours; ``tf_crop_and_resize``
    adds ``extrapolation_value`` outside the crop), so W is onnx's own 1-D
    reference resize applied to the identity and b to zeros.
    """
    from onnx.reference.ops import op_resize as ref

    kwargs = {"roi": roi, "extrapolation_value": float(node.attr("extrapolation_value", 0.0)),
              "coordinate_transformation_mode": node.attr("coordinate_transformation_mode", "half_pixel"),
              "exclude_outside": bool(node.attr("exclude_outside", 0))}
    get_coeffs = _coeff_fn(node, node.attr("mode", "nearest"))
    try:
        with np.errstate(all="ignore"):
            b = ref._interpolate_1d_along_axis(np.zeros((n, 1)), 0, scale, out, get_coeffs, **kwargs)[:, 0]
            w = ref._interpolate_1d_along_axis(np.eye(n), 0, scale, out, get_coeffs, **kwargs) - b[:, None]
    except ValueError as err:
        raise node.error(f"cannot resize an axis of {n} to {out} (scale {scale}): {err}") from None
    return w, b


def _weighted(ctx: Context, node: OnnxNode, x, out: tuple, scales: list, roi) -> list:
    """Resize every changed axis with a constant weight matrix (``dense`` over that axis)."""
    if not x.dtype.startswith("float"):
        raise node.error(f"{node.attr('mode', 'nearest')} resizing of {x.dtype} data is not supported "
                         f"(float types only)")
    rank = len(x.shape)
    for a in range(rank):
        axis_roi = None if roi is None else [roi[a], roi[a + rank]]
        unchanged = out[a] == x.shape[a] and math.isclose(scales[a], 1.0)
        if unchanged and (axis_roi is None or (math.isclose(axis_roi[0], 0.0) and math.isclose(axis_roi[1], 1.0))):
            continue
        w, b = axis_weights(node, x.shape[a], out[a], float(scales[a]), axis_roi)
        perm = [k for k in range(rank) if k != a] + [a]
        moved = ctx.transpose(x, perm)
        flat = ctx.reshape(moved, (math.prod(moved.shape[:-1]), x.shape[a]))
        y = ctx.op("dense", [flat, ctx.const(w.astype(x.dtype), "weights")])
        if np.any(b):
            y = ctx.op("add", [y, ctx.const(b.astype(x.dtype), "extrapolation")])
        y = ctx.reshape(y, moved.shape[:-1] + (out[a],))
        x = ctx.transpose(y, [perm.index(k) for k in range(rank)])
    return [x]


def _topi_fits(node: OnnxNode, x, out: tuple, scales: list, mode: str, coord: str) -> bool:
    """Whether ``topi.resize`` (linear over H, W) gives onnx's answer: whole extents, no antialias."""
    if mode not in ("linear", "bilinear") or node.attr("antialias", 0) or len(x.shape) != 4:
        return False
    if out[:2] != x.shape[:2] or coord not in _TOPI_MODES or coord == "half_pixel_symmetric":
        return False
    if coord == "pytorch_half_pixel" and min(out[2:]) == 1:
        return False
    return all(math.isclose(o, n * s, rel_tol=1e-6) for n, o, s in zip(x.shape[2:], out[2:], scales[2:]))


def _roi(ctx: Context, node: OnnxNode, rank: int, axes) -> list:
    """``roi`` as begins then ends over every axis (given over ``axes`` when set)."""
    raw = ctx.optional_value(node, 1, "roi")
    n = rank if axes is None else len(axes)
    if raw is None or raw.size != 2 * n:
        raise node.error(f"coordinate_transformation_mode='tf_crop_and_resize' needs roi of {2 * n} values "
                         f"(begins, then ends), got {None if raw is None else raw.size}")
    raw = [float(r) for r in raw.reshape(-1)]
    if axes is None:
        return raw
    full = [0.0] * rank + [1.0] * rank
    for i, a in enumerate(norm_axes(node, axes, rank)):
        full[a], full[rank + a] = raw[i], raw[n + i]
    return full


@converter("Resize", since=11)
def convert_resize_v11(ctx: Context, node: OnnxNode) -> list:
    """Scales or sizes as inputs (version 18: over ``axes``, ``keep_aspect_ratio_policy``,
    ``antialias``).  Nearest resizing in the coordinate modes of ``_ONNX_MODES`` picks indices
    (``take``) and linear resizing to whole extents uses ``topi.resize``; every other resize
    (cubic, antialias, ``tf_crop_and_resize``, scales giving fractional extents, other axes)
    applies onnx's reference weights, one ``dense`` per resized axis."""
    x = node.input(0, "X")
    axes = node.attr("axes")
    scales = _full_rank(node, ctx.optional_value(node, 2, "scales"), axes, [1.0] * len(x.shape))
    sizes = _full_rank(node, ctx.optional_value(node, 3, "sizes"), axes, list(x.shape))
    out, scales = _target(node, x.shape, scales, sizes, axes)
    mode = node.attr("mode", "nearest")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    roi = _roi(ctx, node, len(x.shape), axes) if coord == "tf_crop_and_resize" else None
    stretch = node.attr("keep_aspect_ratio_policy", "stretch") == "stretch"
    if mode == "nearest" and coord in _ONNX_MODES and stretch and not node.attr("antialias", 0):
        return _nearest(ctx, node, x, out, scales, coord, node.attr("nearest_mode", "round_prefer_floor"))
    if stretch and roi is None and _topi_fits(node, x, out, scales, mode, coord):
        return _linear(ctx, node, x, out, scales, coord)
    if mode not in ("nearest", "linear", "cubic"):
        raise node.error(f"mode={mode!r} is not one of nearest, linear, cubic")
    return _weighted(ctx, node, x, out, [float(s) for s in scales], roi)
