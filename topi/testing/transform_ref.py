"""numpy references of classic ``topi.transform`` operators (classic ``topi.testing`` names)."""

from __future__ import annotations

import numpy as np


def _slices(begin, end, strides, rank: int, axes=None) -> tuple:
    """numpy slices for ``begin/end/strides`` (``axes``: the axes they apply to; default the
    first ``len(begin)``); a missing entry or None leaves its axis whole."""
    strides = [] if strides is None else list(strides)
    axes = list(range(len(begin))) if axes is None else [a % rank for a in axes]
    out = [slice(None)] * rank
    for k, a in enumerate(axes):
        out[a] = slice(begin[k], end[k] if k < len(end) else None, strides[k] if k < len(strides) else None)
    return tuple(out)


def strided_slice_python(data, begin, end, strides, slice_mode: str = "end", axes=None) -> np.ndarray:
    """``data[begin:end:strides]``; ``slice_mode="size"`` reads ``end`` as lengths (-1: to the end)."""
    if slice_mode == "size":
        end = [None if e < 0 else b + e for b, e in zip(begin, end)]
        strides = None
    return data[_slices(begin, end, strides, data.ndim, axes)]


def strided_set_python(data, v, begin, end, strides) -> np.ndarray:
    """A copy of ``data`` with ``[begin:end:strides] = v``."""
    out = data.copy()
    n = max(len(begin), len(end))
    begin = list(begin) + [None] * (n - len(begin))
    out[_slices(begin, list(end), strides, data.ndim, list(range(n)))] = v
    return out


def gather_python(data, axis: int, indices) -> np.ndarray:
    """``out[i, j, k] = data[i, indices[i, j, k], k]`` for ``axis=1``."""
    axis %= data.ndim
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = indices
    return data[tuple(grid)]


def sequence_mask(data, valid_length, mask_value=0.0, axis: int = 0) -> np.ndarray:
    """``data`` with ``mask_value`` past each batch row's valid length along time ``axis``."""
    steps = np.arange(data.shape[axis])
    keep = steps[:, None] < valid_length[None, :]  # (time, batch)
    if axis == 1:
        keep = keep.T
    keep = keep.reshape(keep.shape + (1,) * (data.ndim - 2))
    return np.where(keep, data, np.asarray(mask_value, data.dtype))


def one_hot(indices, on_value, off_value, depth: int, axis: int, dtype) -> np.ndarray:
    """``on_value`` where a new axis ``axis`` of extent ``depth`` equals ``indices``, else ``off_value``."""
    axis = axis % (indices.ndim + 1)
    hit = np.expand_dims(indices, axis) == np.arange(depth).reshape((-1,) + (1,) * (indices.ndim - axis))
    return np.where(hit, on_value, off_value).astype(dtype)


def matrix_set_diag(data, diagonal, k=0, align: str = "RIGHT_LEFT") -> np.ndarray:
    """``data`` with diagonal ``k`` (or the band ``k = (k1, k2)``) of its last two axes set from
    ``diagonal``; ``align`` places the shorter diagonals of a band (TensorFlow's rule)."""
    out = np.array(data, copy=True)
    rows, cols = data.shape[-2:]
    ks = list(k) if isinstance(k, (list, tuple)) else [k]
    k1, k2 = ks[0], ks[-1]
    for d in range(k1, k2 + 1):
        length = min(cols - max(d, 0), rows + min(d, 0))
        values = diagonal if k1 == k2 else diagonal[..., k2 - d, :]
        right = align.startswith("RIGHT") if d >= 0 else align.endswith("RIGHT")
        offset = values.shape[-1] - length if right and k1 != k2 else 0
        for t in range(length):
            r, c = (t, t + d) if d >= 0 else (t - d, t)
            out[..., r, c] = values[..., t + offset]
    return out


__all__ = ["gather_python", "matrix_set_diag", "one_hot", "sequence_mask", "strided_set_python",
           "strided_slice_python"]
