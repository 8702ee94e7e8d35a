"""Symbolic intervals of index expressions, for bounds inference.

``interval_of(e, ranged)`` returns ``(lo, hi)``, inclusive expressions that
bound ``e`` when each variable in ``ranged`` takes any value of its interval
and every other variable is fixed.  ``None`` means no bound could be derived
(a data-dependent index, say): the caller then falls back to the whole domain.
The case split over expression nodes is ``te.bounds.bounds_of``, shared with
the simplifier's constant bounds; this module only supplies the symbolic
arithmetic (``SymbolicBounds``).
"""

from __future__ import annotations

from te import expr as E
from te.bounds import bounds_of, const_bounds
from te.simplify import simplify
from te.visitor import collect_vars

Interval = tuple  # (lo: Expr, hi: Expr) or None


def interval_of(e: E.Expr, ranged: dict, ranges: dict | None = None) -> Interval | None:
    """Bound ``e`` given ``ranged``: Var -> (lo, hi) expressions; see module doc."""
    ranges = ranges or {}
    r = bounds_of(e, SymbolicBounds(ranged, ranges))
    if r is None:
        return None
    return simplify(r[0], ranges), simplify(r[1], ranges)


def _fixed(e: E.Expr, ranged: dict) -> bool:
    return not any(v in ranged for v in collect_vars(e))


class SymbolicBounds:
    """The symbolic domain of ``te.bounds.bounds_of``: bounds are expressions, ``None``
    (the whole interval) where unknown; variables outside ``ranged`` are fixed."""

    __slots__ = ("ranged", "ranges")

    def __init__(self, ranged: dict, ranges: dict):
        self.ranged, self.ranges = ranged, ranges

    def leaf(self, e):
        if type(e) is E.IntImm:
            return (e, e)
        if type(e) is E.Var:
            return self.ranged.get(e, (e, e))
        if _fixed(e, self.ranged):
            return (e, e)
        return NotImplemented

    def unknown(self):
        return None

    def constant(self, e) -> int | None:
        c = simplify(e, self.ranges)
        return c.value if isinstance(c, E.IntImm) else None

    def non_negative(self, a) -> bool:
        if a is None:
            return False
        lo = const_bounds(simplify(a[0], self.ranges), self.ranges)[0]
        return lo is not None and lo >= 0

    def cast(self, a, dtype: str):
        return None if a is None else (E.cast(a[0], dtype), E.cast(a[1], dtype))

    def combine(self, t, a, b, d: str):
        if a is None or b is None:
            return None
        if t is E.Add:
            return (E.Add(a[0], b[0], d), E.Add(a[1], b[1], d))
        if t is E.Sub:
            return (E.Sub(a[0], b[1], d), E.Sub(a[1], b[0], d))
        return (t(a[0], b[0], d), t(a[1], b[1], d))

    def mul(self, e, a, b):
        for bx in (a, b):  # a factor that is 0 throughout (a loop of extent 1): the product is 0
            if bx is not None and all(isinstance(v, E.IntImm) and v.value == 0 for v in bx):
                return (E.IntImm(0, e.dtype), E.IntImm(0, e.dtype))
        for y, bx in ((e.b, a), (e.a, b)):
            c = simplify(y, self.ranges)
            if isinstance(c, E.IntImm):
                if bx is None:
                    return None
                lo, hi = E.Mul(bx[0], c, e.dtype), E.Mul(bx[1], c, e.dtype)
                return (lo, hi) if c.value >= 0 else (hi, lo)
            low = const_bounds(y, self.ranges)[0]
            if _fixed(y, self.ranged) and low is not None and low >= 0:
                return None if bx is None else (E.Mul(bx[0], y, e.dtype), E.Mul(bx[1], y, e.dtype))
        return None

    def div(self, a, c: int, d: str):
        return None if a is None else (E.FloorDiv(a[0], E.IntImm(c, d), d), E.FloorDiv(a[1], E.IntImm(c, d), d))

    def mod(self, a, c: int, d: str):
        return None if a is None else (E.IntImm(0, d), E.IntImm(c - 1, d))

    def union(self, a, b, d: str):
        if a is None or b is None:
            return None
        return (E.Min(a[0], b[0], d), E.Max(a[1], b[1], d))


def union(a: Interval | None, b: Interval | None, ranges: dict | None = None) -> Interval | None:
    if a is None or b is None:
        return None
    d = a[0].dtype
    return simplify(E.Min(a[0], b[0], d), ranges), simplify(E.Max(a[1], b[1], d), ranges)
