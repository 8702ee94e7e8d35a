"""``apply_history_best(records)``: templates inside get the best measured config of their workload.

Keyed by workload *and* target text (CPU name and features): a record
measured for another CPU is never applied (a warning says so once).
"""

from __future__ import annotations

import logging

from tune.autotvm.dispatch import DispatchContext
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


__all__ = ["ApplyHistoryBest", "apply_history_best"]
