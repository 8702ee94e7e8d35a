"""Math intrinsics and conditional helpers (``te.exp``, ``te.if_then_else``...)."""

from __future__ import annotations

from functools import reduce as _fold

import numpy as np

from te import dtype as dt
from te import expr as E

FLOAT_UNARY = (
    "exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt",
    "tanh", "sigmoid", "erf", "floor", "ceil", "round", "trunc", "nearbyint",
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
)


def _float_arg(x) -> E.Expr:
    x = E.as_expr(x)
    if not dt.is_float(x.dtype):
        x = E.cast(x, "float32")
    return x


def _unary(name: str):
    def f(x):
        x = _float_arg(x)
        return E.Call(name, (x,), x.dtype)

    f.__name__ = name
    f.__doc__ = f"Elementwise ``{name}`` of a float expression (ints are cast to float32)."
    return f


for _n in FLOAT_UNARY:
    globals()[_n] = _unary(_n)


def abs(x) -> E.Expr:  # noqa: A001
    x = E.as_expr(x)
    if dt.is_unsigned(x.dtype) or dt.is_bool(x.dtype):
        return x
    return E.Call("fabs" if dt.is_float(x.dtype) else "abs", (x,), x.dtype)


def isnan(x) -> E.Expr:
    x = E.as_expr(x)
    if not dt.is_float(x.dtype):
        return E.const(False)
    return E.Call("isnan", (x,), "bool")  # a named call as classic TVM's tir.isnan (codegen: fcmp uno)


def _integer_args(name: str, *args) -> tuple:
    args = E._pair(*args) if len(args) == 2 else (E.as_expr(args[0]),)
    if [a.dtype for a in args if not (dt.is_int(a.dtype) or dt.is_unsigned(a.dtype))]:
        raise TypeError(f"{name}: expects integer operands, got {[a.dtype for a in args]}")
    return args


def _integer_call(name: str, arity: int, doc: str | None = None):
    """The te function ``name`` of ``arity`` integer operands: a call of the integer's own type."""
    def op(*args) -> E.Expr:
        if len(args) != arity:
            raise TypeError(f"{name}: takes {arity} operand(s), got {len(args)}")
        xs = _integer_args(name, *args)
        return E.Call(name, tuple(xs), xs[0].dtype)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


bitwise_and = _integer_call("bitwise_and", 2, "``x & y`` of integers (classic ``tir.bitwise_and``).")
bitwise_or = _integer_call("bitwise_or", 2, "``x | y`` of integers.")
bitwise_xor = _integer_call("bitwise_xor", 2, "``x ^ y`` of integers.")
bitwise_not = _integer_call("bitwise_not", 1, "``~x`` of an integer.")
shift_left = _integer_call("shift_left", 2, "``x << y`` (0 when ``y`` is the bit width or more).")
shift_right = _integer_call("shift_right", 2, "``x >> y``: logical for unsigned ``x``, arithmetic for signed "
                                              "(0 past the width).")
popcount = _integer_call("popcount", 1, "The number of set bits of an integer (``llvm.ctpop``).")


def reinterpret(dtype: str, value) -> E.Expr:
    """``value``'s bits read as ``dtype`` of the same width (classic TVM's ``tir.reinterpret``;
    LLVM ``bitcast``): ``reinterpret("uint32", x)`` of a float32 ``x`` is its IEEE bits."""
    value = E.as_expr(value)
    dtype = dt.normalize(dtype)
    if dt.bits(dtype) != dt.bits(value.dtype) or dt.is_bool(dtype) or dt.is_bool(value.dtype):
        raise ValueError(f"reinterpret: {value.dtype} and {dtype} must have the same bit width "
                         f"(and not be bool), e.g. float32 <-> uint32 or int32")
    if dt.lanes(dtype) != dt.lanes(value.dtype):
        raise ValueError(f"reinterpret: {value.dtype} and {dtype} have different lane counts")
    return value if dtype == value.dtype else E.Call("reinterpret", (value,), dtype)


def power(x, y) -> E.Expr:
    x, y = E._pair(x, y)
    if not dt.is_float(x.dtype):
        x, y = E.cast(x, "float32"), E.cast(y, "float32")
    return E.Call("pow", (x, y), x.dtype)


pow = power  # noqa: A001


def fmod(x, y) -> E.Expr:
    x, y = E._pair(x, y)
    if not dt.is_float(x.dtype):
        return E.binary_op(E.Mod, x, y)
    return E.Call("fmod", (x, y), x.dtype)


def fma(a, b, c) -> E.Expr:
    return a * b + c


def floordiv(a, b) -> E.Expr:
    return E.binary_op(E.FloorDiv, a, b)


def floormod(a, b) -> E.Expr:
    return E.binary_op(E.FloorMod, a, b)


def truncdiv(a, b) -> E.Expr:
    return E.binary_op(E.Div, a, b)


def truncmod(a, b) -> E.Expr:
    return E.binary_op(E.Mod, a, b)


def indexdiv(a, b) -> E.Expr:
    return floordiv(a, b)


def indexmod(a, b) -> E.Expr:
    return floormod(a, b)


def if_then_else(cond, t, f) -> E.Expr:
    """``cond ? t : f`` (TVM's ``te.if_then_else``)."""
    cond = E.as_bool(cond)
    t, f = E._pair(t, f)
    return E.Select(cond, t, f, t.dtype)


def all(*conds) -> E.Expr:  # noqa: A001
    """Logical and of conditions (``te.all(i > 0, j < n)``)."""
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return E.const(True)
    return _fold(lambda a, b: E.binary_op(E.And, a, b), [E.as_bool(c) for c in conds])


def any(*conds) -> E.Expr:  # noqa: A001
    if len(conds) == 1 and isinstance(conds[0], (list, tuple)):
        conds = tuple(conds[0])
    if not conds:
        return E.const(False)
    return _fold(lambda a, b: E.binary_op(E.Or, a, b), [E.as_bool(c) for c in conds])


def max_value(dtype: str) -> E.Expr:
    """The largest finite value of ``dtype`` (as classic TVM and Halide)."""
    dtype = dt.normalize(dtype)
    if dt.is_float(dtype):
        return E.FloatImm(float(np.finfo(dtype).max), dtype)
    if dt.is_bool(dtype):
        return E.IntImm(1, dtype)
    return E.IntImm(int(np.iinfo(dtype).max), dtype)


def min_value(dtype: str) -> E.Expr:
    dtype = dt.normalize(dtype)
    if dt.is_float(dtype):
        return E.FloatImm(float(np.finfo(dtype).min), dtype)
    if dt.is_bool(dtype):
        return E.IntImm(0, dtype)
    return E.IntImm(int(np.iinfo(dtype).min), dtype)
