"""Symbolic intervals of index expressions, for bounds inference.

``interval_of(e, ranged)`` returns ``(lo, hi)``, inclusive expressions that
bound ``e`` when each variable in ``ranged`` takes any value of its interval
and every other variable is fixed.  ``None`` means no bound could be derived
(a data-dependent index, say): the caller then falls back to the whole domain.
"""

from __future__ import annotations

from te import dtype as dt
from te import expr as E
from te.simplify import const_bounds, simplify
from te.visitor import collect_vars

Interval = tuple  # (lo: Expr, hi: Expr) or None


def interval_of(e: E.Expr, ranged: dict, ranges: dict | None = None) -> Interval | None:
    """Bound ``e`` given ``ranged``: Var -> (lo, hi) expressions; see module doc."""
    r = _iv(e, ranged, ranges or {})
    if r is None:
        return None
    return simplify(r[0], ranges), simplify(r[1], ranges)


def _fixed(e: E.Expr, ranged: dict) -> bool:
    return not any(v in ranged for v in collect_vars(e))


def _iv(e: E.Expr, ranged: dict, ranges: dict):
    t = type(e)
    if t is E.IntImm:
        return (e, e)
    if t is E.Var:
        return ranged.get(e, (e, e))
    if _fixed(e, ranged):
        return (e, e)
    if t is E.Cast and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
        inner = _iv(e.value, ranged, ranges)
        return None if inner is None else (E.cast(inner[0], e.dtype), E.cast(inner[1], e.dtype))
    if t in (E.Add, E.Sub, E.Min, E.Max):
        a, b = _iv(e.a, ranged, ranges), _iv(e.b, ranged, ranges)
        if a is None or b is None:
            return None
        d = e.dtype
        if t is E.Add:
            return (E.Add(a[0], b[0], d), E.Add(a[1], b[1], d))
        if t is E.Sub:
            return (E.Sub(a[0], b[1], d), E.Sub(a[1], b[0], d))
        return (t(a[0], b[0], d), t(a[1], b[1], d))
    if t is E.Mul:
        for x, y in ((e.a, e.b), (e.b, e.a)):
            c = simplify(y, ranges)
            if isinstance(c, E.IntImm):
                a = _iv(x, ranged, ranges)
                if a is None:
                    return None
                lo, hi = E.Mul(a[0], c, e.dtype), E.Mul(a[1], c, e.dtype)
                return (lo, hi) if c.value >= 0 else (hi, lo)
            if _fixed(y, ranged) and const_bounds(y, ranges)[0] is not None and const_bounds(y, ranges)[0] >= 0:
                a = _iv(x, ranged, ranges)
                if a is None:
                    return None
                return (E.Mul(a[0], y, e.dtype), E.Mul(a[1], y, e.dtype))
        return None
    if t in (E.FloorDiv, E.Div, E.FloorMod, E.Mod):
        c = simplify(e.b, ranges)
        if not isinstance(c, E.IntImm) or c.value <= 0:
            return None
        a = _iv(e.a, ranged, ranges)
        if a is None:
            return None
        if t in (E.Div, E.Mod):
            lo = const_bounds(simplify(a[0], ranges), ranges)[0]
            if lo is None or lo < 0:
                return None
        if t in (E.FloorDiv, E.Div):
            return (E.FloorDiv(a[0], c, e.dtype), E.FloorDiv(a[1], c, e.dtype))
        return (E.IntImm(0, e.dtype), E.IntImm(c.value - 1, e.dtype))
    if t is E.Select:
        a, b = _iv(e.true_value, ranged, ranges), _iv(e.false_value, ranged, ranges)
        if a is None or b is None:
            return None
        return (E.Min(a[0], b[0], e.dtype), E.Max(a[1], b[1], e.dtype))
    return None


def union(a: Interval | None, b: Interval | None, ranges: dict | None = None) -> Interval | None:
    if a is None or b is None:
        return None
    d = a[0].dtype
    return simplify(E.Min(a[0], b[0], d), ranges), simplify(E.Max(a[1], b[1], d), ranges)
