"""numpy references of the 3-D convolutions and of the transposed convolutions over 1, 2 or 3
spatial axes (classic ``topi.testing.conv3d_*_python``, ``conv*_transpose_*_python``).

Each loops over the kernel taps only and contracts the channels with ``einsum`` over whole
volumes, in float64, returning the data's dtype.
"""

from __future__ import annotations

import numpy as np


def _pads(padding, kernel: tuple) -> tuple:
    from topi.nn.utils import get_pad_tuple_nd

    return get_pad_tuple_nd(padding, kernel, "reference")


def _tuple(v, nd: int) -> tuple:
    return (int(v),) * nd if isinstance(v, (int, np.integer)) else tuple(int(x) for x in v)


def conv3d_ncdhw_python(a_np, w_np, stride, padding, groups: int = 1, dilation=1):
    """Grouped NCDHW conv with an ``[OC, IC // groups, KD, KH, KW]`` kernel; padding as
    :func:`topi.nn.utils.get_pad_tuple3d` (of the dilated kernel)."""
    st, dil = _tuple(stride, 3), _tuple(dilation, 3)
    oc, icg, *ks = w_np.shape
    before, after = _pads(padding, tuple((k - 1) * d + 1 for k, d in zip(ks, dil)))
    data = np.pad(a_np.astype(np.float64), [(0, 0), (0, 0)] + list(zip(before, after)))
    outs = [(n - (k - 1) * d - 1) // s + 1 for n, k, s, d in zip(data.shape[2:], ks, st, dil)]
    out = np.zeros((data.shape[0], oc, *outs), dtype=np.float64)
    ocg = oc // groups
    for g in range(groups):
        x, w = data[:, g * icg:(g + 1) * icg], w_np[g * ocg:(g + 1) * ocg]
        for tap in np.ndindex(*ks):
            window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dil, outs, st))
            out[:, g * ocg:(g + 1) * ocg] += np.einsum("ncdhw,oc->nodhw", x[(Ellipsis,) + window],
                                                       w[(Ellipsis,) + tap])
    return out.astype(a_np.dtype)


def conv3d_ndhwc_python(a_np, w_np, stride, padding, groups: int = 1, dilation=1):
    """Grouped NDHWC conv with a DHWIO kernel ``[KD, KH, KW, IC // groups, OC]``."""
    out = conv3d_ncdhw_python(a_np.transpose(0, 4, 1, 2, 3), w_np.transpose(4, 3, 0, 1, 2), stride, padding,
                              groups, dilation)
    return out.transpose(0, 2, 3, 4, 1)


def conv_transpose_python(a_np, w_np, stride, padding, output_padding=0, groups: int = 1):
    """Transposed conv over the ``a_np.ndim - 2`` spatial axes in scatter form: ``a_np [N, IC, *S]``,
    ``w_np [IC, OC // groups, *K]``; padding as the forward conv's."""
    nd = a_np.ndim - 2
    st, outpad = _tuple(stride, nd), _tuple(output_padding, nd)
    ic, ocg, *ks = w_np.shape
    before, after = _pads(padding, tuple(ks))
    size = a_np.shape[2:]
    full = np.zeros((a_np.shape[0], ocg * groups, *((s - 1) * t + k + o for s, t, k, o in zip(size, st, ks, outpad))))
    icg = ic // groups
    for g in range(groups):
        a, w = a_np[:, g * icg:(g + 1) * icg], w_np[g * icg:(g + 1) * icg]
        for tap in np.ndindex(*ks):
            window = tuple(slice(k, k + (s - 1) * t + 1, t) for k, s, t in zip(tap, size, st))
            full[(slice(None), slice(g * ocg, (g + 1) * ocg)) + window] += np.einsum(
                "nc...,co->no...", a, w[(Ellipsis,) + tap])
    crop = tuple(slice(b, n - e) for b, e, n in zip(before, after, full.shape[2:]))
    return full[(slice(None), slice(None)) + crop].astype(a_np.dtype)


def conv1d_transpose_ncw_python(a_np, w_np, stride, padding, output_padding=0):
    """Transposed 1-D conv: ``a_np [N, IC, W]``, ``w_np [IC, OC, K]``."""
    return conv_transpose_python(a_np, w_np, stride, padding, output_padding)


def conv3d_transpose_ncdhw_python(a_np, w_np, stride, padding, output_padding=(0, 0, 0)):
    """Transposed 3-D conv: ``a_np [N, IC, D, H, W]``, ``w_np [IC, OC, KD, KH, KW]``."""
    return conv_transpose_python(a_np, w_np, stride, padding, output_padding)


def correlation_nchw_python(data1, data2, kernel_size: int, max_displacement: int, stride1: int, stride2: int,
                            padding, is_multiply: bool):
    """Reference of ``topi.nn.correlation_nchw``: one patch comparison per displacement, vectorized
    over the output grid."""
    ph, pw = (padding, padding) if isinstance(padding, int) else tuple(padding)
    pads = [(0, 0), (0, 0), (ph, ph), (pw, pw)]
    pad1, pad2 = np.pad(data1.astype(np.float64), pads), np.pad(data2.astype(np.float64), pads)
    n, c, h, w = data1.shape
    border = max_displacement + (kernel_size - 1) // 2
    radius = max_displacement // stride2
    size = 2 * radius + 1
    oh = (h + 2 * ph - 2 * border + stride1 - 1) // stride1
    ow = (w + 2 * pw - 2 * border + stride1 - 1) // stride1
    out = np.zeros((n, size * size, oh, ow))
    rows, cols = np.arange(oh) * stride1 + max_displacement, np.arange(ow) * stride1 + max_displacement
    for q in range(size * size):
        dy, dx = (q // size - radius) * stride2, (q % size - radius) * stride2
        for ry in range(kernel_size):
            for rx in range(kernel_size):
                a = pad1[:, :, rows[:, None] + ry, cols[None, :] + rx]
                b = pad2[:, :, rows[:, None] + ry + dy, cols[None, :] + rx + dx]
                out[:, q] += (a * b if is_multiply else np.abs(a - b)).sum(axis=1)
    return (out / (kernel_size * kernel_size * c)).astype(data1.dtype)


def _bilinear_taps(plane, y, x):
    """Bilinear samples of ``plane [C, H, W]`` at the points ``y, x`` (arrays of one shape), corners
    outside counting zero, points outside zero: ``[C, *y.shape]``."""
    c, h, w = plane.shape
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    out = np.zeros((c,) + y.shape)
    for yp, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
        for xp, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
            ok = (yp >= 0) & (yp < h) & (xp >= 0) & (xp < w)
            out += np.where(ok, wy * wx, 0.0) * plane[:, np.clip(yp, 0, h - 1), np.clip(xp, 0, w - 1)]
    inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
    return out * inside


def deformable_conv2d_nchw_python(a_np, offset_np, w_np, stride, padding, dilation, deformable_groups, groups):
    """Reference of ``topi.nn.deformable_conv2d_nchw`` (``groups`` must be 1)."""
    from topi.nn.conv2d import get_pad_tuple

    if groups != 1:
        raise ValueError("deformable_conv2d_nchw_python: groups must be 1")
    n, c, h, w = a_np.shape
    oc, _, kh, kw = w_np.shape
    oh, ow = offset_np.shape[2:]
    (sh, sw), (dh, dw) = _tuple(stride, 2), _tuple(dilation, 2)
    top, left, _, _ = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    per = c // deformable_groups
    base_y = (np.arange(oh) * sh - top)[:, None].astype(np.float64)
    base_x = (np.arange(ow) * sw - left)[None, :].astype(np.float64)
    out = np.zeros((n, oc, oh, ow))
    off = offset_np.astype(np.float64).reshape(n, deformable_groups, kh, kw, 2, oh, ow)
    data = a_np.astype(np.float64)
    for b in range(n):
        for g in range(deformable_groups):
            chans = slice(g * per, (g + 1) * per)
            for ky in range(kh):
                for kx in range(kw):
                    y = base_y + ky * dh + off[b, g, ky, kx, 0]
                    x = base_x + kx * dw + off[b, g, ky, kx, 1]
                    samples = _bilinear_taps(data[b, chans], y, x)
                    out[b] += np.einsum("chw,oc->ohw", samples, w_np[:, chans, ky, kx].astype(np.float64))
    return out.astype(a_np.dtype)


def deformable_conv2d_nhwc_python(a_np, offset_np, w_np, stride, padding, dilation, deformable_groups, groups):
    """Reference of ``topi.nn.deformable_conv2d_nhwc``: the NCHW one on transposed arrays."""
    out = deformable_conv2d_nchw_python(a_np.transpose(0, 3, 1, 2), offset_np.transpose(0, 3, 1, 2),
                                        w_np.transpose(3, 2, 0, 1), stride, padding, dilation, deformable_groups,
                                        groups)
    return out.transpose(0, 2, 3, 1)
