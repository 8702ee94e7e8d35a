"""Converters of index-driven ONNX operators: GatherND, ScatterND, ScatterElements (and the
older Scatter), CumSum, CumProd, OneHot, EyeLike, ReverseSequence, CenterCropPad."""

from __future__ import annotations

import numpy as np

from graph.onnx.common import norm_axes, norm_axis
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


@converter("GatherND", since=11)
def convert_gather_nd(ctx: Context, node: OnnxNode) -> list:
    data, idx = node.input(0, "data"), node.input(1, "indices")
    b = int(node.attr("batch_dims", 0))
    if not idx.shape or idx.shape[-1] > len(data.shape) - b:
        raise node.error(f"indices {idx.shape} cannot index data {data.shape} after batch_dims={b}")
    return [ctx.op("gather_nd", [data, ctx.cast(idx, "int64")], {"batch_dims": b})]


def _reduction(node: OnnxNode) -> str:
    reduction = node.attr("reduction", "none")
    if reduction not in ("none", "add", "mul", "max", "min"):
        raise node.error(f"reduction={reduction!r} is not one of none, add, mul, max, min")
    return reduction


@converter("ScatterND", since=11)
def convert_scatter_nd(ctx: Context, node: OnnxNode) -> list:
    data, idx, upd = node.input(0, "data"), node.input(1, "indices"), node.input(2, "updates")
    return [ctx.op("scatter_nd", [data, ctx.cast(idx, "int64"), upd], {"reduction": _reduction(node)})]


@converter("ScatterElements", since=11)
def convert_scatter_elements(ctx: Context, node: OnnxNode) -> list:
    data, idx, upd = node.input(0, "data"), node.input(1, "indices"), node.input(2, "updates")
    axis = norm_axis(node, node.attr("axis", 0), len(data.shape))
    attrs = {"axis": axis, "reduction": _reduction(node)}
    return [ctx.op("scatter_elements", [data, ctx.cast(idx, "int64"), upd], attrs)]


@converter("Scatter", since=9, until=10)
def convert_scatter(ctx: Context, node: OnnxNode) -> list:
    """Scatter (deprecated in 11) is ScatterElements without reduction."""
    return convert_scatter_elements(ctx, node)


def _cumulative(op: str):
    def convert(ctx: Context, node: OnnxNode) -> list:
        x = node.input(0, "x")
        axis = norm_axis(node, ctx.ints(node, 1, "axis")[0], len(x.shape))
        attrs = {"axis": axis, "op": op, "exclusive": bool(node.attr("exclusive", 0)),
                 "reverse": bool(node.attr("reverse", 0))}
        return [ctx.op("cumulative", [x], attrs)]

    convert.__name__ = f"convert_cum{op}"
    convert.__doc__ = f"Running {op} along the axis input (read at import, or per value at run time)."
    return convert


converter("CumSum", since=11)(_cumulative("sum"))
converter("CumProd", since=26)(_cumulative("prod"))


@converter("OneHot", since=9)
def convert_one_hot(ctx: Context, node: OnnxNode) -> list:
    """``where(indices (wrapped) == arange(depth), on, off)`` along the new ``axis``."""
    idx, values = node.input(0, "indices"), node.input(2, "values")
    depth = int(np.asarray(ctx.value(node, 1, "depth")).reshape(-1)[0])
    if depth < 1 or values.size != 2:
        raise node.error(f"depth={depth} must be positive and values hold [off, on], got {values.shape}")
    rank = len(idx.shape) + 1
    axis = norm_axis(node, node.attr("axis", -1), rank)
    idx = ctx.cast(idx, "int64")
    idx = ctx.op("where", [ctx.op("less", [idx, ctx.scalar(0, "int64")]),
                           ctx.op("add", [idx, ctx.scalar(depth, "int64")]), idx])
    idx = ctx.reshape(idx, idx.shape[:axis] + (1,) + idx.shape[axis:])
    iota = ctx.const(np.arange(depth, dtype=np.int64).reshape((depth,) + (1,) * (rank - 1 - axis)), "iota")
    narrow = values.dtype if values.dtype == "bfloat16" else None  # WIDENING_OPS: computed in float32
    flat = ctx.reshape(ctx.cast(values, "float32") if narrow else values, (2,))
    off = ctx.op("strided_slice", [flat], {"begin": (0,), "end": (1,), "strides": (1,), "axes": (0,)})
    on = ctx.op("strided_slice", [flat], {"begin": (1,), "end": (2,), "strides": (1,), "axes": (0,)})
    y = ctx.op("where", [ctx.op("equal", [idx, iota]), ctx.reshape(on, ()), ctx.reshape(off, ())])
    return [ctx.cast(y, narrow) if narrow else y]


@converter("EyeLike", since=9)
def convert_eye_like(ctx: Context, node: OnnxNode) -> list:
    """A constant: ones on diagonal ``k`` of the input's 2-D shape."""
    from graph.onnx.context import onnx_dtype

    x = node.input(0, "input")
    if len(x.shape) != 2:
        raise node.error(f"input must be 2-D, got {x.shape}")
    dtype = onnx_dtype(node.attr("dtype")) if node.attr("dtype") is not None else x.dtype
    if dtype is None:
        raise node.error(f"dtype={node.attr('dtype')} is a type the compiler cannot represent")
    return [ctx.const(np.eye(x.shape[0], x.shape[1], int(node.attr("k", 0)), dtype=dtype), "eye")]


@converter("ReverseSequence", since=10)
def convert_reverse_sequence(ctx: Context, node: OnnxNode) -> list:
    """``gather_elements`` along the time axis with ``src[b, t] = L[b] - 1 - t`` for ``t < L[b]``."""
    x, lens = node.input(0, "input"), node.input(1, "sequence_lens")
    batch_axis, time_axis = int(node.attr("batch_axis", 1)), int(node.attr("time_axis", 0))
    if sorted((batch_axis, time_axis)) != [0, 1] or len(x.shape) < 2:
        raise node.error(f"batch_axis={batch_axis}, time_axis={time_axis} must be 0 and 1 of a rank >= 2 input")
    t_len = x.shape[time_axis]
    shape = [1] * len(x.shape)
    shape[time_axis] = t_len
    t = ctx.const(np.arange(t_len, dtype=np.int64).reshape(shape), "time")
    shape = [1] * len(x.shape)
    shape[batch_axis] = x.shape[batch_axis]
    lens = ctx.reshape(ctx.cast(lens, "int64"), tuple(shape))
    back = ctx.op("subtract", [ctx.op("subtract", [lens, ctx.scalar(1, "int64")]), t])
    src = ctx.op("where", [ctx.op("less", [t, lens]), back, t])
    src = ctx.op("broadcast_to", [src], {"shape": x.shape}) if src.shape != x.shape else src
    return [ctx.op("gather_elements", [x, src], {"axis": time_axis})]


@converter("CenterCropPad", since=18)
def convert_center_crop_pad(ctx: Context, node: OnnxNode) -> list:
    """Crop (a slice) or zero-pad each axis to the target extent, centred (the odd element
    after the data when cropping, before it when padding, as onnx's reference)."""
    x = node.input(0, "input_data")
    sizes = ctx.ints(node, 1, "shape")
    axes = node.attr("axes")
    axes = list(range(len(x.shape))) if axes is None else list(norm_axes(node, axes, len(x.shape)))
    if len(sizes) != len(axes):
        raise node.error(f"shape {sizes} must have one extent per axis {axes}")
    for a, size in zip(axes, sizes):
        n = x.shape[a]
        if size < n:
            start = (n - size) // 2
            x = ctx.op("strided_slice", [x], {"begin": (start,), "end": (start + size,), "strides": (1,),
                                              "axes": (a,)})
        elif size > n:
            before = [0] * len(x.shape)
            after = [0] * len(x.shape)
            before[a] = (size - n) // 2
            after[a] = size - n - before[a]
            x = ctx.op("pad", [x], {"pad_before": tuple(before), "pad_after": tuple(after), "pad_value": 0.0})
    return [x]
