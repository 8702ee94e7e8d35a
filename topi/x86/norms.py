"""x86 schedules of normalisations.

Batch normalisation: the output as an injective kernel (fused, vectorized, parallel:
:mod:`topi.x86.injective`); the training statistics are reduction stages at root, each
channel's row reduced in order.

Local response normalisation: the window's sum of squares is computed one row of the
innermost axis at a time where the output consumes it, its taps outside the vector loop, so
the squares and the ``pow`` after them (inline in :mod:`codegen.vecmath`) stay vectors; the
other axes are fused and parallel.  The generic schedule reduced one element at a time and
called ``powf`` per element (compare with ``tessera bench --profile --threads 1`` on the light
Inception-v1, whose two LRNs it ran).
"""

from __future__ import annotations

import te
from codegen.target import Target
from topi.generic.nn import _as_list
from topi.x86.injective import schedule_injective


def schedule_batch_norm(outs):
    """Schedule ``topi.nn.batch_norm``'s ``[out, moving_mean, moving_var]``.

    Returns
    -------
    schedule.Schedule
    """
    return schedule_injective(_as_list(outs))


def schedule_lrn(outs):
    """Schedule ``topi.nn.lrn`` (stages ``T_lrn_sqsum`` and ``T_lrn``, the output).

    Returns
    -------
    schedule.Schedule
    """
    outs = _as_list(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    sq = next(t for t in out.op.input_tensors if t.op.name == "T_lrn_sqsum")
    st, sqs = s[out], s[sq]
    *outer, inner = st.op.axis
    lanes = max(1, Target.current().lanes(out.dtype))
    st.vectorize(st.split(inner, factor=lanes)[1])
    sq_inner = sqs.split(sqs.op.axis[-1], factor=lanes)
    sqs.reorder(sq_inner[0], *sqs.op.reduce_axis, sq_inner[1])
    sqs.vectorize(sq_inner[1])
    if outer:
        row = st.fuse(*outer)
        st.parallel(row)
        sqs.compute_at(st, row)
    return s


__all__ = ["schedule_batch_norm", "schedule_lrn"]
