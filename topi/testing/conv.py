"""numpy references of the convolutions (classic ``topi.testing.*_python``).

Each loops only over the kernel taps and does the channel contraction with
``einsum`` over whole images, so the references are fast enough for tests.
"""

from __future__ import annotations

import numpy as np

from topi.testing.conv_nd import conv_transpose_python


def _pads(padding, kernel) -> tuple:
    from topi.nn.conv2d import get_pad_tuple

    return get_pad_tuple(padding, kernel, "reference")


def _pair(v) -> tuple:
    return (v, v) if isinstance(v, int) else tuple(v)


def _windows(a_pad, kh, kw, stride, dilation, oh, ow):
    """Yield ``(ry, rx, a_pad[..., ry*dh :: sh, rx*dw :: sw])`` cut to ``oh x ow`` (NCHW)."""
    (sh, sw), (dh, dw) = stride, dilation
    for ry in range(kh):
        for rx in range(kw):
            y0, x0 = ry * dh, rx * dw
            yield ry, rx, a_pad[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw]


def group_conv2d_nchw_python(a_np, w_np, stride, padding, groups, dilation=1):
    """Grouped NCHW conv: ``a_np [N, IC, H, W]``, ``w_np [OC, IC // groups, KH, KW]``."""
    n, ic, h, w = a_np.shape
    oc, icg, kh, kw = w_np.shape
    stride, dilation = _pair(stride), _pair(dilation)
    dk = ((kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1)
    t, l, b, r = _pads(padding, dk)
    a_pad = np.pad(a_np, ((0, 0), (0, 0), (t, b), (l, r)))
    oh = (h + t + b - dk[0]) // stride[0] + 1
    ow = (w + l + r - dk[1]) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow), dtype=np.float64)
    ocg = oc // groups
    for ry, rx, win in _windows(a_pad, kh, kw, stride, dilation, oh, ow):
        for g in range(groups):
            out[:, g * ocg:(g + 1) * ocg] += np.einsum(
                "nchw,oc->nohw", win[:, g * icg:(g + 1) * icg], w_np[g * ocg:(g + 1) * ocg, :, ry, rx])
    return out.astype(a_np.dtype)


def conv2d_nchw_python(a_np, w_np, stride, padding, groups=1, dilation=1):
    """NCHW conv with an OIHW kernel ``[OC, IC // groups, KH, KW]`` (classic argument order:
    ``groups`` fifth; padding as in ``topi.nn.conv2d_nchw``)."""
    return group_conv2d_nchw_python(a_np, w_np, stride, padding, groups, dilation)


def conv2d_nhwc_python(a_np, w_np, stride, padding, groups=1, dilation=1):
    """NHWC conv with an HWIO kernel ``[KH, KW, IC // groups, OC]`` (``groups`` fifth, as classic TVM)."""
    out = conv2d_nchw_python(a_np.transpose(0, 3, 1, 2), w_np.transpose(3, 2, 0, 1), stride, padding, groups,
                             dilation)
    return out.transpose(0, 2, 3, 1)


def conv2d_hwcn_python(a_np, w_np, stride, padding):
    """HWCN conv with an HWIO kernel ``[KH, KW, IC, OC]``; returns ``[OH, OW, OC, N]``."""
    out = conv2d_nchw_python(a_np.transpose(3, 2, 0, 1), w_np.transpose(3, 2, 0, 1), stride, padding)
    return out.transpose(2, 3, 1, 0)


def depthwise_conv2d_python_nchw(a_np, w_np, stride, padding, dilation=1):
    """Depthwise NCHW conv with a ``[C, M, KH, KW]`` kernel; output channel ``c*M + m``."""
    c, m, kh, kw = w_np.shape
    w_g = w_np.reshape(c * m, 1, kh, kw)
    return group_conv2d_nchw_python(a_np, w_g, stride, padding, c, dilation)


def depthwise_conv2d_python_nhwc(a_np, w_np, stride, padding, dilation=1):
    """Depthwise NHWC conv with a ``[KH, KW, C, M]`` kernel."""
    out = depthwise_conv2d_python_nchw(a_np.transpose(0, 3, 1, 2), w_np.transpose(2, 3, 0, 1),
                                       stride, padding, dilation)
    return out.transpose(0, 2, 3, 1)


def depthwise_conv2d_python_nchwc(a_np, w_np, stride, padding, dilation=1):
    """Depthwise conv of blocked ``a_np [N, C/b, H, W, b]`` with a classic blocked kernel
    ``[OC/b', 1, KH, KW, 1, b']``; output channel ``o`` reads input channel ``o // (OC / C)``."""
    n, cc, h, w, cb = a_np.shape
    occ, _, kh, kw, _, ob = w_np.shape
    a = a_np.transpose(0, 1, 4, 2, 3).reshape(n, cc * cb, h, w)
    k = w_np.transpose(0, 5, 1, 4, 2, 3).reshape(occ * ob, 1, kh, kw)
    out = group_conv2d_nchw_python(a, k, stride, padding, cc * cb, dilation)
    oh, ow = out.shape[2:]
    return out.reshape(n, occ, ob, oh, ow).transpose(0, 1, 3, 4, 2)


def conv2d_transpose_nchw_python(a_np, w_np, stride, padding, output_padding=(0, 0), groups=1):
    """Transposed conv: ``a_np [N, IC, H, W]``, ``w_np [IC, OC // groups, KH, KW]`` (scatter form)."""
    return conv_transpose_python(a_np, w_np, stride, padding, output_padding, groups)


def conv1d_ncw_python(a_np, w_np, stride, padding, dilation=1):
    """1-D NCW conv with an ``[OC, IC, K]`` kernel; padding an int, a pair or a string."""
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        pads = (0, padding[0], 0, padding[1])
    else:
        pads = (padding if isinstance(padding, str) else (0, padding, 0, padding))
        if isinstance(padding, str):
            k = (w_np.shape[2] - 1) * dilation + 1
            t, _, b, _ = _pads(padding, (k, 1))
            pads = (0, t, 0, b)
    out = conv2d_nchw_python(a_np[:, :, None, :], w_np[:, :, None, :], (1, stride), pads, dilation=(1, dilation))
    return out[:, :, 0, :]


def conv2d_NCHWc_python(a_np, w_np, stride, padding, dilation=1):
    """Blocked conv: ``a_np [N, ICc, H, W, icb]``, ``w_np [OCc, ICc, KH, KW, icb, ocb]``."""
    n, icc, h, w, icb = a_np.shape
    occ, _, kh, kw, _, ocb = w_np.shape
    a = a_np.transpose(0, 1, 4, 2, 3).reshape(n, icc * icb, h, w)
    k = w_np.transpose(0, 5, 1, 4, 2, 3).reshape(occ * ocb, icc * icb, kh, kw)
    out = conv2d_nchw_python(a, k, stride, padding, dilation=dilation)
    oh, ow = out.shape[2:]
    return out.reshape(n, occ, ocb, oh, ow).transpose(0, 1, 3, 4, 2)


def group_conv1d_ncw_python(a_np, w_np, stride, padding, dilation=1, groups=1):
    """Grouped 1-D NCW conv with an ``[OC, IC // groups, K]`` kernel; padding an int, a pair or a string."""
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        pads = (0, padding[0], 0, padding[1])
    elif isinstance(padding, str):
        t, _, b, _ = _pads(padding, ((w_np.shape[2] - 1) * dilation + 1, 1))
        pads = (0, t, 0, b)
    else:
        pads = (0, padding, 0, padding)
    out = conv2d_nchw_python(a_np[:, :, None, :], w_np[:, :, None, :], (1, stride), pads, groups, (1, dilation))
    return out[:, :, 0, :]
