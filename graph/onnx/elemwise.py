"""Converters of elementwise ONNX operators: math, activations, arithmetic, comparisons, logic."""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from graph.onnx.context import Context, OnnxNode, onnx_dtype, onnx_type_name, supported_types
from graph.onnx.table import converter
from topi import narrow

SELU_ALPHA = 1.67326319217681884765625
SELU_GAMMA = 1.05070102214813232421875


def _unary(op_type: str, op: str, since: int = 1) -> None:
    def convert(ctx: Context, node: OnnxNode) -> list:
        return [ctx.op(op, [node.input(0, "X")])]

    convert.__name__ = f"convert_{op_type.lower()}"
    convert.__doc__ = f"ONNX {op_type} -> graph op {op!r}."
    converter(op_type, since=since)(convert)


for _onnx, _op in (("Relu", "relu"), ("Sigmoid", "sigmoid"), ("Tanh", "tanh"), ("Exp", "exp"), ("Log", "log"),
                   ("Sqrt", "sqrt"), ("Abs", "abs"), ("Neg", "negative"), ("Floor", "floor"), ("Ceil", "ceil"),
                   ("Reciprocal", "reciprocal"), ("Softplus", "softplus"), ("Sign", "sign"), ("Sin", "sin"),
                   ("Cos", "cos"), ("Round", "round"), ("Not", "logical_not")):
    _unary(_onnx, _op)
_unary("Erf", "erf", since=9)


@converter("LeakyRelu")
def convert_leaky_relu(ctx: Context, node: OnnxNode) -> list:
    return [ctx.op("leaky_relu", [node.input(0)], {"alpha": float(node.attr("alpha", 0.01))})]


@converter("Elu")
def convert_elu(ctx: Context, node: OnnxNode) -> list:
    return [ctx.op("elu", [node.input(0)], {"alpha": float(node.attr("alpha", 1.0))})]


@converter("Selu")
def convert_selu(ctx: Context, node: OnnxNode) -> list:
    """``selu`` with the standard constants, else ``gamma * elu(x, alpha)``."""
    x = node.input(0)
    alpha, gamma = float(node.attr("alpha", SELU_ALPHA)), float(node.attr("gamma", SELU_GAMMA))
    if np.float32(alpha) == np.float32(SELU_ALPHA) and np.float32(gamma) == np.float32(SELU_GAMMA):
        return [ctx.op("selu", [x])]
    return [ctx.op("multiply", [ctx.op("elu", [x], {"alpha": alpha}), ctx.scalar(gamma, x.dtype)])]


def _hard_sigmoid(ctx: Context, x, alpha: float, beta: float):
    y = ctx.op("add", [ctx.op("multiply", [x, ctx.scalar(alpha, x.dtype)]), ctx.scalar(beta, x.dtype)])
    return ctx.op("clip", [y], {"a_min": 0.0, "a_max": 1.0})


@converter("HardSigmoid")
def convert_hard_sigmoid(ctx: Context, node: OnnxNode) -> list:
    """``clip(alpha * x + beta, 0, 1)``."""
    return [_hard_sigmoid(ctx, node.input(0), float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5)))]


@converter("HardSwish", since=14)
def convert_hard_swish(ctx: Context, node: OnnxNode) -> list:
    """``x * clip(x / 6 + 1 / 2, 0, 1)``."""
    x = node.input(0)
    return [ctx.op("multiply", [x, _hard_sigmoid(ctx, x, 1.0 / 6.0, 0.5)])]


@converter("Gelu", since=20)
def convert_gelu(ctx: Context, node: OnnxNode) -> list:
    """``gelu`` (erf form), or its tanh approximation composed from elementwise ops."""
    x = node.input(0)
    approximate = node.attr("approximate", "none")
    if approximate == "none":
        return [ctx.op("gelu", [x])]
    if approximate != "tanh":
        raise node.error(f"approximate={approximate!r} is not one of 'none', 'tanh'")
    cube = ctx.op("multiply", [ctx.op("multiply", [x, x]), x])
    inner = ctx.op("add", [x, ctx.op("multiply", [cube, ctx.scalar(0.044715, x.dtype)])])
    t = ctx.op("tanh", [ctx.op("multiply", [inner, ctx.scalar(math.sqrt(2.0 / math.pi), x.dtype)])])
    half_x = ctx.op("multiply", [x, ctx.scalar(0.5, x.dtype)])
    return [ctx.op("multiply", [half_x, ctx.op("add", [t, ctx.scalar(1.0, x.dtype)])])]


@converter("PRelu")
def convert_prelu(ctx: Context, node: OnnxNode) -> list:
    """``prelu``; before opset 7 a 1-D slope of C entries is per channel (axis 1)."""
    x, slope = node.input(0, "X"), node.input(1, "slope")
    if ctx.opset < 7 and len(slope.shape) == 1 and slope.shape[0] > 1 and len(x.shape) > 2:
        slope = ctx.reshape(slope, (slope.shape[0],) + (1,) * (len(x.shape) - 2))
    return [ctx.op("prelu", [x, slope])]


# ---------------------------------------------------------------- binary
def _legacy_broadcast(ctx: Context, node: OnnxNode, b):
    """Before opset 7, ``broadcast=1`` with ``axis`` aligns B's first axis with A's ``axis``."""
    a = node.input(0)
    if ctx.opset >= 7 or not node.attr("broadcast", 0) or node.attr("axis") is None:
        return b
    axis = int(node.attr("axis")) % max(len(a.shape), 1)
    trailing = len(a.shape) - axis - len(b.shape)
    if trailing < 0:
        raise node.error(f"broadcast axis={axis}: B of shape {b.shape} does not fit A of shape {a.shape}")
    return ctx.reshape(b, tuple(b.shape) + (1,) * trailing)


def _binary(op_type: str, op: str, since: int = 1) -> None:
    def convert(ctx: Context, node: OnnxNode) -> list:
        b = _legacy_broadcast(ctx, node, node.input(1, "B"))
        return [ctx.op(op, [node.input(0, "A"), b])]

    convert.__name__ = f"convert_{op_type.lower()}"
    convert.__doc__ = f"ONNX {op_type} -> graph op {op!r} (numpy broadcasting)."
    converter(op_type, since=since)(convert)


for _onnx, _op in (("Add", "add"), ("Sub", "subtract"), ("Mul", "multiply"), ("Div", "divide"),
                   ("Equal", "equal"), ("Less", "less"), ("Greater", "greater"), ("And", "logical_and"),
                   ("Or", "logical_or"), ("Xor", "logical_xor")):
    _binary(_onnx, _op)
_binary("LessOrEqual", "less_equal", since=12)
_binary("GreaterOrEqual", "greater_equal", since=12)


@converter("Pow")
def convert_pow(ctx: Context, node: OnnxNode) -> list:
    """``power``; an exponent of another type (opset 12+) is cast to the base's type.  An
    integer base is raised in float64 and the result cast back (ONNX keeps the base's type)."""
    x = node.input(0, "X")
    y = _legacy_broadcast(ctx, node, node.input(1, "Y"))
    if x.dtype.startswith(("int", "uint")):
        z = ctx.op("power", [ctx.cast(x, "float64"), ctx.cast(y, "float64")])
        return [ctx.cast(z, x.dtype)]
    return [ctx.op("power", [x, ctx.cast(y, x.dtype)])]


@converter("Mod", since=10)
def convert_mod(ctx: Context, node: OnnxNode) -> list:
    """``floor_mod`` (the sign of the divisor), or with ``fmod=1`` C's ``fmod`` (the sign of
    the dividend: ``graph.ops.math``)."""
    a, b = node.input(0), node.input(1)
    if node.attr("fmod", 0):
        return [ctx.op("fmod", [a, b])]
    return [ctx.op("floor_mod_float" if a.dtype.startswith("float") else "floor_mod", [a, b])]


def _variadic(op_type: str, op: str) -> None:
    def convert(ctx: Context, node: OnnxNode) -> list:
        values = [node.input(k) for k in range(len(node.inputs))]
        if not values:
            raise node.error("needs at least one input")
        acc = values[0]
        for v in values[1:]:
            acc = ctx.op(op, [acc, v])
        if op_type == "Mean" and len(values) > 1:
            acc = ctx.op("divide", [acc, ctx.scalar(len(values), acc.dtype)])
        return [acc]

    convert.__name__ = f"convert_{op_type.lower()}"
    convert.__doc__ = f"ONNX {op_type} over N inputs -> a chain of {op!r} (broadcasting)."
    converter(op_type)(convert)


for _onnx, _op in (("Sum", "add"), ("Mean", "add"), ("Max", "maximum"), ("Min", "minimum")):
    _variadic(_onnx, _op)


@converter("Where", since=9)
def convert_where(ctx: Context, node: OnnxNode) -> list:
    return [ctx.op("where", [node.input(0, "condition"), node.input(1, "X"), node.input(2, "Y")])]


# ------------------------------------------------------------------ clip
def _clip_bounds(node: OnnxNode, dtype: str, lo, hi) -> dict:
    info = np.iinfo(dtype) if np.issubdtype(np.dtype(dtype), np.integer) else np.finfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    cast = int if np.issubdtype(np.dtype(dtype), np.integer) else float
    if lo > hi:
        raise node.error(f"min={lo} is greater than max={hi}")
    return {"a_min": cast(lo), "a_max": cast(hi)}


@converter("Clip", since=1, until=10)
def convert_clip_v1(ctx: Context, node: OnnxNode) -> list:
    """Bounds are attributes ``min``/``max``."""
    x = node.input(0)
    return [ctx.op("clip", [x], _clip_bounds(node, x.dtype, node.attr("min"), node.attr("max")))]


@converter("Clip", since=11)
def convert_clip_v11(ctx: Context, node: OnnxNode) -> list:
    """Bounds are optional inputs: folded into ``clip`` when known at import time,
    else applied with ``maximum``/``minimum``."""
    x = node.input(0)
    try:
        bounds = [ctx.optional_value(node, k, what) for k, what in ((1, "min"), (2, "max"))]
    except ValueError:
        y = x
        for k, op in ((1, "maximum"), (2, "minimum")):
            if node.has_input(k):
                y = ctx.op(op, [y, node.input(k)])
        return [y]
    lo, hi = (None if b is None else b.reshape(-1)[0].item() for b in bounds)
    return [ctx.op("clip", [x], _clip_bounds(node, x.dtype, lo, hi))]


@converter("Cast")
def convert_cast(ctx: Context, node: OnnxNode) -> list:
    """``cast``; ``to`` is a TensorProto type (a type name before opset 6).  From or to a
    storage-only type (bfloat16, float8, float4, 4-/2-bit integers) it is a ``narrow_cast``
    through float32; ``saturate`` (version 19, default 1) concerns float8 targets, ``round_mode``
    (version 24: ``up``, ``down``, ``nearest``) float8e8m0 targets."""
    to = node.attr("to")
    try:
        code = TensorProto.DataType.Value(to.upper()) if isinstance(to, str) else int(to)
    except (KeyError, TypeError, ValueError):
        raise node.error(f"attribute to={to!r} is not an ONNX element type") from None
    dtype = onnx_dtype(code)
    if dtype is None:
        raise node.error(f"attribute to={code} ({onnx_type_name(code)}) is a type the compiler cannot "
                         f"represent; supported: {', '.join(supported_types())}")
    return [ctx.cast(node.input(0), dtype, bool(node.attr("saturate", 1)), _round_mode(node))]


def _round_mode(node: OnnxNode) -> str:
    mode = node.attr("round_mode", "up")
    if mode not in narrow.ROUND_MODES:
        raise node.error(f"attribute round_mode={mode!r} is not one of {', '.join(narrow.ROUND_MODES)}")
    return mode


@converter("CastLike", since=15)
def convert_cast_like(ctx: Context, node: OnnxNode) -> list:
    """``Cast`` to the element type of input 1 (``target_type``, whose values are not read)."""
    like = node.input(1, "target_type")
    return [ctx.cast(node.input(0, "input"), like.dtype, bool(node.attr("saturate", 1)), _round_mode(node))]


@converter("Softsign")
def convert_softsign(ctx: Context, node: OnnxNode) -> list:
    """``x / (1 + |x|)``."""
    x = node.input(0)
    return [ctx.op("divide", [x, ctx.op("add", [ctx.op("abs", [x]), ctx.scalar(1.0, x.dtype)])])]


@converter("ThresholdedRelu", since=10)
def convert_thresholded_relu(ctx: Context, node: OnnxNode) -> list:
    """``where(x > alpha, x, 0)``."""
    x = node.input(0)
    above = ctx.op("greater", [x, ctx.scalar(float(node.attr("alpha", 1.0)), x.dtype)])
    return [ctx.op("where", [above, x, ctx.scalar(0.0, x.dtype)])]


@converter("Celu", since=12)
def convert_celu(ctx: Context, node: OnnxNode) -> list:
    """``alpha * elu(x / alpha)``."""
    x, alpha = node.input(0), float(node.attr("alpha", 1.0))
    if alpha == 1.0:
        return [ctx.op("elu", [x], {"alpha": 1.0})]
    y = ctx.op("elu", [ctx.op("multiply", [x, ctx.scalar(1.0 / alpha, x.dtype)])], {"alpha": 1.0})
    return [ctx.op("multiply", [y, ctx.scalar(alpha, x.dtype)])]


@converter("Mish", since=18)
def convert_mish(ctx: Context, node: OnnxNode) -> list:
    """``x * tanh(softplus(x))``."""
    x = node.input(0)
    return [ctx.op("multiply", [x, ctx.op("tanh", [ctx.op("softplus", [x])])])]
