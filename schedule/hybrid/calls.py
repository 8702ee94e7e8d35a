"""The intrinsics a hybrid script may call, as the parser lowers them.

Each takes the parsed arguments (expressions, Python numbers, tensors) and returns an
expression.  The loop intrinsics (``range``, ``parallel``...), ``allocate`` and
``output_tensor`` are statements and live in the parser; their Python twins, for a script
run on numpy arrays, are in :mod:`schedule.hybrid.runtime`.
"""

from __future__ import annotations

import os

import te
from te import dtype as dt
from te import expr as E
from te import intrin

MATH = ("sqrt", "rsqrt", "log", "exp", "tanh", "sigmoid", "round", "floor", "ceil", "erf")
CASTS = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
         "uint32", "uint64", "bool")


def _expr_args(name: str, args: list, count: int) -> list:
    if len(args) != count:
        raise TypeError(f"{name}() takes {count} argument{'s' * (count != 1)}, got {len(args)}")
    return [E.as_expr(a) if not isinstance(a, E.Expr) else a for a in args]


def _min_max(name: str, args: list):
    if len(args) != 2:
        raise TypeError(f"{name}() takes 2 arguments, got {len(args)}")
    a, b = args
    if not isinstance(a, E.Expr) and not isinstance(b, E.Expr):
        return min(a, b) if name == "min" else max(a, b)
    return E.binary_op(E.Min if name == "min" else E.Max, a, b)


def _len(name: str, args: list):
    (x,) = args
    if isinstance(x, te.Tensor):
        if len(x.shape) != 1:
            raise TypeError(f"len() of tensor '{x.name}' of {len(x.shape)} dimensions; use "
                            f"{x.name}.shape[0]")
        return x.shape[0]
    return len(x)


def _ceil_div(name: str, args: list):
    a, b = args
    return (a + b - 1) // b


def _likely(name: str, args: list):
    return E.likely(*_expr_args(name, args, 1))


def _power(name: str, args: list):
    return intrin.power(*_expr_args(name, args, 2))


def _popcount(name: str, args: list):
    return intrin.popcount(*_expr_args(name, args, 1))


def _inf(name: str, args: list):
    (dtype,) = args
    return intrin.max_value(dtype) if name == "inf" else intrin.min_value(dtype)


def _max_num_threads(name: str, args: list):
    """The most threads that run together: the CPU's (classic TVM: a GPU block's)."""
    return os.cpu_count() or 1


def _math(name: str, args: list):
    return getattr(intrin, name)(*_expr_args(name, args, 1))


def _cast(name: str, args: list):
    (x,) = _expr_args(name, args, 1)
    return E.cast(x, name)


def table() -> dict:
    """Intrinsic name -> handler ``(name, args) -> value``."""
    out = {n: _math for n in MATH}
    out.update({n: _cast for n in CASTS})
    out.update(min=_min_max, max=_min_max, len=_len, ceil_div=_ceil_div, likely=_likely,
               power=_power, popcount=_popcount, inf=_inf, ninf=_inf,
               max_num_threads=_max_num_threads)
    return out


INTRINSIC_NAMES = tuple(table())


def dtype_of(value) -> str:
    """The dtype a Python number takes in a script (int32, float32, bool), as classic TVM's."""
    if isinstance(value, E.Expr):
        return value.dtype
    if isinstance(value, bool):
        return "bool"
    return "int32" if isinstance(value, int) else "float32"


def is_int(x) -> bool:
    return isinstance(x, int) or (isinstance(x, E.Expr) and dt.is_int(x.dtype))


__all__ = ["CASTS", "INTRINSIC_NAMES", "MATH", "dtype_of", "is_int", "table"]
