"""x86 schedule of ``softmax`` / ``log_softmax``: one row per iteration, all in cache.

::

    parallel (row.outer, 0, rows/rb)
      for (row.inner, 0, rb)
        maxelem.rf[lanes] = max_{k.outer} x[row, k.outer*lanes + :]   // independent vmaxps chains
        maxelem = max(maxelem.rf)
        vectorized: exp[row, k] = exp(x[row, k] - maxelem)             // 2 zmm per iteration
        expsum = sum_k exp[row, k]                                      // LLVM: 4 accumulators
        vectorized: out[row, k] = exp[row, k] * (1 / expsum)

The row of ``exp`` lives in a row-sized buffer that stays in L1.  About
three quarters of the instructions of a row are the inline ``exp`` polynomial
(``codegen.vecmath``); the max, sum and scaling passes are the rest.  The
``exp`` stage is read by two stages (the sum and the scaling), so it cannot
be written to the output and scaled in place (onnxruntime's order): the
scaling pass stores the output after the exps, in a burst of stores whose
cache-line fills do not overlap with the ``exp`` arithmetic.
"""

from __future__ import annotations

import numpy as np

import te
from topi.accumulate import accumulate_dtype
from tune.autotvm.config import check_config, choose_config, current_target, register_rule
from tune.autotvm.space import ConfigEntity
from topi.generic.nn import default_schedule
from topi.utils import get_const_tuple
from topi.config import records_target

TEMPLATE = "softmax.x86"


def softmax_workload(rows: int, cols: int, dtype: str = "float32") -> tuple:
    """The workload key of a softmax over the last axis (``rows`` rows of ``cols``)."""
    return (TEMPLATE, int(rows), int(cols), str(dtype))


def softmax_space(workload: tuple, target) -> dict:
    return {"rb": [1, 2, 4, 8, 16, 32], "vec": [4, 8, 16, 32, 64]}


def softmax_rule(workload: tuple, target) -> dict:
    """Rows per parallel task (``rb``) and vector width (``vec``): two vectors of the
    target per loop iteration (32 float32 lanes with AVX-512, 16 with AVX2).

    Two independent exps per iteration keep both FMA pipes busy (about 5% faster than
    one, ``benchmarks/topi_nn.py``); four are no better.  float16 rows count float32 lanes (their
    exponentials and sum are computed in float32).
    """
    lanes = target.lanes(accumulate_dtype(workload[3]))
    return {"rb": 8 if workload[1] >= 64 else 1, "vec": min(2 * lanes, 64)}


register_rule(TEMPLATE, softmax_space, softmax_rule, doc="softmax / log_softmax over the last axis")


def default_softmax_config(rows: int, cols: int, dtype: str = "float32") -> ConfigEntity:
    """The chosen config of :func:`schedule_softmax` (:func:`softmax_rule` unless a
    dispatch context says otherwise)."""
    return choose_config(softmax_workload(rows, cols, dtype))


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


@records_target
def schedule_softmax(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.softmax`` / ``log_softmax`` for x86.

    Rows are parallel; the normalised axis must be the last one for the fast
    path (otherwise the generic fallback schedule is returned).

    Parameters
    ----------
    outs : te.Tensor or list
        The softmax output.
    cfg : ConfigEntity, optional
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
    key = softmax_workload(int(np.prod(shape[:-1])), shape[-1], out.dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    st = s[out]
    row = st.fuse(*st.op.axis[:-1]) if len(st.op.axis) > 2 else st.op.axis[0]
    ro, ri = st.split(row, factor=cfg["rb"].val)
    st.parallel(ro)
    _vectorize_inner(st, cfg["vec"].val)
    _attach_rows(s, out.op, ri, (sm, ex, mx))
    _vectorize_inner(s[ex], cfg["vec"].val)
    _vectorize_max(s, mx, shape[-1], current_target().lanes(out.dtype))
    return s


def max_lanes(cols: int) -> int | None:
    """Partial maxima of the row max: the widest divisor of ``cols`` up to 64 that is a
    multiple of 8 (1000 -> 40: two zmm and one ymm chain), else of 4; None below 8 columns.

    A divisor keeps the factored loop free of guards; several registers wide, its
    ``vmaxps`` chains run side by side instead of waiting on one another.
    """
    for step in (8, 4):
        lanes = [v for v in range(step, 65, step) if cols % v == 0 and cols >= 2 * v]
        if lanes:
            return max(lanes)
    return None


def _vectorize_max(s, mx, cols: int, lanes_per_vector: int) -> None:
    """``max`` reductions do not reassociate in LLVM: factor ``lanes`` partial maxima out.

    ::

        maxelem = max_k x[k]     ->   maxelem.rf[0:8] = max_{k.outer} x[k.outer*8 + 0:8]
                                      maxelem = max_{k.inner.v} maxelem.rf[k.inner.v]
    """
    lanes = max_lanes(cols)
    if lanes is None:
        return
    st = s[mx]
    _, ki = st.split(st.op.reduce_axis[0], factor=lanes)
    rf = s.rfactor(mx, ki, factor_axis=len(mx.axis))
    s[rf].compute_at(st, st.op.axis[0])
    ko = s[rf].op.reduce_axis[0]
    vec = next((v for v in (lanes_per_vector, lanes_per_vector // 2) if v and lanes % v == 0), lanes)
    chains, lane = s[rf].split(s[rf].op.axis[-1], factor=vec)
    s[rf].reorder(ko, chains, lane)
    s[rf].unroll(chains)
    s[rf].vectorize(lane)


def _attach_rows(s, out_op, ri, ops) -> None:
    """Compute each of ``ops`` per row: at ``ri`` when the output reads it, else at the
    row axis of the (already attached) stage that does."""
    for op in ops:
        if op in [t.op for t in out_op.input_tensors]:
            s[op].compute_at(s[out_op], ri)
            continue
        consumer = next(c for c in ops if op in [t.op for t in c.input_tensors])
        s[op].compute_at(s[consumer], s[consumer].op.axis[0])


