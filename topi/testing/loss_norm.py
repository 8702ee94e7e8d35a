"""numpy references: losses and normalisations (classic ``topi.testing`` names)."""

from __future__ import annotations

import numpy as np

__all__ = ["nll_loss", "searchsorted_ref"]


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


def searchsorted_ref(sorted_sequence: np.ndarray, values: np.ndarray, right: bool, out_dtype: str) -> np.ndarray:
    """numpy's ``searchsorted`` row by row (one 1-D sequence serves every row of ``values``)."""
    side = "right" if right else "left"
    if sorted_sequence.ndim == 1:
        return np.searchsorted(sorted_sequence, values, side=side).astype(out_dtype)
    seq = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
    val = values.reshape(-1, values.shape[-1])
    out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(seq, val)])
    return out.reshape(values.shape).astype(out_dtype)
