"""Inline every unscheduled intermediate stage of a kind (classic TVM's ``AutoInline*``).

A stage qualifies when it is a compute without reduction, is not an output and no
primitive has touched it (``Stage.is_scheduled``)::

    T1[i, j] = A[i, j] * B[i, j]          auto_inline_elemwise        T2[i, j] = A[i, j] * B[i, j] + C[i, j]
    T2[i, j] = T1[i, j] + C[i, j]                  ->

``elemwise``: the stage reads every tensor at exactly its own axes, in order;
``broadcast``: its tag is ``"broadcast"`` (topi's broadcast computes);
``injective``: any compute without reduction.
"""

from __future__ import annotations

from te.tensor import ComputeOp
from te.visitor import collect_reads


def is_elemwise(op) -> bool:
    """A compute without reduction reading every tensor at its own axes, in order."""
    if not is_injective(op):
        return False
    axes = [iv.var for iv in op.axis]
    for b in op.body:
        for read in collect_reads(b):
            if len(read.indices) != len(axes) or any(i is not v for i, v in zip(read.indices, axes)):
                return False
    return True


def is_broadcast(op) -> bool:
    return is_injective(op) and op.tag == "broadcast"


def is_injective(op) -> bool:
    return isinstance(op, ComputeOp) and not op.reduce_axis


def _inline_where(sch, qualifies) -> None:
    for st in sch.stages:
        if not st.is_output and not st.is_scheduled() and qualifies(st.op):
            st.compute_inline()


def auto_inline_elemwise(sch) -> None:
    """Inline the unscheduled elementwise intermediates of ``sch``."""
    _inline_where(sch, is_elemwise)


def auto_inline_broadcast(sch) -> None:
    """Inline the unscheduled broadcast-tagged intermediates of ``sch``."""
    _inline_where(sch, is_broadcast)


def auto_inline_injective(sch) -> None:
    """Inline every unscheduled intermediate compute without reduction."""
    _inline_where(sch, is_injective)


__all__ = ["auto_inline_broadcast", "auto_inline_elemwise", "auto_inline_injective", "is_broadcast",
           "is_elemwise", "is_injective"]
