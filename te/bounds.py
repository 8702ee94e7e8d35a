"""The one bounds analysis: inclusive bounds of an integer index expression.

``bounds_of(e, domain)`` is the single case split over expression nodes
(sums, scaling by constants, min/max, floor and truncated division and
remainder by positive constants, selects, integer casts).  A *domain* says
what a bound is and how bounds combine:

* ``ConstBounds`` -- constant integers or ``None`` (unknown), from constant
  variable ranges: ``const_bounds(i*8 + j, {i: (0, 3), j: (0, 7)}) == (0, 31)``.
  The simplifier decides comparisons and min/max with it.
* ``schedule.interval.SymbolicBounds`` -- expressions, from symbolic variable
  intervals: ``i*8 + j`` with ``j`` in ``[0, n - 1]`` is ``[i*8, i*8 + n - 1]``.
  Bounds inference sizes the region a consumer reads with it.
"""

from __future__ import annotations

import operator

from te import dtype as dt
from te import expr as E

Bounds = tuple  # (lo, hi), the domain's values


def bounds_of(e: E.Expr, dom) -> Bounds | None:
    """Bounds of ``e`` in domain ``dom`` (see the module docstring)."""
    hit = dom.leaf(e)
    if hit is not NotImplemented:
        return hit
    t = type(e)
    if t is E.Cast and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
        return dom.cast(bounds_of(e.value, dom), e.dtype)
    if t in (E.Add, E.Sub, E.Min, E.Max):
        a, b = bounds_of(e.a, dom), bounds_of(e.b, dom)
        return dom.combine(t, a, b, e.dtype)
    if t is E.Mul:
        return dom.mul(e, bounds_of(e.a, dom), bounds_of(e.b, dom))
    if t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
        c = dom.constant(e.b)
        if c is None or c <= 0:
            return dom.unknown()
        a = bounds_of(e.a, dom)
        if t in (E.Div, E.Mod) and not dom.non_negative(a):
            return dom.unknown()  # truncation differs from flooring below zero
        if t in (E.FloorDiv, E.Div):
            return dom.div(a, c, e.dtype)
        return dom.mod(a, c, e.dtype)
    if t is E.Select:
        return dom.union(bounds_of(e.true_value, dom), bounds_of(e.false_value, dom), e.dtype)
    return dom.unknown()


def opt(fn, x, y):
    """``fn(x, y)``, or ``None`` when either bound is unknown."""
    return None if x is None or y is None else fn(x, y)


def _min_none(x, y):
    return y if x is None else x if y is None else min(x, y)


def _max_none(x, y):
    return y if x is None else x if y is None else max(x, y)


def scale_bounds(a: Bounds, c: int) -> Bounds:
    """Constant bounds times the constant ``c`` (the sides swap when ``c < 0``)."""
    lo = None if a[0] is None else a[0] * c
    hi = None if a[1] is None else a[1] * c
    return (lo, hi) if c >= 0 else (hi, lo)


class ConstBounds:
    """Constant bounds: ints, ``None`` where unknown; ``ranges`` maps Var -> (lo, hi)."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: dict):
        self.ranges = ranges

    def leaf(self, e):
        if type(e) is E.IntImm:
            return (e.value, e.value)
        if type(e) is E.Var:
            return self.ranges.get(e, (None, None))
        return NotImplemented

    def unknown(self) -> Bounds:
        return (None, None)

    def constant(self, e) -> int | None:
        lo, hi = bounds_of(e, self)
        return lo if lo is not None and lo == hi else None

    def non_negative(self, a: Bounds) -> bool:
        return a[0] is not None and a[0] >= 0

    def cast(self, a: Bounds, dtype: str) -> Bounds:
        return a

    def combine(self, t, a: Bounds, b: Bounds, dtype: str) -> Bounds:
        if t is E.Add:
            return (opt(operator.add, a[0], b[0]), opt(operator.add, a[1], b[1]))
        if t is E.Sub:
            return (opt(operator.sub, a[0], b[1]), opt(operator.sub, a[1], b[0]))
        if t is E.Min:
            return (opt(min, a[0], b[0]), _min_none(a[1], b[1]))
        return (_max_none(a[0], b[0]), opt(max, a[1], b[1]))

    def mul(self, e, a: Bounds, b: Bounds) -> Bounds:
        if None in a or None in b:
            if b[0] is not None and b[0] == b[1]:
                return scale_bounds(a, b[0])
            if a[0] is not None and a[0] == a[1]:
                return scale_bounds(b, a[0])
            if a[0] is not None and b[0] is not None and a[0] >= 0 and b[0] >= 0:
                return (a[0] * b[0], None)
            return (None, None)
        prods = [x * y for x in a for y in b]
        return (min(prods), max(prods))

    def div(self, a: Bounds, c: int, dtype: str) -> Bounds:
        return (None if a[0] is None else a[0] // c, None if a[1] is None else a[1] // c)

    def mod(self, a: Bounds, c: int, dtype: str) -> Bounds:
        if a[0] is not None and a[1] is not None and a[0] // c == a[1] // c:
            return (a[0] % c, a[1] % c)
        return (0, c - 1)

    def union(self, a: Bounds, b: Bounds, dtype: str) -> Bounds:
        return (opt(min, a[0], b[0]), opt(max, a[1], b[1]))


def const_bounds(e: E.Expr, ranges: dict | None = None) -> Bounds:
    """Inclusive constant bounds of an integer expression (``None`` = unknown)."""
    return bounds_of(e, ConstBounds(ranges or {}))
