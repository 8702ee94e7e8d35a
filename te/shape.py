"""Shape expressions bound from array shapes at call time.

A placeholder of shape ``(8 * m, l)`` with ``m`` not in ``build``'s argument
list still runs: a 16-row array gives ``m = 2``.  ``shape_text`` writes a
shape entry as text (it travels in a module's parameter table and in an
exported library's metadata); ``bind_shape`` checks an array's dimensions
against such entries and solves each linear entry of one unknown::

    bound = {"l": 3}
    bind_shape([("(8 * m)", 16, "f: A")], bound)   # bound == {"l": 3, "m": 2}
    bind_shape([("(8 * m)", 17, "f: A")], {})      # ValueError: no integer m gives (8 * m) = 17

sympy parses and solves (imported on first use, so modules without shape
expressions never load it).
"""

from __future__ import annotations

from functools import lru_cache

from te import expr as E

_OPS = {E.Add: "+", E.Sub: "-", E.Mul: "*"}
_FUNCS = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "Min", E.Max: "Max"}


def shape_text(e: E.Expr) -> str | None:
    """An integer shape expression as text sympy reads (``None``: not representable)."""
    if isinstance(e, E.IntImm):
        return str(e.value)
    if isinstance(e, E.Var):
        return e.name if e.name.isidentifier() else None
    if isinstance(e, E.Cast):
        return shape_text(e.value)
    op = _OPS.get(type(e)) or _FUNCS.get(type(e))
    if op is None:
        return None
    a, b = shape_text(e.a), shape_text(e.b)
    if a is None or b is None:
        return None
    return f"({a} {op} {b})" if type(e) in _OPS else f"{op}({a}, {b})"


def solvable(dims: list, known: set) -> set:
    """Variables of the shape entries ``dims`` that arrays determine, given ``known``.

    An entry determines its one unknown when it is linear in it
    (``8 * m + 2`` does, ``floordiv(m, 2)`` and ``m * n`` do not); the
    determined variables then count as known for the other entries.
    """
    from te.simplify import linear, simplify
    from te.visitor import collect_vars

    known = set(known)
    progress = True
    while progress:
        progress = False
        for d in dims:
            unknown = [(t, c) for t, c in linear(simplify(d)).items() if not collect_vars(t) <= known]
            if len(unknown) == 1 and isinstance(unknown[0][0], E.Var) and shape_text(d) is not None:
                known.add(unknown[0][0])
                progress = True
    return known


def _sympy():
    import sympy

    return sympy


@lru_cache(maxsize=256)
def _parse(text: str):
    sp = _sympy()
    names = {
        "floordiv": lambda a, b: sp.floor(a / b),
        "floormod": lambda a, b: sp.Mod(a, b),
        "Min": sp.Min,
        "Max": sp.Max,
    }
    return sp.sympify(text, locals=names)


def unknowns(text: str, bound: dict) -> list[str]:
    """Names in ``text`` that ``bound`` does not hold yet, sorted."""
    return sorted(s.name for s in _parse(text).free_symbols if s.name not in bound)


def bind_shape(dims: list, bound: dict) -> None:
    """Check ``(text, size, where)`` entries against ``bound`` (name -> int), solving unknowns.

    Entries whose names are all bound are checked; an entry with one unknown
    is solved for it (a non-negative integer, else ``ValueError`` naming the
    unknown and the entry); entries with several unknowns wait for others to
    bind them.  ``where`` prefixes messages (``"f: argument 0 'A' of shape (17, 4)"``).
    """
    pending = list(dims)
    while pending:
        progress = False
        for item in list(pending):
            text, size, where = item
            free = unknowns(text, bound)
            if len(free) > 1:
                continue
            pending.remove(item)
            progress = True
            if free:
                bound[free[0]] = _solve(text, size, free[0], bound, where)
            else:
                _check(text, size, bound, where)
        if not progress:
            text, size, where = pending[0]
            raise ValueError(
                f"{where}: cannot determine {', '.join(unknowns(text, bound))} from the shape entry "
                f"{text} = {size}; pass them in the argument list"
            )


def _subs(text: str, bound: dict):
    expr = _parse(text)
    return expr.subs({s: bound[s.name] for s in expr.free_symbols if s.name in bound})


def _check(text: str, size: int, bound: dict, where: str) -> None:
    value = _subs(text, bound)
    if int(value) != size:
        given = ", ".join(f"{k} = {v}" for k, v in sorted(bound.items()))
        raise ValueError(f"{where}: dimension {text} is {int(value)} with {given}, got {size}")


@lru_cache(maxsize=1024)
def _solve_cached(text: str, size: int, name: str, known: tuple) -> int | None:
    sp = _sympy()
    expr = _subs(text, dict(known))
    sym = next(s for s in expr.free_symbols if s.name == name)
    try:
        roots = sp.solve(sp.Eq(expr, size), sym)
    except (NotImplementedError, TypeError):
        roots = []
    for r in roots:
        if r.is_integer and int(r) >= 0 and int(expr.subs(sym, r)) == size:
            return int(r)
    return None


def _solve(text: str, size: int, name: str, bound: dict, where: str) -> int:
    known = tuple(sorted((k, v) for k, v in bound.items() if isinstance(v, int)))
    value = _solve_cached(text, size, name, known)
    if value is None:
        raise ValueError(
            f"{where}: no non-negative integer {name} gives {text} = {size}; the shape "
            f"entry {text} cannot hold {size} elements"
        )
    return value
