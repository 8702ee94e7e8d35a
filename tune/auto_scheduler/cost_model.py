"""Cost models of the search: ``XGBModel`` (boosted trees on per-store features, "pack-sum") and
``RandomModel``.

A program's features are one row per store of its first loop nest
(``tune.features.store_vectors``: loop extents and kinds, and per access its
stride, bytes touched and reuse at each of the innermost loops).  The model
scores every store and a program's score is the sum of its stores' scores
(Ansor's pack-sum): a kernel with two stages is scored as the sum of its
stages, and what is learnt of a stage carries to other programs that contain
it.  Trained on throughput normalised per task (a task's best = 1), each
program weighted by its label so that the fast programs, the ones the
search must tell apart, count most.  Training is deterministic: a model
retrained from the same records is the same model (exact resume).
"""

from __future__ import annotations

import math

import numpy as np

from tune.cost_model.gbt import GBTModel, _bin, normalise
from tune.features import store_vectors
from tune.record import load_records


class PackSumGBT(GBTModel):
    """``GBTModel`` whose loss is on sums of rows: ``fit_packs(rows, packs, y)``."""

    def fit_packs(self, x: np.ndarray, packs: np.ndarray, y: np.ndarray) -> "PackSumGBT":
        x = np.asarray(x, dtype=np.float64)
        self.trees, self.forest = [], None
        if len(y) < 2:
            return self
        edges, bins = _bin(x)
        w = np.maximum(y, 0.05)[packs]
        pred = np.zeros(len(x))
        for _ in range(self.n_rounds):
            total = np.bincount(packs, pred, minlength=len(y))
            g = w * (total - y)[packs]
            if not np.any(np.abs(g) > 1e-9):
                break
            tree = self._grow(bins, edges, g, w)
            pred += tree.predict(x)
            self.trees.append(tree)
        self._pack()
        return self


class PackSumXGB:
    """The same loss on xgboost (a custom objective): ``fit_packs(rows, packs, y)``, ``predict(rows)``."""

    def __init__(self, n_rounds: int = 60, max_depth: int = 6, seed: int = 0):
        import xgboost

        self.xgb, self.n_rounds = xgboost, n_rounds
        self.params = {"max_depth": max_depth, "eta": 0.3, "min_child_weight": 0, "lambda": 1.0, "seed": seed,
                       "nthread": 1, "verbosity": 0, "base_score": 0.0}
        self.booster = None

    def fit_packs(self, x, packs, y) -> "PackSumXGB":
        w = np.maximum(y, 0.05)[packs]

        def objective(pred, _):
            total = np.bincount(packs, pred, minlength=len(y))
            return w * (total - y)[packs], w

        d = self.xgb.DMatrix(np.asarray(x, dtype=np.float32))
        self.booster = self.xgb.train(self.params, d, self.n_rounds, obj=objective)
        return self

    def predict(self, x) -> np.ndarray:
        return self.booster.predict(self.xgb.DMatrix(np.asarray(x, dtype=np.float32)))


def pack_sum_model(backend: str, n_rounds: int, max_depth: int, seed: int):
    """``PackSumXGB`` where xgboost is installed (``backend`` "auto" or "xgboost"), else ``PackSumGBT``."""
    if backend not in ("auto", "xgboost", "numpy"):
        raise ValueError(f"XGBModel: unknown backend {backend!r}; use auto, xgboost or numpy")
    if backend != "numpy":
        try:
            return PackSumXGB(n_rounds, max_depth, seed)
        except ImportError:
            if backend == "xgboost":
                raise ImportError("XGBModel(backend='xgboost') needs xgboost: pip install 'tessera[tune]'") from None
    return PackSumGBT("reg", n_rounds=n_rounds, max_depth=max_depth, seed=seed)


class CostModel:
    """``update(inputs, results)`` with measured programs, ``predict(task, states)`` -> scores.
    Random scores are drawn from a generator seeded by ``(seed, programs seen, draws since)``, so
    a model updated from a log draws what it drew when the log was written."""

    seed, seen, draws = 0, 0, 0

    def update(self, inputs, results) -> None:
        self.seen += len(inputs)
        self.draws = 0

    def random_scores(self, n: int) -> np.ndarray:
        self.draws += 1
        return np.random.default_rng([self.seed, self.seen, self.draws]).uniform(size=n)

    def predict(self, task, states) -> np.ndarray:
        raise NotImplementedError

    def update_from_file(self, file_name, n_lines=None) -> None:
        pairs = [(i, r) for i, r in load_records(file_name) if not r.in_place]  # the search's readings, not a model's
        pairs = pairs[:n_lines] if n_lines else pairs
        self.update([i for i, _ in pairs], [r for _, r in pairs])


class RandomModel(CostModel):
    """Random scores: the search without a model (classic ``auto_scheduler.RandomModel``)."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)

    def predict(self, task, states) -> np.ndarray:
        return self.random_scores(len(states))


def program_features(task, state, cache: dict) -> np.ndarray | None:
    """The store rows of ``state``'s program as it is measured (weights pre-packed where the task
    measures so), None where its trace does not apply; a state that carries its schedule
    (``state.sch``) is not replayed."""
    key = (task.workload, state.key())
    if key not in cache:
        try:
            sch = getattr(state, "sch", None)
            sch, args, _ = task.as_built(sch) if sch is not None else task.instantiate_with_layouts(state)
            cache[key] = store_vectors(sch, args).astype(np.float32)
        except Exception:  # a trace that no longer applies scores as the worst
            cache[key] = None
    return cache[key]


def fit_point(n: int, every: int = 256, growth: float = 1.1) -> int:
    """How many of ``n`` measured programs the model trains on: all up to ``every``, then the largest
    of ``every * growth ** k`` not above ``n``."""
    if n <= every:
        return n
    return int(every * growth ** math.floor(math.log(n / every) / math.log(growth) + 1e-9))


class XGBModel(CostModel):
    """Boosted trees on per-store features (classic ``auto_scheduler.XGBModel``): xgboost where it is
    installed, else the numpy trees (``backend``: "auto", "xgboost", "numpy"); ``num_warmup_sample``:
    programs measured before it predicts."""

    def __init__(self, verbose_eval: int = 25, num_warmup_sample: int = 20, seed: int | None = None,
                 model_file=None, adaptive_training: bool = False, disable_early_stopping: bool = False,
                 n_rounds: int = 40, max_depth: int = 6, backend: str = "auto"):
        self.backend = backend
        pack_sum_model(backend, 1, 1, 0)  # an unknown or missing backend fails here
        self.num_warmup_sample = int(num_warmup_sample)
        self.seed = 0 if seed is None else int(seed)
        self.n_rounds, self.max_depth = n_rounds, max_depth
        self.samples: dict = {}  # (task workload, state key) -> (task, state, seconds), measurement order
        self._fitted_at = 0
        self.features: dict = {}
        self.model = None

    def update(self, inputs, results) -> None:
        super().update(inputs, results)
        for inp, res in zip(inputs, results):
            if not hasattr(inp.config, "trace"):
                continue  # an AutoTVM record
            cost = res.cost if res.error_no == 0 and res.costs else float("inf")
            key = (inp.task.workload, inp.config.key())
            old = self.samples.get(key)
            if old is None or cost < old[2]:
                self.samples[key] = (inp.task, inp.config, cost)
        self.fit()

    def fit(self) -> None:
        """Train on the first ``fit_point(n)`` programs measured (in measurement order, which a log
        keeps): every update while there are few, then each time they grew by a tenth (training time
        grows with them), so a model updated from a log is the one that wrote it."""
        m = fit_point(len(self.samples))
        if m == self._fitted_at:
            return
        self._fitted_at = m
        first = list(self.samples.items())[:m]
        rows, packs, y, groups = [], [], [], []
        gid: dict = {}
        for (wl, _), (task, state, cost) in sorted(first, key=lambda kv: repr(kv[0])):
            f = program_features(task, state, self.features)
            if f is None:
                continue
            rows.append(f)
            packs.append(np.full(len(f), len(y)))
            y.append(0.0 if not np.isfinite(cost) else 1.0 / cost)
            groups.append(gid.setdefault(wl, len(gid)))
        if len(y) < 2:
            self.model = None
            return
        y = normalise(np.asarray(y), np.asarray(groups))
        self.model = pack_sum_model(self.backend, self.n_rounds, self.max_depth, self.seed)
        self.model.fit_packs(np.concatenate(rows), np.concatenate(packs), y)

    @property
    def num_samples(self) -> int:
        return len(self.samples)

    def predict(self, task, states) -> np.ndarray:
        if self.model is None or self.num_samples < self.num_warmup_sample:
            return self.random_scores(len(states))
        feats = [program_features(task, s, self.features) for s in states]
        ok = [k for k, f in enumerate(feats) if f is not None]
        out = np.full(len(states), -np.inf)
        if ok:
            x = np.concatenate([feats[k] for k in ok])
            packs = np.concatenate([np.full(len(feats[k]), j) for j, k in enumerate(ok)])
            sums = np.bincount(packs, self.model.predict(x), minlength=len(ok))
            out[ok] = sums
        return out


__all__ = ["CostModel", "PackSumGBT", "PackSumXGB", "RandomModel", "XGBModel", "pack_sum_model", "program_features"]
