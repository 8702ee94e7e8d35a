"""Gradient-boosted regression trees on numpy alone: the tuner's default cost model.

Each round fits one depth-limited tree to the Newton step of the loss
(histogram splits over at most ``BINS`` quantile bins per feature), as
xgboost does.  Two losses:

* ``"reg"``: squared error on throughput normalised per task (best = 1);
* ``"rank"``: pairwise logistic loss (RankNet) over pairs of the same task,
  so that only the order of candidates is learnt (classic XGBTuner's default,
  ``rank:pairwise``).

Records of other tasks (``load_history``) enter as their own groups: the
model learns from them what a good loop nest looks like, and pairs never mix
tasks.  ``tune.cost_model.xgb.XGBoostModel`` offers the same interface on
xgboost.
"""

from __future__ import annotations

import numpy as np

BINS = 32


class _Tree:
    __slots__ = ("feature", "left", "right", "threshold", "value")

    def __init__(self):
        self.feature: list = []
        self.threshold: list = []
        self.left: list = []
        self.right: list = []
        self.value: list = []

    def add(self) -> int:
        for arr, v in (
            (self.feature, -1),
            (self.threshold, 0.0),
            (self.left, -1),
            (self.right, -1),
            (self.value, 0.0),
        ):
            arr.append(v)
        return len(self.feature) - 1

    def freeze(self) -> None:
        self.feature = np.array(self.feature, dtype=np.int64)
        self.threshold = np.array(self.threshold, dtype=np.float64)
        self.left = np.array(self.left, dtype=np.int64)
        self.right = np.array(self.right, dtype=np.int64)
        self.value = np.array(self.value, dtype=np.float64)

    def predict(self, x: np.ndarray) -> np.ndarray:
        node = np.zeros(len(x), dtype=np.int64)
        rows = np.arange(len(x))
        while True:
            f = self.feature[node]
            inner = f >= 0
            if not inner.any():
                return self.value[node]
            go_left = x[rows, np.maximum(f, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)


class GBTModel:
    """``fit(x, y, groups)`` then ``predict(x)``: higher is faster."""

    def __init__(
        self,
        loss: str = "rank",
        n_rounds: int = 60,
        max_depth: int = 4,
        eta: float = 0.3,
        reg_lambda: float = 1.0,
        min_child: int = 2,
        seed: int = 0,
    ):
        if loss not in ("rank", "reg"):
            raise ValueError(f"cost model: unknown loss_type {loss!r}; use 'rank' or 'reg'")
        self.loss, self.n_rounds, self.max_depth = loss, n_rounds, max_depth
        self.eta, self.reg_lambda, self.min_child = eta, reg_lambda, min_child
        self.trees: list = []
        self.rng = np.random.default_rng(seed)

    # ------------------------------------------------------------ training --
    def fit(self, x: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> GBTModel:
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        groups = np.zeros(len(y), dtype=np.int64) if groups is None else np.asarray(groups)
        y = normalise(y, groups)
        self.trees = []
        self.forest = None
        if len(y) < 2:
            return self
        edges, bins = _bin(x)
        pairs = _pairs(y, groups) if self.loss == "rank" else None
        pred = np.zeros(len(y))
        for _ in range(self.n_rounds):
            g, h = self._grad(pred, y, pairs)
            if not np.any(g):
                break
            tree = self._grow(bins, edges, g, h)
            pred += tree.predict(x)
            self.trees.append(tree)
        self._pack()
        return self

    def _pack(self) -> None:
        """All trees as one node table (global child indices), walked together by ``predict``."""
        if not self.trees:
            self.forest = None
            return
        offsets = np.cumsum([0] + [len(t.feature) for t in self.trees])[:-1]
        self.forest = (
            np.concatenate([t.feature for t in self.trees]),
            np.concatenate([t.threshold for t in self.trees]),
            np.concatenate([np.where(t.left >= 0, t.left + o, -1) for t, o in zip(self.trees, offsets)]),
            np.concatenate([np.where(t.right >= 0, t.right + o, -1) for t, o in zip(self.trees, offsets)]),
            np.concatenate([t.value for t in self.trees]),
            offsets,
        )

    def _grad(self, pred, y, pairs):
        if self.loss == "reg":
            return pred - y, np.ones_like(y)
        g, h = np.zeros_like(y), np.zeros_like(y)
        if pairs is None or len(pairs[0]) == 0:
            return g, h + 1.0
        hi, lo = pairs
        p = 1.0 / (1.0 + np.exp(np.clip(pred[hi] - pred[lo], -30, 30)))  # P(order wrong)
        np.add.at(g, hi, -p)
        np.add.at(g, lo, p)
        w = p * (1.0 - p)
        np.add.at(h, hi, w)
        np.add.at(h, lo, w)
        return g, h + 1e-6

    def _grow(self, bins, edges, g, h) -> _Tree:
        tree = _Tree()
        stack = [(tree.add(), np.arange(len(g)), 0)]
        lam = self.reg_lambda
        n_feat = bins.shape[1]
        offsets = (np.arange(n_feat) * BINS)[None, :]
        while stack:
            node, idx, depth = stack.pop()
            G, H = g[idx].sum(), h[idx].sum()
            tree.value[node] = -self.eta * G / (H + lam)
            if depth >= self.max_depth or len(idx) < 2 * self.min_child:
                continue
            flat = (bins[idx] + offsets).ravel()
            gs = np.bincount(flat, np.repeat(g[idx], n_feat), n_feat * BINS).reshape(n_feat, BINS)
            hs = np.bincount(flat, np.repeat(h[idx], n_feat), n_feat * BINS).reshape(n_feat, BINS)
            cs = np.bincount(flat, None, n_feat * BINS).reshape(n_feat, BINS)
            gl, hl, cl = np.cumsum(gs, 1)[:, :-1], np.cumsum(hs, 1)[:, :-1], np.cumsum(cs, 1)[:, :-1]
            gain = gl**2 / (hl + lam) + (G - gl) ** 2 / (H - hl + lam) - G**2 / (H + lam)
            gain[(cl < self.min_child) | (len(idx) - cl < self.min_child)] = -np.inf
            f, b = np.unravel_index(np.argmax(gain), gain.shape)
            if not np.isfinite(gain[f, b]) or gain[f, b] <= 1e-9:
                continue
            go_left = bins[idx, f] <= b
            tree.feature[node], tree.threshold[node] = int(f), float(edges[f][b])
            left, right = tree.add(), tree.add()
            tree.left[node], tree.right[node] = left, right
            stack.append((left, idx[go_left], depth + 1))
            stack.append((right, idx[~go_left], depth + 1))
        tree.freeze()
        return tree

    # ---------------------------------------------------------- predicting --
    def predict(self, x: np.ndarray) -> np.ndarray:
        """The sum of the trees, every tree walked at once: ``max_depth`` steps over a (trees, rows) grid."""
        x = np.asarray(x, dtype=np.float64)
        if getattr(self, "forest", None) is None:
            return np.zeros(len(x))
        feature, threshold, left, right, value, roots = self.forest
        node = np.repeat(roots[:, None], len(x), axis=1)
        rows = np.arange(len(x))[None, :]
        for _ in range(self.max_depth):
            f = feature[node]
            inner = f >= 0
            if not inner.any():
                break
            go_left = x[rows, np.maximum(f, 0)] <= threshold[node]
            node = np.where(inner, np.where(go_left, left[node], right[node]), node)
        return value[node].sum(axis=0)


def normalise(y: np.ndarray, groups: np.ndarray) -> np.ndarray:
    out = np.zeros_like(y)
    for gr in np.unique(groups):
        m = groups == gr
        top = y[m].max()
        out[m] = y[m] / top if top > 0 else 0.0
    return out


def _pairs(y: np.ndarray, groups: np.ndarray, limit: int = 200_000) -> tuple:
    hi, lo = [], []
    for gr in np.unique(groups):
        ix = np.nonzero(groups == gr)[0]
        a, b = np.meshgrid(ix, ix, indexing="ij")
        keep = y[a] > y[b] + 1e-9
        hi.append(a[keep])
        lo.append(b[keep])
    hi, lo = np.concatenate(hi), np.concatenate(lo)
    if len(hi) > limit:
        pick = np.random.default_rng(0).choice(len(hi), limit, replace=False)
        hi, lo = hi[pick], lo[pick]
    return hi, lo


def _bin(x: np.ndarray) -> tuple:
    """Quantile bin edges per feature and each sample's bin (split: bin <= b goes left)."""
    edges, bins = [], np.zeros(x.shape, dtype=np.int64)
    for f in range(x.shape[1]):
        col = x[:, f]
        e = np.unique(np.quantile(col, np.linspace(0, 1, BINS + 1)[1:-1]))
        e = e[: BINS - 1]
        edges.append(np.append(e, np.inf))
        bins[:, f] = np.searchsorted(e, col, side="left")
    return edges, bins


__all__ = ["GBTModel"]
