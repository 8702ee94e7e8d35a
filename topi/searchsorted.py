"""``searchsorted``: where values would be inserted into sorted sequences (numpy's, per row).

For sorted rows ``seq`` (the last axis; one 1-D sequence may serve every row of ``values``)::

    left:  out[..., j] = #{e : seq[..., e] <  v[..., j]}
    right: out[..., j] = #{e : seq[..., e] <= v[..., j]}

which on a sorted row is the insertion index numpy's ``searchsorted`` gives.  A count over
the row, O(len(seq)) per value: a reduction that vectorizes over the values, where a
binary search would be a data-dependent loop.
"""

from __future__ import annotations

import te
from topi.utils import get_const_tuple, shape_str


def searchsorted(sorted_sequence: te.Tensor, values: te.Tensor, right: bool = False,
                 out_dtype: str = "int64") -> te.Tensor:
    """Insertion indices of ``values`` into ``sorted_sequence`` along the last axis."""
    seq, val = get_const_tuple(sorted_sequence.shape), get_const_tuple(values.shape)
    if not seq or not val:
        raise ValueError("searchsorted: sorted_sequence and values must have rank >= 1")
    if len(seq) != 1 and seq[:-1] != val[:-1]:
        raise ValueError(f"searchsorted: the leading axes of sorted_sequence {shape_str(sorted_sequence)} "
                         f"and values {shape_str(values)} must match (or the sequence be 1-D)")
    n = seq[-1]

    def body(*idx):
        e = te.reduce_axis((0, n), "e")
        s = sorted_sequence[e] if len(seq) == 1 else sorted_sequence(*idx[:-1], e)
        v = values(*idx)
        return te.sum((s <= v if right else s < v).astype(out_dtype), axis=e)

    return te.compute(val, body, name="searchsorted", tag="searchsorted")
