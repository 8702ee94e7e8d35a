"""A hybrid script run on numpy arrays: plain Python with the dialect's names defined.

``HYBRID_GLOBALS`` maps each intrinsic to its Python twin (loops are ``range``; buffers are
numpy arrays of zeros; casts are numpy's scalar types).  :func:`run` calls the function with
its globals extended by them (a copy: the module's globals are left as they were).
"""

from __future__ import annotations

import math
import os
import types

import numpy


class bind:  # noqa: N801 (the dialect's name)
    """``for i in bind("threadIdx.x", n)`` run as ``range(n)``."""

    def __init__(self, _tag: str, ext: int):
        self.ext = ext

    def __iter__(self):
        return iter(range(int(self.ext)))


def allocate(shape, dtype: str = "float32", scope: str = "global"):  # noqa: ARG001
    """A buffer of zeros (``allocate`` and ``output_tensor``)."""
    return numpy.zeros(shape, dtype=dtype)


def popcount(x) -> int:
    """Set bits of ``x`` in its own width (two's complement for a negative one)."""
    width = numpy.asarray(x).dtype.itemsize * 8
    return bin(int(x) % (1 << width)).count("1")


def sigmoid(x):
    return 1 / (1 + numpy.exp(-x))


def _inf(dtype: str):
    return numpy.finfo(dtype).max if numpy.dtype(dtype).kind == "f" else numpy.iinfo(dtype).max


def _ninf(dtype: str):
    return numpy.finfo(dtype).min if numpy.dtype(dtype).kind == "f" else numpy.iinfo(dtype).min


HYBRID_GLOBALS = {
    "unroll": range,
    "vectorize": range,
    "parallel": range,
    "const_range": range,
    "bind": bind,
    "allocate": allocate,
    "output_tensor": allocate,
    "sqrt": numpy.sqrt,
    "rsqrt": lambda x: 1 / numpy.sqrt(x),
    "log": numpy.log,
    "exp": numpy.exp,
    "tanh": numpy.tanh,
    "erf": numpy.vectorize(math.erf),
    "floor": numpy.floor,
    "ceil": numpy.ceil,
    "power": numpy.power,
    "sigmoid": sigmoid,
    "popcount": popcount,
    "round": numpy.round,
    "likely": lambda cond: cond,
    "ceil_div": lambda a, b: (a + b - 1) // b,
    "max_num_threads": lambda allow_none=True: os.cpu_count() or 1,
    "inf": _inf,
    "ninf": _ninf,
    **{name: getattr(numpy, name) for name in (
        "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
        "float16", "float32", "float64")},
}


def run(func: types.FunctionType, args: tuple):
    """Call ``func`` on ``args`` as Python, the dialect's names defined as its globals."""
    scope = dict(func.__globals__)
    scope.update(HYBRID_GLOBALS)
    twin = types.FunctionType(func.__code__, scope, func.__name__, func.__defaults__, func.__closure__)
    return twin(*args)


__all__ = ["HYBRID_GLOBALS", "allocate", "bind", "popcount", "run", "sigmoid"]
