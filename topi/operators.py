"""Arithmetic operators on ``te.Tensor`` (classic TVM installed them with topi).

``A + B``, ``A * 2.0``, ``-A``, ``A.astype("int8")``... on tensors build the broadcast computes of
``topi.broadcast``; ``==`` keeps its meaning (the same tensor), since
schedules use tensors as dictionary keys.
"""

from __future__ import annotations


def install_tensor_operators() -> None:
    from te.tensor import Tensor
    from topi import broadcast as B
    from topi import math as M
    from topi.transform import cast

    def swap(fn):
        return lambda a, b: fn(b, a)

    ops = {
        "__add__": B.add, "__radd__": swap(B.add),
        "__sub__": B.subtract, "__rsub__": swap(B.subtract),
        "__mul__": B.multiply, "__rmul__": swap(B.multiply),
        "__truediv__": B.divide, "__rtruediv__": swap(B.divide),
        "__floordiv__": B.floor_divide, "__rfloordiv__": swap(B.floor_divide),
        "__mod__": B.floor_mod, "__rmod__": swap(B.floor_mod),
        "__pow__": B.power, "__rpow__": swap(B.power),
        "__neg__": M.negative,
        "astype": cast,  # A.astype("int8"): an elementwise cast
    }
    for name, fn in ops.items():
        setattr(Tensor, name, fn)
