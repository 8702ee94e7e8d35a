"""``argwhere``: the coordinates of the nonzero elements of a tensor, in row-major order.

The number of nonzeros is data-dependent, so classic topi takes it as the first dimension
of an ``output_shape`` tensor (the graph layer's shape function computes it); the compute
is one sequential pass over the flattened condition, a hybrid script::

    k = 0
    for f in range(size):                   # row-major order
        if cond[f] != 0 and k < rows:       # rows beyond output_shape are dropped
            out[k, d] = (f // stride[d]) % dim[d]   for each axis d
            k += 1

Rows of ``out`` past the number of nonzeros are left as they were.
"""

from __future__ import annotations

import math

import te
from schedule.hybrid import script
from topi.transform import reshape
from topi.utils import get_const_tuple, shape_str


@script
def _argwhere(output_shape, flat, strides, dims):
    out = output_tensor((output_shape.shape[0], strides.shape[0]), "int32")  # noqa: F821 (hybrid)
    k = 0
    for f in range(flat.shape[0]):
        if flat[f] != 0:
            if k < out.shape[0]:
                for d in range(strides.shape[0]):
                    out[k, d] = (f // strides[d]) % dims[d]
                k += 1
    return out


def _table(values: list, name: str) -> te.Tensor:
    def body(d):
        v = te.const(values[-1], "int32")
        for i in range(len(values) - 2, -1, -1):
            v = te.if_then_else(d == i, te.const(values[i], "int32"), v)
        return v

    return te.compute((len(values),), body, name=name)


def argwhere(output_shape: te.Tensor, condition: te.Tensor) -> te.Tensor:
    """``[rows, ndim]`` int32 coordinates of the nonzeros of ``condition`` (``rows`` from
    ``output_shape.shape[0]``)."""
    shape = get_const_tuple(condition.shape)
    if not shape or not all(isinstance(d, int) for d in shape):
        raise ValueError(f"argwhere: condition must have a static shape of rank >= 1, got {shape_str(condition)}")
    if len(output_shape.shape) != 2 or get_const_tuple(output_shape.shape)[1] != len(shape):
        raise ValueError(f"argwhere: output_shape must be [rows, {len(shape)}], got {shape_str(output_shape)}")
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    flat = reshape(condition, (math.prod(shape),)) if len(shape) > 1 else condition
    return _argwhere(output_shape, flat, _table(strides, "argwhere_strides"), _table(list(shape), "argwhere_dims"))
