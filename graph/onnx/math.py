"""Converters of the elementwise ONNX operators beyond :mod:`graph.onnx.elemwise`: inverse
trigonometric and hyperbolic functions, IsNaN, IsInf, the bitwise operators and BitShift,
Swish, Shrink."""

from __future__ import annotations

from graph.onnx.context import Context, OnnxNode
from graph.onnx.elemwise import _binary, _unary
from graph.onnx.table import converter

for _onnx, _op, _since in (("Tan", "tan", 7), ("Asin", "asin", 7), ("Acos", "acos", 7), ("Atan", "atan", 7),
                           ("Sinh", "sinh", 9), ("Cosh", "cosh", 9), ("Asinh", "asinh", 9),
                           ("Acosh", "acosh", 9), ("Atanh", "atanh", 9), ("IsNaN", "isnan", 9),
                           ("BitwiseNot", "bitwise_not", 18)):
    _unary(_onnx, _op, since=_since)
for _onnx, _op in (("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"), ("BitwiseXor", "bitwise_xor")):
    _binary(_onnx, _op, since=18)


@converter("IsInf", since=10)
def convert_isinf(ctx: Context, node: OnnxNode) -> list:
    attrs = {"detect_positive": bool(node.attr("detect_positive", 1)),
             "detect_negative": bool(node.attr("detect_negative", 1))}
    return [ctx.op("isinf", [node.input(0, "X")], attrs)]


@converter("BitShift", since=11)
def convert_bit_shift(ctx: Context, node: OnnxNode) -> list:
    """``left_shift`` / ``right_shift`` (unsigned: logical) by ``direction``."""
    direction = node.required("direction")
    if direction not in ("LEFT", "RIGHT"):
        raise node.error(f"direction={direction!r} is not LEFT or RIGHT")
    op = "left_shift" if direction == "LEFT" else "right_shift"
    return [ctx.op(op, [node.input(0, "X"), node.input(1, "Y")])]


@converter("Swish", since=24)
def convert_swish(ctx: Context, node: OnnxNode) -> list:
    """``x * sigmoid(alpha * x)``."""
    x = node.input(0, "X")
    alpha = float(node.attr("alpha", 1.0))
    z = x if alpha == 1.0 else ctx.op("multiply", [x, ctx.scalar(alpha, x.dtype)])
    return [ctx.op("multiply", [x, ctx.op("sigmoid", [z])])]


@converter("Shrink", since=9)
def convert_shrink(ctx: Context, node: OnnxNode) -> list:
    """``x + bias`` below ``-lambd``, ``x - bias`` above ``lambd``, 0 between."""
    x = node.input(0, "input")
    lambd, bias = float(node.attr("lambd", 0.5)), float(node.attr("bias", 0.0))
    zero = ctx.scalar(0, x.dtype)
    low = ctx.op("less", [x, ctx.scalar(-lambd, x.dtype)])
    high = ctx.op("greater", [x, ctx.scalar(lambd, x.dtype)])
    if bias:
        up = ctx.op("add", [x, ctx.scalar(bias, x.dtype)])
        down = ctx.op("subtract", [x, ctx.scalar(bias, x.dtype)])
    else:
        up = down = x
    return [ctx.op("where", [low, up, ctx.op("where", [high, down, zero])])]
