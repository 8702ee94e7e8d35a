"""guard_zero_terms: an update that adds a guarded zero is guarded instead.

A reduction over an inlined zero padding adds ``select(inside, x, 0) * w``,
which is nothing where ``inside`` fails.  The update becomes a guarded
store, so that :mod:`partition_loops` can cut the loops at the border:
the taps that read the padding are skipped, not multiplied by zero, and
the inner tiles carry no guard at all::

    acc[i] = acc[i] + x8(select(kh + y >= 1, d[..], 0f)) * k[..]
  ->
    if (likely(kh + y >= 1)) { acc[i] = acc[i] + x8(d[..]) * k[..] }

(A convolution reading its input through a padding stage computed inline,
as ``topi.x86.conv2d``'s blocked schedule does instead of copying the
padded input first; onnxruntime's convolutions skip those taps too.)
Only a sum of a product whose factor is the guarded select changes; the
float identity ``0 * w == 0`` is assumed, as a zero padding means.
"""

from __future__ import annotations

from te import expr as E
from te.visitor import structural_key
from schedule import stmt as S


def guard_zero_terms(body: S.Stmt, ctx: dict) -> S.Stmt:
    return S.transform(body, _guard)


def _guard(s: S.Stmt):
    if not isinstance(s, S.Store) or not isinstance(s.value, E.Add):
        return None
    acc, term = s.value.a, s.value.b
    if not _same_load(acc, s):
        acc, term = term, acc
        if not _same_load(acc, s):
            return None
    found = _guarded_factor(term)
    if found is None:
        return None
    cond, term = found
    return S.IfThenElse(E.likely(cond), S.Store(s.buffer, E.Add(acc, term, s.value.dtype), s.index))


def _same_load(e: E.Expr, s: S.Store) -> bool:
    return isinstance(e, E.Load) and e.buffer is s.buffer and structural_key(e.index) == structural_key(s.index)


def _zero_select(e: E.Expr):
    """``(cond, value)`` of ``select(cond, value, 0)`` (or its broadcast), scalar ``cond``."""
    lanes = None
    if isinstance(e, E.Broadcast):
        lanes, e = e, e.value
    if not (isinstance(e, E.Select) and isinstance(e.false_value, (E.FloatImm, E.IntImm))
            and e.false_value.value == 0 and e.cond.dtype == "bool"):
        return None
    value = e.true_value if lanes is None else E.Broadcast(e.true_value, lanes.lanes, lanes.dtype)
    return e.cond, value


def _guarded_factor(term: E.Expr):
    """``(cond, term without the select)`` when ``term`` is zero wherever ``cond`` fails."""
    hit = _zero_select(term)
    if hit is not None:
        return hit
    if isinstance(term, E.Mul):
        for mine, other, left in ((term.a, term.b, True), (term.b, term.a, False)):
            hit = _guarded_factor(mine)
            if hit is not None:
                cond, value = hit
                new = E.Mul(value, other, term.dtype) if left else E.Mul(other, value, term.dtype)
                return cond, new
    if isinstance(term, E.Cast):
        hit = _guarded_factor(term.value)
        if hit is not None:
            return hit[0], E.Cast(hit[1], term.dtype)
    return None
