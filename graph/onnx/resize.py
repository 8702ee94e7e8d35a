"""Converters of Resize and Upsample -> ``resize`` over H, W of NCHW.

``topi.resize`` maps output row ``y`` to the source coordinate of
``half_pixel``, ``align_corners`` or ``asymmetric`` using the ratio
``in / out``; ONNX uses the ``scale`` it was given.  Both agree when
``out = in * scale`` exactly, so a scale that does not give whole extents is
refused.  Nearest rounding maps ``round_prefer_ceil`` and ``floor``
directly; ``round_prefer_floor`` (the default) equals ``round_prefer_ceil``
unless a source coordinate falls exactly halfway, which is checked.
"""

from __future__ import annotations

import numpy as np

from graph.onnx.common import norm_axes
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter

_METHODS = {"nearest": "nearest_neighbor", "linear": "linear", "bilinear": "linear"}


def _coords(out: int, n: int, mode: str) -> np.ndarray:
    """Source coordinates of the ``out`` output positions as ``topi.resize`` computes them (float32)."""
    o = np.arange(out, dtype=np.float32)
    if mode == "align_corners":
        return o * np.float32((n - 1) / (out - 1) if out > 1 else 0.0)
    if mode == "half_pixel":
        return (o + np.float32(0.5)) * np.float32(n / out) - np.float32(0.5)
    return o * np.float32(n / out)


def _rounding(node: OnnxNode, nearest_mode: str, mode: str, sizes_in, sizes_out) -> str:
    if nearest_mode in ("round_prefer_ceil", "floor"):
        return nearest_mode
    if nearest_mode != "round_prefer_floor":
        raise node.error(f"nearest_mode={nearest_mode!r} is not supported; use round_prefer_floor, "
                         f"round_prefer_ceil or floor")
    for n, out in zip(sizes_in, sizes_out):
        c = _coords(out, n, mode)
        if np.any(c - np.floor(c) == np.float32(0.5)):
            raise node.error(f"nearest_mode='round_prefer_floor' with {mode!r} coordinates hits exact halves "
                             f"when resizing {n} -> {out}; only round_prefer_ceil rounds those")
    return "round_prefer_ceil"


def _coordinate_mode(node: OnnxNode, mode: str, sizes_out) -> str:
    if mode in ("half_pixel", "align_corners", "asymmetric"):
        return mode
    if mode == "pytorch_half_pixel" and min(sizes_out) > 1:
        return "half_pixel"
    if mode == "half_pixel_symmetric":  # equals half_pixel when out = in * scale exactly (checked)
        return "half_pixel"
    raise node.error(f"coordinate_transformation_mode={mode!r} is not supported; use half_pixel, "
                     f"align_corners, asymmetric (or pytorch_half_pixel with outputs larger than 1)")


def _output_hw(node: OnnxNode, shape: tuple, scales, sizes) -> tuple:
    """(out_h, out_w) from full-rank ``sizes`` or ``scales``; N and C must not change."""
    if sizes is not None:
        out = tuple(int(s) for s in sizes)
    elif scales is not None:
        out = tuple(int(np.floor(n * float(s))) for n, s in zip(shape, scales))
        for n, o, s in zip(shape, out, scales):
            if not np.isclose(o, n * float(s), rtol=1e-6, atol=0):
                raise node.error(f"scale {float(s)} on an axis of {n} gives {n * float(s)}, not a whole extent; "
                                 f"only scales giving whole output extents are supported (pass sizes instead)")
    else:
        raise node.error("needs scales or sizes")
    if len(out) != 4 or out[:2] != shape[:2]:
        raise node.error(f"only the H, W axes of a 4-D NCHW input can be resized: {shape} -> {out}")
    if min(out) < 1:
        raise node.error(f"output extents {out} must be positive")
    return out[2:]


def _resize(ctx: Context, node: OnnxNode, scales, sizes, mode: str, coord: str, nearest: str) -> list:
    x = node.input(0, "X")
    if len(x.shape) != 4:
        raise node.error(f"only 4-D NCHW inputs are supported, got {x.shape}")
    if mode not in _METHODS:
        raise node.error(f"mode={mode!r} is not supported; use nearest or linear")
    out_hw = _output_hw(node, x.shape, scales, sizes)
    if out_hw == x.shape[2:]:
        return [x]
    coord = _coordinate_mode(node, coord, out_hw)
    attrs = {"size": out_hw, "method": "nearest_neighbor" if mode == "nearest" else "bilinear",
             "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["rounding_method"] = _rounding(node, nearest, coord, x.shape[2:], out_hw)
    return [ctx.op("resize", [x], attrs)]


@converter("Upsample", since=7, until=9)
def convert_upsample(ctx: Context, node: OnnxNode) -> list:
    """Scales from the attribute (version 7) or the input (version 9); asymmetric coordinates,
    nearest rounds down."""
    scales = node.attr("scales") if node.attr("scales") is not None else ctx.value(node, 1, "scales")
    mode = node.attr("mode", "nearest")
    return _resize(ctx, node, np.asarray(scales, dtype=np.float64), None, mode, "asymmetric", "floor")


@converter("Resize", since=10, until=10)
def convert_resize_v10(ctx: Context, node: OnnxNode) -> list:
    """Resize-10 is Upsample-9: asymmetric coordinates, nearest rounds down."""
    scales = ctx.value(node, 1, "scales")
    return _resize(ctx, node, scales, None, node.attr("mode", "nearest"), "asymmetric", "floor")


def _full_rank(node: OnnxNode, values, axes, rank: int, fill) -> list | None:
    if values is None or np.asarray(values).size == 0:
        return None
    values = list(np.asarray(values).reshape(-1))
    if axes is None:
        return values
    full = [fill[k] for k in range(rank)]
    for a, v in zip(norm_axes(node, axes, rank), values):
        full[a] = v
    return full


@converter("Resize", since=11)
def convert_resize_v11(ctx: Context, node: OnnxNode) -> list:
    """Scales or sizes as inputs; coordinate_transformation_mode and nearest_mode mapped onto
    ``topi.resize``; cubic, tf_crop_and_resize, antialias downscaling and aspect-ratio
    policies other than ``stretch`` are refused."""
    x = node.input(0, "X")
    if node.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise node.error(f"keep_aspect_ratio_policy={node.attr('keep_aspect_ratio_policy')!r} is not supported")
    axes = node.attr("axes")
    scales = _full_rank(node, ctx.optional_value(node, 2, "scales"), axes, len(x.shape), [1.0] * len(x.shape))
    sizes = _full_rank(node, ctx.optional_value(node, 3, "sizes"), axes, len(x.shape), x.shape)
    if node.attr("antialias", 0) and (
            (scales is not None and min(scales) < 1) or (sizes is not None and any(
                o < n for o, n in zip(sizes, x.shape)))):
        raise node.error("antialias=1 when downscaling is not supported")
    coord = node.attr("coordinate_transformation_mode", "half_pixel")
    nearest = node.attr("nearest_mode", "round_prefer_floor")
    return _resize(ctx, node, scales, sizes, node.attr("mode", "nearest"), coord, nearest)
