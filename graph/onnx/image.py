"""Converters of the image-sampling operators: GridSample and AffineGrid."""

from __future__ import annotations

import numpy as np

from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter

_MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic", "nearest": "nearest"}


@converter("GridSample", since=16)
def convert_grid_sample(ctx: Context, node: OnnxNode) -> list:
    """``grid_sample`` (``topi.image``); version 16's bilinear/bicubic are 20's linear/cubic."""
    x, grid = node.input(0, "X"), node.input(1, "grid")
    mode = node.attr("mode", "linear" if node.opset >= 20 else "bilinear")
    padding = node.attr("padding_mode", "zeros")
    if mode not in _MODES or padding not in ("zeros", "border", "reflection"):
        raise node.error(f"mode={mode!r} / padding_mode={padding!r} is not supported")
    if len(grid.shape) != len(x.shape) or grid.shape[-1] != len(x.shape) - 2 or grid.shape[0] != x.shape[0]:
        raise node.error(f"grid {grid.shape} does not sample X {x.shape}")
    attrs = {"mode": _MODES[mode], "padding_mode": padding, "align_corners": bool(node.attr("align_corners", 0))}
    return [ctx.op("grid_sample", [x, grid], attrs)]


def _base_grid(size: list, align_corners: bool) -> np.ndarray:
    """[prod(spatial), k + 1]: the normalised (x, y[, z], 1) of every output point, x fastest."""
    axes = []
    for d in size[2:]:
        if align_corners:
            axes.append(np.linspace(-1.0, 1.0, d) if d > 1 else np.zeros(1))
        else:
            axes.append((2.0 * np.arange(d) + 1.0) / d - 1.0)
    mesh = np.meshgrid(*axes, indexing="ij")  # spatial order (D,) H, W
    coords = [m.reshape(-1) for m in reversed(mesh)]  # x (W) first
    return np.stack(coords + [np.ones_like(coords[0])], axis=1)


@converter("AffineGrid", since=20)
def convert_affine_grid(ctx: Context, node: OnnxNode) -> list:
    """``base @ theta^T`` per batch: one ``batch_matmul`` against a constant grid of points."""
    theta = node.input(0, "theta")
    size = ctx.ints(node, 1, "size")
    k = len(size) - 2
    if k not in (2, 3) or theta.shape != (size[0], k, k + 1):
        raise node.error(f"theta {theta.shape} and size {size} must describe a 2-D or 3-D affine grid")
    base = _base_grid(size, bool(node.attr("align_corners", 0))).astype(theta.dtype)
    points = base.shape[0]
    base_b = ctx.op("broadcast_to", [ctx.const(base[None], "grid")], {"shape": (size[0], points, k + 1)})
    y = ctx.op("batch_matmul", [base_b, ctx.transpose(theta, (0, 2, 1))])
    return [ctx.reshape(y, (size[0], *size[2:], k))]
