"""The cost model's interface (``fit(x, y, groups)``, ``predict(x)``) on xgboost, an optional extra."""

from __future__ import annotations

import numpy as np

from tune.cost_model.gbt import normalise


class XGBoostModel:
    """The same interface on ``xgboost`` (used when it is installed)."""

    def __init__(
        self, loss: str = "rank", n_rounds: int = 200, max_depth: int = 3, eta: float = 0.3, seed: int = 0
    ):
        import xgboost

        self.xgb, self.loss, self.n_rounds = xgboost, loss, n_rounds
        self.params = {
            "max_depth": max_depth,
            "eta": eta,
            "gamma": 1e-4,
            "min_child_weight": 1,
            "lambda": 1.0,
            "seed": seed,
            "verbosity": 0,
            "nthread": 1,
            "objective": "rank:pairwise" if loss == "rank" else "reg:squarederror",
        }
        self.booster = None

    def fit(self, x, y, groups=None) -> XGBoostModel:
        x, y = np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.float64)
        groups = np.zeros(len(y), dtype=np.int64) if groups is None else np.asarray(groups)
        order = np.argsort(groups, kind="stable")
        x, y, groups = x[order], normalise(y[order], groups[order]), groups[order]
        d = self.xgb.DMatrix(x, label=y)
        if self.loss == "rank":
            d.set_group(np.unique(groups, return_counts=True)[1])
        self.booster = self.xgb.train(self.params, d, self.n_rounds)
        return self

    def predict(self, x) -> np.ndarray:
        if self.booster is None:
            return np.zeros(len(x))
        return self.booster.predict(self.xgb.DMatrix(np.asarray(x, dtype=np.float32)))


__all__ = ["XGBoostModel"]
