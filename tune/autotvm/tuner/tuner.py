"""The tuning loop shared by every tuner (classic ``Tuner.tune``).

::

    measure the default (fallback) config first, then ``tuner.measure_first`` (the caller's
    configs to read before any search), each unless a loaded record has, or the tuner's range
    (``in_range``) leaves it out
    while trials remain:
        configs = tuner.next_batch(n_parallel)      # never a config measured before
        results = measure_batch(configs)            # build in parallel, run one by one
        tuner.update(configs, results); callbacks(tuner, configs, results)
        stop early after `early_stopping` trials without a better config

``tuner.load_history(records)`` before ``tune`` resumes: records of this task
(same workload and target) count as measured and are never measured again;
records of other tasks warm a model-based tuner's cost model.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from tune.measure.measure import MeasureInput
from tune.measure.option import create_measure_batch

logger = logging.getLogger("autotvm")


def config_key(config):
    return config.index if config.index >= 0 else config.key()


class Tuner:
    """Base class: subclasses give ``next_batch``, ``has_next`` and (optionally) ``update``."""

    def __init__(self, task, **kwargs):
        if task.config_space is None:
            raise ValueError(
                f"{type(self).__name__}: {task!r} has no config space; create it with "
                f"autotvm.task.create(name, args, target)"
            )
        self.task = task
        self.space = task.config_space
        self.visited: set = set()
        self.measure_first: list = []  # configs measured right after the default, before the search
        self.best_config = None
        self.best_flops = 0.0
        self.best_measure_pair = None
        self.best_iter = 0
        self.ttl = None
        self.n_trial = None
        self.early_stopping = None
        self.stats = {"search_s": 0.0, "measure_s": 0.0, "trials": 0}

    # ------------------------------------------------------- for subclasses --
    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    def next_batch(self, batch_size: int) -> list:
        raise NotImplementedError

    def update(self, inputs: list, results: list) -> None:
        pass

    def in_range(self, config) -> bool:
        """Whether ``config`` is one this tuner may measure (a range-limited tuner's range; a
        config the space's ``multi_filter`` removed is measured by none)."""
        return config.index < 0 or self.space.is_index_valid(config.index)

    def _mark(self, config) -> None:
        self.visited.add(config_key(config))

    # ---------------------------------------------------------------- loop --
    def tune(
        self,
        n_trial: int,
        measure_option: dict,
        early_stopping: int | None = None,
        callbacks=(),
        si_prefix: str = "G",
    ) -> None:
        """Measure up to ``n_trial`` new configs; callbacks see every batch."""
        measure_batch = create_measure_batch(self.task, measure_option)
        n_parallel = getattr(measure_batch, "n_parallel", 1)
        early_stopping = early_stopping or 10**9
        self.n_trial, self.early_stopping = n_trial, early_stopping
        default = self.task.default_config()
        pending = list({config_key(c): c for c in (default, *self.measure_first)
                        if config_key(c) not in self.visited and self.in_range(c)}.values())
        i = 0
        self.best_iter = 0
        while i < n_trial:
            t0 = time.perf_counter()
            size = min(n_parallel, n_trial - i)
            configs = pending[:size]
            for c in configs:
                self._mark(c)
            pending = pending[size:]
            if len(configs) < size and self.has_next():
                configs += self.next_batch(size - len(configs))
            if not configs:
                break
            inputs = [MeasureInput(self.task.target, self.task, c) for c in configs]
            t1 = time.perf_counter()
            results = measure_batch(inputs)
            t2 = time.perf_counter()
            self.stats["measure_s"] += t2 - t1
            for k, (inp, res) in enumerate(zip(inputs, results)):
                flops = self._flops(res)
                if flops > self.best_flops:
                    self.best_flops, self.best_config = flops, inp.config
                    self.best_measure_pair, self.best_iter = (inp, res), i + k
                logger.debug(
                    "No: %d\tGFLOPS: %.2f/%.2f\tresult: %s\t%s",
                    i + k + 1,
                    flops / 1e9,
                    self.best_flops / 1e9,
                    res,
                    inp.config,
                )
            i += len(results)
            self.ttl = min(early_stopping + self.best_iter, n_trial) - i
            self.update(inputs, results)
            for callback in callbacks:
                callback(self, inputs, results)
            self.stats["search_s"] += (t1 - t0) + (time.perf_counter() - t2)
            self.stats["trials"] += len(results)
            if i >= self.best_iter + early_stopping:
                logger.debug("early stopped at %d trials", i)
                break

    def _flops(self, res) -> float:
        if res.error_no != 0 or not res.costs:
            return 0.0
        return self.task.flop / res.cost

    # ------------------------------------------------------------- history --
    def load_history(self, data_set, min_seed_records: int = 500) -> None:
        """Resume from records: this task's configs count as measured; other tasks' go to ``_load_other``."""
        from tune.record import target_key
        from tune.record import load_records

        same, other = [], []
        me = (self.task.target_key, self.task.workload)
        for inp, res in load_records(data_set):
            (same if (target_key(inp.target), inp.task.workload) == me else other).append((inp, res))
        for inp, res in same:
            config = self._as_space_config(inp.config)
            self._mark(config)
            flops = self._flops(res)
            if flops > self.best_flops:
                self.best_flops, self.best_config, self.best_measure_pair = flops, config, (inp, res)
        self._load_same(same)
        if other:
            self._load_other(other, min_seed_records)

    def _as_space_config(self, config):
        """A loaded config with its index recomputed in this space (records may predate a reindexing)."""
        index = self.space.index_of(config._entity_map)
        if index is None:
            return config
        return self.space.get(index)

    def _load_same(self, records: list) -> None:
        pass

    def _load_other(self, records: list, min_seed_records: int) -> None:
        pass


__all__ = ["Tuner", "config_key"]
