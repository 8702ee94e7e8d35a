"""Unary elementwise operators (classic ``topi.math``), all tagged ``elemwise``.

Each is ``out[i...] = f(x[i...])`` over the shape of ``x``.  Transcendental
functions of an integer tensor compute in float32 (``te.exp`` casts);
``abs``, ``negative``, ``sign``, ``identity`` and the rounding functions keep
the dtype of ``x``.  Float32 ``exp``/``tanh``/``sigmoid``/``erf`` lower to the
inline vector polynomials of ``codegen.vecmath``, so ``fast_exp`` and
``fast_tanh`` are the same as ``exp`` and ``tanh`` here.
"""

from __future__ import annotations

from collections.abc import Callable

import te
from te import dtype as dt
from te import expr as E
from topi import tag

__all__ = [
    "abs",
    "ceil",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "erf",
    "exp",
    "fast_exp",
    "fast_tanh",
    "fast_erf",
    "floor",
    "identity",
    "log",
    "log2",
    "log10",
    "negative",
    "reinterpret",
    "round",
    "rsqrt",
    "sigmoid",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
]


def _check(name: str, x) -> te.Tensor:
    if not isinstance(x, te.Tensor):
        raise TypeError(f"{name}: x must be a te.Tensor, got {type(x).__name__}")
    return x


def _elemwise(name: str, fn: Callable[[E.Expr], E.Expr], x: te.Tensor) -> te.Tensor:
    x = _check(name, x)
    return te.compute(x.shape, lambda *i: fn(x(*i)), name=f"T_{name}", tag=tag.ELEMWISE)


def _in_float32(fn: Callable[[E.Expr], E.Expr]) -> Callable[[E.Expr], E.Expr]:
    """``fn`` evaluated in float32 on float16 values and rounded once (its polynomial's
    intermediate terms overflow float16)."""

    def wide(v: E.Expr) -> E.Expr:
        return fn(v.astype("float32")).astype("float16") if v.dtype == "float16" else fn(v)

    return wide


def _unary(name: str, fn: Callable[[E.Expr], E.Expr], what: str):
    def op(x: te.Tensor) -> te.Tensor:
        return _elemwise(name, fn, x)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"""{what}, elementwise.

    Parameters
    ----------
    x : te.Tensor

    Returns
    -------
    te.Tensor
        Of the shape of ``x``, tagged ``elemwise``.
    """
    return op


def _rounding(fn_name: str):
    """Rounding keeps integers as they are (numpy does too)."""
    intrin = getattr(te, fn_name)
    return lambda v: intrin(v) if dt.is_float(v.dtype) else v


def _sign(v: E.Expr) -> E.Expr:
    if dt.is_bool(v.dtype):
        return v
    one, zero = te.const(1, v.dtype), te.const(0, v.dtype)
    neg = te.const(-1, v.dtype) if not dt.is_unsigned(v.dtype) else zero
    return te.if_then_else(v > zero, one, te.if_then_else(v < zero, neg, zero))


exp = _unary("exp", te.exp, "``e ** x``")
log = _unary("log", te.log, "Natural logarithm")
log2 = _unary("log2", te.log2, "Base-2 logarithm")
log10 = _unary("log10", te.log10, "Base-10 logarithm")
sqrt = _unary("sqrt", te.sqrt, "Square root")
rsqrt = _unary("rsqrt", te.rsqrt, "``1 / sqrt(x)``")
tanh = _unary("tanh", te.tanh, "Hyperbolic tangent")
sigmoid = _unary("sigmoid", te.sigmoid, "``1 / (1 + exp(-x))``")
erf = _unary("erf", _in_float32(te.erf), "The error function")
abs = _unary("abs", te.abs, "Absolute value")
negative = _unary("negative", lambda v: -v, "``-x``")
floor = _unary("floor", _rounding("floor"), "Round towards minus infinity")
ceil = _unary("ceil", _rounding("ceil"), "Round towards plus infinity")
round = _unary("round", _rounding("round"), "Round half to even (numpy ``round``)")
trunc = _unary("trunc", _rounding("trunc"), "Round towards zero")
sign = _unary("sign", _sign, "``-1``, ``0`` or ``1`` by the sign of ``x``")
sin = _unary("sin", te.sin, "Sine")
cos = _unary("cos", te.cos, "Cosine")
fast_exp = _unary("fast_exp", te.exp, "``e ** x`` by a vector polynomial (same as ``exp``)")
fast_tanh = _unary("fast_tanh", te.tanh, "Hyperbolic tangent by a vector polynomial")
fast_erf = _unary("fast_erf", _in_float32(te.erf), "The error function by a vector polynomial (same as ``erf``)")
identity = _unary("identity", lambda v: v, "A copy of ``x``")
tan = _unary("tan", te.tan, "Tangent")
asin = _unary("asin", te.asin, "Inverse sine")
acos = _unary("acos", te.acos, "Inverse cosine")
atan = _unary("atan", te.atan, "Inverse tangent")
sinh = _unary("sinh", te.sinh, "Hyperbolic sine")
cosh = _unary("cosh", te.cosh, "Hyperbolic cosine")
asinh = _unary("asinh", lambda v: te.log(v + te.sqrt(v * v + 1.0)), "Inverse hyperbolic sine, "
               "``log(x + sqrt(x * x + 1))``")
acosh = _unary("acosh", lambda v: te.log(v + te.sqrt(v * v - 1.0)), "Inverse hyperbolic cosine, "
               "``log(x + sqrt(x * x - 1))``")
atanh = _unary("atanh", lambda v: te.log((1.0 + v) / (1.0 - v)) * 0.5, "Inverse hyperbolic tangent, "
               "``log((1 + x) / (1 - x)) / 2``")


def reinterpret(x: te.Tensor, dtype: str) -> te.Tensor:
    """``x``'s bits read as ``dtype`` of the same width, elementwise (numpy ``x.view(dtype)``;
    LLVM ``bitcast``): ``reinterpret(x, "int32")`` of float32 ``x`` is its IEEE-754 bits."""
    x = _check("reinterpret", x)
    if dt.bits(dt.normalize(dtype)) != dt.bits(x.dtype):
        raise ValueError(f"reinterpret: {x.dtype} and {dtype} must have the same bit width")
    return te.compute(x.shape, lambda *i: te.reinterpret(dtype, x(*i)), name="T_reinterpret", tag=tag.ELEMWISE)
