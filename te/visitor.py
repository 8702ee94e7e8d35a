"""Generic traversal of expressions: rebuild-on-change, substitution, equality.

An unchanged subtree comes back as the same object, so callers can test
``new is old`` to learn whether anything changed.
"""

from __future__ import annotations

from typing import Callable

from te import expr as E

_CHILDREN: dict[type, tuple[str, ...]] = {
    E.Not: ("a",),
    E.Select: ("cond", "true_value", "false_value"),
    E.Cast: ("value",),
    E.Call: ("args",),
    E.Let: ("value", "body"),
    E.TensorRead: ("indices",),
    E.Reduce: ("source", "condition"),
    E.Load: ("index",),
    E.Ramp: ("base", "stride"),
    E.Broadcast: ("value",),
}


_FIELDS: dict[type, tuple[str, ...]] = {}  # child_fields by class, filled on first use


def child_fields(cls: type) -> tuple[str, ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = ("a", "b") if issubclass(cls, E.BinaryOp) else _CHILDREN.get(cls, ())
    return fields


def children(e: E.Expr) -> list[E.Expr]:
    out = []
    for name in child_fields(type(e)):
        v = getattr(e, name)
        if isinstance(v, tuple):
            out.extend(v)
        else:
            out.append(v)
    return out


def map_children(e: E.Expr, fn: Callable[[E.Expr], E.Expr]) -> E.Expr:
    """Apply ``fn`` to each child; rebuild ``e`` only if a child changed."""
    if isinstance(e, E.BinaryOp):  # most nodes: no field lookups
        a, b = fn(e.a), fn(e.b)
        return e if a is e.a and b is e.b else type(e)(a, b, e.dtype)
    fields = child_fields(type(e))
    if not fields:
        return e
    changes = {}
    for name in fields:
        v = getattr(e, name)
        if isinstance(v, tuple):
            nv = tuple(fn(x) for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                changes[name] = nv
        else:
            nv = fn(v)
            if nv is not v:
                changes[name] = nv
    if not changes:
        return e
    values = {f: getattr(e, f) for f in e.__dataclass_fields__}
    values.update(changes)
    return type(e)(**values)


def post_order(e: E.Expr, fn: Callable[[E.Expr], E.Expr | None]) -> E.Expr:
    """Rewrite bottom-up: children first, then ``fn(node)`` (``None`` keeps the node)."""
    memo: dict[int, E.Expr] = {}

    def visit(x: E.Expr) -> E.Expr:
        key = id(x)
        if key in memo:
            return memo[key]
        y = map_children(x, visit)
        r = fn(y)
        out = y if r is None else r
        memo[key] = out
        return out

    return visit(e)


def pre_order(e: E.Expr, fn: Callable[[E.Expr], E.Expr | None]) -> E.Expr:
    """Rewrite top-down: ``fn(node)`` replaces a node (no descent), ``None`` descends.

    A node shared by several parents (``y = x * x; y * y``) is rewritten once:
    expressions are DAGs, and a tree walk would be exponential.
    """
    memo: dict[int, E.Expr] = {}

    def visit(x: E.Expr) -> E.Expr:
        key = id(x)
        if key in memo:
            return memo[key]
        r = fn(x)
        out = map_children(x, visit) if r is None else r
        memo[key] = out
        return out

    return visit(e)


def walk(e: E.Expr, fn: Callable[[E.Expr], None]) -> None:
    """Call ``fn`` on every node (each shared node once), parents first, children left to right."""
    seen: set[int] = set()
    stack = [e]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        fn(x)
        stack.extend(reversed(children(x)))


def substitute(e: E.Expr, vmap: dict) -> E.Expr:
    """Replace variables (keys: Var or IterVar) by expressions."""
    if not vmap:
        return e
    m = {(k.var if isinstance(k, E.IterVar) else k): E.as_expr(v) for k, v in vmap.items()}

    def rule(x):
        if isinstance(x, E.Var):
            return m.get(x, x)
        return None

    return pre_order(e, rule)


def collect_reads(e: E.Expr) -> list[E.TensorRead]:
    out: list = []
    walk(e, lambda x: out.append(x) if isinstance(x, E.TensorRead) else None)
    return out


def collect_vars(e: E.Expr) -> set:
    out: set = set()
    walk(e, lambda x: out.add(x) if isinstance(x, E.Var) else None)
    return out


def uses_var(e: E.Expr, var: E.Var) -> bool:
    return var in collect_vars(e)


def structural_equal(a, b, map_free_vars: bool = False) -> bool:
    """Compare two expressions by structure (tests and caching use this)."""
    vmap: dict = {}

    def eq(x, y) -> bool:
        if isinstance(x, tuple) and isinstance(y, tuple):
            return len(x) == len(y) and all(eq(p, q) for p, q in zip(x, y))
        if isinstance(x, E.Var) and isinstance(y, E.Var):
            if x is y:
                return True
            if not map_free_vars or x.dtype != y.dtype:
                return False
            return vmap.setdefault(x, y) is y
        if type(x) is not type(y):
            return False
        if not isinstance(x, E.Expr):
            return x is y or x == y
        for f in x.__dataclass_fields__:
            if not eq(getattr(x, f), getattr(y, f)):
                return False
        return True

    return eq(a, b)


def structural_key(e: E.Expr, memo: dict | None = None):
    """A hashable structural key of ``e`` (variables by identity), each shared node once.

    Two expressions get equal keys exactly when ``structural_equal`` holds
    (without mapping free variables): the simplifier merges terms by it.
    """
    if memo is None:
        memo = {}
    hit = memo.get(id(e))
    if hit is not None:
        return hit
    out = memo[id(e)] = _structural_key_of(e, memo)
    return out


def _structural_key_of(e: E.Expr, memo: dict):
    if isinstance(e, E.Var):
        return ("var", id(e))
    if isinstance(e, (E.IntImm, E.FloatImm)):
        return (type(e).__name__, e.value, e.dtype)
    parts: list = [type(e).__name__, e.dtype]
    for f in e.__dataclass_fields__:
        v = getattr(e, f)
        if isinstance(v, E.Expr):
            parts.append(structural_key(v, memo))
        elif isinstance(v, tuple):
            parts.append(tuple(structural_key(x, memo) if isinstance(x, E.Expr) else id(x) for x in v))
        elif isinstance(v, (int, str, float)):
            parts.append(v)
        else:
            parts.append(id(v))
    return tuple(parts)


def unsafe_select_loads(e) -> bool:
    """True if a branch of Select ``e`` loads memory its condition does not also load.

    ``select(i >= 1, A[i - 1], 0)`` guards the load of ``A[i - 1]``: evaluating
    it when the condition fails may read out of bounds, so it must be branched
    on (or kept scalar).  ``select(A[i] > 0, A[i], 0)`` is safe.
    """
    def loads(x) -> list:
        out: list = []
        walk(x, lambda n: out.append(n) if isinstance(n, (E.Load, E.TensorRead)) else None)
        return out

    safe = {structural_key(x) for x in loads(e.cond)}
    return any(structural_key(x) not in safe for x in loads(e.true_value) + loads(e.false_value))
