"""Reductions over axes (classic ``topi.reduction``): sum, mean, max, min, prod,
argmax, argmin, all, any.

Every operator takes ``(x, axis=None, keepdims=False)``: ``axis`` is ``None``
(all axes), an int or a tuple of ints, negative counting from the end::

    sum(A (4, 5, 6), axis=(0, -1))  ->  B (5,)
    B[j] = sum(A[k0, j, k2], axis=[k0, k2])

Results are tagged ``comm_reduce`` (``comm_reduce_idx`` for argmax/argmin,
whose indices are int32 positions in the row-major order of the reduced axes,
the first one on ties, as numpy's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import te
from te import dtype as dt
from te import expr as E
from topi import tag
from topi.accumulate import acc_attrs, accumulate_dtype, round_once, widen
from topi.utils import get_const_tuple

Axis = None | int | Sequence[int]

__all__ = ["all", "any", "argmax", "argmin", "max", "mean", "min", "prod", "sum"]


# ------------------------------------------------------------------- axes ---
def _reduce_axes(op: str, x: te.Tensor, axis: Axis) -> tuple[int, ...]:
    """Sorted, normalised reduced axes; ``ValueError`` naming op, axis and shape."""
    if not isinstance(x, te.Tensor):
        raise TypeError(f"{op}: x must be a te.Tensor, got {type(x).__name__}")
    ndim = len(x.shape)
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if not isinstance(a, int) or not -ndim <= a < ndim:
            raise ValueError(
                f"{op}: axis {a} is out of range for a tensor of shape "
                f"{get_const_tuple(x.shape)} (rank {ndim})"
            )
        if a % ndim in out:
            raise ValueError(f"{op}: axis {a} is repeated in axis={axis!r}")
        out.append(a % ndim)
    return tuple(sorted(out))


def _out_shape(x: te.Tensor, axes: tuple, keepdims: bool) -> tuple:
    shape = []
    for k, d in enumerate(x.shape):
        if k not in axes:
            shape.append(d)
        elif keepdims:
            shape.append(1)
    return tuple(shape)


def _index_map(x: te.Tensor, axes: tuple, keepdims: bool, rvars, out_idx) -> list:
    """Indices of ``x`` for output point ``out_idx`` and reduce variables ``rvars``."""
    it, rv, idx = iter(out_idx), iter(rvars), []
    for k in range(len(x.shape)):
        if k in axes:
            idx.append(next(rv))
            if keepdims:
                next(it)
        else:
            idx.append(next(it))
    return idx


def _reduce_vars(x: te.Tensor, axes: tuple) -> list:
    return [te.reduce_axis((0, x.shape[a]), name=f"k{a}") for a in axes]


# --------------------------------------------------------------- builders ---
def comm_reduce(x: te.Tensor, axis: Axis, keepdims: bool, reducer: Callable, op: str,
                fvalue: Callable = lambda v: v, attrs: dict | None = None) -> te.Tensor:
    """``reducer(fvalue(x[...]), axis=[...])`` over ``axis`` (the shared builder)."""
    axes = _reduce_axes(op, x, axis)
    shape = _out_shape(x, axes, keepdims)
    rv = _reduce_vars(x, axes)

    def body(*i):
        return reducer(fvalue(x(*_index_map(x, axes, keepdims, rv, i))), axis=rv)

    return te.compute(shape, body, name=f"{x.op.name}_{op}", tag=tag.COMM_REDUCE, attrs=attrs)


def _accumulated(x: te.Tensor, axis: Axis, keepdims: bool, reducer: Callable, op: str) -> te.Tensor:
    """A sum or product of ``x``; float16 accumulates in float32 and is rounded once
    (:mod:`topi.accumulate`), other dtypes reduce in themselves."""
    if accumulate_dtype(x.dtype) == x.dtype:
        return comm_reduce(x, axis, keepdims, reducer, op)
    acc = comm_reduce(x, axis, keepdims, reducer, op, lambda v: widen(v, x.dtype), acc_attrs(x.dtype))
    return round_once(acc, x.dtype, f"{x.op.name}_{op}_round")


def _doc(what: str) -> str:
    return f"""{what} of ``x`` over ``axis``.

    Parameters
    ----------
    x : te.Tensor
    axis : None, int or tuple of int
        The reduced axes (``None``: all of them); negative axes count from the end.
    keepdims : bool
        Keep the reduced axes as extent 1.

    Returns
    -------
    te.Tensor
        Tagged ``comm_reduce``.

    Raises
    ------
    ValueError
        An axis out of range or repeated.
    """


def sum(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return _accumulated(x, axis, keepdims, te.sum, "sum")


# Float max/min start from -inf/+inf, so a row of -inf has max -inf as in numpy and ONNX
# (te.max starts from the lowest finite value, as classic TVM, which would be the answer).
_fmax = te.comm_reducer(
    lambda a, b: E.binary_op(E.Max, a, b),
    lambda t: E.const(-float("inf"), t) if dt.is_float(t) else te.min_value(t),
    name="max",
)
_fmin = te.comm_reducer(
    lambda a, b: E.binary_op(E.Min, a, b),
    lambda t: E.const(float("inf"), t) if dt.is_float(t) else te.max_value(t),
    name="min",
)


def max(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return comm_reduce(x, axis, keepdims, _fmax, "max")


def min(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return comm_reduce(x, axis, keepdims, _fmin, "min")


_prod = te.comm_reducer(lambda a, b: a * b, lambda t: te.const(1, t), name="prod")
_all = te.comm_reducer(lambda a, b: a & b, lambda t: te.const(True, t), name="all")
_any = te.comm_reducer(lambda a, b: a | b, lambda t: te.const(False, t), name="any")


def prod(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return _accumulated(x, axis, keepdims, _prod, "prod")


def all(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return comm_reduce(x, axis, keepdims, _all, "all", E.as_bool)


def any(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    return comm_reduce(x, axis, keepdims, _any, "any", E.as_bool)


def mean(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    """The arithmetic mean of ``x`` over ``axis`` (integers average in float32).

    The sum is one ``comm_reduce`` stage; the division by the count is a second,
    ``elemwise`` stage that schedules inline into the consumers.  float16 sums and
    divides in float32 and rounds once, as ``np.mean``.
    """
    axes = _reduce_axes("mean", x, axis)
    count = 1
    for a in axes:
        count *= get_const_tuple(x.shape)[a]
    to_float = (lambda v: widen(v, x.dtype)) if dt.is_float(x.dtype) else (lambda v: v.astype("float32"))
    total = comm_reduce(x, axes, keepdims, te.sum, "mean_sum", to_float, acc_attrs(x.dtype))

    def divide(*i):
        q = total(*i) / te.const(count, total.dtype)
        return q if not dt.is_float(x.dtype) or q.dtype == x.dtype else q.astype(x.dtype)

    return te.compute(total.shape, divide, name=f"{x.op.name}_mean", tag=tag.ELEMWISE)


for _f, _what in ((sum, "The sum"), (max, "The maximum"), (min, "The minimum"),
                  (prod, "The product"), (all, "Whether all values are non-zero"),
                  (any, "Whether any value is non-zero")):
    _f.__doc__ = _doc(_what)


# ----------------------------------------------------------- arg reducers ---
def _arg_combine(better: Callable):
    """Tuple combiner ``(index, value)``: the better value, the lower index on ties."""

    def fcombine(lhs, rhs):
        (i0, v0), (i1, v1) = lhs, rhs
        take = better(v1, v0) | ((v1 == v0) & (i1 < i0))
        return te.if_then_else(take, i1, i0), te.if_then_else(take, v1, v0)

    return fcombine


def _extreme(dtype: str, largest: bool) -> E.Expr:
    if dt.is_float(dtype):
        return te.const(float("-inf") if largest else float("inf"), dtype)
    return te.min_value(dtype) if largest else te.max_value(dtype)


_argmax = te.comm_reducer(_arg_combine(lambda a, b: a > b),
                          lambda ti, tv: (te.max_value(ti), _extreme(tv, True)), name="argmax")
_argmin = te.comm_reducer(_arg_combine(lambda a, b: a < b),
                          lambda ti, tv: (te.max_value(ti), _extreme(tv, False)), name="argmin")


def _arg_reduce(op: str, reducer, x: te.Tensor, axis: Axis, keepdims: bool) -> te.Tensor:
    axes = _reduce_axes(op, x, axis)
    shape = _out_shape(x, axes, keepdims)
    rv = _reduce_vars(x, axes)
    extents = [get_const_tuple(x.shape)[a] for a in axes]

    def flat_index():
        flat = te.const(0, "int32")
        for v, n in zip(rv, extents):
            flat = flat * n + v.var
        return flat

    def body(*i):
        value = x(*_index_map(x, axes, keepdims, rv, i))
        return reducer((flat_index(), value), axis=rv)

    idx, _ = te.compute(shape, body, name=f"{x.op.name}_{op}_red", tag=tag.COMM_REDUCE_IDX)
    # The index as a stage of its own: a build cannot yet take one output of a
    # multi-output op as an argument without the other (storage_flatten fails with
    # "tensor 'R.v1' is read but neither passed as an argument nor computed").
    return te.compute(shape, lambda *i: idx(*i), name=f"{x.op.name}_{op}", tag=tag.COMM_REDUCE_IDX)


def argmax(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    """Int32 position of the largest value over ``axis`` (first on ties).

    With several reduced axes the position is row-major over them (``axis=None``:
    the flat index, as ``np.argmax``).  Tagged ``comm_reduce_idx``: a tuple
    reduction of (index, value) and a copy of its index output, which is returned.
    """
    return _arg_reduce("argmax", _argmax, x, axis, keepdims)


def argmin(x: te.Tensor, axis: Axis = None, keepdims: bool = False) -> te.Tensor:
    """Int32 position of the smallest value over ``axis`` (first on ties); see ``argmax``."""
    return _arg_reduce("argmin", _argmin, x, axis, keepdims)
