"""Batched matrix products with batch broadcasting (classic ``nn.batch_matmul``)."""

from __future__ import annotations

import te
from topi import tag
from topi.accumulate import acc_attrs, accumulate_dtype, round_once
from topi.utils import get_const_tuple, shape_str


def _batch_extent(x: te.Tensor, y: te.Tensor):
    bx, by = get_const_tuple((x.shape[0], y.shape[0]))
    if isinstance(bx, int) and isinstance(by, int):
        if bx != by and 1 not in (bx, by):
            raise ValueError(
                f"batch_matmul: the batch extents of 'x' {shape_str(x)} and 'y' {shape_str(y)} "
                f"differ and neither is 1"
            )
        return max(bx, by), bx == 1 and by != 1, by == 1 and bx != 1
    return x.shape[0], False, False


def batch_matmul(x: te.Tensor, y: te.Tensor, out_shape=None, out_dtype: str | None = None,
                 transpose_a: bool = False, transpose_b: bool = True) -> te.Tensor:
    """``out[b] = x[b] @ y[b].T`` (or ``x[b] @ y[b]`` with ``transpose_b=False``).

    Parameters
    ----------
    x : te.Tensor
        ``[B, M, K]`` (``[B, K, M]`` with ``transpose_a``).
    y : te.Tensor
        ``[B, N, K]`` with ``transpose_b`` (the default, like TVM), else ``[B, K, N]``.
        A batch extent of 1 on either side broadcasts.
    out_shape : tuple, optional
        Ignored, accepted for TVM compatibility.
    out_dtype : str, optional
        Output dtype (default: ``x``'s); float16 accumulates in float32 and is rounded
        once in an ``elemwise`` stage (:mod:`topi.accumulate`).
    transpose_a, transpose_b : bool
        Read the operand transposed.

    Returns
    -------
    te.Tensor
        ``[max(Bx, By), M, N]``, tagged ``batch_matmul``.

    Raises
    ------
    ValueError
        On a rank error, a batch mismatch, or differing ``K`` extents.
    """
    for name, t in (("x", x), ("y", y)):
        if len(t.shape) != 3:
            raise ValueError(f"batch_matmul: argument '{name}' must have rank 3, got shape {shape_str(t)}")
    xk, yk = (1 if transpose_a else 2), (2 if transpose_b else 1)
    kx, ky = get_const_tuple((x.shape[xk], y.shape[yk]))
    if isinstance(kx, int) and isinstance(ky, int) and kx != ky:
        raise ValueError(
            f"batch_matmul: the reduction extents of 'x' {shape_str(x)} (axis {xk}) and "
            f"'y' {shape_str(y)} (axis {yk}) differ"
        )
    B, bcast_x, bcast_y = _batch_extent(x, y)
    M = x.shape[3 - xk]
    N = y.shape[3 - yk]
    out_dtype = out_dtype or x.dtype
    acc = accumulate_dtype(out_dtype)
    k = te.reduce_axis((0, x.shape[xk]), name="k")

    def read_x(b, i, kk):
        bb = 0 if bcast_x else b
        return (x[bb, kk, i] if transpose_a else x[bb, i, kk]).astype(acc)

    def read_y(b, kk, j):
        bb = 0 if bcast_y else b
        return (y[bb, j, kk] if transpose_b else y[bb, kk, j]).astype(acc)

    out = te.compute(
        (B, M, N), lambda b, i, j: te.sum(read_x(b, i, k) * read_y(b, k, j), axis=k),
        name="T_batch_matmul", tag=tag.BATCH_MATMUL, attrs=acc_attrs(out_dtype),
    )
    return round_once(out, out_dtype)
