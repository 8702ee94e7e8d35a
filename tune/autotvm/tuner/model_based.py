"""Model-based tuning: a cost model ranks the candidates simulated annealing finds.

Every ``plan_size`` measurements the model is refit on all of them (and on the
other tasks' records of the base model ``load_history`` trained); simulated annealing then
walks the space (one knob changed per step) under the model's score and the
best ``plan_size`` unmeasured points become the next plan, measured in
batches of the builder's ``n_parallel``.  The walk is bounded in time by a
share of the measuring time (``search_share``), so search never dominates a
tuning run whatever the cost of a feature.
"""

from __future__ import annotations

import heapq
import logging
import time

import numpy as np

from tune.autotvm.tuner.tuner import Tuner

logger = logging.getLogger("autotvm")


class SimulatedAnnealingOptimizer:
    """Finds high-scoring points: ``parallel_size`` walkers, ``n_iter`` steps, temperature ``temp`` -> 0."""

    def __init__(
        self,
        task,
        n_iter: int = 500,
        temp=(1, 0),
        persistent: bool = True,
        parallel_size: int = 128,
        early_stop: int = 50,
        seed: int | None = None,
    ):
        self.task = task
        self.dims = [len(s) for s in task.config_space.space_map.values()]
        self.n_iter, self.temp, self.persistent = n_iter, temp, persistent
        self.parallel_size = min(parallel_size, task.config_space.range_length)
        self.early_stop = early_stop
        self.rng = np.random.default_rng(seed)
        self.points = None
        self.time_budget = None  # seconds; None: no limit

    def _walk(self, index: int) -> int:
        stride, rest, strides = 1, index, []
        for d in self.dims:
            strides.append(stride)
            stride *= d
        movable = [k for k, d in enumerate(self.dims) if d > 1]
        if not movable:
            return index
        k = movable[int(self.rng.integers(len(movable)))]
        cur = (rest // strides[k]) % self.dims[k]
        new = int(self.rng.integers(self.dims[k] - 1))
        new += new >= cur
        return index + (new - cur) * strides[k]

    def find_maximums(self, model, num: int, exclusive: set) -> list:
        t0 = time.perf_counter()
        space = self.task.config_space
        n = space.range_length
        if self.points is None or not self.persistent:
            self.points = self.rng.integers(n, size=self.parallel_size)
        points = np.array(self.points, dtype=np.int64)
        scores = model.predict(points)
        heap = [(-np.inf, -1 - k) for k in range(num)]
        in_heap = set()

        def offer(ps, ss):
            for p, s in zip(ps, ss):
                p = int(p)
                if s > heap[0][0] and p not in in_heap and p not in exclusive and space.is_index_valid(p):
                    popped = heapq.heapreplace(heap, (float(s), p))
                    in_heap.discard(popped[1])
                    in_heap.add(p)

        offer(points, scores)
        t_hi, t_lo = self.temp
        step, last_change = 0, 0
        while step < self.n_iter and step - last_change < self.early_stop:
            if self.time_budget is not None and time.perf_counter() - t0 > self.time_budget:
                break
            temp = t_hi - (t_hi - t_lo) * step / max(self.n_iter, 1)
            new = np.array([self._walk(int(p)) for p in points], dtype=np.int64)
            new_scores = model.predict(new)
            accept = self.rng.random(len(points)) < np.exp(
                np.minimum((new_scores - scores) / (temp + 1e-5), 0)
            )
            points[accept], scores[accept] = new[accept], new_scores[accept]
            before = heap[0][0]
            offer(new, new_scores)
            if heap[0][0] != before:
                last_change = step
            step += 1
        self.points = points
        out = [p for s, p in sorted(heap, reverse=True) if p >= 0]
        logger.debug("SA: %d steps, %.2f s, %d points", step, time.perf_counter() - t0, len(out))
        return out


class ModelBasedTuner(Tuner):
    """Measures plans of ``plan_size`` configs chosen by ``optimizer`` under ``cost_model``."""

    def __init__(
        self,
        task,
        cost_model,
        optimizer,
        plan_size: int = 64,
        eps_greedy: float = 0.05,
        search_share: float = 0.2,
        seed: int | None = None,
    ):
        super().__init__(task)
        self.cost_model, self.optimizer = cost_model, optimizer
        self.plan_size, self.eps_greedy, self.search_share = plan_size, eps_greedy, search_share
        self.rng = np.random.default_rng(seed)
        self.trials: list = []
        self.trial_pt = 0
        self.xs: list = []
        self.ys: list = []
        self.train_ct = 0
        self._measure_mark = 0.0

    def _random_unvisited(self) -> int | None:
        n = self.space.range_length
        for _ in range(1000):
            index = int(self.rng.integers(n))
            if index not in self.visited and self.space.is_index_valid(index):
                return index
        if n >= 10**6:
            return None
        return next((i for i in range(n) if i not in self.visited and self.space.is_index_valid(i)), None)

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.has_next():
            index = None
            while self.trial_pt < len(self.trials):
                cand = self.trials[self.trial_pt]
                self.trial_pt += 1
                if cand not in self.visited:
                    index = cand
                    break
            if index is None:
                index = self._random_unvisited()
                if index is None:
                    break
            self.visited.add(index)
            out.append(self.space.get(index))
        return out

    def update(self, inputs: list, results: list) -> None:
        """Add measurements to the training set (callable outside ``tune`` too: the configs then
        count as measured)."""
        for inp, res in zip(inputs, results):
            if inp.config.index >= 0:
                self.xs.append(inp.config.index)
                self.ys.append(self._flops(res))
                self.visited.add(inp.config.index)
        if len(self.xs) >= self.plan_size * (self.train_ct + 1) and max(self.ys, default=0) > 1e-6:
            self._replan()

    def _replan(self) -> None:
        spent = self.stats["measure_s"] - self._measure_mark
        self._measure_mark = self.stats["measure_s"]
        self.optimizer.time_budget = (
            None if self.search_share is None else max(0.25, self.search_share * spent)
        )
        self.cost_model.fit(self.xs, self.ys)
        plan = self.optimizer.find_maximums(self.cost_model, self.plan_size, self.visited)
        n_random = int(self.eps_greedy * self.plan_size)
        for k in range(min(n_random, len(plan))):  # a few random points keep exploring
            index = self._random_unvisited()
            if index is not None:
                plan[-1 - k] = index
        self.trials, self.trial_pt = plan, 0
        self.train_ct += 1

    def _load_same(self, records: list) -> None:
        for inp, res in records:
            index = self.space.index_of(inp.config._entity_map)
            if index is not None:
                self.xs.append(index)
                self.ys.append(self._flops(res))

    def load_history(self, data_set, min_seed_records: int = 500) -> None:
        """Resume (this task's records count as measured), and with at least
        ``min_seed_records`` records of any tasks train a base model on them: its knowledge
        warms the cost model and, before any measurement, its best configs are the first plan."""
        from tune.record import load_records

        records = load_records(data_set)
        super().load_history(records, min_seed_records)
        base = self.cost_model.spawn_base_model()
        if not base.fit_log(records, self.plan_size, min_seed_records):
            return
        self.cost_model.load_basemodel(base)
        if not self.trials:
            self.optimizer.time_budget = 30.0
            self.trials = self.optimizer.find_maximums(base, self.plan_size, self.visited)
            self.trial_pt = 0


__all__ = ["ModelBasedTuner", "SimulatedAnnealingOptimizer"]
