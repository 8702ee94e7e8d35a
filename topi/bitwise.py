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

__all__ = ["bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "isfinite", "isinf", "isnan", "left_shift",
           "right_shift"]


def _check_int(name: str, *xs) -> None:
    for x in xs:
        if isinstance(x, te.Tensor) and not (dt.is_int(x.dtype) or dt.is_unsigned(x.dtype)):
            raise TypeError(f"{name}: expects integer tensors, got {x.dtype} ('{x.name}')")


def _binary(name: str, fn):
    """The broadcasting topi operator ``name`` of two integer tensors (or scalars), computed by ``fn``."""
    def op(lhs, rhs) -> te.Tensor:
        _check_int(name, lhs, rhs)
        return _apply(name, fn, lhs, rhs)

    op.__name__ = op.__qualname__ = name
    return op


bitwise_and = _binary("bitwise_and", te.bitwise_and)
bitwise_or = _binary("bitwise_or", te.bitwise_or)
bitwise_xor = _binary("bitwise_xor", te.bitwise_xor)
left_shift = _binary("left_shift", te.shift_left)
right_shift = _binary("right_shift", te.shift_right)


def bitwise_not(x: te.Tensor) -> te.Tensor:
    _check_int("bitwise_not", x)
    return te.compute(x.shape, lambda *i: te.bitwise_not(x(*i)), name="T_bitwise_not", tag=tag.ELEMWISE)


def isnan(x: te.Tensor) -> te.Tensor:
    return te.compute(x.shape, lambda *i: te.isnan(x(*i)), name="T_isnan", tag=tag.ELEMWISE)


def isfinite(x: te.Tensor) -> te.Tensor:
    """Neither NaN nor infinite (True for every integer)."""
    if not dt.is_float(x.dtype):
        return te.compute(x.shape, lambda *i: te.const(True), name="T_isfinite", tag=tag.ELEMWISE)
    inf = te.const(float("inf"), x.dtype)
    return te.compute(x.shape, lambda *i: te.abs(x(*i)) < inf, name="T_isfinite", tag=tag.ELEMWISE)


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
