"""Tensors made from numbers and shapes (classic ``topi.transform``): ``arange``, ``one_hot``,
``shape``, ``ndarray_size``, ``expand_like``, ``trilu``, ``matrix_set_diag``.

All are injective computes (tag ``injective``) that schedule inline.  The numpy references are
numpy's own (``arange``, ``triu``/``tril``) or in ``topi.testing.transform_ref``.
"""

from __future__ import annotations

import math

import te
from te import dtype as dt
from te import expr as E
from topi import tag
from topi.utils import check_axis, const_shape, get_const_int, get_const_tuple

__all__ = ["arange", "expand_like", "matrix_set_diag", "ndarray_size", "one_hot", "shape", "trilu"]


def _number(op: str, arg: str, v) -> float:
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, (E.IntImm, E.FloatImm)):
        return v.value
    raise ValueError(f"{op}: {arg} must be a constant number, got {v!r}")


def arange(start, stop=None, step=1, dtype: str = "float32") -> te.Tensor:
    """``[start, start + step, ...)`` up to ``stop`` (numpy ``arange``; ``arange(n)`` counts from 0).

    Floats are computed in float64 and rounded to ``dtype`` once, as numpy does."""
    if stop is None:
        start, stop = 0, start
    start, stop, step = (_number("arange", a, v) for a, v in (("start", start), ("stop", stop), ("step", step)))
    if step == 0:
        raise ValueError("arange: step must not be 0")
    count = max(math.ceil((stop - start) / step), 0)
    wide = "float64" if dt.is_float(dtype) or any(isinstance(v, float) for v in (start, step)) else "int64"

    def body(i):
        return (te.const(start, wide) + i.astype(wide) * te.const(step, wide)).astype(dtype)

    return te.compute((count,), body, name="T_arange", tag=tag.ELEMWISE)


def one_hot(indices: te.Tensor, on_value, off_value, depth: int, axis: int, dtype: str) -> te.Tensor:
    """``on_value`` where a new axis of extent ``depth``, inserted at ``axis`` (-1: last), equals
    ``indices``, ``off_value`` elsewhere."""
    op = "one_hot"
    ishape = const_shape(op, indices)
    depth = get_const_int(depth)
    if not dt.is_int(indices.dtype) or depth < 0:
        raise ValueError(f"one_hot: indices must be integers ({indices.dtype}) and depth >= 0 ({depth})")
    axis = check_axis(op, axis, len(ishape) + 1)
    on, off = (E.cast(E.as_expr(v), dtype) for v in (on_value, off_value))

    def body(*i):
        hit = indices(*i[:axis], *i[axis + 1:]).astype("int64") == i[axis].astype("int64")
        return te.if_then_else(hit, on, off)

    return te.compute((*ishape[:axis], depth, *ishape[axis:]), body, name="T_one_hot", tag=tag.INJECTIVE)


def shape(array: te.Tensor, dtype: str = "int32") -> te.Tensor:
    """The extents of ``array`` as a 1-D tensor (symbolic extents read from the bound shape)."""
    dims = [E.cast(E.as_expr(d), dtype) for d in array.shape]

    def body(k):
        value = dims[-1] if dims else te.const(0, dtype)
        for j in range(len(dims) - 2, -1, -1):
            value = te.if_then_else(k == j, dims[j], value)
        return value

    return te.compute((len(dims),), body, name="T_shape", tag=tag.INJECTIVE)


def ndarray_size(array: te.Tensor, dtype: str = "int32") -> te.Tensor:
    """The number of elements of ``array`` as a 0-d tensor."""
    size = te.const(1, dtype)
    for d in array.shape:
        size = size * E.cast(E.as_expr(d), dtype)
    return te.compute((), lambda: size, name="T_ndarray_size", tag=tag.INJECTIVE)


def expand_like(a: te.Tensor, shape_like: te.Tensor, axis) -> te.Tensor:
    """``a`` broadcast to the shape of ``shape_like`` along the new axes ``axis``."""
    op = "expand_like"
    ashape, oshape = get_const_tuple(a.shape), get_const_tuple(shape_like.shape)
    axes = sorted({check_axis(op, x, len(oshape)) for x in ([axis] if isinstance(axis, int) else axis)})
    kept = [k for k in range(len(oshape)) if k not in axes]
    if len(kept) != len(ashape) or any(isinstance(ashape[j], int) and isinstance(oshape[k], int)
                                       and ashape[j] != oshape[k] for j, k in enumerate(kept)):
        raise ValueError(f"{op}: a of shape {ashape} with new axes {axes} does not give the shape {oshape}")
    return te.compute(oshape, lambda *i: a(*[i[k] for k in kept]), name="T_expand_like", tag=tag.BROADCAST)


def trilu(data: te.Tensor, k, upper: bool) -> te.Tensor:
    """The upper (``upper``) or lower triangle of the last two axes, from diagonal ``k`` on
    (numpy ``triu(x, k)`` / ``tril(x, k)``); the rest is 0."""
    if len(data.shape) < 2:
        raise ValueError(f"trilu: data must have rank >= 2, got shape {get_const_tuple(data.shape)}")
    k = E.cast(E.as_expr(k), "int32")
    zero = te.const(0, data.dtype)

    def body(*i):
        d = i[-1] - i[-2]
        return te.if_then_else(d >= k if upper else d <= k, data(*i), zero)

    return te.compute(data.shape, body, name="T_trilu", tag=tag.ELEMWISE)


def matrix_set_diag(data: te.Tensor, diagonal: te.Tensor, k=0, align: str = "RIGHT_LEFT") -> te.Tensor:
    """``data`` with diagonals ``k`` (an int, or a band ``(k1, k2)``) of its last two axes set
    from ``diagonal`` (TensorFlow's ``MatrixSetDiagV3``).

    A band stacks its diagonals in ``diagonal[..., k2 - d, :]``; ``align`` (``"RIGHT_LEFT"``,
    ``"LEFT_RIGHT"``, ``"LEFT_LEFT"``, ``"RIGHT_RIGHT"``: super-diagonals, then sub-diagonals) says
    whether a diagonal shorter than the longest is padded on the left or the right.
    """
    op = "matrix_set_diag"
    shape, dshape = const_shape(op, data), const_shape(op, diagonal)
    ks = [get_const_int(x) for x in (k if isinstance(k, (list, tuple)) else [k])]
    k1, k2 = ks[0], ks[-1]
    aligns = ("RIGHT_LEFT", "LEFT_RIGHT", "LEFT_LEFT", "RIGHT_RIGHT")
    if len(shape) < 2 or align not in aligns or k1 > k2:
        raise ValueError(f"{op}: needs data of rank >= 2 ({shape}), k1 <= k2 ({k1}, {k2}), align in {aligns}")
    rows, cols = shape[-2:]
    band = k1 != k2
    longest = max(min(cols - max(d, 0), rows + min(d, 0)) for d in range(k1, k2 + 1))
    if dshape[:len(shape) - 2] != shape[:-2] or len(dshape) != len(shape) - 1 + band or dshape[-1] != longest \
            or (band and dshape[-2] != k2 - k1 + 1):
        raise ValueError(f"{op}: diagonal of shape {dshape} does not fit data {shape} and k={k} (its diagonals "
                         f"hold {longest} values at most)")
    super_right, sub_right = align.startswith("RIGHT"), align.endswith("RIGHT")

    def body(*i):
        r, c = i[-2], i[-1]
        d = c - r
        pos = te.if_then_else(d >= 0, r, c)
        if not band:
            return te.if_then_else(d == k1, diagonal(*i[:-2], _cap(pos, longest)), data(*i))
        length = te.min(cols - te.max(d, 0), rows + te.min(d, 0))
        right = te.if_then_else(d >= 0, te.const(super_right), te.const(sub_right))
        pos = pos + te.if_then_else(right, longest - length, 0)
        value = diagonal(*i[:-2], _cap(k2 - d, dshape[-2]), _cap(pos, longest))
        return te.if_then_else(te.all(d >= k1, d <= k2), value, data(*i))

    return te.compute(shape, body, name="T_matrix_set_diag", tag=tag.INJECTIVE)


def _cap(v: E.Expr, n: int) -> E.Expr:
    return te.max(te.min(v, n - 1), 0)
