"""``tvm.arith``: the simplifier as classic TVM's ``Analyzer`` (over ``te.simplify``)."""

from __future__ import annotations

from te import expr as E
from te.simplify import can_prove, const_bounds, simplify, upper_key


class Analyzer:
    """Simplify and prove under the variable ranges bound so far (``bind``)."""

    def __init__(self):
        self.ranges: dict = {}
        self.values: dict = {}

    def bind(self, var: E.Var, value) -> None:
        """``var`` takes ``value`` (an expression) or lies in ``value`` (a Range)."""
        if isinstance(value, E.Range):
            last = simplify(value.min + value.extent - 1, self.ranges)
            lo = const_bounds(simplify(value.min, self.ranges), self.ranges)[0]
            self.ranges[var] = (lo, const_bounds(last, self.ranges)[1])
            self.ranges[upper_key(var)] = last
        else:
            self.values[var] = E.as_expr(value)

    update = bind

    def simplify(self, expr, steps: int = 2) -> E.Expr:  # noqa: ARG002 (classic signature)
        from te.visitor import substitute

        e = E.as_expr(expr)
        if self.values:
            e = substitute(e, self.values)
        return simplify(e, self.ranges)

    rewrite_simplify = canonical_simplify = simplify

    def can_prove(self, cond) -> bool:
        return can_prove(self.simplify(cond), self.ranges)


__all__ = ["Analyzer"]
