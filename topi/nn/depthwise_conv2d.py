"""Depthwise 2-D convolution computes (classic ``topi.nn.depthwise_conv2d_*``).

Each input channel ``c`` is convolved with its own ``multiplier`` filters;
output channel ``c * multiplier + m`` reads input channel ``c`` only::

    out[n, c*M + m, y, x] = sum_{ry, rx} PadInput[n, c, y*sh + ry*dh, x*sw + rx*dw]
                                         * kernel[c, m, ry, rx]
"""

from __future__ import annotations

from typing import NamedTuple

import te
from topi import tag
from topi.accumulate import accumulate_dtype, round_once
from topi.nn.conv2d import _mul, as_pair, conv_window, get_pad_tuple
from topi.utils import get_const_tuple


def _check(op: str, dshape, kshape, channels: int, kchannels: int) -> None:
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 4-D")
    if channels != kchannels:
        raise ValueError(f"{op}: argument kernel of shape {kshape} has {kchannels} channels, "
                         f"but data of shape {dshape} has {channels}")


def depthwise_conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype=None):
    """Depthwise conv of NCHW ``data`` with a ``[C, multiplier, KH, KW]`` kernel.

    Parameters
    ----------
    data : te.Tensor
        ``[N, C, H, W]``.
    kernel : te.Tensor
        ``[C, M, KH, KW]``.
    stride, dilation : int or (int, int)
    padding : int, tuple or str
        As in :func:`topi.nn.conv2d_nchw`.
    out_dtype : str, optional

    Returns
    -------
    te.Tensor
        ``[N, C * M, OH, OW]`` (tag ``depthwise_conv2d_nchw``).
    """
    op = "depthwise_conv2d_nchw"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    _check(op, dshape, kshape, dshape[1] if len(dshape) == 4 else -1, kshape[0] if kshape else -1)
    n, c, h, w = dshape
    _, m, kh, kw = kshape
    (sh, sw), (dh, dw), (t, l, b, r), (oh, ow), padded, ry, rx = conv_window(
        op, data, dshape, kshape, (h, w), (kh, kw), stride, padding, dilation, "NCHW")
    out_dtype = out_dtype or data.dtype
    acc = accumulate_dtype(out_dtype)  # float16 sums in float32, rounded once (topi.accumulate)
    out = te.compute(
        (n, c * m, oh, ow),
        lambda b_, f, y, x: te.sum(_mul(padded[b_, f // m, y * sh + ry * dh, x * sw + rx * dw],
                                        kernel[f // m, f % m, ry, rx], acc), axis=[ry, rx]),
        name="depthwise_conv2d_nchw", tag=tag.DEPTHWISE_CONV2D_NCHW,
        attrs={"workload": (op, dshape, kshape, (sh, sw), (t, l, b, r), (dh, dw), c, out_dtype)},
    )
    return round_once(out, out_dtype)


def depthwise_conv2d_nhwc(data, kernel, stride, padding, dilation, out_dtype=None):
    """Depthwise conv of NHWC ``data`` ``[N, H, W, C]`` with a ``[KH, KW, C, M]`` kernel.

    Returns ``[N, OH, OW, C * M]``; the other arguments are as in
    :func:`depthwise_conv2d_nchw`.
    """
    op = "depthwise_conv2d_nhwc"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    _check(op, dshape, kshape, dshape[3] if len(dshape) == 4 else -1, kshape[2] if len(kshape) > 2 else -1)
    n, h, w, c = dshape
    kh, kw, _, m = kshape
    (sh, sw), (dh, dw), (t, l, b, r), (oh, ow), padded, ry, rx = conv_window(
        op, data, dshape, kshape, (h, w), (kh, kw), stride, padding, dilation, "NHWC")
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (n, oh, ow, c * m),
        lambda b_, y, x, f: te.sum(_mul(padded[b_, y * sh + ry * dh, x * sw + rx * dw, f // m],
                                        kernel[ry, rx, f // m, f % m], out_dtype), axis=[ry, rx]),
        name="depthwise_conv2d_nhwc", tag=tag.DEPTHWISE_CONV2D_NHWC,
        attrs={"workload": (op, dshape, kshape, (sh, sw), (t, l, b, r), (dh, dw), c, out_dtype)},
    )


class Workload(NamedTuple):
    """A depthwise conv's geometry as classic TVM's x86 templates key it
    (``topi.nn.depthwise_conv2d.Workload``)."""

    in_dtype: str
    out_dtype: str
    height: int
    width: int
    in_filter: int
    out_filter: int
    kernel_h: int
    kernel_w: int
    padt: int
    padl: int
    padb: int
    padr: int
    dilation_h: int
    dilation_w: int
    stride_h: int
    stride_w: int


def _get_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout: str = "NCHW") -> Workload:
    """The classic :class:`Workload` of a depthwise conv of NCHW, NHWC or NCHW[x]c ``data`` with a
    ``[C, M, KH, KW]``, ``[KH, KW, C, M]`` or ``[C/b, M/m, KH, KW, m, b]`` kernel (see
    ``topi.x86.depthwise_conv2d._fallback_schedule``)."""
    op = "depthwise_conv2d workload"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if data_layout == "NCHW":
        (_, channels, h, w), (kc, mult, kh, kw) = dshape, kshape
    elif data_layout == "NHWC":
        (_, h, w, channels), (kh, kw, kc, mult) = dshape, kshape
    elif data_layout == "NCHWc":
        (_, cc, h, w, cb), (kcc, mc, kh, kw, mb, kb) = dshape, kshape
        if cb != kb:
            raise ValueError(f"{op}: data {dshape} is blocked by {cb} but kernel {kshape} by {kb}")
        channels, kc, mult = cc * cb, kcc * kb, mc * mb
    else:
        raise ValueError(f"{op}: data_layout={data_layout!r} is not supported; use 'NCHW', 'NHWC' or 'NCHWc'")
    dh, dw = as_pair(dilation, op, "dilation")
    sh, sw = as_pair(stride, op, "stride")
    pt, pl, pb, pr = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    return Workload(data.dtype, out_dtype, h, w, channels, kc * mult, kh, kw, pt, pl, pb, pr, dh, dw, sh, sw)
