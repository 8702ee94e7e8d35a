"""Dense (fully connected) layers and plain matrix products.

``dense`` follows classic TVM: ``out[i, j] = sum_k data[i, k] * weight[j, k]``
(the weight is stored ``[units, in_features]``, as in ONNX ``Gemm`` with
``transB=1`` and in PyTorch's ``Linear``).  The bias add is its own
``broadcast`` stage, so a schedule can inline it into the copy-out of the
product (and fuse a following ``relu``).
"""

from __future__ import annotations

import te
from topi import tag
from topi.accumulate import acc_attrs, accumulate_dtype, round_once
from topi.utils import get_const_tuple, shape_str


def _check_rank(op: str, arg: str, t: te.Tensor, rank: int) -> None:
    if len(t.shape) != rank:
        raise ValueError(f"{op}: argument '{arg}' must have rank {rank}, got shape {shape_str(t)}")


def _same_extent(a, b) -> bool:
    a, b = get_const_tuple((a, b))
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b or str(te.simplify(a - b)) == "0"


def _check_k(op: str, a_name: str, a, ak, b_name: str, b, bk) -> None:
    if not _same_extent(a.shape[ak], b.shape[bk]):
        raise ValueError(
            f"{op}: the reduction extents of '{a_name}' {shape_str(a)} (axis {ak}) and "
            f"'{b_name}' {shape_str(b)} (axis {bk}) differ"
        )


def add_bias(out: te.Tensor, bias: te.Tensor, op: str = "dense") -> te.Tensor:
    """``out[i, j] + bias[j]`` as a ``broadcast`` stage (named ``T_add_bias``)."""
    _check_rank(op, "bias", bias, 1)
    if not _same_extent(bias.shape[0], out.shape[1]):
        raise ValueError(
            f"{op}: argument 'bias' {shape_str(bias)} must have one entry per output unit "
            f"(output shape {shape_str(out)})"
        )
    b = bias
    return te.compute(
        out.shape, lambda i, j: out[i, j] + b[j].astype(out.dtype), name="T_add_bias", tag=tag.BROADCAST
    )


def dense(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None = None,
          out_dtype: str | None = None) -> te.Tensor:
    """``out = data @ weight.T (+ bias)``.

    Parameters
    ----------
    data : te.Tensor
        ``[M, K]`` input rows.
    weight : te.Tensor
        ``[N, K]`` weight (one row per output unit).
    bias : te.Tensor, optional
        ``[N]``; added in a separate ``broadcast`` stage.
    out_dtype : str, optional
        Output dtype (default: the data's); float16 accumulates in float32 and is
        rounded once (:mod:`topi.accumulate`), any other dtype accumulates in itself.

    Returns
    -------
    te.Tensor
        ``[M, N]``; the product stage is tagged ``dense``.

    Raises
    ------
    ValueError
        On a rank error or when the ``K`` extents of data and weight differ.
    """
    _check_rank("dense", "data", data, 2)
    _check_rank("dense", "weight", weight, 2)
    _check_k("dense", "data", data, 1, "weight", weight, 1)
    out_dtype = out_dtype or data.dtype
    acc = accumulate_dtype(out_dtype)
    M, K = data.shape
    N = weight.shape[0]
    k = te.reduce_axis((0, K), name="k")
    out = te.compute(
        (M, N),
        lambda i, j: te.sum(data[i, k].astype(acc) * weight[j, k].astype(acc), axis=k),
        name="T_dense", tag=tag.DENSE, attrs=acc_attrs(out_dtype),
    )
    out = round_once(out, out_dtype)
    return add_bias(out, bias) if bias is not None else out


def matmul(a: te.Tensor, b: te.Tensor, transpose_a: bool = False, transpose_b: bool = False,
           bias: te.Tensor | None = None, out_dtype: str | None = None) -> te.Tensor:
    """``op(a) @ op(b)`` where ``op`` transposes when asked (classic ``nn.matmul``).

    Parameters
    ----------
    a : te.Tensor
        ``[M, K]`` (``[K, M]`` with ``transpose_a``).
    b : te.Tensor
        ``[K, N]`` (``[N, K]`` with ``transpose_b``).
    transpose_a, transpose_b : bool
        Read the operand transposed.
    bias : te.Tensor, optional
        ``[N]``, added in a ``broadcast`` stage.
    out_dtype : str, optional
        Output dtype (default: ``a``'s); float16 accumulates in float32 (see :func:`dense`).

    Returns
    -------
    te.Tensor
        ``[M, N]``, tagged ``dense`` (``matmul(a, b, transpose_b=True)`` is ``dense``).
    """
    _check_rank("matmul", "a", a, 2)
    _check_rank("matmul", "b", b, 2)
    ak, bk = (0 if transpose_a else 1), (1 if transpose_b else 0)
    _check_k("matmul", "a", a, ak, "b", b, bk)
    out_dtype = out_dtype or a.dtype
    acc = accumulate_dtype(out_dtype)
    M = a.shape[1 - ak]
    N = b.shape[1 - bk]
    k = te.reduce_axis((0, a.shape[ak]), name="k")

    def read_a(i, kk):
        return (a[kk, i] if transpose_a else a[i, kk]).astype(acc)

    def read_b(kk, j):
        return (b[j, kk] if transpose_b else b[kk, j]).astype(acc)

    out = te.compute((M, N), lambda i, j: te.sum(read_a(i, k) * read_b(k, j), axis=k),
                     name="T_matmul", tag=tag.DENSE, attrs=acc_attrs(out_dtype))
    out = round_once(out, out_dtype)
    return add_bias(out, bias, "matmul") if bias is not None else out
