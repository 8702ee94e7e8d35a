"""Converters of reductions: Reduce*, ArgMax/ArgMin, TopK, Softmax/LogSoftmax."""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Value
from graph.onnx.common import norm_axes, norm_axis
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter

# The version from which each reduction takes its axes as an input instead of an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}
_REDUCE_OPS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min",
               "ReduceProd": "prod", "ReduceSumSquare": "sum", "ReduceL1": "sum", "ReduceL2": "sum",
               "ReduceLogSum": "sum", "ReduceLogSumExp": "sum"}


def _reduce_axes(ctx: Context, node: OnnxNode, rank: int, axes_input: bool) -> tuple:
    """The reduced axes; () when ``noop_with_empty_axes`` keeps an empty list empty."""
    if axes_input:
        axes = ctx.ints(node, 1, "axes") if node.has_input(1) else []
    else:
        axes = list(node.attr("axes", []))
    if not axes:
        return () if node.attr("noop_with_empty_axes", 0) else tuple(range(rank))
    return tuple(sorted(norm_axes(node, axes, rank)))


def _reduce_body(ctx: Context, op_type: str, x: Value, axes: tuple, keepdims: bool) -> Value:
    """The reduction and the elementwise ops around it (L1, L2, LogSum...); over no axes only
    the elementwise ops remain, as in onnx's reference."""
    attrs = {"axis": axes, "keepdims": keepdims}
    if any(x.shape[a] == 0 for a in axes):
        return _empty_reduction(ctx, op_type, x, axes, keepdims)
    if op_type == "ReduceLogSumExp":
        if not axes:
            return x
        peak = ctx.op("max", [x], {"axis": axes, "keepdims": True})
        total = ctx.op("sum", [ctx.op("exp", [ctx.op("subtract", [x, peak])])], attrs)
        peak = peak if keepdims else ctx.reshape(peak, total.shape)
        return ctx.op("add", [ctx.op("log", [total]), peak])
    if op_type in ("ReduceSumSquare", "ReduceL2"):
        x = ctx.op("multiply", [x, x])
    elif op_type == "ReduceL1":
        x = ctx.op("abs", [x])
    y = ctx.op(_REDUCE_OPS[op_type], [x], attrs) if axes else x
    if op_type == "ReduceL2":
        y = ctx.op("sqrt", [y])
    elif op_type == "ReduceLogSum":
        y = ctx.op("log", [y])
    return y


def _empty_reduction(ctx: Context, op_type: str, x: Value, axes: tuple, keepdims: bool) -> Value:
    """A reduction over an empty axis is its identity (onnx's reference): 0 for sums, 1 for the
    product, -inf (the type's lowest) for max and the logarithms, +inf (highest) for min."""
    shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape) if keepdims or a not in axes)
    is_float = x.dtype.startswith("float")
    info = np.finfo(x.dtype) if is_float else np.iinfo(x.dtype) if x.dtype != "bool" else None
    low = -np.inf if is_float else (info.min if info else 0)
    high = np.inf if is_float else (info.max if info else 1)
    value = {"ReduceMax": low, "ReduceMin": high, "ReduceProd": 1, "ReduceLogSum": low,
             "ReduceLogSumExp": low, "ReduceMean": np.nan if is_float else 0}.get(op_type, 0)
    value = float(value) if is_float else int(value)
    return ctx.op("full", [], {"shape": shape, "value": value, "dtype": x.dtype})


def _reduction(op_type: str) -> None:
    since_input = _AXES_INPUT_SINCE.get(op_type, 18)

    def convert(ctx: Context, node: OnnxNode, axes_input: bool) -> list:
        x = node.input(0, "data")
        axes = _reduce_axes(ctx, node, len(x.shape), axes_input)
        return [_reduce_body(ctx, op_type, x, axes, bool(node.attr("keepdims", 1)))]

    def attr_axes(ctx: Context, node: OnnxNode) -> list:
        return convert(ctx, node, axes_input=False)

    def input_axes(ctx: Context, node: OnnxNode) -> list:
        return convert(ctx, node, axes_input=True)

    attr_axes.__name__, input_axes.__name__ = f"convert_{op_type.lower()}_v1", f"convert_{op_type.lower()}_v{since_input}"
    attr_axes.__doc__ = f"ONNX {op_type} with axes as an attribute (keepdims)."
    input_axes.__doc__ = f"ONNX {op_type} with axes as an input (keepdims, noop_with_empty_axes)."
    converter(op_type, since=1, until=since_input - 1)(attr_axes)
    converter(op_type, since=since_input)(input_axes)


for _op_type in _REDUCE_OPS:
    _reduction(_op_type)


def _arg_reduce(op: str):
    def convert(ctx: Context, node: OnnxNode) -> list:
        x = node.input(0, "data")
        axis = norm_axis(node, node.attr("axis", 0), len(x.shape))
        last = bool(node.attr("select_last_index", 0))
        y = ctx.op(op, [ctx.reverse(x, axis) if last else x], {"axis": axis, "keepdims": bool(node.attr("keepdims", 1))})
        y = ctx.cast(y, "int64")
        if last:  # the first extreme of the reversed axis is the last one of the axis
            y = ctx.op("subtract", [ctx.scalar(x.shape[axis] - 1, "int64"), y])
        return [y]

    convert.__name__ = f"convert_{op}"
    convert.__doc__ = (f"ONNX {op} -> graph op {op!r} and a cast to int64; ``select_last_index`` runs it "
                       f"over the reversed axis.")
    return convert


converter("ArgMax")(_arg_reduce("argmax"))
converter("ArgMin")(_arg_reduce("argmin"))


def _topk(ctx: Context, node: OnnxNode, k: int) -> list:
    x = node.input(0, "X")
    axis = norm_axis(node, node.attr("axis", -1), len(x.shape))
    if not 0 <= k <= x.shape[axis]:
        raise node.error(f"k={k} is not in [0, {x.shape[axis]}] (axis {axis} of {x.shape})")
    attrs = {"k": k, "axis": axis, "largest": bool(node.attr("largest", 1))}
    return list(ctx.op("topk", [x], attrs, n_out=2))


@converter("TopK", since=1, until=9)
def convert_topk_v1(ctx: Context, node: OnnxNode) -> list:
    """``topk`` (``graph.ops.extra``) with ``k`` an attribute: sorted values and int64 indices."""
    return _topk(ctx, node, int(node.required("k")))


@converter("TopK", since=10)
def convert_topk_v10(ctx: Context, node: OnnxNode) -> list:
    """``k`` is an input folded at import time; ``largest`` (version 11) picks the smallest
    instead; the output is always sorted (``sorted=0`` allows any order)."""
    return _topk(ctx, node, ctx.ints(node, 1, "K")[0])


def _softmax_2d(ctx: Context, node: OnnxNode, op: str) -> list:
    """Opset < 13: coerce to 2-D ``[prod(shape[:axis]), prod(shape[axis:])]``, softmax the
    rows, restore the shape."""
    x = node.input(0)
    rank = len(x.shape)
    axis = norm_axis(node, node.attr("axis", 1), max(rank, 1))
    if axis == rank - 1:
        return [ctx.op(op, [x], {"axis": -1})]
    flat = ctx.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))
    return [ctx.reshape(ctx.op(op, [flat], {"axis": -1}), x.shape)]


def _softmax_axis(ctx: Context, node: OnnxNode, op: str) -> list:
    x = node.input(0)
    return [ctx.op(op, [x], {"axis": norm_axis(node, node.attr("axis", -1), max(len(x.shape), 1))})]



def round_to(ctx: Context, v: Value, rounding: str | None) -> Value:
    """``v`` (float32) rounded to ``rounding`` and read back (a ``narrow_cast`` round trip); ``v`` itself for None."""
    return v if rounding is None else ctx.cast(ctx.cast(v, rounding), v.dtype)


def stepwise_softmax(ctx: Context, s: Value, rounding: str, masked_rows_zero: bool = False) -> Value:
    """The softmax over the last axis of float32 ``s`` holding ``rounding`` (bfloat16) values, every
    numpy step of onnx's reference rounded as it is on an ml_dtypes array::

    m = max(s);  e = r(exp(r(s - m)))
    t = r(...r(r(e[0] + e[1]) + e[2]) ... + e[n-1])          # np.sum: one rounding per addition
    p = r(e / t)

    ``masked_rows_zero`` (Attention's reference): ``m = 0`` where ``m == -inf`` and ``t = 1``
    where ``t == 0``, so a fully masked row gives zeros, not NaN.
    """
    last = len(s.shape) - 1
    zero = ctx.scalar(0.0, s.dtype)
    m = ctx.op("max", [s], {"axis": (last,), "keepdims": True})
    if masked_rows_zero:
        m = ctx.op("where", [ctx.op("equal", [m, ctx.scalar(-np.inf, s.dtype)]), zero, m])
    e = round_to(ctx, ctx.op("exp", [round_to(ctx, ctx.op("subtract", [s, m]), rounding)]), rounding)
    total = ctx.op("rounded_sum", [e], {"dtype": rounding})
    if masked_rows_zero:
        total = ctx.op("where", [ctx.op("equal", [total, zero]), ctx.scalar(1.0, s.dtype), total])
    return round_to(ctx, ctx.op("divide", [e, total]), rounding)


@converter("Softmax", since=1, until=12)
def convert_softmax_v1(ctx: Context, node: OnnxNode) -> list:
    if node.input(0).dtype == "bfloat16":  # Softmax takes bfloat16 from version 13 (a WIDENING_OPS entry)
        raise node.error("input is bfloat16, which Softmax takes from opset 13 on")
    return _softmax_2d(ctx, node, "softmax")


@converter("Softmax", since=13)
def convert_softmax_v13(ctx: Context, node: OnnxNode) -> list:
    """A bfloat16 input is computed in float32 rounded at every step as onnx's reference
    (:func:`stepwise_softmax`, over the last axis: another axis is moved there and back)."""
    x = node.input(0)
    if x.dtype != "bfloat16":
        return _softmax_axis(ctx, node, "softmax")
    rank = len(x.shape)
    axis = norm_axis(node, node.attr("axis", -1), max(rank, 1))
    perm = [a for a in range(rank) if a != axis] + [axis]
    y = stepwise_softmax(ctx, ctx.transpose(ctx.cast(x, "float32"), perm), "bfloat16")
    return [ctx.cast(ctx.transpose(y, np.argsort(perm)), "bfloat16")]


@converter("LogSoftmax", since=1, until=12)
def convert_log_softmax_v1(ctx: Context, node: OnnxNode) -> list:
    return _softmax_2d(ctx, node, "log_softmax")


@converter("LogSoftmax", since=13)
def convert_log_softmax_v13(ctx: Context, node: OnnxNode) -> list:
    return _softmax_axis(ctx, node, "log_softmax")
