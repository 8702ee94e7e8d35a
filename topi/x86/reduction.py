"""x86 schedule for reductions: parallel rows, serial contiguous reduce loops.

Injective producers are inlined into the reduction.  Then, by the shape of the
reduction (knobs from :func:`default_reduce_config`):

* the input's last axis is reduced (``sum(x, axis=-1)``): the data axes are
  fused and run in parallel; the reduce loops stay innermost, serial and
  contiguous, and LLVM vectorizes them (float adds are emitted ``reassoc``)::

      parallel (i.fused, 0, 4096) {  C[i] = 0;  for (k, 0, 1000) { C[i] += A[i, k] } }

* the last axis is kept (``sum(x, axis=0)``): the last data axis is split by
  the vector width and its inner part moved below the reduce loops, so every
  step adds one contiguous vector::

      parallel (j.outer, 0, 64) { C[j.outer*16 : +16] = 0
        for (k, 0, 37) { C[j.outer*16 : +16] += A[k, j.outer*16 : +16] } }

* everything is reduced to a scalar: ``rfactor`` over parts of the first
  reduce axis, the partial sums in parallel, then a short serial sum.

Injective consumers (``mean``'s division, ``argmax``'s index copy) get the
injective schedule.  Halide: ``f.update().parallel(y)``, ``f.update().rfactor``.
"""

from __future__ import annotations

import math

import te
from te import expr as E
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.config import largest_divisor, records_target
from topi.generic.injective import as_tensor_list
from topi.utils import get_const_tuple, traverse_inline
from topi.x86.injective import MAX_LANES, schedule_injective_from_existing

__all__ = ["default_reduce_config", "reduce_workload", "schedule_reduce"]

PARALLEL_MIN_ELEMS = 32768
TEMPLATE = "reduce.x86"


def _extent(iv) -> int | None:
    ext = get_const_tuple((iv.dom.extent,))[0]
    return ext if isinstance(ext, int) else None


def reduce_workload(op: te.ComputeOp) -> tuple:
    """The workload key of a reduction stage: data extents, reduce extents, outputs, dtype
    (a symbolic extent prints as its name)."""
    def ext(iv):
        e = _extent(iv)
        return e if e is not None else str(iv.dom.extent)

    return (TEMPLATE, tuple(ext(iv) for iv in op.axis), tuple(ext(iv) for iv in op.reduce_axis),
            int(op.num_outputs), str(op.dtypes[0]))


def reduce_space(workload: tuple, target) -> dict:
    return {"vector_width": [1, 2, 4, 8, 16, 32], "parallel": [False, True], "rfactor_parts": [0, *range(2, 17)]}


def reduce_rule(workload: tuple, target) -> dict:
    """``vector_width``: one vector of the target (at most 16 lanes); ``parallel`` when the
    work is large and there are rows; ``rfactor_parts``: for a large reduction to a
    scalar, the largest divisor up to 16 of the first reduce extent (0: no rfactor)."""
    _, axes, raxes, num_outputs, dtype = workload
    exts = [e if isinstance(e, int) else None for e in (*axes, *raxes)]
    work = math.prod(exts) if None not in exts else None
    big = work is None or work >= PARALLEL_MIN_ELEMS
    out_elems = math.prod(e if isinstance(e, int) else 1 for e in axes)
    parts = 0
    if big and out_elems == 1 and num_outputs == 1 and raxes:
        first = raxes[0] if isinstance(raxes[0], int) else 0
        parts = largest_divisor(first, 16) if first >= 2 else 0
    return {"vector_width": max(1, min(MAX_LANES, target.lanes(dtype))), "parallel": big and out_elems > 1,
            "rfactor_parts": parts}


register_rule(TEMPLATE, reduce_space, reduce_rule, doc="comm_reduce reductions (sum, max, argmax ...)")


def default_reduce_config(op: te.ComputeOp) -> ConfigEntity:
    """The chosen config of the reduction ``op`` (:func:`reduce_rule` unless a dispatch
    context says otherwise)."""
    return choose_config(reduce_workload(op))


def _inner_axis_reduced(op: te.ComputeOp) -> bool:
    """Whether the innermost index of the reduction's main read is a reduce variable."""
    reduce_vars = {iv.var for iv in op.reduce_axis}
    reads: list = []
    from te.visitor import walk

    for src in op.body[0].source:
        walk(src, lambda n: reads.append(n) if isinstance(n, E.TensorRead) else None)
    if not reads:
        return True
    last = reads[0].indices[-1] if reads[0].indices else None
    return last is None or any(v is last for v in reduce_vars) or not op.axis


def _schedule_rows(s, op, cfg: ConfigEntity) -> None:
    """Data axes fused and parallel outside; reduce loops serial inside."""
    stage = s[op]
    fused = stage.fuse(*op.axis) if len(op.axis) > 1 else op.axis[0]
    if cfg["parallel"].val:
        stage.parallel(fused)


def _schedule_columns(s, op, cfg: ConfigEntity) -> None:
    """The last data axis vectorized below the reduce loops."""
    stage = s[op]
    *outer_axes, last = op.axis
    lanes = cfg["vector_width"].val
    n_last = _extent(last)
    if n_last is None or n_last < lanes:
        return _schedule_rows(s, op, cfg)
    lo, li = stage.split(last, factor=lanes)
    outer = stage.fuse(*outer_axes, lo) if outer_axes else lo
    stage.reorder(outer, *op.reduce_axis, li)
    stage.vectorize(li)
    if cfg["parallel"].val:
        stage.parallel(outer)


def _schedule_scalar(s, op, cfg: ConfigEntity) -> None:
    """``rfactor`` the first reduce axis into ``rfactor_parts`` parallel partial results, each
    part's reduce loops in the input's order (the rest of the first axis outermost), so the
    innermost one is contiguous and vectorizes (``min`` of 128 x 256 float32: 4x faster)."""
    stage = s[op]
    ko, ki = stage.split(op.reduce_axis[0], nparts=cfg["rfactor_parts"].val)
    rf = s.rfactor(op.output(0), ko)
    inner = s[rf].op.reduce_axis
    first = [iv for iv in inner if iv.var.name == ki.var.name]
    s[rf].reorder(s[rf].op.axis[0], *first, *(iv for iv in inner if iv.var.name != ki.var.name))
    s[rf].parallel(s[rf].op.axis[0])


@records_target
def schedule_reduce_stage(s, op: te.ComputeOp, cfg: ConfigEntity | None = None) -> None:
    """Schedule the reduction ``op`` inside ``s`` (the reduce-anchor callback)."""
    key = reduce_workload(op)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    if not op.axis:
        if cfg["rfactor_parts"].val > 1:
            _schedule_scalar(s, op, cfg)
    elif _inner_axis_reduced(op):
        _schedule_rows(s, op, cfg)
    else:
        _schedule_columns(s, op, cfg)


@records_target
def schedule_reduce(outs, cfg: ConfigEntity | None = None):
    """The x86 schedule of reduction outputs ``outs`` (a tensor or a list).

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        Reductions (tag ``comm_reduce``/``comm_reduce_idx``), possibly followed
        by injective stages (``mean``).
    cfg : ConfigEntity, optional
        Overrides :func:`default_reduce_config` for every reduction.

    Returns
    -------
    schedule.Schedule
    """
    outs = as_tensor_list(outs)
    s = te.create_schedule([t.op for t in outs])

    def callback(op):
        if isinstance(op, te.ComputeOp) and op.reduce_axis:
            schedule_reduce_stage(s, op, cfg)

    for t in outs:
        traverse_inline(s, t.op, callback)
        if isinstance(t.op, te.ComputeOp) and not t.op.reduce_axis:
            schedule_injective_from_existing(s, t)  # mean's division, argmax's index copy
    return s
