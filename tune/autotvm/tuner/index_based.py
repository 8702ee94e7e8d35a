"""Tuners that pick configs without a model: ``RandomTuner`` and ``GridSearchTuner``.

Both walk the indices ``[begin_idx, end_idx)`` of the space (``range_idx=(first, last)``,
inclusive, as classic AutoTVM; the whole space by default), skipping the indices the space's
``multi_filter`` removed; ``visited_max`` is the number of valid indices in that range.
"""

from __future__ import annotations

import random

from tune.autotvm.tuner.tuner import Tuner


class IndexBaseTuner(Tuner):
    """A tuner over a range of indices of the space."""

    def __init__(self, task, range_idx=None):
        super().__init__(task)
        if range_idx is None:
            self.begin_idx, self.end_idx = 0, self.space.range_length
        else:
            first, last = range_idx
            if not 0 <= first <= last < self.space.range_length:
                raise ValueError(f"{type(self).__name__}: range_idx {range_idx} is not inside the "
                                 f"space's indices [0, {self.space.range_length - 1}]")
            self.begin_idx, self.end_idx = first, last + 1
        self.range_length = self.end_idx - self.begin_idx
        self.visited_max = self.space.subrange_length(self.begin_idx, self.end_idx)
        self.index = None

    def has_next(self) -> bool:
        return len(self.visited) < self.visited_max

    def in_range(self, config) -> bool:
        return self.begin_idx <= config.index < self.end_idx and self.space.is_index_valid(config.index)


class RandomTuner(IndexBaseTuner):
    """Configs drawn uniformly at random from the range, never one twice."""

    def __init__(self, task, range_idx=None, seed: int | None = None):
        super().__init__(task, range_idx)
        self.rng = random.Random(seed)

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.has_next():
            index = self.space.get_rand_index(self.begin_idx, self.end_idx, self.visited, self.rng)
            self.visited.add(index)
            out.append(self.space.get(index))
        return out


class GridSearchTuner(IndexBaseTuner):
    """Configs in index order (the first knob varies fastest), skipping any measured already."""

    def __init__(self, task, range_idx=None):
        super().__init__(task, range_idx)
        self.index = self.begin_idx
        if not self.space.is_index_valid(self.index):
            self.index = self.space.get_next_index(self.index, start=self.begin_idx, end=self.end_idx)

    def next_batch(self, batch_size: int) -> list:
        out = []
        while len(out) < batch_size and self.has_next() and self.index is not None:
            if self.index not in self.visited:
                self.visited.add(self.index)
                out.append(self.space.get(self.index))
            self.index = self.space.get_next_index(self.index, start=self.begin_idx, end=self.end_idx)
        return out


__all__ = ["GridSearchTuner", "IndexBaseTuner", "RandomTuner"]
