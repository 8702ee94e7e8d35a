"""x86 schedule of ``layer_norm`` / ``rms_norm``: one row per iteration, all in cache.

::

    parallel (row.outer, 0, rows/rb)
      for (row.inner, 0, rb)
        sum = sum_k x[row, k]                        // vectorized by LLVM (reassoc)
        sqsum = sum_k (x[row, k] - sum/N)^2
        vectorized: out[row, k] = (x[row, k] - sum/N) * rsqrt(sqsum/N + eps) * gamma[k] + beta[k]

Knobs (``ConfigEntity``, template ``layer_norm.x86``): ``rb`` rows per parallel task,
``vec`` lanes of the output loop, ``parallel`` whether row blocks run on the thread pool.
"""

from __future__ import annotations

import math

import te
from topi.accumulate import accumulate_dtype
from tune.autotvm.config import check_config, choose_config, current_target, register_rule
from tune.autotvm.space import ConfigEntity
from topi.generic.nn import default_schedule
from topi.utils import get_const_tuple
from topi.config import records_target

TEMPLATE = "layer_norm.x86"
PARALLEL_MIN = 1 << 16


def layer_norm_workload(rows: int, cols: int, dtype: str = "float32") -> tuple:
    return (TEMPLATE, int(rows), int(cols), str(dtype))


def layer_norm_space(workload: tuple, target) -> dict:
    return {"rb": [1, 2, 4, 8, 16, 32], "vec": [4, 8, 16, 32, 64], "parallel": [False, True]}


def layer_norm_rule(workload: tuple, target) -> dict:
    """``rb``: enough rows per task that a task is ~8K elements (fewer launches);
    ``vec``: two vectors of the target; ``parallel`` from PARALLEL_MIN elements on (below,
    one thread finishes a norm in microseconds, less than waking a second one costs
    on a busy machine).  float16 rows count float32 lanes (they are normalised in float32)."""
    rows, cols = workload[1], workload[2]
    rb = 1
    while rb < 32 and rb * cols < 8192 and rows % (2 * rb) == 0:
        rb *= 2
    return {
        "rb": rb,
        "vec": min(2 * current_target().lanes(accumulate_dtype(workload[3])), 64),
        "parallel": rows * cols >= PARALLEL_MIN,
    }


register_rule(TEMPLATE, layer_norm_space, layer_norm_rule, doc="layer_norm / rms_norm over the last axis")


def default_layer_norm_config(rows: int, cols: int, dtype: str = "float32") -> ConfigEntity:
    return choose_config(layer_norm_workload(rows, cols, dtype))


STATS = ("layer_norm_sum", "layer_norm_sqsum", "layer_norm_rstd")  # per-row stages, computed at the row


def _stats(op):
    found, todo = [], [op]
    while todo:
        cur = todo.pop()
        for t in cur.input_tensors:
            if getattr(t.op, "tag", "") in STATS and t.op not in found:
                found.append(t.op)
                todo.append(t.op)
    return found


@records_target
def schedule_layer_norm(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.layer_norm`` / ``rms_norm`` for x86 (rows parallel, statistics per row)."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    out = outs[0]
    shape = get_const_tuple(out.shape)
    if len(outs) != 1 or out.op.tag != "layer_norm" or len(shape) < 2:
        return default_schedule(outs)
    axis = out.op.attrs.get("axis", len(shape) - 1)
    if axis != len(shape) - 1:
        return _schedule_strided(out, axis, shape)
    rows = math.prod(shape[:-1])
    key = layer_norm_workload(rows, shape[-1], out.dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    s = te.create_schedule([out.op])
    st = s[out]
    row = st.fuse(*st.op.axis[:-1]) if len(shape) > 2 else st.op.axis[0]
    ro, ri = st.split(row, factor=cfg["rb"].val)
    if cfg["parallel"].val:
        st.parallel(ro)
    _, vi = st.split(st.op.axis[-1], factor=cfg["vec"].val)
    st.vectorize(vi)
    for op in _stats(out.op):
        s[op].compute_at(st, ri)
    return s


def _schedule_strided(out, axis: int, shape: tuple):
    """A norm over an axis that is not the innermost (``[B, C, H, W]`` over ``C``): no transposes,
    the statistics of a row of pixels accumulate as vectors along the contiguous last axis::

        parallel (rows of the axes but the normalised and the last ones, by rb)
          sum[rb, W], sqsum[rb, W] = ...           // for (k, 0, C): vectorized over W
          for (k, 0, C) for (rows) vectorized: out[.., k, .., w] = ...

    ``rb`` rows per task make a task ~8K elements.  Not a tuning template: the one
    config-free choice (rows a task) follows the contiguous layout.
    """
    s = te.create_schedule([out.op])
    st = s[out]
    axes = list(st.op.axis)
    row_dims = [k for k in range(len(shape) - 1) if k != axis]
    norm, last, rows = axes[axis], axes[-1], [axes[k] for k in row_dims]
    row_extent = math.prod(shape[k] for k in row_dims)
    per_row = shape[axis] * shape[-1]
    rb = 1  # dividing the innermost row axis: a task's statistics are one box of rows
    while rows and rb * per_row < 8192 and shape[row_dims[-1]] % (2 * rb) == 0:
        rb *= 2
    vec = current_target().lanes(accumulate_dtype(out.dtype))
    if rows:
        st.reorder(*rows, norm, last)
        row = st.fuse(*rows) if len(rows) > 1 else rows[0]
        ro, ri = st.split(row, factor=rb)
        st.reorder(ro, norm, ri, last)
        if row_extent // rb > 1 and math.prod(shape) >= PARALLEL_MIN:
            st.parallel(ro)
        attach = ro
    else:
        st.reorder(norm, last)
        attach = None
    _, lv = st.split(last, factor=vec)
    st.vectorize(lv)
    for op in _stats(out.op):
        stage = s[op]
        *sr, sl = stage.op.axis
        if stage.op.reduce_axis:
            stage.reorder(*sr, *stage.op.reduce_axis, sl)
        _, sv = stage.split(sl, factor=vec)
        stage.vectorize(sv)
        if attach is not None:
            stage.compute_at(st, attach)
    return s
