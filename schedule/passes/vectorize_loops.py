"""vectorize_loops: turn ``vectorized`` loops into vector expressions.

::

    vectorized (j, 0, 8) {             C[ramp((i*8), 1, 8)] =
      C[((i*8) + j)] =          ->       (A[ramp((i*8), 1, 8)] + x8(B[i]))
        (A[((i*8) + j)] + B[i])
    }

The loop variable becomes ``ramp(min, 1, lanes)``; operands that do not
depend on it stay scalar and are broadcast where they meet a vector.  Index
arithmetic keeps ramps as ramps, so codegen sees contiguous loads and stores
(``ramp(b, 1, n)``), broadcasts (a scalar index) and, otherwise, gathers.
A loop that cannot be vectorized (non-constant extent, an inner loop, a
guard or a store address that depends on the lane) stays a scalar loop.
"""

from __future__ import annotations

import math

from te import dtype as dt
from te import expr as E
from te.simplify import linear, simplify
from te.visitor import children, map_children, unsafe_select_loads
from schedule import stmt as S


class _CannotVectorize(Exception):
    pass


def vectorize_loops(body: S.Stmt, ctx: dict) -> S.Stmt:
    simplified: dict = {}  # simplify's memo, shared by every loop (no ranges here: always valid)

    def post(s):
        if isinstance(s, S.For) and s.kind == S.VECTORIZED:
            if isinstance(s.extent, E.IntImm) and 1 < s.extent.value <= 64:
                try:
                    return _Vectorizer(s.loop_var, s.min, s.extent.value, simplified).stmt(s.body)
                except _CannotVectorize:
                    pass
            return S.For(s.loop_var, s.min, s.extent, S.SERIAL, s.body, s.pragmas)
        return None

    return S.transform(body, post)


def _lanes(e: E.Expr) -> int:
    return dt.lanes(e.dtype)


def _bcast(e: E.Expr, n: int) -> E.Expr:
    if _lanes(e) == n:
        return e
    return E.Broadcast(e, n, dt.with_lanes(e.dtype, n))


class _Vectorizer:
    def __init__(self, var: E.Var, lo: E.Expr, lanes: int, simplified: dict | None = None):
        self.var = var
        self.n = lanes
        self.ramp = E.Ramp(lo, E.const(1, var.dtype), lanes, dt.with_lanes(var.dtype, lanes))
        self.lets: dict = {}
        self.memo: dict = {}
        self.deps: dict = {}  # id(expr) -> does it read the loop var or a vectorized let?
        self.simplified = {} if simplified is None else simplified  # simplify's memo (no ranges)

    # statements ------------------------------------------------------------
    def stmt(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.Store):
            idx = self.expr(s.index)
            val = self.expr(s.value)
            if _lanes(idx) == 1:
                if _lanes(val) != 1:
                    raise _CannotVectorize  # every lane writes one address
                raise _CannotVectorize  # a scalar store repeated per lane: keep the loop
            return S.Store(s.buffer, _bcast(val, self.n), idx)
        if isinstance(s, S.Block):
            return S.seq(*[self.stmt(x) for x in s.stmts])
        if isinstance(s, S.IfThenElse):
            cond = self.expr(s.cond)
            if _lanes(cond) != 1:
                raise _CannotVectorize
            other = self.stmt(s.else_case) if s.else_case is not None else None
            return S.IfThenElse(cond, self.stmt(s.then_case), other)
        if isinstance(s, S.LetStmt):
            val = self.expr(s.value)
            if _lanes(val) == 1:
                return S.LetStmt(s.var, val, self.stmt(s.body))
            nv = E.Var(s.var.name, val.dtype)
            self.lets[s.var] = nv
            return S.LetStmt(nv, val, self.stmt(s.body))
        if isinstance(s, S.Evaluate):
            return S.Evaluate(self.expr(s.value))
        raise _CannotVectorize

    # expressions -----------------------------------------------------------
    def expr(self, e: E.Expr) -> E.Expr:
        """Vectorize ``e``, each shared node once."""
        key = id(e)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._expr(e)
        return hit

    def _expr(self, e: E.Expr) -> E.Expr:
        if e is self.var:
            return self.ramp
        if isinstance(e, E.Var):
            return self.lets.get(e, e)
        if not self.depends(e):
            return e
        if isinstance(e, E.BinaryOp):
            return self.binary(e)
        if isinstance(e, E.Load):
            idx = self.expr(e.index)
            return E.Load(e.buffer, idx, dt.with_lanes(e.dtype, _lanes(idx)))
        if isinstance(e, E.Select):
            c = self.expr(e.cond)
            if _lanes(c) > 1 and unsafe_select_loads(e):
                raise _CannotVectorize  # a lane-dependent guard protects a load
            t, f = self.expr(e.true_value), self.expr(e.false_value)
            n = max(_lanes(c), _lanes(t), _lanes(f))
            return E.Select(c if _lanes(c) == 1 else c, _bcast(t, n), _bcast(f, n), dt.with_lanes(e.dtype, n))
        if isinstance(e, E.Cast):
            v = self.expr(e.value)
            return E.Cast(v, dt.with_lanes(e.dtype, _lanes(v)))
        if isinstance(e, E.Call):
            args = [self.expr(a) for a in e.args]
            n = max(_lanes(a) for a in args)
            args = [_bcast(a, n) for a in args]
            return E.Call(e.name, tuple(args), dt.with_lanes(e.dtype, n))
        if isinstance(e, E.Not):
            a = self.expr(e.a)
            return E.Not(a, dt.with_lanes("bool", _lanes(a)))
        raise _CannotVectorize

    def depends(self, e: E.Expr) -> bool:
        """Whether ``e`` reads the loop variable or a let made a vector, each shared node once
        (a walk per node made vectorizing an unrolled body quadratic in its depth)."""
        key = id(e)
        hit = self.deps.get(key)
        if hit is None:
            if isinstance(e, E.Var):
                hit = e is self.var or e in self.lets
            else:
                hit = any(self.depends(c) for c in children(e))
            self.deps[key] = hit
        return hit

    def binary(self, e: E.BinaryOp) -> E.Expr:
        a, b = self.expr(e.a), self.expr(e.b)
        n = max(_lanes(a), _lanes(b))
        t = type(e)
        sa, sb = _scalar_of(a), _scalar_of(b)
        if n > 1 and sa is not None and sb is not None:  # broadcasts meet: one scalar op, broadcast
            return E.Broadcast(simplify(t(sa, sb, dt.with_lanes(e.dtype, 1)), None, self.simplified), n,
                               dt.with_lanes(e.dtype, n))
        # keep index arithmetic in ramp form
        if isinstance(a, E.Ramp) or isinstance(b, E.Ramp):
            r = _ramp_arith(t, a, b, self.simplified)
            if r is not None:
                return r
        a, b = _bcast(a, n), _bcast(b, n)
        return t(a, b, dt.with_lanes(e.dtype, n))


def _scalar_of(x: E.Expr):
    if isinstance(x, E.Broadcast):
        return x.value
    if _lanes(x) == 1:
        return x
    return None


def _ramp_arith(t, a: E.Expr, b: E.Expr, memo: dict | None = None):
    """ramp +- scalar, ramp * const, ramp + ramp stay ramps; so do floordiv and floormod of
    a ramp by a constant when every lane lies in one window of it (:func:`_ramp_divmod`).
    A base built here is left as it is: the ``simplify`` pass after this one folds it (a
    simplification per step went over the whole base again at every level of an index)."""
    if t in (E.FloorDiv, E.FloorMod) and isinstance(a, E.Ramp):
        return _ramp_divmod(t, a, _scalar_of(b), memo)
    if t in (E.Add, E.Sub) and isinstance(a, E.Ramp) and isinstance(b, E.Ramp):
        return E.Ramp(t(a.base, b.base, a.base.dtype), _fold(t(a.stride, b.stride, a.stride.dtype)), a.lanes,
                      a.dtype)
    if isinstance(a, E.Ramp) and _scalar_of(b) is not None:
        s = _scalar_of(b)
        if t in (E.Add, E.Sub):
            return E.Ramp(t(a.base, s, s.dtype), a.stride, a.lanes, a.dtype)
        if t is E.Mul:
            return E.Ramp(E.Mul(a.base, s, s.dtype), _fold(E.Mul(a.stride, s, s.dtype)), a.lanes, a.dtype)
    if isinstance(b, E.Ramp) and _scalar_of(a) is not None:
        s = _scalar_of(a)
        if t is E.Add:
            return E.Ramp(E.Add(s, b.base, s.dtype), b.stride, b.lanes, b.dtype)
        if t is E.Mul:
            return E.Ramp(E.Mul(s, b.base, s.dtype), _fold(E.Mul(s, b.stride, s.dtype)), b.lanes, b.dtype)
    return None


def _fold(e: E.Expr) -> E.Expr:
    """A stride: constant arithmetic folded (strides are compared with constants below)."""
    if isinstance(e.a, E.IntImm) and isinstance(e.b, E.IntImm):
        return simplify(e)
    return e


def _ramp_divmod(t, a: E.Ramp, c, memo: dict | None = None):
    """``floordiv(ramp(base, s, n), c)`` -> ``x n(floordiv(base, c))`` and ``floormod`` ->
    ``ramp(floormod(base, c), s, n)`` when ``base % c + s*(n-1) < c`` for every value of
    ``base``: with ``base = sum(k_i * t_i) + k0`` and ``g = gcd(k_i..., c)``, ``base % c`` is at
    most ``c - g + k0 % g``, so ``k0 % g + s*(n-1) < g`` suffices.  A channel index ``cc*8 +
    lane`` read from data blocked by 16 (``[c // 16, ..., c % 16]``) is then one contiguous
    load, not a gather; the Winograd 64 @56 kernel fed 16-channel blocks with ``cb=8``
    gathered and ran 1.10x the time of the same kernel fed 8-channel blocks."""
    if not (isinstance(c, E.IntImm) and c.value > 0 and isinstance(a.stride, E.IntImm) and a.stride.value >= 0):
        return None
    lin = linear(a.base)
    g = math.gcd(c.value, *(coef for _, coef in lin.items()))
    if lin.const % g + a.stride.value * (a.lanes - 1) >= g:
        return None
    q = simplify(t(a.base, c, a.base.dtype), None, memo)
    if t is E.FloorDiv:
        return E.Broadcast(q, a.lanes, a.dtype)
    return E.Ramp(q, a.stride, a.lanes, a.dtype)


__all__ = ["vectorize_loops", "map_children"]
