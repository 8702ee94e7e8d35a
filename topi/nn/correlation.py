"""Correlation of two feature maps (FlowNet's correlation layer; classic ``topi.nn.correlation_nchw``).

Output channel ``q`` is one displacement ``(dy, dx)`` of a ``D x D`` grid (``D = 2 *
(max_displacement // stride2) + 1``); each output point compares a ``K x K`` patch of ``data1``
with the displaced patch of ``data2`` over all channels, normalised by ``K * K * C``::

    y1 = i*stride1 + max_displacement          y2 = y1 + (q // D - r) * stride2
    x1 = j*stride1 + max_displacement          x2 = x1 + (q %  D - r) * stride2
    out[n, q, i, j] = sum_{c, ry, rx} f(pad1[n, c, y1 + ry, x1 + rx], pad2[n, c, y2 + ry, x2 + rx]) / (K*K*C)

with ``f`` the product (``is_multiply``) or the absolute difference.
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.pad import pad
from topi.utils import get_const_tuple


def correlation_nchw(data1, data2, kernel_size: int, max_displacement: int, stride1: int, stride2: int,
                     padding, is_multiply: bool):
    """Correlation of NCHW ``data1`` and ``data2`` (same shape).

    Parameters
    ----------
    data1, data2 : te.Tensor
        ``[N, C, H, W]``.
    kernel_size : int
        The patch size ``K`` (odd).
    max_displacement, stride1, stride2 : int
        The largest displacement, the stride over ``data1``, the stride of the displacements.
    padding : int or (int, int)
        Zero padding of both inputs, on every side or ``(H, W)``.
    is_multiply : bool
        Compare by product, else by absolute difference.

    Returns
    -------
    te.Tensor
        ``[N, D*D, OH, OW]``.
    """
    op = "correlation_nchw"
    shape1, shape2 = get_const_tuple(data1.shape), get_const_tuple(data2.shape)
    if len(shape1) != 4 or shape1 != shape2:
        raise ValueError(f"{op}: data1 {shape1} and data2 {shape2} must be 4-D tensors of one shape")
    if kernel_size < 1 or kernel_size % 2 == 0 or min(stride1, stride2) < 1 or max_displacement < 0:
        raise ValueError(f"{op}: kernel_size={kernel_size} must be odd and positive, strides ({stride1}, {stride2}) "
                         f"positive and max_displacement={max_displacement} non-negative")
    ph, pw = (padding, padding) if isinstance(padding, int) else tuple(padding)
    pad1 = pad(data1, (0, 0, ph, pw), (0, 0, ph, pw), name="padded_data1")
    pad2 = pad(data2, (0, 0, ph, pw), (0, 0, ph, pw), name="padded_data2")
    n, c, h, w = shape1
    border = max_displacement + (kernel_size - 1) // 2
    radius = max_displacement // stride2
    size = 2 * radius + 1
    oh = (h + 2 * ph - 2 * border + stride1 - 1) // stride1
    ow = (w + 2 * pw - 2 * border + stride1 - 1) // stride1
    if oh < 1 or ow < 1:
        raise ValueError(f"{op}: a border of {border} (max_displacement + kernel radius) leaves no output of "
                         f"data {shape1} padded by {(ph, pw)}")
    rc = te.reduce_axis((0, c), "rc")
    ry, rx = te.reduce_axis((0, kernel_size), "ry"), te.reduce_axis((0, kernel_size), "rx")

    def body(b, q, i, j):
        y1, x1 = i * stride1 + max_displacement, j * stride1 + max_displacement
        y2, x2 = y1 + (q // size - radius) * stride2, x1 + (q % size - radius) * stride2
        a, v = pad1[b, rc, y1 + ry, x1 + rx], pad2[b, rc, y2 + ry, x2 + rx]
        return te.sum(a * v if is_multiply else te.abs(a - v), axis=[rc, ry, rx])

    corr = te.compute((n, size * size, oh, ow), body, name="correlation", tag=op)
    scale = te.const(1.0 / (kernel_size * kernel_size * c), data1.dtype)
    return te.compute(corr.shape, lambda b, q, i, j: corr[b, q, i, j] * scale, name="correlation_norm",
                      tag=tag.ELEMWISE)
