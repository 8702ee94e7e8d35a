"""Elementwise graph operators beyond ``elemwise``: inverse trigonometric and hyperbolic
functions, NaN/infinity tests, bitwise operators and shifts, C's ``fmod``.

Each is one topi compute (``topi.math``, ``topi.bitwise``) with its numpy twin;
the float tests give bool, the bitwise operators keep the integer type.
"""

from __future__ import annotations

import numpy as np

import te
import topi
from graph.ops.elemwise import _binary, _broadcast_types, _unary
from graph.ops.registry import BROADCAST, ELEMWISE, injective_schedule, register


def _np_float(fn):
    return lambda x, a: fn(x).astype(x.dtype)


for _name, _np in (("tan", np.tan), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
                   ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh), ("acosh", np.arccosh),
                   ("atanh", np.arctanh)):
    _unary(_name, (lambda f: lambda x, a: f(x))(getattr(topi, _name)), _np_float(_np))


def _bool_same(values, attrs):
    return [(values[0].shape, "bool")]


register("isnan", lambda xs, a: [topi.bitwise.isnan(xs[0])], ELEMWISE, injective_schedule, _bool_same,
         lambda xs, a: [np.isnan(xs[0])])


def _np_isinf(x, a):
    pos, neg = a.get("detect_positive", True), a.get("detect_negative", True)
    return (np.isposinf(x) & pos) | (np.isneginf(x) & neg)


register("isinf", lambda xs, a: [topi.bitwise.isinf(xs[0], a.get("detect_positive", True),
                                                     a.get("detect_negative", True))],
         ELEMWISE, injective_schedule, _bool_same, lambda xs, a: [_np_isinf(xs[0], a)],
         doc="attrs detect_positive, detect_negative (ONNX IsInf)")


def _np_shift(fn):
    """numpy's shift with the amount read as unsigned: past the width, 0 (or the sign, for an
    arithmetic right shift), as ``topi.bitwise``."""

    def shift(x, y):
        bits = np.iinfo(x.dtype).bits
        amount = y.astype(x.dtype).astype(f"uint{bits}")
        out = fn(x, np.minimum(amount, bits - 1).astype(x.dtype))
        if fn is np.right_shift and x.dtype.kind == "i":
            return out
        return np.where(amount >= bits, 0, out).astype(x.dtype)

    return shift


_binary("bitwise_and", topi.bitwise.bitwise_and, np.bitwise_and)
_binary("bitwise_or", topi.bitwise.bitwise_or, np.bitwise_or)
_binary("bitwise_xor", topi.bitwise.bitwise_xor, np.bitwise_xor)
_binary("left_shift", topi.bitwise.left_shift, _np_shift(np.left_shift))
_binary("right_shift", topi.bitwise.right_shift, _np_shift(np.right_shift))
_unary("bitwise_not", lambda x, a: topi.bitwise.bitwise_not(x), lambda x, a: np.invert(x))


def _fmod(x, y):
    return topi.broadcast._apply("fmod", lambda u, v: te.fmod(u, v) if u.dtype.startswith("float")
                                 else te.truncmod(u, v), x, y)


_binary("fmod", _fmod, lambda a, b: np.fmod(a, b), _broadcast_types)


def _float_floor_mod_expr(u, v):
    """``x - floor(x / y) * y`` as C's fmod corrected to the divisor's sign: exact, and the
    special cases of ONNX Mod (an infinite divisor keeps a finite dividend of its sign)."""
    r = te.fmod(u, v)
    zero = te.const(0, u.dtype)
    flip = te.all(r != zero, (r < zero) != (v < zero))
    return te.if_then_else(flip, r + v, r)


register("floor_mod_float", lambda xs, a: [topi.broadcast._apply("floor_mod_float", _float_floor_mod_expr,
                                                                  xs[0], xs[1])],
         BROADCAST, injective_schedule, _broadcast_types, lambda xs, a: [np.mod(xs[0], xs[1])],
         doc="floating-point Python/numpy modulo (the sign of the divisor)")


def _bitcast_compute(xs, a):
    x, dtype = xs[0], a["dtype"]
    if x.dtype == "bool" or dtype == "bool":  # one byte, 0 or 1: the bits are the value
        return [te.compute(x.shape, lambda *i: x(*i).astype(dtype), name="T_bitcast", tag=topi.tag.ELEMWISE)]
    return [te.compute(x.shape, lambda *i: te.reinterpret(dtype, x(*i)), name="T_bitcast", tag=topi.tag.ELEMWISE)]


register("bitcast", _bitcast_compute, ELEMWISE, injective_schedule,
         lambda values, a: [(values[0].shape, a["dtype"])], lambda xs, a: [xs[0].view(a["dtype"])],
         doc="attrs dtype: the same bits read as another type of the same width (ONNX BitCast)")
