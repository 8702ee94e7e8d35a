"""``apply_history_best(records)``: templates inside get the best measured config of their workload.

Keyed by workload *and* target text (CPU name and features): a record
measured for another CPU is never applied (a warning says so once).
"""

from __future__ import annotations

import logging

from tune.autotvm import dispatch
from tune.autotvm.dispatch import ApplyChoices, DispatchContext
from tune.record import target_key
from tune.record import load_records, ranked_by_workload
from tune.autotvm.space import ConfigSpace

logger = logging.getLogger("autotvm")


class ApplyHistoryBest(DispatchContext):
    """The best measured config per (target, workload) of some records (a path or (input, result) pairs)."""

    workload_specific = True

    def __init__(self, records):
        self.ranked = ranked_by_workload(load_records(records))
        self.best = {key: rows[0] for key, rows in self.ranked.items()}
        self._workloads = {wl for _, wl in self.best}
        self._warned: set = set()

    def query(self, target, workload) -> ConfigSpace | None:
        if workload is None:
            return None
        key = target_key(target)
        hit = self.best.get((key, workload))
        if hit is not None:
            return hit[0].config
        if workload in self._workloads and workload not in self._warned:
            self._warned.add(workload)
            logger.warning(
                "apply_history_best: records for %s exist only for other targets, not %s; "
                "the template's fallback config is used",
                workload,
                key,
            )
        return None

    def query_ranked(self, target, workload) -> list:
        """``[(config, mean seconds), ...]`` of every config measured for ``workload`` on
        ``target``, fastest first (a graph-level choice weighs them against layout costs)."""
        rows = self.ranked.get((target_key(target), workload), [])
        return [(inp.config, res.cost) for inp, res in rows]


def apply_history_best(records) -> ApplyHistoryBest:
    """``with apply_history_best("x.log"):`` templates inside get their best records' configs."""
    return ApplyHistoryBest(records)


class Records:
    """What a stack of dispatch contexts says about configs, read once and handed down: the
    graph layer snapshots it at ``graph.build`` (:meth:`current`) and passes it to
    ``tune.autotvm.choose``, which reads no ambient state.  Innermost context first.

    ``Records.of(records)`` wraps what a caller passes explicitly: a path or (input, result)
    pairs (an ``apply_history_best`` of them), a context, a ``Records``, or None (none)."""

    def __init__(self, contexts=()):
        self.contexts = tuple(contexts)

    @staticmethod
    def current() -> Records:
        return Records(reversed(dispatch.stack()))

    @staticmethod
    def of(records) -> Records:
        if records is None or (isinstance(records, (list, tuple)) and not records):
            return Records()
        if isinstance(records, Records):
            return records
        if isinstance(records, DispatchContext):
            return Records([records])
        return Records([ApplyHistoryBest(records)])

    def choice(self, target, workload) -> dict | None:
        """Knob -> value that the innermost ``ApplyChoices`` gives ``workload`` (taken as is)."""
        for ctx in self.contexts:
            if isinstance(ctx, ApplyChoices):
                got = ctx.choose(tuple(workload), target)
                if got is not None:
                    return dict(got if isinstance(got, dict) else got.values)  # knob values or a config
        return None

    def best(self, target, workload) -> dict | None:
        """Knob -> value of the best record of ``workload`` on ``target`` in the innermost
        workload-specific context (``apply_history_best``) that has one."""
        workload = tuple(workload)
        for ctx in self.contexts:
            if not getattr(ctx, "workload_specific", False):
                continue
            cfg = ctx.query(target, workload)
            if cfg is not None and not cfg.is_fallback:
                return cfg.knob_values()
        return None

    def ranked(self, target, workload) -> list:
        """``[(knob -> value, seconds), ...]``, fastest first: every measured config of
        ``workload`` on ``target`` in the innermost records context that holds one."""
        workload = tuple(workload)
        for ctx in self.contexts:
            rows = ctx.query_ranked(target, workload) if hasattr(ctx, "query_ranked") else []
            if rows:
                return [(cfg.values, cost) for cfg, cost in rows]
        return []

    def best_cost(self, target, workload) -> float | None:
        """Seconds of the best record of ``workload`` on ``target`` in the innermost context that
        holds one (None: no record)."""
        key = (target_key(target), tuple(workload))
        for ctx in self.contexts:
            hit = getattr(ctx, "best", {}).get(key)
            if hit is not None:
                return hit[1].cost
        return None


def lookup_values(workload, target=None) -> dict | None:
    """:meth:`Records.best` of the current stack (default: the current target)."""
    from codegen.target import Target

    return Records.current().best(target if target is not None else Target.current(), workload)


def lookup_ranked(workload, target=None) -> list:
    """:meth:`Records.ranked` of the current stack (default: the current target)."""
    from codegen.target import Target

    return Records.current().ranked(target if target is not None else Target.current(), workload)


__all__ = ["ApplyHistoryBest", "Records", "apply_history_best", "lookup_ranked", "lookup_values"]
