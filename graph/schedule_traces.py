"""A fused kernel's auto_scheduler trace: found in a build's records by its computation's digest.

``graph.build`` asks :func:`kernel_trace` for each distinct kernel; with one,
``graph.compile`` replays the trace instead of the operator's schedule and the
kernel cache keys the trace too.  ``graph.auto_schedule`` names the tasks it
extracts the same way (:func:`task_name`).
"""

from __future__ import annotations

from graph.compile import body_to_te
from tune import auto_scheduler
from tune.auto_scheduler.dispatcher import best_trace, has_traces


def kernel_dag(body, target) -> auto_scheduler.ComputeDAG:
    """The te computation of a fused kernel on ``target``."""
    with target:
        args, outs = body_to_te(body, target)
    return auto_scheduler.ComputeDAG(args + outs)


def task_name(dag) -> str:
    return f"dag_{dag.key}"


def kernel_trace(body, target, records):
    """The best auto_scheduler trace of this kernel in ``records`` (a ``tune.autotvm.Records``), or
    None: no record, or the best is the kernel's own schedule (built as it is, same code and key)."""
    if not has_traces(records):
        return None
    state = best_trace(records, target, task_name(kernel_dag(body, target)))
    return None if state is None or state.own else state.trace


__all__ = ["kernel_dag", "kernel_trace", "task_name"]
