"""Activation functions (classic ``topi.nn.elemwise``), all tagged ``elemwise``
(``prelu``: ``broadcast``, its slope is read along one axis).

Each is ``out[i...] = f(x[i...])`` over the shape of ``x``; constants are made
in the dtype of ``x``.
"""

from __future__ import annotations

import math

import te
from te import expr as E
from topi import tag
from topi.utils import get_const_tuple

__all__ = ["clip", "elu", "gelu", "leaky_relu", "prelu", "relu", "selu"]

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def _check(op: str, x) -> te.Tensor:
    if not isinstance(x, te.Tensor):
        raise TypeError(f"{op}: x must be a te.Tensor, got {type(x).__name__}")
    return x


def _elemwise(op: str, x: te.Tensor, fn) -> te.Tensor:
    x = _check(op, x)
    return te.compute(x.shape, lambda *i: fn(x(*i)), name=f"T_{op}", tag=tag.ELEMWISE)


def _c(value, like: E.Expr) -> E.Expr:
    return te.const(value, like.dtype)


def relu(x: te.Tensor) -> te.Tensor:
    """``max(x, 0)``."""
    return _elemwise("relu", x, lambda v: E.binary_op(E.Max, v, _c(0, v)))


def leaky_relu(x: te.Tensor, alpha: float) -> te.Tensor:
    """``x`` where positive, else ``alpha * x``."""
    return _elemwise("leaky_relu", x, lambda v: te.if_then_else(v > _c(0, v), v, v * _c(alpha, v)))


def prelu(x: te.Tensor, slope: te.Tensor, axis: int = 1) -> te.Tensor:
    """``x`` where positive, else ``slope[c] * x`` with ``c`` the index on ``axis``.

    Parameters
    ----------
    x : te.Tensor
    slope : te.Tensor
        1-D, of extent ``x.shape[axis]``.
    axis : int
        The channel axis of ``x`` (negative counts from the end).
    """
    x = _check("prelu", x)
    shape, sshape = get_const_tuple(x.shape), get_const_tuple(_check("prelu", slope).shape)
    if not isinstance(axis, int) or not -len(shape) <= axis < len(shape):
        raise ValueError(f"prelu: axis={axis} is out of range for x of shape {shape}")
    axis %= len(shape)
    if len(sshape) != 1 or sshape[0] != shape[axis]:
        raise ValueError(f"prelu: slope of shape {sshape} must be ({shape[axis]},), "
                         f"the extent of axis {axis} of x of shape {shape}")

    def body(*i):
        v = x(*i)
        return te.if_then_else(v > _c(0, v), v, v * slope(i[axis]))

    return te.compute(x.shape, body, name="T_prelu", tag=tag.BROADCAST)


def elu(x: te.Tensor, alpha: float = 1.0) -> te.Tensor:
    """``x`` where positive, else ``alpha * (exp(x) - 1)``."""
    return _elemwise("elu", x, lambda v: te.if_then_else(
        v > _c(0, v), v, _c(alpha, v) * (te.exp(v) - _c(1, v))))


def selu(x: te.Tensor) -> te.Tensor:
    """``scale * elu(x, alpha)`` with the self-normalising constants of Klambauer et al."""
    return _elemwise("selu", x, lambda v: _c(SELU_SCALE, v) * te.if_then_else(
        v > _c(0, v), v, _c(SELU_ALPHA, v) * (te.exp(v) - _c(1, v))))


def gelu(x: te.Tensor) -> te.Tensor:
    """``x * (1 + erf(x / sqrt(2))) / 2`` (the exact, erf form)."""
    return _elemwise("gelu", x, lambda v: v * _c(0.5, v) * (
        _c(1, v) + te.erf(v * _c(1 / math.sqrt(2.0), v))))


def clip(x: te.Tensor, a_min, a_max) -> te.Tensor:
    """``min(max(x, a_min), a_max)`` (bounds numbers or constant expressions, cast to ``x``'s dtype);
    ``ValueError`` if ``a_min > a_max``."""
    a_min, a_max = (v.value if isinstance(v, (E.IntImm, E.FloatImm)) else v for v in (a_min, a_max))
    if a_min > a_max:
        raise ValueError(f"clip: a_min={a_min} is greater than a_max={a_max}")
    return _elemwise("clip", x, lambda v: E.binary_op(
        E.Min, E.binary_op(E.Max, v, _c(a_min, v)), _c(a_max, v)))
