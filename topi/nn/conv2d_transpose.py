"""Transposed 2-D convolution (classic ``topi.nn.conv2d_transpose_nchw``).

The gradient of a strided conv: the input is dilated by the strides, padded
by ``K - 1 - pad`` (plus ``output_padding`` at the bottom/right) in one
stage, then convolved with the spatially flipped kernel::

    data_pad[n, c, y, x] = (y - top) % sh == 0 && ... ? data[n, c, (y - top) / sh, ...] : 0
    out[n, o, y, x] += data_pad[n, c, y + ry, x + rx] * kernel[c, o, KH-1-ry, KW-1-rx]
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.conv2d import _mul, as_pair, get_pad_tuple
from topi.utils import get_const_tuple

OP = "conv2d_transpose_nchw"


def _dilate_pad(data, strides, before, after):
    """``data`` dilated by ``strides`` and padded by ``before``/``after`` (H, W) in one stage."""
    n, c, h, w = get_const_tuple(data.shape)
    (sh, sw), (pt, pl), (pb, pr) = strides, before, after
    dh, dw = (h - 1) * sh + 1, (w - 1) * sw + 1
    zero = te.const(0.0, data.dtype)

    def body(b, cc, y, x):
        yy, xx = y - pt, x - pl
        conds = [yy >= 0, yy < dh, xx >= 0, xx < dw]
        if sh > 1:
            conds.append(yy % sh == 0)
        if sw > 1:
            conds.append(xx % sw == 0)
        return te.if_then_else(te.all(*conds), data[b, cc, yy // sh, xx // sw], zero)

    return te.compute((n, c, pt + dh + pb, pl + dw + pr), body, name="data_pad", tag=tag.INJECTIVE)


def conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0)):
    """Transposed convolution of NCHW ``data`` with an ``[IC, OC, KH, KW]`` kernel.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, H, W]``.
    kernel : te.Tensor
        ``[IC, OC, KH, KW]`` (the layout of the forward conv's kernel seen from its output).
    strides : int or (int, int)
    padding : int, tuple or str
        The forward conv's padding, ``(top, left, bottom, right)`` when a 4-tuple.
    out_dtype : str, optional
    output_padding : (int, int)
        Extra rows/columns at the bottom/right (each smaller than its stride).

    Returns
    -------
    te.Tensor
        ``[N, OC, (H-1)*sh - pt - pb + KH + oph, (W-1)*sw - pl - pr + KW + opw]``.
    """
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{OP}: data {dshape} and kernel {kshape} must both be 4-D")
    n, ic, h, w = dshape
    kic, oc, kh, kw = kshape
    if kic != ic:
        raise ValueError(f"{OP}: argument kernel of shape {kshape} expects {kic} input channels, "
                         f"but data of shape {dshape} has {ic}")
    sh, sw = as_pair(strides, OP, "strides")
    oph, opw = (output_padding, output_padding) if isinstance(output_padding, int) else output_padding
    if not (0 <= oph < sh or oph == 0) or not (0 <= opw < sw or opw == 0):
        raise ValueError(f"{OP}: argument output_padding={output_padding!r} must be smaller than the strides")
    pt, pl, pb, pr = get_pad_tuple(padding, (kh, kw), OP)
    if max(pt, pb) > kh - 1 or max(pl, pr) > kw - 1:
        raise ValueError(f"{OP}: argument padding={padding!r} must not exceed kernel size - 1 "
                         f"for kernel of shape {kshape}")
    padded = _dilate_pad(data, (sh, sw), (kh - 1 - pt, kw - 1 - pl), (kh - 1 - pb + oph, kw - 1 - pr + opw))
    _, _, ph, pw = get_const_tuple(padded.shape)
    oh, ow = ph - kh + 1, pw - kw + 1
    out_dtype = out_dtype or data.dtype
    rc = te.reduce_axis((0, ic), "rc")
    ry = te.reduce_axis((0, kh), "ry")
    rx = te.reduce_axis((0, kw), "rx")
    return te.compute(
        (n, oc, oh, ow),
        lambda b, o, y, x: te.sum(_mul(padded[b, rc, y + ry, x + rx],
                                       kernel[rc, o, kh - 1 - ry, kw - 1 - rx], out_dtype), axis=[rc, ry, rx]),
        name="conv2d_transpose_nchw", tag=tag.CONV2D_TRANSPOSE,
        attrs={"workload": (OP, dshape, kshape, (sh, sw), (pt, pl, pb, pr), (oph, opw), out_dtype)},
    )
