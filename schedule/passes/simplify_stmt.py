"""simplify: arithmetic simplification of every expression under loop ranges.

::

    for (i, 0, 1) {                         A[(j + 4)] = 0f
      A[((i*8) + j) + 4] = 0f         ->
    }

Loops of extent 1 are replaced by their body; loops whose extent is <= 0
under the enclosing loops' ranges and branches whose condition is decided
are removed.
"""

from __future__ import annotations

from te import expr as E
from te.simplify import const_bounds, simplify, upper_key
from te.visitor import substitute
from schedule import stmt as S


def simplify_stmt(body: S.Stmt, ctx: dict) -> S.Stmt:
    ranges = dict(ctx.get("ranges", {}))
    return _Simplify(ranges).visit(body)


class _Simplify:
    def __init__(self, ranges: dict):
        self.ranges = ranges
        self.memo: dict = {}  # simplified subtrees under the current ranges (emptied when they change)

    def fexpr(self, e: E.Expr) -> E.Expr:
        return simplify(e, self.ranges, self.memo)

    def visit(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.For):
            lo, ext = self.fexpr(s.min), self.fexpr(s.extent)
            if isinstance(ext, E.IntImm) and ext.value <= 0:
                return S.Block(())
            most = const_bounds(ext, self.ranges)[1]
            if most is not None and most <= 0:  # empty for every value of the enclosing loops
                return S.Block(())
            if isinstance(ext, E.IntImm) and ext.value == 1:
                return self.visit(_substitute_stmt(s.body, {s.loop_var: lo}))
            lb = const_bounds(lo, self.ranges)[0]
            hi = const_bounds(simplify(lo + ext - 1, self.ranges), self.ranges)[1]
            key = upper_key(s.loop_var)
            saved, saved_upper = self.ranges.get(s.loop_var), self.ranges.get(key)
            self.ranges[s.loop_var] = (lb, hi)
            if hi is None:
                self.ranges[key] = simplify(lo + ext - 1, self.ranges)
            self.memo = {}
            body = self.visit(s.body)
            for k, v in ((s.loop_var, saved), (key, saved_upper)):
                if v is None:
                    self.ranges.pop(k, None)
                else:
                    self.ranges[k] = v
            self.memo = {}
            if isinstance(body, S.Block) and not body.stmts:
                return body
            if lo is s.min and ext is s.extent and body is s.body:
                return s
            return S.For(s.loop_var, lo, ext, s.kind, body, s.pragmas)
        if isinstance(s, S.IfThenElse):
            cond = self.fexpr(s.cond)
            if isinstance(cond, E.Call) and cond.name == "likely" and isinstance(cond.args[0], E.IntImm):
                cond = cond.args[0]
            if isinstance(cond, E.IntImm):
                if cond.value:
                    return self.visit(s.then_case)
                return self.visit(s.else_case) if s.else_case is not None else S.Block(())
            then = self.visit(s.then_case)
            other = self.visit(s.else_case) if s.else_case is not None else None
            if cond is s.cond and then is s.then_case and other is s.else_case:
                return s
            return S.IfThenElse(cond, then, other)
        if isinstance(s, S.LetStmt):
            value = self.fexpr(s.value)
            if isinstance(value, (E.IntImm, E.Var)):
                return self.visit(_substitute_stmt(s.body, {s.var: value}))
            body = self.visit(s.body)
            if value is s.value and body is s.body:
                return s
            return S.LetStmt(s.var, value, body)
        return S.map_stmt(s, self.visit, self.fexpr)


def _substitute_stmt(s: S.Stmt, vmap: dict) -> S.Stmt:
    return S.map_stmt_exprs(s, lambda e: substitute(e, vmap))
