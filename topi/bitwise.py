"""Bitwise operators of integer tensors and the float classification tests.

``bitwise_and/or/xor`` and ``left_shift/right_shift`` broadcast as numpy does
(``topi.broadcast``); a shift by the bit width or more gives 0, and
``right_shift`` of an unsigned type is logical.  ``isnan``/``isinf`` give bool
tensors (an integer tensor is never NaN nor infinite).  Each matches its numpy
function (``np.bitwise_and``, ``np.left_shift``, ``np.isnan``...) on the same
operands, but for shifts past the width, which numpy leaves to the machine.
"""

from __future__ import annotations

import te
from te import dtype as dt
from topi import tag
from topi.broadcast import _apply

__all__ = ["bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "isinf", "isnan", "left_shift",
           "right_shift"]


def _check_int(name: str, *xs) -> None:
    for x in xs:
        if isinstance(x, te.Tensor) and not (dt.is_int(x.dtype) or dt.is_unsigned(x.dtype)):
            raise TypeError(f"{name}: expects integer tensors, got {x.dtype} ('{x.name}')")


def bitwise_and(lhs, rhs) -> te.Tensor:
    _check_int("bitwise_and", lhs, rhs)
    return _apply("bitwise_and", te.bitwise_and, lhs, rhs)


def bitwise_or(lhs, rhs) -> te.Tensor:
    _check_int("bitwise_or", lhs, rhs)
    return _apply("bitwise_or", te.bitwise_or, lhs, rhs)


def bitwise_xor(lhs, rhs) -> te.Tensor:
    _check_int("bitwise_xor", lhs, rhs)
    return _apply("bitwise_xor", te.bitwise_xor, lhs, rhs)


def left_shift(lhs, rhs) -> te.Tensor:
    _check_int("left_shift", lhs, rhs)
    return _apply("left_shift", te.shift_left, lhs, rhs)


def right_shift(lhs, rhs) -> te.Tensor:
    _check_int("right_shift", lhs, rhs)
    return _apply("right_shift", te.shift_right, lhs, rhs)


def bitwise_not(x: te.Tensor) -> te.Tensor:
    _check_int("bitwise_not", x)
    return te.compute(x.shape, lambda *i: te.bitwise_not(x(*i)), name="T_bitwise_not", tag=tag.ELEMWISE)


def isnan(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: te.isnan(x(*i)), name="T_isnan", tag=tag.ELEMWISE)


def isinf(x: te.Tensor, detect_positive: bool = True, detect_negative: bool = True) -> te.Tensor:
    """``x == +inf`` (``detect_positive``) or ``x == -inf`` (``detect_negative``)."""
    if not dt.is_float(x.dtype):
        return te.compute(x.shape, lambda *i: te.const(False), name="T_isinf", tag=tag.ELEMWISE)

    def body(*i):
        v = x(*i)
        hits = []
        if detect_positive:
            hits.append(v == te.const(float("inf"), x.dtype))
        if detect_negative:
            hits.append(v == te.const(float("-inf"), x.dtype))
        return te.any(*hits) if hits else te.const(False)

    return te.compute(x.shape, body, name="T_isinf", tag=tag.ELEMWISE)
