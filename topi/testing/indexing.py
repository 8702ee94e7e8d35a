"""numpy references of ``topi.indexing``: gather_nd, scatter_nd, scatter_elements, cumulative."""

from __future__ import annotations

import numpy as np


def _wrapped(idx: np.ndarray, n) -> np.ndarray:
    idx = np.asarray(idx).astype(np.int64)
    return np.where(idx < 0, idx + n, idx)


def gather_nd_python(data: np.ndarray, indices: np.ndarray, batch_dims: int = 0, index_axis: int = 0) -> np.ndarray:
    """Index tuples along ``index_axis`` of ``indices`` (0: classic TVM's layout, -1: ONNX's)."""
    indices = np.asarray(indices)
    if index_axis == 0 and indices.ndim > 1:
        indices = np.moveaxis(indices, 0, -1)
    q = indices.shape[-1]
    lead = indices.shape[:-1]
    out = np.empty(lead + data.shape[batch_dims + q:], data.dtype)
    for pos in np.ndindex(*lead):
        at = tuple(int(_wrapped(indices[pos][t], data.shape[batch_dims + t])) for t in range(q))
        out[pos] = data[pos[:batch_dims] + at]
    return out


def _apply(out: np.ndarray, at: tuple, value, reduction: str) -> None:
    if reduction == "none":
        out[at] = value
    elif reduction == "add":
        out[at] = out[at] + value
    elif reduction == "mul":
        out[at] = out[at] * value
    elif reduction == "max":
        out[at] = np.maximum(out[at], value)
    else:
        out[at] = np.minimum(out[at], value)


def scatter_nd_python(data, indices, updates, reduction: str = "none") -> np.ndarray:
    out = np.array(data, copy=True)
    q = indices.shape[-1]
    for pos in np.ndindex(*indices.shape[:-1]):
        at = tuple(int(v) for v in _wrapped(indices[pos], np.array(data.shape[:q])))
        _apply(out, at, updates[pos], reduction)
    return out


def scatter_elements_python(data, indices, updates, axis: int = 0, reduction: str = "none") -> np.ndarray:
    out = np.array(data, copy=True)
    axis = axis % data.ndim
    for pos in np.ndindex(*indices.shape):
        at = list(pos)
        at[axis] = int(_wrapped(indices[pos], data.shape[axis]))
        _apply(out, tuple(at), updates[pos], reduction)
    return out


def cumulative_python(x, axis: int, op: str = "sum", exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    y = np.flip(x, axis) if reverse else x
    fn = np.cumsum if op == "sum" else np.cumprod
    out = fn(y, axis=axis, dtype=x.dtype)
    if exclusive:
        first = np.full_like(np.take(out, [0], axis=axis), 0 if op == "sum" else 1)
        out = np.concatenate([first, np.take(out, np.arange(out.shape[axis] - 1), axis=axis)], axis=axis)
    return np.flip(out, axis) if reverse else out
