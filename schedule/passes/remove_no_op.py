"""remove_no_op: drop empty blocks, loops and allocations left by earlier passes.

::

    for (i, 0, 4) {        ->   (nothing)
    }
"""

from __future__ import annotations

from schedule import stmt as S


def _empty(s) -> bool:
    return isinstance(s, S.Block) and not s.stmts


def remove_no_op(body: S.Stmt, ctx: dict) -> S.Stmt:
    def post(s):
        if isinstance(s, (S.For, S.Produce)) and _empty(s.body):
            return S.Block(())
        if isinstance(s, S.IfThenElse) and _empty(s.then_case) and (s.else_case is None or _empty(s.else_case)):
            return S.Block(())
        if isinstance(s, S.Block) and any(_empty(x) or isinstance(x, S.Block) for x in s.stmts):
            return S.seq(*[x for x in s.stmts if not _empty(x)]) if any(not _empty(x) for x in s.stmts) else S.Block(())
        return None

    return S.transform(body, post)
