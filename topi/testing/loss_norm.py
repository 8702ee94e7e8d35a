"""numpy references: losses and normalisations (classic ``topi.testing`` names)."""

from __future__ import annotations

import numpy as np

__all__ = ["nll_loss"]


def nll_loss(predictions: np.ndarray, targets: np.ndarray, weights: np.ndarray, reduction: str = "mean",
             ignore_index: int = -100):
    """``-predictions[n, t, d...] * weights[t]`` per target (0 where ``t == ignore_index``), reduced
    by ``"mean"`` (over the kept weights), ``"sum"`` or ``"none"``."""
    t = np.asarray(targets)
    kept = t != ignore_index
    cls = np.where(kept, t, 0)
    if predictions.ndim == 1:
        picked = predictions[cls]
    else:
        picked = np.take_along_axis(predictions, np.expand_dims(cls, 1), axis=1).squeeze(1)
    w = np.where(kept, weights[cls], 0)
    loss = np.where(kept, -picked * w, 0).astype(np.float64)
    if reduction == "mean":
        return np.sum(loss) / np.sum(w)
    if reduction == "sum":
        return np.sum(loss)
    return loss
