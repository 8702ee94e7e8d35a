"""Sorting operators: ``topk`` (classic ``topi.topk``), sort-free.

Each entry's rank is the number of entries before it in the order (a
reduction over the axis); output ``j`` then sums the entry of rank ``j``::

    rank[i]   = sum_e (x[e] > x[i]) || (x[e] == x[i] && e < i)
    values[j] = sum_r (rank[r] == j ? x[r] : 0);   indices[j] = sum_r (rank[r] == j ? r : 0)

O(n^2) per row along the axis: meant for class scores, not long axes.
"""

from __future__ import annotations

import te
from topi.utils import check_axis, get_const_tuple


def topk(x: te.Tensor, k: int, axis: int = -1, largest: bool = True) -> list:
    """The ``k`` largest (smallest) entries along ``axis``, sorted, ties in index order.

    Returns
    -------
    list of te.Tensor
        ``[values, indices]``: ``x``'s shape with ``k`` entries along ``axis``;
        the indices are ``int64`` (tag ``topk``).
    """
    shape = get_const_tuple(x.shape)
    axis = check_axis("topk", axis, len(shape))
    n = shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"topk: k={k} exceeds axis {axis} of shape {shape}")

    def at(t, idx, pos):
        idx = list(idx)
        idx[axis] = pos
        return t(*idx)

    e = te.reduce_axis((0, n), "e")

    def rank_body(*i):
        vi, ve = x(*i), at(x, i, e)
        before = te.any(ve > vi if largest else ve < vi, te.all(ve == vi, e < i[axis]))
        return te.sum(te.if_then_else(before, te.const(1, "int32"), te.const(0, "int32")), axis=e)

    rank = te.compute(shape, rank_body, name="topk_rank", tag="topk")
    out = shape[:axis] + (k,) + shape[axis + 1:]
    rv, ri = te.reduce_axis((0, n), "r"), te.reduce_axis((0, n), "r")
    values = te.compute(out, lambda *j: te.sum(te.if_then_else(at(rank, j, rv) == j[axis], at(x, j, rv),
                                                               te.const(0, x.dtype)), axis=rv),
                        name="topk_values", tag="topk")
    indices = te.compute(out, lambda *j: te.sum(te.if_then_else(at(rank, j, ri) == j[axis], ri.var.astype("int64"),
                                                                te.const(0, "int64")), axis=ri),
                         name="topk_indices", tag="topk")
    return [values, indices]
