"""Whole-tensor builders: ``elemwise_sum``, ``full``, ``full_like`` (classic ``topi.tensor``)."""

from __future__ import annotations

import te
from topi import tag
from topi.utils import shape_str


def elemwise_sum(xs: list) -> te.Tensor:
    """The elementwise sum of tensors of one shape and dtype (one ``elemwise`` stage)."""
    if not xs:
        raise ValueError("elemwise_sum: needs at least one tensor")
    shape, dtype = tuple(xs[0].shape), xs[0].dtype
    for t in xs[1:]:
        if len(t.shape) != len(shape) or t.dtype != dtype:
            raise ValueError(f"elemwise_sum: {shape_str(t)} does not match {shape_str(xs[0])}")

    def body(*i):
        total = xs[0](*i)
        for t in xs[1:]:
            total = total + t(*i)
        return total

    return te.compute(shape, body, name="elemwise_sum", tag=tag.ELEMWISE)


def full(shape, dtype: str, fill_value) -> te.Tensor:
    """A tensor of ``shape`` filled with ``fill_value`` (as ``dtype``)."""
    value = te.const(fill_value, dtype)
    return te.compute(tuple(shape), lambda *i: value, name="full", tag=tag.ELEMWISE)


def full_like(x: te.Tensor, fill_value) -> te.Tensor:
    """A tensor of ``x``'s shape and dtype filled with ``fill_value``."""
    value = te.const(fill_value, x.dtype)
    return te.compute(x.shape, lambda *i: value, name="full_like", tag=tag.ELEMWISE)
