"""Fallback schedule for reductions: correct for anything, no tuning.

Injective producers of the reduction (``exp`` in ``sum(exp(x))``) are inlined
into it, injective consumers (the division of ``mean``) into the outputs; the
reduction stays a root stage with its loops in ``compute`` order.
"""

from __future__ import annotations

from topi.generic.injective import inlined_schedule

__all__ = ["schedule_reduce"]


def schedule_reduce(outs):
    """A schedule for reduction outputs ``outs`` with injective stages inlined.

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor

    Returns
    -------
    schedule.Schedule
    """
    return inlined_schedule(outs)[0]
