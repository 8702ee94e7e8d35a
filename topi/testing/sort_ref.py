"""numpy reference of ``topi.topk``."""

from __future__ import annotations

import numpy as np


def topk_python(x: np.ndarray, k: int, axis: int = -1, largest: bool = True) -> list:
    """``[values, int64 indices]`` of the ``k`` largest (smallest) entries, ties in index order."""
    axis %= x.ndim
    keys = -x.astype(np.float64) if largest else x
    order = np.take(np.argsort(keys, axis=axis, kind="stable"), np.arange(k), axis=axis)
    return [np.take_along_axis(x, order, axis=axis), order.astype(np.int64)]
