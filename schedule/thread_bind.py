"""``s[C].bind(axis, te.thread_axis("blockIdx.x"))``: loops bound to GPU thread axes.

A bound loop is recorded like any annotation; lowering turns it into a loop
over the thread variable, printed as classic TVM prints a thread extent::

    for (i.outer, 0, 16) {            // attr [iter_var(blockIdx.x, range(min=0, ext=16), blockIdx.x)] thread_extent = 16
      for (i.inner, 0, 64) {    ->    // attr [iter_var(threadIdx.x, range(min=0, ext=64), threadIdx.x)] thread_extent = 64
        B[i.outer*64 + i.inner]       B[((blockIdx.x*64) + threadIdx.x)] = ...

Only a GPU target runs such loops in parallel, and this build has no GPU code
generator: ``build`` for "cuda"/"opencl" is refused naming the target.  The
LLVM backend runs a bound loop as a serial loop (the result is the same).
Halide: ``f.gpu_blocks(x).gpu_threads(y)``.
"""

from __future__ import annotations

from schedule import stmt as S
from schedule.errors import ScheduleError
from te import expr as E
from te.extern import THREAD_INDEX
from te.visitor import substitute

THREAD_BOUND = S.THREAD_BOUND


def check_bind(stage, ivar, thread_ivar) -> None:
    """Check that leaf axis ``ivar`` of ``stage`` may run as ``thread_ivar`` (the stage records it)."""
    stage._check_leaf(ivar, "bind")
    if not isinstance(thread_ivar, E.IterVar) or thread_ivar.iter_type != THREAD_INDEX:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': bind needs a thread axis made by "
            f"te.thread_axis('blockIdx.x' | 'threadIdx.x' | ...), got {thread_ivar!r}"
        )
    for iv, attrs in stage.iter_var_attrs.items():
        if attrs.get("bind") is thread_ivar and iv is not ivar:
            raise stage._error(
                f"cannot bind '{ivar.var.name}' to {thread_ivar.var.name}, axis '{iv.var.name}' "
                f"is already bound to it",
                "Bind each thread axis once per stage.",
            )


def bind_loop(thread_ivar, loop_var: E.Var, extent: E.Expr, body: S.Stmt, ranges: dict) -> S.Stmt:
    """The loop over ``loop_var`` as a loop over the thread variable."""
    tvar = thread_ivar.var
    if loop_var in ranges:
        ranges[tvar] = ranges[loop_var]
    vmap = {loop_var: tvar}

    def realize_bounds(s):
        if isinstance(s, S.Realize):
            bounds = tuple(E.Range(substitute(r.min, vmap), substitute(r.extent, vmap)) for r in s.bounds)
            return S.Realize(s.tensor, bounds, s.scope, s.body)
        return None

    body = S.transform(body, realize_bounds, lambda e: substitute(e, vmap))
    return S.For(tvar, E.const(0), extent, THREAD_BOUND, body, (("thread_tag", tvar.name),))


__all__ = ["THREAD_BOUND", "bind", "bind_loop"]
