"""unroll_loops: replicate the bodies of ``unrolled`` loops.

::

    unrolled (k, 0, 3) {            C[0] = C[0] + A[0]
      C[0] = C[0] + A[k]     ->     C[0] = C[0] + A[1]
    }                               C[0] = C[0] + A[2]

A loop with ``pragma auto_unroll_max_step = N`` also unrolls every serial
loop inside it whose total number of body executions is at most N (TVM's
``auto_unroll_max_step``; Halide's ``unroll`` is the explicit form).  A loop
with a non-constant extent stays a loop.

With ``ctx["unroll_in_codegen"]`` (every build: ``codegen.service.lower_for_build``) a loop to
unroll stays one loop of kind ``unrolled`` and codegen asks LLVM to unroll it fully
(``llvm.loop.unroll.full``): replicating bodies here made every later pass and the IR emission
scale with the unrolled size, about 20 times the nest (ResNet-50 builds in about 16% less CPU
time, its kernels as fast: ``tessera compile --profile``).  Still copied here: a loop inside a
vectorized loop (the vectorizer wants straight-line code), and one whose variable decides a
``select`` in its body (a Winograd transform's constant matrix, ``select(e == 0, ..)``): each copy
folds to one arm here, where LLVM would optimise all of them first.
"""

from __future__ import annotations

from te import expr as E
from te.visitor import collect_vars, substitute, walk
from schedule import stmt as S

MAX_UNROLL = 1024


def unroll_loops(body: S.Stmt, ctx: dict) -> S.Stmt:
    return _visit(body, 0, bool(ctx.get("unroll_in_codegen")))


def _steps(s: S.Stmt) -> int | None:
    """Number of innermost statement executions of ``s`` (None if not constant)."""
    if isinstance(s, S.For):
        inner = _steps(s.body)
        if inner is None or not isinstance(s.extent, E.IntImm):
            return None
        return s.extent.value * inner
    if isinstance(s, S.Block):
        total = 0
        for x in s.stmts:
            n = _steps(x)
            if n is None:
                return None
            total += n
        return total
    for name in ("body", "then_case"):
        child = getattr(s, name, None)
        if child is not None:
            return _steps(child)
    return 1


def _decides_select(body: S.Stmt, var: E.Var) -> bool:
    """Whether ``var`` appears in the condition of a ``select`` of ``body``."""
    found = []

    def look(e: E.Expr) -> None:
        if not found and isinstance(e, E.Select) and var in collect_vars(e.cond):
            found.append(e)

    S.walk_stmt(body, lambda st: [walk(e, look) for e in S.stmt_exprs(st)])
    return bool(found)


def _visit(s: S.Stmt, auto_max: int, in_codegen: bool) -> S.Stmt:
    if isinstance(s, S.For):
        step = dict(s.pragmas).get("auto_unroll_max_step")
        inner_max = int(step) if step is not None else auto_max
        body = _visit(s.body, inner_max, in_codegen and s.kind != S.VECTORIZED)
        unroll = s.kind == S.UNROLLED
        if not unroll and s.kind == S.SERIAL and auto_max > 0:
            n = _steps(S.For(s.loop_var, s.min, s.extent, s.kind, body))
            unroll = n is not None and n <= auto_max
        if unroll and isinstance(s.extent, E.IntImm) and s.extent.value <= MAX_UNROLL:
            if in_codegen and not _decides_select(body, s.loop_var):
                return S.For(s.loop_var, s.min, s.extent, S.UNROLLED, body, s.pragmas)
            copies = [
                S.map_stmt_exprs(body, lambda e, k=k: substitute(e, {s.loop_var: s.min + k}))
                for k in range(s.extent.value)
            ]
            return S.seq(*copies) if copies else S.Block(())
        kind = S.SERIAL if s.kind == S.UNROLLED else s.kind
        if body is s.body and kind == s.kind:
            return s
        return S.For(s.loop_var, s.min, s.extent, kind, body, s.pragmas)
    return S.map_stmt(s, lambda x: _visit(x, auto_max, in_codegen))
