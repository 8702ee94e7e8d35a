"""``topi.sparse`` (classic): products of a CSR matrix held as three placeholders.

``placeholder(shape, nonzeros)`` declares a CSR matrix of ``shape`` (extents and the number of
stored entries may be ``te.var``s): its ``data``, ``indices`` and ``indptr`` are the placeholders
a kernel is built over (``tvm.build(s, [A.data, A.indices, A.indptr, ...])``), filled at run time
from a ``tvm.contrib.sparse.array``.  Each product reduces over a row's stored entries only
(:func:`topi.nn.sparse.row_range`)::

    csrmm(A, B, C):  out[r, j] = sum over e in row r of A:  A.data[e] * B[A.indices[e], j]  + C[r]
"""

from __future__ import annotations

from dataclasses import dataclass

import te
from te import dtype as dt
from topi.nn.sparse import row_range
from topi.utils import get_const_tuple

__all__ = ["CSRPlaceholderOp", "csrmm", "csrmv", "dense", "placeholder"]


@dataclass(frozen=True, eq=False)
class CSRPlaceholderOp:
    """A CSR matrix of ``shape`` as three placeholders: ``data`` (``(nonzeros,)`` of ``dtype``),
    ``indices`` (its column per entry) and ``indptr`` (``(rows + 1,)``: where each row starts), int32."""

    shape: tuple
    nonzeros: object
    dtype: str
    name: str
    data: te.Tensor
    indices: te.Tensor
    indptr: te.Tensor
    stype: str = "csr"


def placeholder(shape, nonzeros=None, dtype: str | None = None, name: str = "placeholder",
                stype: str | None = None) -> CSRPlaceholderOp:
    """A CSR matrix placeholder (classic ``tvm.contrib.sparse.placeholder``); ``nonzeros`` defaults
    to a ``te.var``, ``dtype`` to float32."""
    if stype not in (None, "csr"):
        raise ValueError(f"sparse.placeholder: only the 'csr' storage type exists, got {stype!r}")
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    if len(shape) != 2:
        raise ValueError(f"sparse.placeholder: a CSR matrix has two axes, got shape {shape}")
    nonzeros = te.var(f"{name}_nonzeros") if nonzeros is None else nonzeros
    dtype = dt.normalize(dtype or "float32")
    return CSRPlaceholderOp(shape, nonzeros, dtype, name,
                            te.placeholder((nonzeros,), dtype, name=f"{name}_data"),
                            te.placeholder((nonzeros,), "int32", name=f"{name}_indices"),
                            te.placeholder((shape[0] + 1,), "int32", name=f"{name}_indptr"))


def _csr(op: str, a) -> CSRPlaceholderOp:
    if not isinstance(a, CSRPlaceholderOp):
        raise TypeError(f"{op}: the sparse operand must be a sparse.placeholder, got {type(a).__name__}")
    return a


def _row_dot(a: CSRPlaceholderOp, r, read, name: str):
    """``sum over e in row r of a: a.data[e] * read(column of e)``, the column clamped by ``read``."""
    start, count = row_range(a.indptr, r, a.data.shape[0])
    e = te.reduce_axis((0, count), name=f"{name}_elem")
    at = start + e
    return te.sum(a.data[at] * read(a.indices[at]), axis=e)


def _clamped(col, n):
    return te.max(te.min(col, n - 1), 0)


def csrmm(a: CSRPlaceholderOp, b: te.Tensor, c: te.Tensor | None = None) -> te.Tensor:
    """``a @ b (+ c[:, None])`` for CSR ``a`` of ``(m, k)`` and dense ``b`` of ``(k, n)``."""
    a = _csr("csrmm", a)
    k, n = b.shape
    m = a.shape[0]

    def body(r, j):
        return _row_dot(a, r, lambda col: b[_clamped(col, k), j], "csrmm")

    out = te.compute((m, n), body, name="csrmm", tag="csrmm")
    if c is None:
        return out
    return te.compute((m, n), lambda r, j: out[r, j] + c[r], name="csrmm_bias", tag="broadcast")


def csrmv(a: CSRPlaceholderOp, x: te.Tensor, y: te.Tensor | None = None) -> te.Tensor:
    """``a @ x (+ y[:, None])`` for CSR ``a`` and a column vector ``x`` of ``(k, 1)``."""
    if len(x.shape) != 2 or get_const_tuple(x.shape)[1] != 1:
        raise ValueError(f"csrmv: x must be a column vector (k, 1), got shape {get_const_tuple(x.shape)}")
    return csrmm(a, x, y)


def dense(data, weight, bias: te.Tensor | None = None) -> te.Tensor:
    """``data @ weight.T (+ bias)`` with one of ``data`` (``(m, k)``) and ``weight`` (``(n, k)``) a CSR
    placeholder (classic ``topi.sparse.dense``)."""
    if isinstance(data, CSRPlaceholderOp):
        n, k = weight.shape

        def body(i, j):
            return _row_dot(data, i, lambda col: weight[j, _clamped(col, k)], "dense")

        out = te.compute((data.shape[0], n), body, name="sparse_dense_si", tag="dense")
    else:
        weight = _csr("dense", weight)
        m, k = data.shape

        def body(i, j):
            return _row_dot(weight, j, lambda col: data[i, _clamped(col, k)], "dense")

        out = te.compute((m, weight.shape[0]), body, name="sparse_dense_sw", tag="dense")
    if bias is None:
        return out
    return te.compute(out.shape, lambda i, j: out[i, j] + bias[j], name="sparse_dense_bias", tag="broadcast")
