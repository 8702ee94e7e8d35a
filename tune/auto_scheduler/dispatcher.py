"""Whole programs: ``extract_tasks`` (through the extractor the graph layer registers) and
``ApplyHistoryBest`` (the trace a build compiles each kernel with).

``tune`` imports no graph: ``import graph`` registers an extractor that turns a
``graph.Graph`` or an ONNX model into its fused kernels' tasks, and the graph
build asks :func:`best_trace` of the records it was given (or of the user's
``with ApplyHistoryBest(log):``, read once at ``graph.build``) for each
kernel's trace; a kernel without a record keeps its template's or default
schedule.
"""

from __future__ import annotations

import logging

from tune.autotvm.history import ApplyHistoryBest as _Records
from tune.errors import TuneError
from tune.record import target_key
from tune.auto_scheduler.search_task import State

logger = logging.getLogger("auto_scheduler")
_EXTRACTORS: list = []


def register_extractor(fn) -> None:
    """Register ``fn(program, params, target, options) -> (tasks, weights) | None``."""
    if fn not in _EXTRACTORS:
        _EXTRACTORS.append(fn)


def extract_tasks(program, params=None, target="llvm", target_host=None, hardware_params=None,
                  include_simple_tasks=True, dump_workload_to_dag_log=None, opt_level=3,
                  other_targets=None, options=None) -> tuple:
    """``(tasks, weights)``: one ``SearchTask`` per distinct fused kernel of ``program`` (a
    ``graph.Graph`` or an ONNX ``ModelProto``), its weight the kernel's calls per run."""
    for fn in reversed(_EXTRACTORS):
        got = fn(program, params, target, options)
        if got is not None:
            return got
    raise TuneError(f"extract_tasks: no extractor knows a {type(program).__name__}; pass a graph.Graph or an "
                    f"onnx ModelProto after 'import graph' (which registers one)")


class ApplyHistoryBest(_Records):
    """``with ApplyHistoryBest(log): graph.build(...)`` compiles each kernel that has a record with its
    best trace (classic ``auto_scheduler.ApplyHistoryBest``); the AutoTVM records of a mixed log
    apply to their templates as under ``autotvm.apply_history_best``."""

    def __init__(self, records, n_lines=None, include_compatible=False):
        super().__init__(records)
        traces = [(k, rows) for k, rows in self.ranked.items() if isinstance(rows[0][0].config, State)]
        if not traces and self.ranked:
            logger.warning("ApplyHistoryBest: %s holds no auto_scheduler record", records)


def has_traces(records) -> bool:
    """Whether a ``tune.autotvm.Records`` holds any auto_scheduler record (a build's fast path)."""
    return any(isinstance(rows[0][0].config, State)
               for ctx in records.contexts for rows in getattr(ctx, "ranked", {}).values() if rows)


def best_trace(records, target, name: str) -> State | None:
    """The best trace of task ``name`` on ``target`` in the innermost records context that has one;
    records of the same task on another target are never applied (a warning says so)."""
    key, elsewhere = (target_key(target), (name,)), False
    for ctx in records.contexts:
        hit = getattr(ctx, "best", {}).get(key)
        if hit is not None and isinstance(hit[0].config, State):
            return hit[0].config
        elsewhere = elsewhere or any(wl == (name,) for _, wl in getattr(ctx, "best", {}))
    if elsewhere:
        logger.warning("auto_scheduler records of %s exist only for other targets than %s; not applied",
                       name, key[0])
    return None


__all__ = ["ApplyHistoryBest", "best_trace", "extract_tasks", "has_traces", "register_extractor"]
