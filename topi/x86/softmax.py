"""x86 schedule of ``softmax`` / ``log_softmax``: one row per iteration, all in cache.

::

    parallel (row.outer, 0, rows/rb)
      for (row.inner, 0, rb)
        maxelem = max_k x[row, k]                 // vectorized by LLVM (reassoc)
        vectorized: exp[row, k] = exp(x[row, k] - maxelem)
        expsum = sum_k exp[row, k]
        vectorized: out[row, k] = exp[row, k] / expsum

The row of ``exp`` lives in a row-sized buffer that stays in L1.
"""

from __future__ import annotations

import numpy as np

import te
from topi.config import Config
from topi.generic.nn import default_schedule
from topi.utils import get_const_tuple

VEC = 16


def default_softmax_config(rows: int, cols: int) -> Config:
    """Rows per parallel task (``rb``) and vector width (``vec``)."""
    return Config("softmax", {"rb": 8 if rows >= 64 else 1, "vec": VEC})


def _vectorize_inner(st, vec: int) -> None:
    ax = st.leaf_iter_vars[-1]
    _, inner = st.split(ax, factor=vec)
    st.vectorize(inner)


def _stages(out_op):
    """(maxelem, exp, expsum) of a softmax output op, or None if it is not ours."""
    by_name = {}
    todo = [out_op]
    while todo:
        op = todo.pop()
        for t in op.input_tensors:
            if t.op.name.startswith("T_softmax_") and t.op.name not in by_name:
                by_name[t.op.name] = t.op
                todo.append(t.op)
    names = ("T_softmax_maxelem", "T_softmax_exp", "T_softmax_expsum")
    return None if any(n not in by_name for n in names) else [by_name[n] for n in names]


def schedule_softmax(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.softmax`` / ``log_softmax`` for x86.

    Rows are parallel; the normalised axis must be the last one for the fast
    path (otherwise the generic fallback schedule is returned).

    Parameters
    ----------
    outs : te.Tensor or list
        The softmax output.
    cfg : Config, optional
        Knobs of :func:`default_softmax_config`.
    """
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    out = outs[0]
    stages = _stages(out.op) if len(outs) == 1 else None
    shape = get_const_tuple(out.shape)
    if (stages is None or out.op.attrs.get("axis") != len(shape) - 1 or len(shape) < 2
            or not all(isinstance(d, int) for d in shape)):
        return default_schedule(outs)
    mx, ex, sm = stages
    s = te.create_schedule([out.op])
    cfg = cfg or default_softmax_config(int(np.prod(shape[:-1])), shape[-1])
    st = s[out]
    row = st.fuse(*st.op.axis[:-1]) if len(st.op.axis) > 2 else st.op.axis[0]
    ro, ri = st.split(row, factor=cfg["rb"])
    st.parallel(ro)
    _vectorize_inner(st, cfg["vec"])
    _attach_rows(s, out.op, ri, (sm, ex, mx))
    _vectorize_inner(s[ex], cfg["vec"])
    _vectorize_max(s, mx, shape[-1])
    return s


def _vectorize_max(s, mx, cols: int) -> None:
    """``max`` reductions do not reassociate in LLVM: factor ``lanes`` partial maxima out.

    ::

        maxelem = max_k x[k]     ->   maxelem.rf[0:8] = max_{k.outer} x[k.outer*8 + 0:8]
                                      maxelem = max_{k.inner.v} maxelem.rf[k.inner.v]
    """
    lanes = next((v for v in (16, 8, 4) if cols % v == 0 and cols >= 2 * v), None)
    if lanes is None:
        return
    st = s[mx]
    _, ki = st.split(st.op.reduce_axis[0], factor=lanes)
    rf = s.rfactor(mx, ki, factor_axis=len(mx.axis))
    s[rf].compute_at(st, st.op.axis[0])
    ko = s[rf].op.reduce_axis[0]
    s[rf].reorder(ko, s[rf].op.axis[-1])
    s[rf].vectorize(s[rf].op.axis[-1])


def _attach_rows(s, out_op, ri, ops) -> None:
    """Compute each of ``ops`` per row: at ``ri`` when the output reads it, else at the
    row axis of the (already attached) stage that does."""
    for op in ops:
        if op in [t.op for t in out_op.input_tensors]:
            s[op].compute_at(s[out_op], ri)
            continue
        consumer = next(c for c in ops if op in [t.op for t in c.input_tensors])
        s[op].compute_at(s[consumer], s[consumer].op.axis[0])


