"""Arithmetic simplification and bound proofs on integer index expressions.

``simplify(e, ranges)`` folds constants, puts integer sums into a canonical
linear form (``x*4 + y - x*4`` -> ``y``), distributes a sum into a min/max
(``min(a, b) - a`` -> ``min(0, b - a)``), and removes ``floordiv``/``floormod``,
``min``/``max``, comparisons and selects whose outcome the variable ranges
decide.  ``ranges`` maps a Var to its inclusive constant bounds ``(lo, hi)``,
either of which may be ``None`` (unknown, e.g. for symbolic extents).
A loop of symbolic extent also records its inclusive upper bound as an
expression under the key ``upper_key(v)`` (``for (i, 0, m)`` -> ``m - 1``), so
``min(1, m - i)`` inside that loop simplifies to ``1``.
"""

from __future__ import annotations

import math
import operator

from te import dtype as dt
from te import expr as E
from te.bounds import Bounds, const_bounds, opt, scale_bounds
from te.visitor import map_children, post_order, structural_key

__all__ = ["simplify", "can_prove", "const_bounds", "upper_key", "Linear", "linear"]


def upper_key(v: E.Var) -> tuple:
    """The ``ranges`` key of ``v``'s symbolic inclusive upper bound (an expression)."""
    return ("upper", v)


def can_prove(cond: E.Expr, ranges: dict | None = None) -> bool:
    """True only if ``cond`` holds for every value in ``ranges``."""
    c = simplify(cond, ranges)
    return isinstance(c, E.IntImm) and c.value == 1


# linear forms ---------------------------------------------------------------
_key = structural_key  # terms are merged by structure (variables by identity)


class Linear:
    """``sum(coef * term) + const`` with terms in first-seen order."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, dtype: str):
        self.terms: dict = {}  # key -> [term, coef]
        self.const = 0
        self.dtype = dtype

    def add(self, e: E.Expr, coef: int) -> None:
        if coef == 0:
            return
        if isinstance(e, E.IntImm):
            self.const += coef * e.value
        elif isinstance(e, E.Add):
            self.add(e.a, coef)
            self.add(e.b, coef)
        elif isinstance(e, E.Sub):
            self.add(e.a, coef)
            self.add(e.b, -coef)
        elif isinstance(e, E.Mul) and isinstance(e.b, E.IntImm):
            self.add(e.a, coef * e.b.value)
        elif isinstance(e, E.Mul) and isinstance(e.a, E.IntImm):
            self.add(e.b, coef * e.a.value)
        else:
            k = _key(e)
            slot = self.terms.get(k)
            if slot is None:
                self.terms[k] = [e, coef]
            else:
                slot[1] += coef

    def items(self):
        return [(t, c) for t, c in self.terms.values() if c != 0]

    def to_expr(self) -> E.Expr:
        """Positive terms first, then the constant, then subtracted terms."""
        d = self.dtype
        out = None
        for t, c in self.items():
            if c > 0:
                term = t if c == 1 else E.Mul(t, E.IntImm(c, d), d)
                out = term if out is None else E.Add(out, term, d)
        const_done = out is None
        if out is None:
            out = E.IntImm(self.const, d)
        for t, c in self.items():
            if c < 0:
                term = t if c == -1 else E.Mul(t, E.IntImm(-c, d), d)
                if isinstance(out, E.IntImm) and out.value == 0 and const_done:
                    out = E.Mul(t, E.IntImm(c, d), d)
                else:
                    out = E.Sub(out, term, d)
        if not const_done and self.const > 0:
            return E.Add(out, E.IntImm(self.const, d), d)
        if not const_done and self.const < 0:
            return E.Sub(out, E.IntImm(-self.const, d), d)
        return out

    def bounds(self, ranges: dict) -> Bounds:
        lo = hi = self.const
        items = self.items()
        paired = _paired_divs(items)
        for t, c in items:
            if id(t) in paired:
                b = paired[id(t)]
            else:
                b = scale_bounds(const_bounds(t, ranges), c)
            lo = opt(operator.add, lo, b[0])
            hi = opt(operator.add, hi, b[1])
        if (lo is None or hi is None) and ranges:
            lo = lo if lo is not None else _symbolic_bound(self, ranges, upper=False)
            hi = hi if hi is not None else _symbolic_bound(self, ranges, upper=True)
        return (lo, hi)


def _paired_divs(items: list) -> dict:
    """``floordiv(x + d, c) - floordiv(x, c)`` lies in ``[d // c, (d + c - 1) // c]``.

    Returns ``{id(term): bounds}``: the first term of a pair carries the pair's
    bounds, the second ``(0, 0)``.
    """
    divs = [(t, c) for t, c in items if isinstance(t, E.FloorDiv) and isinstance(t.b, E.IntImm)
            and t.b.value > 0]
    out: dict = {}
    for k, (t, c) in enumerate(divs):
        for u, cu in divs[k + 1:]:
            if cu != -c or id(t) in out or id(u) in out or u.b.value != t.b.value:
                continue
            diff = linear(E.Sub(t.a, u.a, t.dtype))
            if diff.items():
                continue
            d, q = diff.const, t.b.value
            lo, hi = d // q, (d + q - 1) // q
            out[id(t)] = scale_bounds((lo, hi), c)
            out[id(u)] = (0, 0)
    return out


def _symbolic_bound(lin: "Linear", ranges: dict, upper: bool):
    """A constant bound of ``lin`` after replacing variables by their symbolic bounds.

    ``m - i`` with ``i <= m - 1`` is at least ``1``.  A variable with a
    recorded symbolic upper bound is replaced by it where that side of the
    bound needs its maximum, by its constant lower bound otherwise; twice at
    most (bounds that name other bounded loops).
    """
    for _ in range(2):
        out = Linear(lin.dtype)
        out.const = lin.const
        changed = False
        for t, c in lin.items():
            sym = ranges.get(upper_key(t)) if isinstance(t, E.Var) else None
            if sym is None:
                out.add(t, c)
                continue
            changed = True
            if (c > 0) == upper:
                out.add(sym, c)
            else:
                low = ranges.get(t, (None, None))[0]
                if low is None:
                    return None
                out.const += c * low
        if not changed:
            return None
        lo = hi = out.const
        items = out.items()
        paired = _paired_divs(items)
        for t, c in items:
            b = paired[id(t)] if id(t) in paired else scale_bounds(const_bounds(t, ranges), c)
            lo = opt(operator.add, lo, b[0])
            hi = opt(operator.add, hi, b[1])
        side = hi if upper else lo
        if side is not None:
            return side
        lin = out
    return None


def linear(e: E.Expr) -> Linear:
    lin = Linear(e.dtype)
    lin.add(e, 1)
    return lin


def _is_index(e: E.Expr) -> bool:
    return dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1


# the rewrite ----------------------------------------------------------------
_FOLD = {
    E.Add: operator.add, E.Sub: operator.sub, E.Mul: operator.mul,
    E.Min: min, E.Max: max,
    E.EQ: operator.eq, E.NE: operator.ne, E.LT: operator.lt, E.LE: operator.le,
    E.GT: operator.gt, E.GE: operator.ge,
}


def _imm(v, dtype: str) -> E.Expr:
    if dt.is_float(dtype):
        return E.FloatImm(float(v), dtype)
    if dt.is_bool(dtype):
        return E.IntImm(int(bool(v)), dtype)
    bitsz = dt.bits(dtype)
    v = int(v)
    if dt.is_unsigned(dtype):
        v &= (1 << bitsz) - 1
    else:
        v = (v + (1 << (bitsz - 1))) % (1 << bitsz) - (1 << (bitsz - 1))
    return E.IntImm(v, dtype)


def _fold_binary(e: E.BinaryOp):
    a, b = e.a, e.b
    if not (isinstance(a, (E.IntImm, E.FloatImm)) and isinstance(b, (E.IntImm, E.FloatImm))):
        return None
    x, y = a.value, b.value
    t = type(e)
    if t in _FOLD:
        return _imm(_FOLD[t](x, y), e.dtype)
    if t is E.And:
        return _imm(bool(x) and bool(y), e.dtype)
    if t is E.Or:
        return _imm(bool(x) or bool(y), e.dtype)
    if y == 0:
        return None
    if t is E.Div:
        if dt.is_float(e.dtype):
            return _imm(x / y, e.dtype)
        return _imm(int(x / y) if abs(x) < 2**52 else math.trunc(x / y), e.dtype)
    if t is E.Mod:
        return _imm(math.fmod(x, y), e.dtype)
    if t is E.FloorDiv:
        return _imm(math.floor(x / y) if dt.is_float(e.dtype) else x // y, e.dtype)
    if t is E.FloorMod:
        return _imm(x - math.floor(x / y) * y if dt.is_float(e.dtype) else x % y, e.dtype)
    return None


class _Simplifier:
    def __init__(self, ranges: dict | None):
        self.ranges = ranges or {}

    def __call__(self, e: E.Expr):
        if isinstance(e, E.BinaryOp):
            r = _fold_binary(e)
            if r is not None:
                return r
            if _is_index(e.a) and _is_index(e.b) or isinstance(e, E.CmpOp) and _is_index(e.a):
                return self.index_rule(e)
            return self.generic_rule(e)
        if isinstance(e, E.Select):
            if isinstance(e.cond, E.IntImm):
                return e.true_value if e.cond.value else e.false_value
            return None
        if isinstance(e, E.Not) and isinstance(e.a, E.IntImm):
            return _imm(not e.a.value, e.dtype)
        if isinstance(e, E.Cast) and isinstance(e.value, (E.IntImm, E.FloatImm)):
            if dt.lanes(e.dtype) == 1:
                v = e.value.value
                return _imm(v if dt.is_float(e.dtype) else math.trunc(v), e.dtype)
        if isinstance(e, E.Call) and e.name == "likely" and isinstance(e.args[0], E.IntImm):
            return e.args[0]
        return None

    def generic_rule(self, e: E.BinaryOp):
        a, b = e.a, e.b
        t = type(e)
        if t is E.And:
            for x, y in ((a, b), (b, a)):
                if isinstance(x, E.IntImm):
                    return y if x.value else x
        if t is E.Or:
            for x, y in ((a, b), (b, a)):
                if isinstance(x, E.IntImm):
                    return x if x.value else y
        return None

    def index_rule(self, e: E.BinaryOp):
        t = type(e)
        d = e.a.dtype
        if t in (E.Add, E.Sub, E.Mul):
            if t is E.Mul and not (isinstance(e.a, E.IntImm) or isinstance(e.b, E.IntImm)):
                return None
            lin = _merge_divmod(linear(e))
            r = self.distribute_minmax(lin)
            return lin.to_expr() if r is None else r
        if t in (E.FloorDiv, E.FloorMod, E.Div, E.Mod):
            return self.div_rule(e)
        if t in (E.Min, E.Max):
            diff = linear(E.Sub(e.a, e.b, d))
            lo, hi = diff.bounds(self.ranges)
            if t is E.Min:
                if hi is not None and hi <= 0:
                    return e.a
                if lo is not None and lo >= 0:
                    return e.b
            else:
                if hi is not None and hi <= 0:
                    return e.b
                if lo is not None and lo >= 0:
                    return e.a
            return None
        if isinstance(e, E.CmpOp):
            diff = linear(E.Sub(e.a, e.b, d))
            lo, hi = diff.bounds(self.ranges)
            verdict = _decide(t, lo, hi)
            if verdict is not None:
                return _imm(verdict, e.dtype)
            return None
        return self.generic_rule(e)

    def distribute_minmax(self, lin: Linear):
        """``min(a, b) + c`` -> ``min(a + c, b + c)`` when c is a non-empty sum."""
        items = lin.items()
        mm = [(t, c) for t, c in items if isinstance(t, (E.Min, E.Max)) and c in (1, -1)]
        if len(mm) != 1 or (len(items) == 1 and lin.const == 0):
            return None
        t, c = mm[0]
        rest = Linear(lin.dtype)
        rest.const = lin.const
        for u, k in items:
            if u is not t:
                rest.add(u, k)
        cls = type(t) if c == 1 else (E.Max if isinstance(t, E.Min) else E.Min)
        d = lin.dtype
        sides = []
        for side in (t.a, t.b):
            s = Linear(d)
            s.add(side, c)
            for u, k in rest.items():
                s.add(u, k)
            s.const += rest.const
            sides.append(s.to_expr())
        return simplify(cls(sides[0], sides[1], d), self.ranges)

    def div_rule(self, e: E.BinaryOp):
        if not isinstance(e.b, E.IntImm) or e.b.value <= 0:
            return None
        c = e.b.value
        d = e.dtype
        if c == 1:
            return e.a if isinstance(e, (E.FloorDiv, E.Div)) else E.IntImm(0, d)
        lin = linear(e.a)
        if isinstance(e, (E.Div, E.Mod)):
            lo, _ = lin.bounds(self.ranges)
            if lo is None or lo < 0:
                return None
        multiple, rest = Linear(d), Linear(d)
        for t, k in lin.items():
            (multiple if k % c == 0 else rest).add(t, k)
        q, r = divmod(lin.const, c)
        rest.const = r
        lo, hi = rest.bounds(self.ranges)
        is_div = isinstance(e, (E.FloorDiv, E.Div))
        if lo is not None and hi is not None and lo // c == hi // c:
            if is_div:
                multiple_q = Linear(d)
                for t, k in multiple.items():
                    multiple_q.add(t, k // c)
                multiple_q.const = q + lo // c
                return multiple_q.to_expr()
            rest.const -= (lo // c) * c
            return rest.to_expr()
        if not multiple.items() and q == 0:
            return None
        # drop whole multiples of c from a floormod: (c*x + r) % c -> r % c
        if not is_div and isinstance(e, E.FloorMod):
            return E.FloorMod(rest.to_expr(), e.b, d)
        # and take them out of a floordiv: floordiv(m - 10, 10) -> floordiv(m, 10) - 1
        if isinstance(e, E.FloorDiv):
            out = Linear(d)
            out.add(E.FloorDiv(rest.to_expr(), e.b, d), 1)
            for t, k in multiple.items():
                out.add(t, k // c)
            out.const += q
            return out.to_expr()
        return None


def _merge_divmod(lin: Linear) -> Linear:
    """``floordiv(x, c)*c + floormod(x, c)`` -> ``x`` (what a fuse's inverse leaves)."""
    mods = [(k, t, c) for k, (t, c) in lin.terms.items() if isinstance(t, E.FloorMod) and c != 0]
    for key, t, c in mods:
        if not isinstance(t.b, E.IntImm):
            continue
        dkey = _key(E.FloorDiv(t.a, t.b, t.dtype))
        slot = lin.terms.get(dkey)
        if slot is not None and slot[1] == c * t.b.value:
            slot[1] = 0
            lin.terms[key][1] = 0
            lin.add(t.a, c)
    return lin


def _decide(t, lo, hi):
    """Decide ``diff <op> 0`` from the bounds of ``diff`` (None if undecided)."""
    if t is E.LT:
        return True if hi is not None and hi < 0 else False if lo is not None and lo >= 0 else None
    if t is E.LE:
        return True if hi is not None and hi <= 0 else False if lo is not None and lo > 0 else None
    if t is E.GT:
        return True if lo is not None and lo > 0 else False if hi is not None and hi <= 0 else None
    if t is E.GE:
        return True if lo is not None and lo >= 0 else False if hi is not None and hi < 0 else None
    if t is E.EQ:
        if lo is not None and lo == hi:
            return lo == 0
        return False if (lo is not None and lo > 0) or (hi is not None and hi < 0) else None
    if t is E.NE:
        r = _decide(E.EQ, lo, hi)
        return None if r is None else not r
    return None


def simplify(e: E.Expr, ranges: dict | None = None, memo: dict | None = None) -> E.Expr:
    """Simplify ``e`` under the variable ``ranges`` (see module docstring).

    ``memo``: a dict shared by calls under the same ``ranges`` (the caller
    empties it when they change), so a subtree shared by many expressions
    (the index arithmetic common to the copies of an unrolled body) is
    simplified once.  Without it each call simplifies its whole tree.
    """
    if memo is None:
        return post_order(E.as_expr(e), _Simplifier(ranges))
    return _post_order_shared(E.as_expr(e), _Simplifier(ranges), memo)


def _post_order_shared(e: E.Expr, fn, memo: dict) -> E.Expr:
    """``post_order`` with a memo that outlives the call: ``id(node) -> (node, result)``
    (the node is kept, so its id cannot be reused by another while the memo lives)."""

    def visit(x: E.Expr) -> E.Expr:
        hit = memo.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        y = map_children(x, visit)
        r = fn(y)
        out = y if r is None else r
        memo[id(x)] = (x, out)
        return out

    return visit(e)
