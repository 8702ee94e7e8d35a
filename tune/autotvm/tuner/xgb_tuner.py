"""``XGBTuner``: classic AutoTVM's model-based tuner.

``XGBTuner(task, loss_type="rank"|"reg", feature_type="itervar"|"knob"|"curve")``.
The cost model is gradient-boosted trees: ``xgboost`` when installed
(``pip install 'tessera[tune]'``), else the numpy implementation of
:mod:`tune.cost_model` (``model="numpy"`` forces it).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from tune import features
from tune.autotvm.knobs import AnnotateEntity, OtherOptionEntity, ReorderEntity, SplitEntity
from tune.cost_model import make_model
from tune.autotvm.tuner.model_based import ModelBasedTuner, SimulatedAnnealingOptimizer

logger = logging.getLogger("autotvm")


def knob_vector(config, space) -> np.ndarray:
    """The choices: log2 split sizes, knob positions in their candidate lists, permutations, annotations."""
    row: list = []
    for name, sp in space.space_map.items():
        e = config[name]
        if isinstance(e, SplitEntity):
            row += [math.log2(max(s, 0) + 1.0) for s in e.size]
        elif isinstance(e, OtherOptionEntity):
            k = sp.index(e)
            row.append(float(k if k is not None else -1))
        elif isinstance(e, ReorderEntity):
            row += [float(p) for p in e.perm]
        elif isinstance(e, AnnotateEntity):
            row += [
                float(("none", "unroll", "vec", "parallel").index(a))
                if a in ("none", "unroll", "vec", "parallel")
                else -1.0
                for a in e.anns
            ]
    return np.array(row, dtype=np.float32)


MEMO_SIZE = 32768  # loop-nest feature vectors kept per process (a few hundred floats each)
_memo: dict = {}


def extract(task, config, feature_type: str) -> np.ndarray:
    """The feature vector of ``config`` of ``task`` (``itervar``, ``curve`` or ``knob``).

    Loop-nest features cost a lowering (tens of ms); they are a pure function of the template,
    its workload, the target and the knob values, so the process keeps them: every tuner of a
    task and every ``load_history`` of the same records reuses them.
    """
    if feature_type == "knob":
        return knob_vector(config, task.config_space)
    if feature_type not in ("itervar", "curve"):
        raise ValueError(f"unknown feature_type {feature_type!r}; use itervar, knob or curve")
    key = (task.name, task.workload, str(task.target), config.key(), feature_type)
    hit = _memo.get(key)
    if hit is None:
        hit = features.schedule_vector(*task.instantiate(config), feature_type)
        if len(_memo) >= MEMO_SIZE:
            _memo.pop(next(iter(_memo)))  # the oldest
        _memo[key] = hit
    return hit


class XGBoostCostModel:
    """Features (cached per config) + boosted trees; ``predict(indices)`` scores configs of the task."""

    def __init__(
        self, task, feature_type: str = "itervar", loss_type: str = "rank", model: str = "auto", seed: int = 0
    ):
        if feature_type not in ("itervar", "knob", "curve"):
            raise ValueError(f"XGBTuner: unknown feature_type {feature_type!r}; use itervar, knob or curve")
        self.task, self.feature_type, self.loss_type = task, feature_type, loss_type
        self.backend, self.seed = model, seed
        self.model = make_model(loss_type, model, seed)
        self.cache: dict = {}
        self.hist_x: list = []  # loaded records' features, throughput, group and workload
        self.hist_y: list = []
        self.hist_g: list = []
        self.hist_w: list = []
        self.fitted = False
        self.base_model = None  # the model trained on loaded records (load_basemodel)

    def feature(self, index: int) -> np.ndarray:
        hit = self.cache.get(index)
        if hit is None:
            config = self.task.config_space.get(index)
            try:
                hit = extract(self.task, config, self.feature_type)
            except Exception:  # a config the template rejects: it scores lowest
                hit = None
            self.cache[index] = hit
        return hit

    def _matrix(self, indices) -> tuple:
        rows = [self.feature(int(i)) for i in indices]
        width = max((len(r) for r in rows if r is not None), default=0)
        width = max(width, len(self.hist_x[0]) if self.hist_x else 0)
        x = np.zeros((len(rows), width), dtype=np.float32)
        ok = np.zeros(len(rows), dtype=bool)
        for k, r in enumerate(rows):
            if r is not None:
                x[k, : len(r)] = r
                ok[k] = True
        return x, ok

    def fit(self, xs, ys, plan_size=None) -> None:  # noqa: ARG002 (classic signature)
        """Train on the configs ``xs`` (indices) of this task measured at ``ys`` (throughput),
        with the loaded records of other tasks, each task a group of its own."""
        x, ok = self._matrix(xs)
        y = np.asarray(ys, dtype=np.float64)
        x, y = x[ok], y[ok]
        g = np.zeros(len(y), dtype=np.int64)
        if self.hist_x:
            width = max(x.shape[1] if len(x) else 0, len(self.hist_x[0]))
            x = _pad(x, width)
            hx = _pad(np.array(self.hist_x, dtype=np.float32), width)
            x = np.concatenate([x, hx]) if len(x) else hx
            y = np.concatenate([y, np.array(self.hist_y)])
            g = np.concatenate([g, np.array(self.hist_g, dtype=np.int64)])
        if len(y) >= 2:
            self.model.fit(x, y, g)
            self.fitted = True
            self.width = x.shape[1]

    def predict(self, indices, output_margin: bool = False) -> np.ndarray:  # noqa: ARG002
        """Scores of the configs ``indices`` (higher: faster); only their order means anything."""
        x, ok = self._matrix(indices)
        if not self.fitted:
            return self.task_rng_scores(len(x))
        scores = self.model.predict(_pad(x, self.width))
        scores[~ok] = -1e9
        return scores

    def task_rng_scores(self, n: int) -> np.ndarray:
        return np.random.default_rng(len(self.cache)).random(n)

    def spawn_base_model(self) -> "XGBoostCostModel":
        """A fresh model of the same kind, to train on loaded records (``fit_log``)."""
        return XGBoostCostModel(self.task, self.feature_type, self.loss_type, self.backend, self.seed)

    def fit_log(self, records, plan_size=None, min_seed_records: int = 500) -> bool:  # noqa: ARG002
        """Train on ``records`` (a path or (input, result) pairs, of any tasks) when there are at
        least ``min_seed_records``; True when the model was trained."""
        from tune.record import load_records

        records = load_records(records)
        if len(records) < min_seed_records or not self.load_log(records):
            return False
        self.fit([], [])
        return self.fitted

    def load_basemodel(self, base_model: "XGBoostCostModel") -> None:
        """Learn from what ``base_model`` was trained on: its records of other tasks join this
        model's training set (each task its own group; this task's own records are its
        measurements)."""
        self.base_model = base_model
        mine = (str(self.task.target), self.task.workload)
        for x, y, g, w in zip(base_model.hist_x, base_model.hist_y, base_model.hist_g, base_model.hist_w):
            if w != mine:
                self.hist_x.append(x)
                self.hist_y.append(y)
                self.hist_g.append(g)
                self.hist_w.append(w)

    def load_log(self, records: list) -> bool:
        """Features of records (their templates instantiated); True when any was usable.  Knob
        features are only comparable within one task: other tasks' records are then skipped."""
        from tune.autotvm.task import lookup

        groups: dict = {}
        skipped = 0
        for inp, res in records:
            task = inp.task
            if self.feature_type == "knob" and task.workload != self.task.workload:
                skipped += 1
                continue
            try:
                lookup(task.name)
                feats = extract(task, inp.config, self.feature_type)
            except Exception as err:
                logger.debug("load_history: skipped a record of %s: %s", task.name, err)
                continue
            flops = 0.0
            if res.error_no == 0 and res.costs:
                flop = _task_flop(task)
                flops = flop / res.cost if flop else 1.0 / res.cost
            where = (str(inp.target), task.workload)
            gid = groups.setdefault(where, len(groups) + 1)
            self.hist_x.append(feats)
            self.hist_y.append(flops)
            self.hist_g.append(gid)
            self.hist_w.append(where)
        if skipped:
            logger.warning(
                "XGBTuner: knob features are not comparable across tasks; %d records of other tasks "
                "ignored (use feature_type='itervar' or 'curve' for transfer learning)", skipped)
        if self.hist_x:
            width = max(len(f) for f in self.hist_x)
            self.hist_x = [np.pad(f, (0, width - len(f))) for f in self.hist_x]
        return bool(self.hist_x)


_flops_cache: dict = {}


def _task_flop(task) -> float:
    """The flop count of a record's task (its template run once to define the space)."""
    from tune.autotvm.task import create

    key = (task.name, task.workload)
    if key not in _flops_cache:
        try:
            _flops_cache[key] = create(task.name, task.args, task.target).flop
        except Exception:
            _flops_cache[key] = 0.0
    return _flops_cache[key]


def _pad(x: np.ndarray, width: int) -> np.ndarray:
    if x.ndim != 2:
        x = x.reshape(len(x), -1)
    if x.shape[1] >= width:
        return x[:, :width]
    return np.pad(x, ((0, 0), (0, width - x.shape[1])))


class XGBTuner(ModelBasedTuner):
    """Boosted trees rank the configs simulated annealing finds; ``plan_size`` per model fit.

    ``search_share``: the annealing stops after this share of the time the last plan took to
    measure (at least 0.25 s); ``None``: only its step count bounds it (deterministic for a seed).
    """

    def __init__(
        self,
        task,
        plan_size: int = 64,
        feature_type: str = "itervar",
        loss_type: str = "rank",
        num_threads=None,
        optimizer: str = "sa",
        diversity_filter_ratio=None,
        log_interval: int = 50,
        model: str = "auto",
        seed: int | None = None,
        search_share: float | None = 0.2,
    ):
        if loss_type not in ("rank", "reg"):
            raise ValueError(f"XGBTuner: unknown loss_type {loss_type!r}; use 'rank' or 'reg'")
        cost_model = XGBoostCostModel(task, feature_type, loss_type, model, seed or 0)
        if optimizer != "sa":
            raise ValueError(f"XGBTuner: unknown optimizer {optimizer!r}; use 'sa' (simulated annealing)")
        opt = SimulatedAnnealingOptimizer(task, seed=seed)
        super().__init__(task, cost_model, opt, plan_size=plan_size, search_share=search_share, seed=seed)


__all__ = ["XGBTuner", "XGBoostCostModel"]
