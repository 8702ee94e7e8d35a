"""Converters of normalisations and window norms built from graph ops: GroupNormalization,
LpNormalization, MeanVarianceNormalization, LpPool, Hardmax."""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Value
from graph.onnx.common import norm_axes, norm_axis
from graph.onnx.context import Context, OnnxNode
from graph.onnx.pool import _pool
from graph.onnx.table import converter


def _mean(ctx: Context, x: Value, axes) -> Value:
    return ctx.op("mean", [x], {"axis": tuple(axes), "keepdims": True})


def _normalise(ctx: Context, x: Value, axes, eps: float) -> Value:
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` (the biased variance)."""
    centred = ctx.op("subtract", [x, _mean(ctx, x, axes)])
    var = _mean(ctx, ctx.op("multiply", [centred, centred]), axes)
    return ctx.op("divide", [centred, ctx.op("sqrt", [ctx.op("add", [var, ctx.scalar(eps, x.dtype)])])])


def _group_norm(ctx: Context, node: OnnxNode, per_channel: bool) -> list:
    x, scale, bias = node.input(0, "X"), node.input(1, "scale"), node.input(2, "bias")
    groups = int(node.required("num_groups"))
    if len(x.shape) < 2 or groups < 1 or x.shape[1] % groups:
        raise node.error(f"num_groups={groups} must divide the {x.shape[1] if len(x.shape) > 1 else '?'} channels "
                         f"of X {x.shape}")
    n, c = x.shape[:2]
    wide = x.dtype if node.attr("stash_type", 1) != 1 or x.dtype == "float64" else "float32"
    y = ctx.reshape(ctx.cast(x, wide), (n, groups, math.prod(x.shape[1:]) // groups))
    y = ctx.cast(_normalise(ctx, y, (2,), float(node.attr("epsilon", 1e-5))), x.dtype)
    trailing = (1,) * (len(x.shape) - 2)
    if per_channel:
        y = ctx.reshape(y, x.shape)
        scale, bias = (ctx.reshape(v, (c,) + trailing) for v in (scale, bias))
    else:  # opset 18: one scale and bias per group
        scale, bias = (ctx.reshape(v, (groups, 1)) for v in (scale, bias))
    y = ctx.op("add", [ctx.op("multiply", [y, scale]), bias])
    return [ctx.reshape(y, x.shape)]


@converter("GroupNormalization", since=18, until=20)
def convert_group_norm_v18(ctx: Context, node: OnnxNode) -> list:
    """Scale and bias per group."""
    return _group_norm(ctx, node, per_channel=False)


@converter("GroupNormalization", since=21)
def convert_group_norm_v21(ctx: Context, node: OnnxNode) -> list:
    """Scale and bias per channel; statistics in float32 (``stash_type``)."""
    return _group_norm(ctx, node, per_channel=True)


@converter("LpNormalization")
def convert_lp_normalization(ctx: Context, node: OnnxNode) -> list:
    """``x / ||x||_p`` along ``axis`` (p 1 or 2), 0 where the norm is 0 (onnx's reference)."""
    x = node.input(0, "input")
    axis = norm_axis(node, node.attr("axis", -1), len(x.shape))
    p = int(node.attr("p", 2))
    if p not in (1, 2):
        raise node.error(f"p={p} is not 1 or 2")
    attrs = {"axis": (axis,), "keepdims": True}
    if p == 1:
        norm = ctx.op("sum", [ctx.op("abs", [x])], attrs)
    else:
        norm = ctx.op("sqrt", [ctx.op("sum", [ctx.op("multiply", [x, x])], attrs)])
    zero = ctx.scalar(0, x.dtype)
    is_zero = ctx.op("equal", [norm, zero])
    safe = ctx.op("where", [is_zero, ctx.scalar(1, x.dtype), norm])
    return [ctx.op("where", [is_zero, zero, ctx.op("divide", [x, safe])])]


@converter("MeanVarianceNormalization", since=9)
def convert_mvn(ctx: Context, node: OnnxNode) -> list:
    """``(x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9)`` over ``axes`` (default N, H, W), as the
    operator's function body computes it."""
    x = node.input(0, "X")
    axes = norm_axes(node, node.attr("axes", [0, 2, 3]), len(x.shape))
    mean = _mean(ctx, x, axes)
    var = ctx.op("subtract", [_mean(ctx, ctx.op("multiply", [x, x]), axes), ctx.op("multiply", [mean, mean])])
    std = ctx.op("add", [ctx.op("sqrt", [var]), ctx.scalar(1e-9, x.dtype)])
    return [ctx.op("divide", [ctx.op("subtract", [x, mean]), std])]


@converter("LpPool")
def convert_lp_pool(ctx: Context, node: OnnxNode) -> list:
    """``(sum over the window of |x|^p) ^ (1/p)``: an average pool of ``|x|^p`` that counts
    the padding, times the window size."""
    x = node.input(0, "X")
    p = float(node.attr("p", 2))
    powered = ctx.op("power", [ctx.op("abs", [x]), ctx.scalar(p, x.dtype)]) if p != 1 else ctx.op("abs", [x])
    node.attrs = {**node.attrs, "count_include_pad": 1}
    node.inputs = [powered] + node.inputs[1:]
    kernel = node.attr("kernel_shape")
    if kernel is None:
        raise node.error("attribute kernel_shape is required")
    total = ctx.op("multiply", [_pool(ctx, node, "avg"), ctx.scalar(float(np.prod(kernel)), x.dtype)])
    if p == 1:
        return [total]
    if p == 2:
        return [ctx.op("sqrt", [total])]
    return [ctx.op("power", [total, ctx.scalar(1.0 / p, x.dtype)])]


def _hardmax(ctx: Context, x: Value, axis: int) -> Value:
    first = ctx.op("argmax", [x], {"axis": axis, "keepdims": True})
    shape = [1] * len(x.shape)
    shape[axis] = x.shape[axis]
    iota = ctx.const(np.arange(x.shape[axis], dtype="int32").reshape(shape), "iota")
    hit = ctx.op("equal", [ctx.cast(first, "int32"), iota])
    return ctx.cast(hit, x.dtype)


@converter("Hardmax", since=1, until=12)
def convert_hardmax_v1(ctx: Context, node: OnnxNode) -> list:
    """1 at the first maximum of each row of the input coerced to 2-D at ``axis``."""
    x = node.input(0, "input")
    axis = norm_axis(node, node.attr("axis", 1), max(len(x.shape), 1))
    flat = ctx.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return [ctx.reshape(_hardmax(ctx, flat, 1), x.shape)]


@converter("Hardmax", since=13)
def convert_hardmax_v13(ctx: Context, node: OnnxNode) -> list:
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    x = node.input(0, "input")
    return [_hardmax(ctx, x, norm_axis(node, node.attr("axis", -1), len(x.shape)))]
