"""``unique``: the distinct values of a 1-D tensor (classic ``topi.unique``), sort-free.

Every element's first occurrence and the rank of its value are reductions over the array;
the outputs then gather the element of each rank::

    first[i]   = min_e (x[e] == x[i] ? e : n)               # index of x[i]'s first occurrence
    rank[i]    = sum_e (first[e] == e) && x[e] < x[i]       # sorted: distinct values below x[i]
               = sum_e (first[e] == e) && e < first[i]      # unsorted: in order of appearance
    unique[j]  = x[r],  indices[j] = r   for the r with first[r] == r and rank[r] == j
    inverse[i] = rank[i];   counts[j] = #{r : rank[r] == j};   num_unique = #{r : first[r] == r}

Entries ``j >= num_unique`` of ``unique``/``indices``/``counts`` are 0.  O(n^2) work in
reductions whose data axis vectorizes (``topi.x86.schedule_unique``): for arrays of up to
some 10^4 elements (class ids, token ids), not for long ones.
"""

from __future__ import annotations

import te
from topi.utils import get_const_tuple, shape_str

UNIQUE = "unique"


def unique(data: te.Tensor, is_sorted: bool = True, return_counts: bool = False) -> list:
    """The unique elements of the 1-D ``data``, sorted ascending or in order of first appearance.

    Returns
    -------
    list of te.Tensor
        ``[unique, indices, inverse_indices, num_unique]`` (+ ``counts`` with ``return_counts``):
        ``unique`` has ``data``'s dtype and length; the others are int32, ``num_unique`` of shape (1,).
    """
    shape = get_const_tuple(data.shape)
    if len(shape) != 1 or not isinstance(shape[0], int):
        raise ValueError(f"unique: data must be 1-D with a static length, got {shape_str(data)}")
    n = shape[0]
    i32 = "int32"

    def count(cond):  # a cast, not a select: a select in a sum becomes a guarded (scalar) update
        return cond.astype(i32)

    def first_body(i):
        e = te.reduce_axis((0, n), "e")
        return te.min(te.if_then_else(data[e] == data[i], e, te.const(n, i32)), axis=e)

    first = te.compute((n,), first_body, name="unique_first", tag=UNIQUE)

    def rank_body(i):
        e = te.reduce_axis((0, n), "e")
        before = data[e] < data[i] if is_sorted else e < first[i]
        return te.sum(count(te.all(first[e] == e, before)), axis=e)

    rank = te.compute((n,), rank_body, name="unique_rank", tag=UNIQUE)

    def gather(value, dtype, name, only_first=True):
        def body(j):
            r = te.reduce_axis((0, n), "r")
            hit = te.all(first[r] == r, rank[r] == j) if only_first else rank[r] == j
            v = value(r)
            picked = v * hit.astype(dtype) if dtype.startswith(("int", "uint")) else \
                te.if_then_else(hit, v, te.const(0, dtype))  # NaN * 0 is NaN: floats select
            return te.sum(picked, axis=r)

        return te.compute((n,), body, name=name, tag=UNIQUE)

    values = gather(lambda r: data[r], data.dtype, "unique_values")
    indices = gather(lambda r: r.astype(i32), i32, "unique_indices")
    inverse = te.compute((n,), lambda i: rank[i], name="unique_inverse", tag=UNIQUE)

    def num_body(_):
        e = te.reduce_axis((0, n), "e")
        return te.sum(count(first[e] == e), axis=e)

    num = te.compute((1,), num_body, name="unique_num", tag=UNIQUE)
    outs = [values, indices, inverse, num]
    if return_counts:
        outs.append(gather(lambda r: te.const(1, i32), i32, "unique_counts", only_first=False))
    return outs
