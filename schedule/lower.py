"""THE lowering pipeline: a schedule to a flat, optimised loop nest.

``lower(s, args)`` builds the first nest (``schedule_ops``), then runs the
passes of ``PIPELINE`` in order.  Set ``TESSERA_PRINT_PASSES=1`` to print the
IR after each pass that changed it, with the time the pass took.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

from te import expr as E
from te.tensor import PlaceholderOp, Tensor
from te.shape import solvable
from te.visitor import collect_vars
from schedule import stmt as S
from schedule.schedule_ops import schedule_ops
from schedule.passes.storage_flatten import storage_flatten, arg_buffers
from schedule.passes.simplify_stmt import simplify_stmt
from schedule.passes.guard_zero_terms import guard_zero_terms
from schedule.passes.partition_loops import partition_loops
from schedule.passes.unroll_loops import unroll_loops
from schedule.passes.vectorize_loops import vectorize_loops
from schedule.passes.remove_no_op import remove_no_op

PIPELINE = [
    ("storage_flatten", storage_flatten),
    ("simplify", simplify_stmt),
    ("guard_zero_terms", guard_zero_terms),
    ("partition_loops", partition_loops),
    ("simplify", simplify_stmt),
    ("unroll_loops", unroll_loops),
    ("vectorize_loops", vectorize_loops),
    ("simplify", simplify_stmt),
    ("remove_no_op", remove_no_op),
]


@dataclass
class LoweredFunc:
    """A lowered function: its name, parameters (buffers and scalar vars) and body."""

    name: str
    params: list  # Buffer | Var, in call order
    args: list  # the user's Tensor | Var, in call order
    body: S.Stmt

    def __str__(self) -> str:
        return S.stmt_str(self.body)

    __repr__ = __str__


def lower(sch, args, name: str = "main", simple_mode: bool = True, timings: dict | None = None,
          pipeline=None, scratch_outputs: bool = False, unroll_in_codegen: bool = False) -> LoweredFunc:
    """Lower ``sch`` to a loop nest over the buffers of ``args`` (tensors and vars); ``timings``, if
    given, accumulates the seconds of ``schedule_ops`` and of each pass by name (compile profiles);
    ``pipeline``: the passes to run (default :data:`PIPELINE`; ``()``: the first nest only).
    An output missing from ``args`` is an error, or with ``scratch_outputs`` (classic ``tvm.lower``,
    to look at a nest) computed into a scratch buffer.  ``unroll_in_codegen``: loops to unroll stay
    ``unrolled`` loops that LLVM unrolls (what every build does, through
    ``codegen.service.lower_for_build``); by default their bodies are copied,
    as classic TVM's lowered nest shows them."""
    args = _check_args(sch, args, name)
    arg_keys = {(a.op, a.value_index) for a in args if isinstance(a, Tensor)}
    t0 = time.perf_counter()
    body, ranges = schedule_ops(sch, arg_keys, scratch_outputs)
    if timings is not None:
        timings["schedule_ops"] = timings.get("schedule_ops", 0.0) + time.perf_counter() - t0
    ctx, params = pass_context(sch, args, ranges)
    params = params + _implicit_vars(args, name)
    ctx["unroll_in_codegen"] = unroll_in_codegen
    trace = os.environ.get("TESSERA_PRINT_PASSES", "") not in ("", "0")
    if trace:
        print(f"// {name}: schedule_ops\n{S.stmt_str(body)}", file=sys.stderr)
    for pass_name, fn in PIPELINE if pipeline is None else pipeline:
        t0 = time.perf_counter()
        new = fn(body, ctx)
        dt_ms = (time.perf_counter() - t0) * 1e3
        if timings is not None:
            timings[pass_name] = timings.get(pass_name, 0.0) + dt_ms / 1e3
        if trace and new is not body:
            print(f"// after {pass_name} ({dt_ms:.2f} ms)\n{S.stmt_str(new)}", file=sys.stderr)
        body = new
    return LoweredFunc(name, params, list(args), body)


def pass_context(sch, args: list, ranges: dict) -> tuple:
    """``(ctx, params)``: what the passes read (argument buffers, loop ranges, storage alignments)
    and the buffer parameters of ``args``."""
    buffers, params = arg_buffers(sch, args)
    aligns = {st.op: st.storage_aligns for st in sch.stages if st.storage_aligns}
    orders = {st.op: st.storage_order for st in sch.stages if st.storage_order is not None}
    for op, _ in buffers:
        if op in orders:
            raise ValueError(f"reorder_storage of stage '{op.name}': its tensor is an argument of the kernel, "
                             f"whose layout is the caller's (row-major); reorder the storage of a stage the "
                             f"kernel allocates (a cache_write stage) instead")
    return {"buffers": buffers, "ranges": ranges, "aligns": aligns, "orders": orders}, params


def _implicit_vars(args, name: str) -> list:
    """Shape variables not in ``args``: extra trailing parameters bound from array shapes.

    A variable seen only inside shape expressions (``(8 * m, l)``) is solved
    from the array's shape at call time (``te.shape.bind_shape``); one that no
    entry linear in it determines must be passed.
    """
    explicit = {a for a in args if isinstance(a, E.Var)}
    implicit: list = []
    dims = [(a, d) for a in args if isinstance(a, Tensor) for d in a.shape]
    known = solvable([d for _, d in dims], explicit)
    for a, d in dims:
        for v in collect_vars(d):
            if v in explicit or E.contains(implicit, v):
                continue
            if v not in known:
                raise ValueError(
                    f"{name}: the symbolic extent '{v.name}' appears only inside the shape "
                    f"expression {d} of '{a.name}', which an array's shape does not determine "
                    f"(only an entry linear in one unknown does); pass it in the argument list"
                )
            implicit.append(v)
    return implicit


def _check_args(sch, args, name: str) -> list:
    if isinstance(args, (Tensor, E.Var)):
        args = [args]
    out = []
    for k, a in enumerate(args):
        if isinstance(a, Tensor):
            # a placeholder the schedule never reads is an unused buffer argument (as in TVM)
            if a not in sch and a.op not in sch.stage_map and not isinstance(a.op, PlaceholderOp):
                raise ValueError(f"{name}: argument {k} '{a.name}' is not a tensor of this schedule")
        elif not isinstance(a, E.Var):
            raise TypeError(f"{name}: argument {k} must be a Tensor or a te.var, got {a!r}")
        out.append(a)
    return out


def InferBound(sch) -> dict:  # noqa: N802 (classic TVM name)
    """IterVar -> Range for every axis of every computed stage (classic ``InferBound``)."""
    from schedule.schedule_ops import NestBuilder

    from te.scan import ScanOp

    b = NestBuilder(sch, set(), scratch_outputs=True, check=False)  # bounds only: nothing is compiled
    out = {}
    for st in sch.stages:  # a scan's own axes: the steps after init, and the state's other axes
        if isinstance(st.op, ScanOp):
            for iv in (st.op.scan_axis, *st.op.spatial_axis_):
                out[iv] = iv.dom
    for st, info in b.infos.items():
        alloc = dict(zip(st.op.axis, info.alloc_extent))
        for iv in st.all_iter_vars:
            if iv in info.extent:
                lo = info.root_min.get(iv, E.const(0))
                out[iv] = E.Range(lo, alloc.get(iv, info.extent[iv]))
    return out
