"""Tuners that pick configs without a model: ``RandomTuner`` and ``GridSearchTuner``."""

from __future__ import annotations

import random

from tune.autotvm.tuner.tuner import Tuner


class RandomTuner(Tuner):
    """Configs drawn uniformly at random, never one twice (``range_idx=(lo, hi)`` limits the indices)."""

    def __init__(self, task, range_idx=None, seed: int | None = None):
        super().__init__(task)
        lo, hi = range_idx if range_idx is not None else (0, len(self.space) - 1)
        self.lo, self.hi = lo, hi
        self.rng = random.Random(seed)

    def has_next(self) -> bool:
        return len(self.visited) < self.hi - self.lo + 1

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.has_next():
            index = self.rng.randint(self.lo, self.hi)
            if index in self.visited:
                continue
            self.visited.add(index)
            out.append(self.space.get(index))
        return out


class GridSearchTuner(Tuner):
    """Configs in index order (the first knob varies fastest), skipping any measured already."""

    def __init__(self, task, range_idx=None):
        super().__init__(task)
        lo, hi = range_idx if range_idx is not None else (0, len(self.space) - 1)
        self.counter, self.hi = lo, hi

    def has_next(self) -> bool:
        return self.counter <= self.hi

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.counter <= self.hi:
            index = self.counter
            self.counter += 1
            if index not in self.visited:
                self.visited.add(index)
                out.append(self.space.get(index))
        return out


__all__ = ["GridSearchTuner", "RandomTuner"]
