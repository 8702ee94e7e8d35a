"""Local response normalisation across channels (Caffe / ONNX ``LRN``)."""

from __future__ import annotations

import te
from topi import tag
from topi.utils import check_axis, get_const_int


def lrn(data: te.Tensor, size: int, axis: int = 1, alpha: float = 1e-4, beta: float = 0.75,
        bias: float = 2.0) -> te.Tensor:
    """``data / (bias + alpha / size * sum_{window} data^2) ** beta``.

    The window along ``axis`` covers channels ``[c - (size-1)//2, c + size//2]``
    clipped to the tensor, as ONNX and Caffe define it.

    Parameters
    ----------
    data : te.Tensor
        Input (typically NCHW).
    size : int
        Window extent along ``axis`` (positive).
    axis : int
        Channel axis.
    alpha, beta, bias : float
        Scale (divided by ``size``), exponent and offset.

    Returns
    -------
    te.Tensor
        Stages ``T_lrn_sqsum`` (a reduction) and ``T_lrn`` (``elemwise``).
    """
    axis = check_axis("lrn", axis, len(data.shape))
    if size <= 0:
        raise ValueError(f"lrn: argument 'size' must be positive, got {size}")
    n = get_const_int(data.shape[axis])
    lo = (size - 1) // 2
    r = te.reduce_axis((0, size), name="r")

    def sqsum(*i):
        c = i[axis] + r - lo
        src = list(i)
        src[axis] = te.min(te.max(c, 0), n - 1)
        v = data[tuple(src)]
        inside = te.all(c >= 0, c < n)
        return te.sum(v * v * te.if_then_else(inside, te.const(1, data.dtype), te.const(0, data.dtype)), axis=r)

    sq = te.compute(data.shape, sqsum, name="T_lrn_sqsum", tag=tag.COMM_REDUCE)
    a = te.const(float(alpha) / size, data.dtype)
    b = te.const(float(beta), data.dtype)
    k = te.const(float(bias), data.dtype)
    return te.compute(data.shape, lambda *i: data[i] / te.power(k + a * sq[i], b),
                      name="T_lrn", tag=tag.ELEMWISE)
