"""x86 schedules for injective operators: one fused, vectorized, parallel loop.

Every injective intermediate is inlined; the last axis of each output is
split by the vector width and the inner part vectorized; the other axes and
the outer part are fused into one loop, run in parallel when the tensor is
large enough to pay for the launch::

    for (i, 0, 64) {                        parallel (i.j.outer.fused, 0, 50176) {
      for (j, 0, 12544) {            ->       T[ramp(i.j.outer.fused * 16, 1, 16)] = ...
        T[i, j] = ...                        }

(A last axis shorter than the vector is fused with the others first.)

The choices come from a :class:`tune.autotvm.config.Config` (``default_injective_config``).
Halide: ``f.fuse(x, y, xy).vectorize(xy, 16).parallel(xy)``.
"""

from __future__ import annotations

import math

import te
from tune.autotvm.config import Config, choose_config, register_rule
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


def default_injective_config(out: te.Tensor) -> Config:
    """The chosen config for ``out``: ``vector_width`` (lanes), ``parallel`` (bool)."""
    return choose_config(injective_workload(out))


@records_target
def schedule_injective_from_existing(s, out: te.Tensor, cfg: Config | None = None):
    """Fuse, vectorize and parallelise the stage of ``out`` inside schedule ``s``."""
    key = injective_workload(out)
    cfg = choose_config(key) if cfg is None else cfg.check(key)
    stage = s[out]
    axes = list(stage.op.axis)
    if not axes:
        return s
    n = _num_elements(out)
    lanes = cfg["vector_width"]
    last = get_const_tuple(out.shape)[-1]
    if lanes > 1 and len(axes) > 1 and isinstance(last, int) and last >= lanes:
        # vectorize the last axis alone: a broadcast operand's index then stays one
        # scalar per vector instead of a div/mod of the fused index per lane
        lo, inner = stage.split(axes[-1], factor=lanes)
        outer = stage.fuse(*axes[:-1], lo)
        stage.vectorize(inner)
    elif lanes > 1 and (n is None or n >= lanes):
        fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
        outer, inner = stage.split(fused, factor=lanes)
        stage.vectorize(inner)
    else:
        outer = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    if cfg["parallel"]:
        stage.parallel(outer)
    return s


@records_target
def schedule_injective(outs, cfg: Config | None = None):
    """The x86 schedule of injective outputs ``outs`` (a tensor or a list).

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
    cfg : Config, optional
        The config of the first output (``injective_workload(outs[0])``); it
        applies to every output of the same key, the others take their own.

    Returns
    -------
    schedule.Schedule
    """
    s, outs = inlined_schedule(outs)
    if cfg is not None:
        cfg.check(injective_workload(outs[0]))
    for t in outs:
        same = cfg is not None and cfg.workload == injective_workload(t)
        schedule_injective_from_existing(s, t, cfg if same else None)
    return s


@records_target
def schedule_elemwise(outs, cfg: Config | None = None):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs, cfg)


@records_target
def schedule_broadcast(outs, cfg: Config | None = None):
    """Same as :func:`schedule_injective`."""
    return schedule_injective(outs, cfg)


@records_target
def schedule_concatenate(outs, cfg: Config | None = None):
    """Same as :func:`schedule_injective` (the branches on the input stay scalar code)."""
    return schedule_injective(outs, cfg)
