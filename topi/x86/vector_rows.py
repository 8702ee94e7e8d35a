"""x86 schedule of whole-array operators whose reductions run across the array (unique, dft, sort).

Each output element of these operators is a reduction over a whole row (``rank[i] =
sum_e ...`` of ``unique``, ``X[k] = sum_n ...`` of ``dft``), so the reduction cannot be
vectorized, but the output axis can: its last axis is split by the vector width and the
reduction loop moved outside the vector, each lane keeping its own accumulator::

    for (i, 0, n)                        parallel (i.outer, 0, ceil(n / 8))
      for (e, 0, n)               ->       for (e, 0, n)
        rank[i] += f(x[e], x[i])             rank[ramp(i.outer*8, 1, 8)] += f(x[e], x[ramp(...)])

The other axes (the vector blocks of a 1-D array) are fused and run in parallel when
the stage does at least ``PARALLEL_MIN_WORK`` reduction steps.  Halide: ``f.update().split(x, xo, xi, 8)
.reorder(xi, r, xo).vectorize(xi).parallel(xo)``.
"""

from __future__ import annotations

import math

from te import expr as E
from topi.config import vector_lanes
from topi.generic.nn import inline_then

PARALLEL_MIN_WORK = 1 << 16


def _const(iv) -> int | None:
    ext = iv.dom.extent if iv.dom is not None else None
    return ext.value if isinstance(ext, E.IntImm) else None


def vectorize_rows(s, op, lanes: int) -> None:
    """``s[op]``'s last data axis split by ``lanes`` and vectorized inside its reduction loops."""
    st = s[op]
    data = list(op.axis)
    if not data:
        return
    last = _const(data[-1])
    work = math.prod(_const(iv) or 1 for iv in data + list(op.reduce_axis))
    outer = None
    if last is not None and last >= lanes and op.reduce_axis:
        outer, inner = st.split(data[-1], factor=lanes)
        st.reorder(*data[:-1], outer, *op.reduce_axis, inner)
        st.vectorize(inner)
    if work < PARALLEL_MIN_WORK:
        return
    # the rows run in parallel, the vector blocks of a row in order: a fused (row, block) loop
    # would hide the last, partial block from loop partitioning, leaving it scalar
    rows = data[:-1] or ([outer] if outer is not None else data)
    st.parallel(st.fuse(*rows) if len(rows) > 1 else rows[0])


def schedule_vector_rows(outs):
    """Injective intermediates inlined; every other stage vectorized along its last axis
    (:func:`vectorize_rows`) at the target's vector width.

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        The outputs of ``topi.unique`` or ``topi.dft`` (or any whole-array reduction).

    Returns
    -------
    schedule.Schedule
    """
    return inline_then(outs, lambda s, op: vectorize_rows(s, op, vector_lanes(op.output(0).dtype)))


schedule_unique = schedule_vector_rows
schedule_dft = schedule_vector_rows
schedule_sort = schedule_argsort = schedule_topk = schedule_vector_rows

__all__ = ["schedule_argsort", "schedule_dft", "schedule_sort", "schedule_topk", "schedule_unique",
           "schedule_vector_rows", "vectorize_rows"]
