"""x86 schedules for injective operators: one fused, vectorized, parallel loop.

Every injective intermediate is inlined; the last axis of each output is
split by the vector width and the inner part vectorized; the other axes and
the outer part are fused into one loop, run in parallel when the tensor is
large enough to pay for the launch::

    for (i, 0, 64) {                        parallel (i.j.outer.fused, 0, 50176) {
      for (j, 0, 12544) {            ->       T[ramp(i.j.outer.fused * 16, 1, 16)] = ...
        T[i, j] = ...                        }

(A last axis shorter than the vector is fused with the others first.)

The choices come from a config (``tune.autotvm.config``; ``default_injective_config``).
Halide: ``f.fuse(x, y, xy).vectorize(xy, 16).parallel(xy)``.
"""

from __future__ import annotations

import math

import te
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.generic.injective import inlined_schedule
from topi.utils import get_const_tuple
from topi.config import records_target

__all__ = [
    "default_injective_config",
    "schedule_broadcast",
    "schedule_concatenate",
    "schedule_elemwise",
    "schedule_injective",
    "schedule_injective_from_existing",
]

PARALLEL_MIN_ELEMS = 32768
TEMPLATE = "injective.x86"
MAX_LANES = 16  # wider vectors of narrow types only add legalisation work


def _num_elements(t: te.Tensor) -> int | None:
    shape = get_const_tuple(t.shape)
    return math.prod(shape) if all(isinstance(d, int) for d in shape) else None


def injective_workload(out: te.Tensor) -> tuple:
    """The workload key of an injective output: its shape (symbolic entries printed) and dtype."""
    shape = tuple(d if isinstance(d, int) else str(d) for d in get_const_tuple(out.shape))
    return (TEMPLATE, shape, str(out.dtype))


def injective_space(workload: tuple, target) -> dict:
    return {"vector_width": [1, 2, 4, 8, 16, 32], "parallel": [False, True]}


def injective_rule(workload: tuple, target) -> dict:
    """``vector_width``: one vector of the target (at most 16 lanes); ``parallel`` when the
    output has at least ``PARALLEL_MIN_ELEMS`` elements (or a symbolic shape)."""
    shape = workload[1]
    n = math.prod(shape) if all(isinstance(d, int) for d in shape) else None
    return {"vector_width": max(1, min(MAX_LANES, target.lanes(workload[2]))),
            "parallel": n is None or n >= PARALLEL_MIN_ELEMS}


register_rule(TEMPLATE, injective_space, injective_rule, doc="injective / elementwise / broadcast outputs")


def default_injective_config(out: te.Tensor) -> ConfigEntity:
    """The chosen config for ``out``: ``vector_width`` (lanes), ``parallel`` (bool)."""
    return choose_config(injective_workload(out))


def contiguous_suffix(s, out: te.Tensor) -> int:
    """How many trailing axes of ``out`` walk every input contiguously, as they walk ``out``.

    With the injective producers inlined, each read's flattened index is simplified under the
    axes' ranges; the suffix of axes whose coefficient in every read is the output's own stride
    (and that no condition reads) can be fused into one loop that moves through every buffer
    one element at a time: ``[N, C, 14, 14]`` out of a channel shuffle fuses ``14 x 14`` (196
    elements, 24 vectors and a tail) where the last axis alone gives 1 vector and 6 scalars.
    At least 1 (the last axis, as before).
    """
    from schedule.schedule_ops import inline_bodies
    from te import expr as E
    from te.simplify import linear, simplify
    from te.visitor import collect_vars, walk

    axes = list(out.op.axis)
    extents = get_const_tuple(out.shape)
    if len(axes) < 2 or not all(isinstance(d, int) for d in extents):
        return 1
    body = inline_bodies(s).get(s[out])
    if body is None:
        return 1
    ranges = {iv.var: (0, d - 1) for iv, d in zip(axes, extents)}
    reads, conds = [], []

    def grab(x):
        if isinstance(x, E.TensorRead):
            reads.append(x)
        elif isinstance(x, E.Select):
            conds.append(x.cond)

    walk(body[out.value_index], grab)
    flat = []
    for r in reads:
        shape = get_const_tuple(r.tensor.shape)
        if not all(isinstance(d, int) for d in shape):
            return 1
        index, stride = 0, 1
        for i, d in zip(reversed(r.indices), reversed(shape)):
            index = index + i * stride if stride != 1 else i
            stride *= d
        flat.append(linear(simplify(index, ranges)))
    in_conds = set().union(*(collect_vars(c) for c in conds)) if conds else set()
    k, stride = 0, 1
    for iv, d in zip(reversed(axes), reversed(extents)):
        v = iv.var
        if k >= 1 and v in in_conds:
            break
        if not all(_moves_by(lin, v, stride) for lin in flat):
            break
        k += 1
        stride *= d
    return max(k, 1)


def _moves_by(lin, v, stride: int) -> bool:
    """Does the linear form ``lin`` hold ``v`` only as the term ``stride * v``?"""
    from te.visitor import collect_vars

    found = False
    for t, c in lin.items():
        if t is v:
            found = c == stride
        elif v in collect_vars(t):
            return False
    return found


@records_target
def schedule_injective_from_existing(s, out: te.Tensor, cfg: ConfigEntity | None = None):
    """Fuse, vectorize and parallelise the stage of ``out`` inside schedule ``s``::

        parallel (outer, 0, prod(prefix))       // the axes before the contiguous suffix
          for (f.outer, 0, F / lanes)           // the suffix fused (F elements), not fused with
            vectorized (f.inner, 0, lanes)      // the outer loop: a tail of F % lanes is
              T[...] = ...                      // peeled off, the main part stays vectorized

    The index arithmetic of the outer axes is computed once per row of ``F`` elements.
    """
    key = injective_workload(out)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    stage = s[out]
    axes = list(stage.op.axis)
    if not axes:
        return s
    n = _num_elements(out)
    lanes = cfg["vector_width"].val
    shape = get_const_tuple(out.shape)
    if n is None or len(axes) == 1:
        return _schedule_flat(stage, axes, n, lanes, cfg["parallel"].val)
    k = contiguous_suffix(s, out)
    prefix, suffix = axes[:-k], axes[-k:]
    f = stage.fuse(*suffix) if len(suffix) > 1 else suffix[0]
    rows, row = math.prod(shape[:-k]), math.prod(shape[-k:])
    if not prefix:
        return _schedule_flat(stage, [f], n, lanes, cfg["parallel"].val)
    if lanes > 1 and row >= lanes:
        _, inner = stage.split(f, factor=lanes)
        stage.vectorize(inner)
    outer = stage.fuse(*prefix) if len(prefix) > 1 else prefix[0]
    if cfg["parallel"].val and rows > 1:
        stage.parallel(outer)
    return s


def _schedule_flat(stage, axes: list, n: int | None, lanes: int, parallel: bool):
    """One loop over every element (a contiguous walk): vectors, in parallel chunks."""
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    if lanes > 1 and (n is None or n >= lanes):
        outer, inner = stage.split(fused, factor=lanes)
        stage.vectorize(inner)
    else:
        outer = fused
    if parallel:
        stage.parallel(outer)
    return stage


@records_target
def schedule_injective(outs, cfg: ConfigEntity | None = None):
    """The x86 schedule of injective outputs ``outs`` (a tensor or a list).

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
    cfg : ConfigEntity, optional
        The config of the first output (``injective_workload(outs[0])``); it
        applies to every output of the same key, the others take their own.

    Returns
    -------
    schedule.Schedule
    """
    s, outs = inlined_schedule(outs)
    if cfg is not None:
        check_config(cfg, injective_workload(outs[0]))
    for t in outs:
        same = cfg is not None and cfg.workload == injective_workload(t)
        schedule_injective_from_existing(s, t, cfg if same else None)
    return s


@records_target
def schedule_elemwise(outs, cfg: ConfigEntity | None = None):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs, cfg)


@records_target
def schedule_broadcast(outs, cfg: ConfigEntity | None = None):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs, cfg)


@records_target
def schedule_concatenate(outs, cfg: ConfigEntity | None = None):
    """Same as :func:`schedule_injective` (the branches on the input stay scalar code)."""
    return schedule_injective(outs, cfg)
