"""numpy references of ``topi.topk`` and ``topi.nn.conv3d_ncdhw``."""

from __future__ import annotations

import numpy as np


def topk_python(x: np.ndarray, k: int, axis: int = -1, largest: bool = True) -> list:
    """``[values, int64 indices]`` of the ``k`` largest (smallest) entries, ties in index order."""
    axis %= x.ndim
    keys = -x.astype(np.float64) if largest else x
    order = np.take(np.argsort(keys, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return [np.take_along_axis(x, order, axis=axis), order.astype(np.int64)]


def conv3d_ncdhw_python(data: np.ndarray, kernel: np.ndarray, strides, before, after, dilation,
                        groups: int = 1) -> np.ndarray:
    """Grouped NCDHW x OIDHW convolution (accumulated in float64, returned in the data's dtype)."""
    data = np.pad(data, [(0, 0), (0, 0)] + list(zip(before, after)))
    oc, icg = kernel.shape[:2]
    outs = [(n - (k - 1) * d - 1) // s + 1 for n, k, s, d in zip(data.shape[2:], kernel.shape[2:], strides, dilation)]
    out = np.zeros((data.shape[0], oc, *outs), dtype=np.float64)
    ocg = oc // groups
    for g in range(groups):
        x = data[:, g * icg:(g + 1) * icg]
        w = kernel[g * ocg:(g + 1) * ocg]
        for tap in np.ndindex(*kernel.shape[2:]):
            window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outs, strides))
            out[:, g * ocg:(g + 1) * ocg] += np.einsum("ncdhw,oc->nodhw", x[(Ellipsis,) + window],
                                                       w[(Ellipsis,) + tap])
    return out.astype(data.dtype)
