"""Commutative reducers: ``comm_reducer``, and ``sum``/``max``/``min`` built on it."""

from __future__ import annotations

from dataclasses import dataclass

from te import expr as E
from te.intrin import max_value, min_value


@dataclass(eq=False)
class CommReducer:
    """``result = fcombine(lhs, rhs)`` with ``identity``; tuples for multi-value reducers."""

    name: str
    lhs: tuple
    rhs: tuple
    result: tuple
    identity: tuple

    def combine(self, lhs: tuple, rhs: tuple) -> tuple:
        from te.visitor import substitute

        vmap = dict(zip(self.lhs, lhs))
        vmap.update(zip(self.rhs, rhs))
        return tuple(substitute(r, vmap) for r in self.result)


def comm_reducer(fcombine, fidentity, name: str = "comm_reduce"):
    """Make a reducer from ``fcombine(x, y)`` and ``fidentity(dtype, ...)``.

    The returned function is called as ``reducer(expr, axis, where=None)``;
    with a tuple ``expr`` it returns a tuple (one Reduce per value).  Called with
    two expressions and no axis it combines them directly (``te.max(a, b)``).
    """

    def reducer(expr, axis=None, where=None, init=None, *args):
        if axis is None or not _is_axis(axis):
            if axis is None:
                raise TypeError(f"{name}: give the reduction axis, e.g. {name}(expr, axis=k)")
            vals = [expr, axis, *args]
            acc = E.as_expr(vals[0])
            for v in vals[1:]:
                acc = _combine_direct(fcombine, acc, E.as_expr(v))
            return acc
        single = not isinstance(expr, (tuple, list))
        source = (E.as_expr(expr),) if single else tuple(E.as_expr(x) for x in expr)
        axes = (axis,) if isinstance(axis, E.IterVar) else tuple(axis)
        for a in axes:
            if not isinstance(a, E.IterVar) or a.iter_type != E.COMM_REDUCE:
                raise TypeError(f"{name}: axis must be made with te.reduce_axis, got {a!r}")
        cond = E.const(True) if where is None else E.as_bool(where)
        combiner = _make_combiner(fcombine, fidentity, name, [s.dtype for s in source])
        outs = tuple(
            E.Reduce(combiner, source, axes, cond, k, s.dtype) for k, s in enumerate(source)
        )
        return outs[0] if single else outs

    reducer.__name__ = name
    return reducer


def _is_axis(axis) -> bool:
    if isinstance(axis, E.IterVar):
        return True
    return isinstance(axis, (list, tuple)) and all(isinstance(a, E.IterVar) for a in axis)


def _combine_direct(fcombine, a, b):
    return fcombine(a, b)


def _make_combiner(fcombine, fidentity, name, dtypes) -> CommReducer:
    lhs = tuple(E.Var(f"x{k}", d) for k, d in enumerate(dtypes))
    rhs = tuple(E.Var(f"y{k}", d) for k, d in enumerate(dtypes))
    if len(dtypes) == 1:
        res = fcombine(lhs[0], rhs[0])
        ident = fidentity(dtypes[0])
    else:
        res = fcombine(lhs, rhs)
        ident = fidentity(*dtypes)
    res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
    ident = tuple(ident) if isinstance(ident, (tuple, list)) else (ident,)
    if len(res) != len(dtypes) or len(ident) != len(dtypes):
        raise ValueError(
            f"comm_reducer '{name}': fcombine and fidentity must return {len(dtypes)} values"
        )
    res = tuple(E.cast(E.as_expr(r), d) for r, d in zip(res, dtypes))
    ident = tuple(E.cast(E.as_expr(i), d) for i, d in zip(ident, dtypes))
    return CommReducer(name, lhs, rhs, res, ident)


def _minmax(cls, a, b):
    return E.binary_op(cls, a, b)


sum = comm_reducer(lambda x, y: x + y, lambda t: E.const(0, t), name="sum")  # noqa: A001
max = comm_reducer(lambda x, y: _minmax(E.Max, x, y), min_value, name="max")  # noqa: A001
min = comm_reducer(lambda x, y: _minmax(E.Min, x, y), max_value, name="min")  # noqa: A001
