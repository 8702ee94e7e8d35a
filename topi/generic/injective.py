"""Fallback schedules for injective operators: correct for anything, no tuning.

The schedule inlines every injective intermediate into its consumer
(``traverse_inline``) and leaves the output loop nests as ``compute`` wrote
them::

    T_add = A + B;  T_relu = max(T_add, 0)    ->   for (i, 0, n) {
                                                      for (j, 0, m) {
                                                        T_relu[i, j] = max(A[i, j] + B[i, j], 0)
"""

from __future__ import annotations

import te
from topi.utils import traverse_inline

__all__ = ["schedule_broadcast", "schedule_concatenate", "schedule_elemwise", "schedule_injective"]


def as_tensor_list(outs) -> list:
    """``outs`` (a tensor or a list of tensors) as a list; ``TypeError`` otherwise."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    for k, t in enumerate(outs):
        if not isinstance(t, te.Tensor):
            raise TypeError(f"schedule: outs[{k}] must be a te.Tensor, got {type(t).__name__}")
    return outs


def inlined_schedule(outs):
    """``(schedule, outs)`` for ``outs`` with every injective intermediate inlined."""
    outs = as_tensor_list(outs)
    s = te.create_schedule([t.op for t in outs])
    for t in outs:
        traverse_inline(s, t.op, lambda op: None)
    return s, outs


def schedule_injective(outs):
    """A schedule for ``outs`` with every injective intermediate inlined.

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        The outputs of the operator (or of a fused group of injective ops).

    Returns
    -------
    schedule.Schedule
    """
    return inlined_schedule(outs)[0]


def schedule_elemwise(outs):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs)


def schedule_broadcast(outs):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs)


def schedule_concatenate(outs):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs)
