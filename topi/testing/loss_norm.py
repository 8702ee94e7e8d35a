"""numpy references: losses and normalisations (classic ``topi.testing`` names)."""

from __future__ import annotations

import numpy as np

__all__ = ["group_norm_python", "instance_norm_python", "layer_norm_python", "nll_loss", "searchsorted_ref"]


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


def _normalized(x: np.ndarray, axes, epsilon: float) -> np.ndarray:
    mean = np.mean(x, axis=tuple(axes), keepdims=True)
    return (x - mean) / np.sqrt(np.var(x, axis=tuple(axes), keepdims=True) + epsilon)


def layer_norm_python(data, gamma, beta, axis, epsilon: float = 1e-5) -> np.ndarray:
    """``data`` normalised over ``axis``, times ``gamma`` plus ``beta`` (shaped as those axes)."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = _normalized(data, axes, epsilon)
    scale = [data.shape[d] if d in [a % data.ndim for a in axes] else 1 for d in range(data.ndim)]
    out = out * np.reshape(gamma, scale)
    return out + np.reshape(beta, scale) if beta is not None else out


instance_norm_python = layer_norm_python


def group_norm_python(data, gamma, beta, num_groups: int, channel_axis: int, axes, epsilon: float = 1e-5):
    """``data`` normalised per channel group over its channels and ``axes``, times ``gamma`` plus ``beta`` ([C])."""
    c = data.shape[channel_axis]
    grouped = data.reshape(data.shape[:channel_axis] + (num_groups, c // num_groups) + data.shape[channel_axis + 1:])
    red = [channel_axis + 1] + [a if a < channel_axis else a + 1 for a in axes]
    out = _normalized(grouped, red, epsilon).reshape(data.shape)
    scale = [c if d == channel_axis else 1 for d in range(data.ndim)]
    out = out * np.reshape(gamma, scale)
    return out + np.reshape(beta, scale) if beta is not None else out
