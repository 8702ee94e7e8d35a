"""Sorting operators: ``sort``, ``argsort``, ``topk`` (classic topi's), sort-free.

Each entry's rank is the number of entries before it in the order (a
reduction over the axis, ties in index order: a stable sort); output ``j``
then gathers the entry of rank ``j``::

    rank[i]   = sum_e (x[e] > x[i]) || (x[e] == x[i] && e < i)        (descending; < ascending)
    values[j] = sum_r (rank[r] == j ? x[r] : 0);   indices[j] = sum_r (rank[r] == j ? r : 0)

O(n^2) per row along the axis: meant for class scores and short axes, not long ones.
"""

from __future__ import annotations

import te
from topi.utils import check_axis, get_const_tuple

SORT = "sort"
RETURN_TYPES = ("both", "values", "indices")


def _at(t, idx, axis: int, pos):
    idx = list(idx)
    idx[axis] = pos
    return t(*idx)


def _rank(x: te.Tensor, axis: int, ascending: bool) -> te.Tensor:
    shape = get_const_tuple(x.shape)
    e = te.reduce_axis((0, shape[axis]), "e")

    def body(*i):
        vi, ve = x(*i), _at(x, i, axis, e)
        before = te.any(ve < vi if ascending else ve > vi, te.all(ve == vi, e < i[axis]))
        return te.sum(before.astype("int32"), axis=e)

    return te.compute(shape, body, name="sort_rank", tag=SORT)


def _gather(x: te.Tensor, rank: te.Tensor, axis: int, k: int, indices: bool, dtype: str, name: str) -> te.Tensor:
    shape = get_const_tuple(x.shape)
    out = shape[:axis] + (k,) + shape[axis + 1:]

    def body(*j):
        r = te.reduce_axis((0, shape[axis]), "r")
        value = r.var.astype(dtype) if indices else _at(x, j, axis, r)
        hit = _at(rank, j, axis, r) == j[axis]
        return te.sum(te.if_then_else(hit, value, te.const(0, dtype)), axis=r)

    return te.compute(out, body, name=name, tag=SORT)


def _check(op: str, x: te.Tensor, axis: int) -> int:
    shape = get_const_tuple(x.shape)
    if not all(isinstance(d, int) for d in shape):
        raise ValueError(f"{op}: needs a static shape, got {shape}")
    return check_axis(op, axis, len(shape))


def sort(data: te.Tensor, axis: int = -1, is_ascend: bool = True) -> te.Tensor:
    """``data`` sorted along ``axis`` (ascending unless ``is_ascend`` is False)."""
    axis = _check("sort", data, axis)
    n = get_const_tuple(data.shape)[axis]
    return _gather(data, _rank(data, axis, bool(is_ascend)), axis, n, False, data.dtype, "sort_values")


def argsort(data: te.Tensor, valid_count=None, axis: int = -1, is_ascend: bool = True,
            dtype: str = "float32") -> te.Tensor:
    """The indices that sort ``data`` along ``axis`` (a stable sort), as ``dtype``."""
    if valid_count is not None:
        raise ValueError("argsort: valid_count (sorting a prefix of each row) is not supported")
    axis = _check("argsort", data, axis)
    n = get_const_tuple(data.shape)[axis]
    return _gather(data, _rank(data, axis, bool(is_ascend)), axis, n, True, dtype, "argsort_indices")


def topk(data: te.Tensor, k: int = 1, axis: int = -1, ret_type: str = "both", is_ascend: bool = False,
         dtype: str = "int64"):
    """The ``k`` largest (``is_ascend``: smallest) entries along ``axis``, in order, ties by index.

    ``k < 1`` takes the whole axis.  ``ret_type`` ``"both"`` returns ``[values, indices]``,
    ``"values"`` / ``"indices"`` one tensor; indices are ``dtype``.
    """
    if ret_type not in RETURN_TYPES:
        raise ValueError(f"topk: ret_type={ret_type!r}; use one of {RETURN_TYPES}")
    axis = _check("topk", data, axis)
    n = get_const_tuple(data.shape)[axis]
    k = n if k < 1 else int(k)
    if k > n:
        raise ValueError(f"topk: k={k} exceeds axis {axis} of shape {get_const_tuple(data.shape)}")
    rank = _rank(data, axis, bool(is_ascend))
    values = _gather(data, rank, axis, k, False, data.dtype, "topk_values")
    indices = _gather(data, rank, axis, k, True, dtype, "topk_indices")
    return {"both": [values, indices], "values": values, "indices": indices}[ret_type]


def select_top(x: te.Tensor, k: int, axis: int = -1, largest: bool = True) -> list:
    """ONNX TopK: ``[values, int64 indices]`` of exactly ``k`` entries (``k = 0``: none)."""
    axis = _check("topk", x, axis)
    n = get_const_tuple(x.shape)[axis]
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} exceeds axis {axis} of shape {get_const_tuple(x.shape)}")
    rank = _rank(x, axis, not largest)
    return [_gather(x, rank, axis, k, False, x.dtype, "topk_values"),
            _gather(x, rank, axis, k, True, "int64", "topk_indices")]
