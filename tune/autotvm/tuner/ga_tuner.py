"""``GATuner``: a genetic algorithm over the knob choices (classic AutoTVM's).

A gene is one choice index per knob.  Each generation of ``pop_size``
genes is measured; the next keeps the ``elite_num`` best, and fills up with
children of parents drawn in proportion to their throughput (one-point
crossover, then each knob re-drawn with ``mutation_prob``), never a config
measured before.
"""

from __future__ import annotations

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
        self.dims = [len(s) for s in self.space.space_map.values()]
        self.pop_size = min(pop_size, len(self.space))
        self.elite_num = min(elite_num, self.pop_size)
        self.mutation_prob = mutation_prob
        self.rng = np.random.default_rng(seed)
        self.genes: list = []
        self.scores: list = []
        self.queue: list = []  # indices to measure, this generation
        self.elites: list = []
        self.elite_scores: list = []

    def _index(self, gene) -> int:
        index, stride = 0, 1
        for g, d in zip(gene, self.dims):
            index += int(g) * stride
            stride *= d
        return index

    def _gene(self, index: int) -> list:
        out = []
        for d in self.dims:
            out.append(index % d)
            index //= d
        return out

    def _random_unvisited(self) -> int | None:
        for _ in range(1000):
            index = int(self.rng.integers(len(self.space)))
            if index not in self.visited:
                return index
        rest = [i for i in range(len(self.space)) if i not in self.visited] if len(self.space) < 10**6 else []
        return rest[0] if rest else None

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.has_next():
            if not self.queue:
                self._next_generation()
            index = self.queue.pop() if self.queue else self._random_unvisited()
            if index is None:
                break
            if index in self.visited:
                continue
            self.visited.add(index)
            out.append(self.space.get(index))
        return out

    def update(self, inputs: list, results: list) -> None:
        for inp, res in zip(inputs, results):
            if inp.config.index < 0:
                continue
            self.genes.append(self._gene(inp.config.index))
            self.scores.append(self._flops(res))

    def _next_generation(self) -> None:
        genes = self.elites + self.genes
        scores = np.array(self.elite_scores + self.scores, dtype=np.float64)
        self.genes, self.scores = [], []
        if not genes:
            self.queue = [
                i for i in (self._random_unvisited() for _ in range(self.pop_size)) if i is not None
            ]
            return
        order = np.argsort(-scores)[: self.elite_num]
        self.elites = [genes[k] for k in order]
        self.elite_scores = [float(scores[k]) for k in order]
        prob = scores + 1e-8
        prob = prob / prob.sum()
        children, tries = [], 0
        while len(children) < self.pop_size and tries < 20 * self.pop_size:
            tries += 1
            a, b = self.rng.choice(len(genes), size=2, p=prob)
            cut = int(self.rng.integers(len(self.dims) + 1))
            child = list(genes[a][:cut]) + list(genes[b][cut:])
            for k, d in enumerate(self.dims):
                if self.rng.random() < self.mutation_prob:
                    child[k] = int(self.rng.integers(d))
            index = self._index(child)
            if index not in self.visited and index not in children:
                children.append(index)
        for _ in range(4 * self.pop_size):
            if len(children) >= self.pop_size:
                break
            index = self._random_unvisited()
            if index is None:
                break
            if index not in children:
                children.append(index)
        self.queue = children[::-1]

    def _load_same(self, records: list) -> None:
        for inp, res in records:
            index = self.space.index_of(inp.config._entity_map)
            if index is not None:
                self.genes.append(self._gene(index))
                self.scores.append(self._flops(res))


__all__ = ["GATuner"]
