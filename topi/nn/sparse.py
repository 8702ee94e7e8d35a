"""Sparse-weight operators (classic ``topi.nn``): ``sparse_dense`` (CSR and BSR weights, on either
side), ``sparse_conv2d`` (1x1, BSR weights), ``sparse_add``, ``sparse_transpose``.

A CSR matrix is ``(data, indices, indptr)`` as scipy stores it: row ``r`` holds the values
``data[indptr[r]:indptr[r+1]]`` in the columns ``indices[...]``; a BSR matrix stores blocks
``data[e]`` of ``bs_r x bs_c`` the same way, by block row and block column.  A product runs
over a row's stored entries only: its reduce axis has a data-dependent extent::

    sparse_dense(X, W) (CSR):  Y[i, j] = sum over e in row j of W:  data[e] * X[i, indices[e]]

Row bounds are clamped into ``[0, nnz]`` and column indices into the dense operand, so a
malformed matrix gives a wrong answer, never a read outside a buffer.  The sequential
operators (``sparse_add``, ``sparse_transpose``) are hybrid scripts.
"""

from __future__ import annotations

import te
from schedule.hybrid import script
from topi import tag
from topi.utils import get_const_tuple

__all__ = ["BLOCK_PRODUCT", "COLUMNS", "row_range", "sparse_add", "sparse_conv2d", "sparse_dense",
           "sparse_transpose"]

BLOCK_PRODUCT = "sparse_dense_bsrmm"  # tag of the product stage Y[block_row, r, dense axes...]
COLUMNS = "sparse_dense_columns"  # tag of the dense operand laid out by column


def _clamp(v, lo, hi):
    return te.max(te.min(v, hi), lo)


def row_range(indptr: te.Tensor, r, nnz) -> tuple:
    """``(start, count)`` of the stored entries of row ``r``, clamped into ``[0, nnz]``."""
    start = _clamp(indptr[r].astype("int32"), 0, nnz)
    end = _clamp(indptr[r + 1].astype("int32"), start, nnz)
    return start, end - start


def _check(op: str, w_data, w_indices, w_indptr) -> tuple:
    dshape = get_const_tuple(w_data.shape)
    if len(w_indices.shape) != 1 or len(w_indptr.shape) != 1 or len(dshape) not in (1, 2, 3):
        raise ValueError(f"{op}: expects CSR (1-D data) or BSR (3-D data, or 2-D for 1-column blocks) arrays "
                         f"with 1-D indices and indptr, got data {dshape}")
    bs_r = dshape[1] if len(dshape) > 1 else 1
    bs_c = dshape[2] if len(dshape) > 2 else 1
    return dshape[0], bs_r, bs_c


def _block(w_data, e, r, c):
    n = len(w_data.shape)
    return w_data(e, r, c) if n == 3 else w_data(e, r) if n == 2 else w_data(e)


def _bsr_product(op: str, read, k: int, w_data, w_indices, w_indptr, lead: tuple, name: str) -> te.Tensor:
    """``Y[block_row, r, lead...] = sum over the blocks of block_row, c: block[r, c] * read(col, lead)``
    where ``col = indices[block] * bs_c + c`` (clamped into ``[0, k)``).  The dense operand's axes
    (``lead``) come last, so that a schedule can run them innermost, contiguous in ``Y`` and in
    a column-major ``read``."""
    nnz, bs_r, bs_c = _check(op, w_data, w_indices, w_indptr)
    rows = get_const_tuple(w_indptr.shape)[0] - 1

    def body(nb, r, *outer):
        start, count = row_range(w_indptr, nb, nnz)
        e = te.reduce_axis((0, count), name="elem_idx")
        c = te.reduce_axis((0, bs_c), name="c")
        at = start + e
        col = _clamp(w_indices[at].astype("int32") * bs_c + c, 0, k - 1)
        return te.sum(_block(w_data, at, r, c) * read(col, outer), axis=[e, c])

    return te.compute((rows, bs_r, *lead), body, name=name, tag=BLOCK_PRODUCT)


def _columns(x: te.Tensor, axis: int, name: str) -> te.Tensor:
    """``x`` with ``axis`` moved first (``XT[k, m] = X[m, k]``): the product then reads a stored
    entry's column as a contiguous row.  A stage of its own (not injective: it is not inlined)."""
    rest = [a for a in range(len(x.shape)) if a != axis]
    shape = (x.shape[axis], *[x.shape[a] for a in rest])

    def body(kk, *o):
        idx = list(o)
        idx.insert(axis, kk)
        return x(*idx)

    return te.compute(shape, body, name=name, tag=COLUMNS)


def sparse_dense(data: te.Tensor, weight_data: te.Tensor, weight_indices: te.Tensor, weight_indptr: te.Tensor,
                 sparse_lhs: bool = False) -> te.Tensor:
    """``Y = X @ W.T`` for dense ``X`` of ``(M, K)`` and sparse ``W`` of ``(N, K)`` (``(M, N)``);
    ``sparse_lhs=True``: ``Y = W @ X.T`` (``(N, M)``).  ``W`` is CSR or BSR by ``weight_data``'s rank."""
    m, k = get_const_tuple(data.shape)
    _, bs_r, _ = _check("sparse_dense", weight_data, weight_indices, weight_indptr)
    if m == 1:
        read = lambda col, o: data(o[0], col)  # noqa: E731
    else:
        xt = _columns(data, 1, "sparse_dense_columns")
        read = lambda col, o: xt(col, o[0])  # noqa: E731
    prod = _bsr_product("sparse_dense", read, k, weight_data, weight_indices, weight_indptr, (m,),
                        "sparse_dense_block")
    n = get_const_tuple(prod.shape)[0] * bs_r
    if sparse_lhs:
        return te.compute((n, m), lambda j, i: prod(j // bs_r, j % bs_r, i), name="sparse_dense", tag=tag.INJECTIVE)
    return te.compute((m, n), lambda i, j: prod(j // bs_r, j % bs_r, i), name="sparse_dense", tag=tag.INJECTIVE)


def sparse_conv2d(data: te.Tensor, weight_data: te.Tensor, weight_indices: te.Tensor, weight_indptr: te.Tensor,
                  layout: str = "NHWC", kernel_size: int = 1) -> te.Tensor:
    """A 1x1 convolution by a sparse (BSR or CSR) weight of ``(out_channels, in_channels)``."""
    if layout not in ("NHWC", "NCHW") or kernel_size != 1:
        raise ValueError(f"sparse_conv2d: supports 1x1 kernels in NHWC or NCHW, got {kernel_size}x{kernel_size} "
                         f"{layout!r}")
    n, d1, d2, d3 = get_const_tuple(data.shape)
    _, bs_r, _ = _check("sparse_conv2d", weight_data, weight_indices, weight_indptr)
    if layout == "NHWC":
        cols = _columns(data, 3, "sparse_conv2d_columns")
        prod = _bsr_product("sparse_conv2d", lambda col, o: cols(col, *o), d3, weight_data, weight_indices,
                            weight_indptr, (n, d1, d2), "sparse_conv2d_block")
        out = (n, d1, d2, get_const_tuple(prod.shape)[0] * bs_r)
        return te.compute(out, lambda b, h, w, co: prod(co // bs_r, co % bs_r, b, h, w), name="sparse_conv2d",
                          tag=tag.INJECTIVE)
    prod = _bsr_product("sparse_conv2d", lambda col, o: data(o[0], col, o[1], o[2]), d1, weight_data, weight_indices,
                        weight_indptr, (n, d2, d3), "sparse_conv2d_block")
    out = (n, get_const_tuple(prod.shape)[0] * bs_r, d2, d3)
    return te.compute(out, lambda b, co, h, w: prod(co // bs_r, co % bs_r, b, h, w), name="sparse_conv2d",
                      tag=tag.INJECTIVE)


@script
def _sparse_add(dense, data, indices, indptr):
    out = output_tensor(dense.shape, dense.dtype)
    nnz = data.shape[0]
    for i in parallel(dense.shape[0]):
        for j in range(dense.shape[1]):
            out[i, j] = dense[i, j]
        start = min(max(int32(indptr[i]), 0), nnz)
        end = min(max(int32(indptr[i + 1]), start), nnz)
        for e in range(end - start):
            col = min(max(int32(indices[start + e]), 0), dense.shape[1] - 1)
            out[i, col] = out[i, col] + data[start + e]
    return out


def sparse_add(dense_data: te.Tensor, sparse_data: te.Tensor, sparse_indices: te.Tensor,
               sparse_indptr: te.Tensor) -> te.Tensor:
    """``dense + S`` for a CSR matrix ``S`` of the dense operand's shape (repeated entries add up)."""
    m = get_const_tuple(dense_data.shape)[0]
    if len(dense_data.shape) != 2 or get_const_tuple(sparse_indptr.shape) != (m + 1,) \
            or sparse_data.dtype != dense_data.dtype:
        raise ValueError(f"sparse_add: needs a 2-D dense operand and a CSR matrix of its rows and dtype, got "
                         f"{get_const_tuple(dense_data.shape)} {dense_data.dtype}, indptr "
                         f"{get_const_tuple(sparse_indptr.shape)}, data {sparse_data.dtype}")
    return _sparse_add(dense_data, sparse_data, sparse_indices, sparse_indptr)


@script
def _sparse_transpose(data, indices, indptr, cols):
    out_data = output_tensor(data.shape, data.dtype)
    out_indices = output_tensor(indices.shape, indices.dtype)
    out_indptr = output_tensor((cols + 1,), indptr.dtype)
    fill = allocate((cols,), "int32")
    nnz = data.shape[0]
    rows = indptr.shape[0] - 1
    for c in range(cols + 1):
        out_indptr[c] = 0
    for e in range(nnz):
        col = min(max(int32(indices[e]), 0), cols - 1)
        out_indptr[col + 1] = out_indptr[col + 1] + 1
    for c in range(cols):
        out_indptr[c + 1] = out_indptr[c + 1] + out_indptr[c]
        fill[c] = 0
    for r in range(rows):
        start = min(max(int32(indptr[r]), 0), nnz)
        end = min(max(int32(indptr[r + 1]), start), nnz)
        for e in range(end - start):
            dst = min(max(int32(indices[start + e]), 0), cols - 1)
            at = min(int32(out_indptr[dst]) + fill[dst], nnz - 1)
            out_data[at] = data[start + e]
            out_indices[at] = r
            fill[dst] = fill[dst] + 1
    return out_data, out_indices, out_indptr


def sparse_transpose(sparse_data: te.Tensor, sparse_indices: te.Tensor, sparse_indptr: te.Tensor) -> list:
    """The CSR arrays ``(data, indices, indptr)`` of the transpose of a square CSR matrix (a
    counting sort by column: its rows keep their order within each column)."""
    rows = get_const_tuple(sparse_indptr.shape)[0] - 1
    outs = _sparse_transpose(sparse_data, sparse_indices, sparse_indptr, rows)
    return list(outs)
