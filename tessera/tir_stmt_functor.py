"""``tvm.tir.stmt_functor``: substitution and traversal over expressions and loop nests."""

from __future__ import annotations

from schedule import stmt as S
from te import expr as E
from te import visitor


def substitute(node, vmap: dict):
    """``node`` (an expression or a statement) with each variable of ``vmap`` replaced by its
    value (an expression or a number)."""
    values = {k.var if isinstance(k, E.IterVar) else k: E.as_expr(v) for k, v in vmap.items()}
    if isinstance(node, S.Stmt):
        return S.map_stmt_exprs(node, lambda e: visitor.substitute(e, values))
    return visitor.substitute(E.as_expr(node), values)


def post_order_visit(node, fvisit) -> None:
    """Call ``fvisit`` on every statement and expression under ``node``, children first."""
    if isinstance(node, S.Stmt):
        for e in S.stmt_exprs(node):
            post_order_visit(e, fvisit)
        for c in S.child_stmts(node):
            post_order_visit(c, fvisit)
    elif isinstance(node, E.Expr):
        for c in visitor.children(node):
            post_order_visit(c, fvisit)
    fvisit(node)


__all__ = ["post_order_visit", "substitute"]
