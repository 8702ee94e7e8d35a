"""Deformable 2-D convolution (Dai et al.; classic ``topi.nn.deformable_conv2d_nchw`` / ``_nhwc``).

Every kernel tap of every output point reads the input at a learned fractional offset: the
input channels are split into ``deformable_groups``, each with its own ``(dy, dx)`` per tap and
output point in ``offset``.  A first stage samples the input bilinearly at those points (a corner
outside the image contributes zero, a point outside the image is zero); the conv then contracts
the samples with the kernel (NCHW shown)::

    y' = y*sh - pad_top + kh*dh + offset[n, g(c)*KH*KW*2 + (kh*KW + kw)*2,     y, x]
    x' = x*sw - pad_left + kw*dw + offset[n, g(c)*KH*KW*2 + (kh*KW + kw)*2 + 1, y, x]
    data_deform[n, c, kh, kw, y, x] = bilinear(data[n, c], y', x')
    out[n, f, y, x] = sum_{c, kh, kw} data_deform[n, c, kh, kw, y, x] * kernel[f, c, kh, kw]
"""

from __future__ import annotations

import te
from topi.nn.conv2d import _mul, as_pair, get_pad_tuple
from topi.utils import get_const_tuple


def _bilinear(read, y, x, height: int, width: int, dtype: str):
    """``read(yy, xx)`` interpolated at the fractional point ``(y, x)``; corners outside the
    ``height x width`` image count zero, and so does a point outside it."""
    zero = te.const(0.0, dtype)
    y0, x0 = te.floor(y).astype("int32"), te.floor(x).astype("int32")
    wy1, wx1 = y - y0.astype(dtype), x - x0.astype(dtype)
    one = te.const(1.0, dtype)
    val = None
    for wx, xp in ((one - wx1, x0), (wx1, x0 + 1)):
        for wy, yp in ((one - wy1, y0), (wy1, y0 + 1)):
            inside = te.all(yp >= 0, yp < height, xp >= 0, xp < width)
            term = te.if_then_else(inside, wx * wy * read(yp, xp), zero)
            val = term if val is None else val + term
    outside = te.any(y < te.const(0.0, dtype), x < te.const(0.0, dtype), y >= te.const(float(height), dtype),
                     x >= te.const(float(width), dtype))
    return te.if_then_else(outside, zero, val)


def _deformable(op, data, offset, kernel, strides, padding, dilation, deformable_groups, groups, out_dtype,
                layout: str):
    dshape, oshape, kshape = (get_const_tuple(t.shape) for t in (data, offset, kernel))
    if len(dshape) != 4 or len(oshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape}, offset {oshape} and kernel {kshape} must all be 4-D")
    if groups != 1:
        raise ValueError(f"{op}: argument groups={groups}: grouped deformable convolution is not supported")
    nchw = layout == "NCHW"
    n, c, h, w = dshape if nchw else (dshape[0], dshape[3], dshape[1], dshape[2])
    oc, kc, kh, kw = kshape if nchw else (kshape[3], kshape[2], kshape[0], kshape[1])
    oh, ow, ochan = (oshape[2], oshape[3], oshape[1]) if nchw else oshape[1:]
    if kc != c:
        raise ValueError(f"{op}: argument kernel of shape {kshape} expects {kc} input channels, but data of "
                         f"shape {dshape} has {c}")
    if deformable_groups < 1 or c % deformable_groups or ochan != deformable_groups * kh * kw * 2:
        raise ValueError(f"{op}: argument offset of shape {oshape} must hold deformable_groups * KH * KW * 2 = "
                         f"{deformable_groups * kh * kw * 2} channels, and deformable_groups={deformable_groups} "
                         f"must divide the {c} input channels")
    (sh, sw), (dh, dw) = as_pair(strides, op, "strides"), as_pair(dilation, op, "dilation")
    top, left, _, _ = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    per_group, dtype = c // deformable_groups, data.dtype

    def off(b, ch, y, x):
        return offset[b, ch, y, x] if nchw else offset[b, y, x, ch]

    def sample(b, ch, ky, kx, y, x):
        first = ch // per_group * (kh * kw * 2) + (ky * kw + kx) * 2
        yy = (y * sh - top + ky * dh).astype(dtype) + off(b, first, y, x)
        xx = (x * sw - left + kx * dw).astype(dtype) + off(b, first + 1, y, x)
        read = (lambda py, px: data[b, ch, py, px]) if nchw else (lambda py, px: data[b, py, px, ch])
        return _bilinear(read, yy, xx, h, w, dtype)

    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    if nchw:
        deform = te.compute((n, c, kh, kw, oh, ow), sample, name="data_deform", tag="data_deform")
        return te.compute((n, oc, oh, ow), lambda b, f, y, x: te.sum(
            _mul(deform[b, rc, ry, rx, y, x], kernel[f, rc, ry, rx], out_dtype), axis=[rc, ry, rx]), name=op, tag=op)
    deform = te.compute((n, oh, ow, kh, kw, c), lambda b, y, x, ky, kx, ch: sample(b, ch, ky, kx, y, x),
                        name="data_deform", tag="data_deform")
    return te.compute((n, oh, ow, oc), lambda b, y, x, f: te.sum(
        _mul(deform[b, y, x, ry, rx, rc], kernel[ry, rx, rc, f], out_dtype), axis=[ry, rx, rc]), name=op, tag=op)


def deformable_conv2d_nchw(data, offset, kernel, strides, padding, dilation, deformable_groups: int,
                           groups: int, out_dtype=None):
    """Deformable conv of NCHW ``data`` with ``offset`` ``[N, DG*KH*KW*2, OH, OW]`` and an OIHW kernel.

    Parameters
    ----------
    data : te.Tensor
        ``[N, C, H, W]``.
    offset : te.Tensor
        ``[N, deformable_groups * KH * KW * 2, OH, OW]``: ``(dy, dx)`` per group, tap and output point.
    kernel : te.Tensor
        ``[OC, C, KH, KW]``.
    strides, padding, dilation
        As in :func:`topi.nn.conv2d_nchw` (the offset's spatial shape is the output's).
    deformable_groups : int
        Groups of input channels sharing offsets; it must divide C.
    groups : int
        Must be 1.
    out_dtype : str, optional

    Returns
    -------
    te.Tensor
        ``[N, OC, OH, OW]``.
    """
    return _deformable("deformable_conv2d_nchw", data, offset, kernel, strides, padding, dilation,
                       deformable_groups, groups, out_dtype or data.dtype, "NCHW")


def deformable_conv2d_nhwc(data, offset, kernel, strides, padding, dilation, deformable_groups: int,
                           groups: int, out_dtype=None):
    """Deformable conv of NHWC ``data`` with ``offset`` ``[N, OH, OW, DG*KH*KW*2]`` and an HWIO kernel;
    returns ``[N, OH, OW, OC]`` (see :func:`deformable_conv2d_nchw`)."""
    return _deformable("deformable_conv2d_nhwc", data, offset, kernel, strides, padding, dilation,
                       deformable_groups, groups, out_dtype or data.dtype, "NHWC")
