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
    """The indices ``topi.resize`` picks (its float32 arithmetic emulated)."""
    o = np.arange(out, dtype=np.float32)
    if mode == "align_corners":
        c = o * np.float32((n - 1) / (out - 1) if out > 1 else 0.0)
    elif mode == "half_pixel":
        c = (o + np.float32(0.5)) * np.float32(n / out) - np.float32(0.5)
    else:
        c = o * np.float32(n / out)
    i = np.floor(c + np.float32(0.5)) if rounding == "round_prefer_ceil" else np.floor(c + np.float32(1e-5))
    return np.clip(i, 0, n - 1).astype(np.int64)


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


@converter("Resize", since=11)
def convert_resize_v11(ctx: Context, node: OnnxNode) -> list:
    """Scales or sizes as inputs (version 18: over ``axes``); see the module docstring for the
    modes.  ``tf_crop_and_resize``, cubic, antialiased downscaling and aspect-ratio policies
    other than ``stretch`` are refused."""
    x = node.input(0, "X")
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise node.error(f"keep_aspect_ratio_policy={node.attr('keep_aspect_ratio_policy')!r} is not supported")
    axes = node.attr("axes")
    scales = _full_rank(node, ctx.optional_value(node, 2, "scales"), axes, [1.0] * len(x.shape))
    sizes = _full_rank(node, ctx.optional_value(node, 3, "sizes"), axes, list(x.shape))
    out, _ = _extents(node, x.shape, scales, sizes)
    if node.attr("antialias", 0) and any(o < n for o, n in zip(out, x.shape)):
        raise node.error("antialias=1 when downscaling is not supported")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    nearest = node.attr("nearest_mode", "round_prefer_floor")
    return _resize(ctx, node, scales, sizes, node.attr("mode", "nearest"), coord, nearest)
