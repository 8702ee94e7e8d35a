"""``GATuner``: a genetic algorithm over the knob choices (classic AutoTVM's).

A gene is one choice index per knob (``space.point2knob``).  The first generation is
``pop_size`` valid configs drawn at random when the tuner is made; each next one keeps the
``elite_num`` best genes and fills up with children of parents drawn in proportion to their
throughput (one-point crossover, then each knob re-drawn with ``mutation_prob``), never a
config chosen before nor one the space's ``multi_filter`` removed.  ``visited`` holds every
config chosen (measured or queued), as classic AutoTVM's.
"""

from __future__ import annotations

import random

import numpy as np

from tune.autotvm.tuner.tuner import Tuner


class GATuner(Tuner):
    def __init__(
        self,
        task,
        pop_size: int = 100,
        elite_num: int = 3,
        mutation_prob: float = 0.1,
        seed: int | None = None,
    ):
        super().__init__(task)
        if elite_num > pop_size:
            raise ValueError(f"GATuner: elite_num {elite_num} exceeds pop_size {pop_size}")
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.rng = random.Random(seed)
        first = self.space.sample_ints(self.pop_size, self.rng)
        self.visited = set(first)
        self.genes = [self.space.point2knob(i) for i in first]
        self.trial_pt = 0
        self.score_of: dict = {}  # index -> measured throughput
        self.elites: list = []
        self.elite_scores: list = []

    def has_next(self) -> bool:
        return self.trial_pt < len(self.genes) or len(self.visited) < len(self.space)

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size:
            if self.trial_pt >= len(self.genes):
                if any(self.space.knob2point(g) not in self.score_of for g in self.genes):
                    break  # this generation's results are not all in
                self._next_generation()
                if not self.genes:
                    break
            index = self.space.knob2point(self.genes[self.trial_pt])
            self.trial_pt += 1
            if index not in self.score_of:
                out.append(self.space.get(index))
        return out

    def update(self, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results):
            if inp.config.index >= 0:
                self.score_of[inp.config.index] = self._flops(res)

    def _next_generation(self) -> None:
        remaining = len(self.space) - len(self.visited)
        if remaining <= self.pop_size:
            children = [i for i in range(self.space.range_length)
                        if self.space.is_index_valid(i) and i not in self.visited]
        else:
            children = self._children()
        self.visited.update(children)
        self.genes = [self.space.point2knob(i) for i in children]
        self.trial_pt = 0

    def _children(self) -> list:
        genes = self.genes + self.elites
        scores = np.array([self.score_of.get(self.space.knob2point(g), 0.0) for g in self.genes]
                          + self.elite_scores, dtype=np.float64)
        order = np.argsort(-scores)[: self.elite_num]
        self.elites = [genes[k] for k in order]
        self.elite_scores = [float(scores[k]) for k in order]
        weights = list(scores + 1e-8)
        dims = self.space.dims
        children: list = []
        for _ in range(20 * self.pop_size):
            if len(children) >= self.pop_size:
                break
            a, b = self.rng.choices(range(len(genes)), weights=weights, k=2)
            cut = self.rng.randrange(len(dims) + 1)
            child = list(genes[a][:cut]) + list(genes[b][cut:])
            for k, d in enumerate(dims):
                if self.rng.random() < self.mutation_prob:
                    child[k] = self.rng.randrange(d)
            index = self.space.knob2point(child)
            if index not in self.visited and index not in children and self.space.is_index_valid(index):
                children.append(index)
        while len(children) < self.pop_size:  # a converged population: fresh random configs
            children.append(self.space.get_rand_index(to_exclude=self.visited | set(children), rng=self.rng))
        return children

    def _load_same(self, records: list) -> None:
        for inp, res in records:
            index = self.space.index_of(inp.config._entity_map)
            if index is not None:
                self.score_of[index] = self._flops(res)


__all__ = ["GATuner"]
