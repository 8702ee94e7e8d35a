"""``cumsum`` and ``cumprod`` under classic topi's signatures (``topi.scan``).

``axis=None`` scans the flattened array; ``dtype`` is the accumulation and output dtype
(bool data is counted as integers); ``exclusive`` leaves each element out of its own total.
The running reduction itself is :func:`topi.indexing.cumulative`.
"""

from __future__ import annotations

import math

import te
from topi.indexing import cumulative
from topi.transform import cast, reshape
from topi.utils import get_const_tuple


def _scan(op: str, data: te.Tensor, axis, dtype, exclusive) -> te.Tensor:
    if axis is None:
        data = reshape(data, (math.prod(get_const_tuple(data.shape)),))
        axis = 0
    dtype = dtype or ("int32" if data.dtype == "bool" else data.dtype)
    if data.dtype != dtype:
        data = cast(data, dtype)
    return cumulative(data, int(axis), op, exclusive=bool(exclusive))


def cumsum(data: te.Tensor, axis: int | None = None, dtype: str | None = None,
           exclusive: bool | None = None) -> te.Tensor:
    """Running sum of ``data`` along ``axis`` (flattened when None), in ``dtype``."""
    return _scan("sum", data, axis, dtype, exclusive)


def cumprod(data: te.Tensor, axis: int | None = None, dtype: str | None = None,
            exclusive: bool | None = None) -> te.Tensor:
    """Running product of ``data`` along ``axis`` (flattened when None), in ``dtype``."""
    return _scan("prod", data, axis, dtype, exclusive)
