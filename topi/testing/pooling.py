"""Numpy references of n-D pooling and of the pooling gradient (classic names)."""

from __future__ import annotations

import numpy as np

from topi.testing.nn_ref import _out_size, _pool_nd_python


def poolnd_python(np_data, kernel, strides, dilation, padding_before, padding_after, pool_type,
                  count_include_pad=True, ceil_mode=False, dtype="float32", layout=None) -> np.ndarray:
    """Reference of ``topi.nn.pool1d/2d/3d``: the spatial axes are the ``D``/``H``/``W`` of
    ``layout`` (default: the last ``len(kernel)`` axes)."""
    n = len(kernel)
    if layout is None:
        axes = list(range(np_data.ndim - n, np_data.ndim))
    else:
        axes = [layout.index(d) for d in "DHW" if d in layout][-n:]
    out = _pool_nd_python(np_data, tuple(kernel), tuple(strides), tuple(dilation), tuple(padding_before),
                          tuple(padding_after), pool_type, ceil_mode, count_include_pad, axes)
    return out.astype(dtype) if dtype else out


def pool_grad_nchw(a_np, out_grad_np, pool_size, strides, padding, pool_type, ceil_mode,
                   count_include_pad=True) -> np.ndarray:
    """Reference of ``topi.nn.pool_grad`` (NCHW): each window's gradient spread evenly over
    its taps (avg, divided as the forward average) or given to its first maximum (max)."""
    n, c, h, w = a_np.shape
    kh, kw = pool_size
    sh, sw = strides
    pt, pl, pb, pr = padding
    oh = _out_size(h, kh, sh, 1, pt, pb, ceil_mode)
    ow = _out_size(w, kw, sw, 1, pl, pr, ceil_mode)
    grad = np.zeros((n, c, h, w), np.float64)
    for i, j in np.ndindex(oh, ow):
        y0, x0 = i * sh - pt, j * sw - pl
        ys = [y for y in range(y0, y0 + kh) if 0 <= y < h]
        xs = [x for x in range(x0, x0 + kw) if 0 <= x < w]
        if not ys or not xs:
            continue
        g = out_grad_np[:, :, i, j].astype(np.float64)
        y1, x1 = ys[-1] + 1, xs[-1] + 1
        if pool_type == "avg":
            if count_include_pad:
                count = (min(y0 + kh, h + pb) - y0) * (min(x0 + kw, w + pr) - x0)
            else:
                count = len(ys) * len(xs)
            grad[:, :, ys[0]:y1, xs[0]:x1] += (g / max(count, 1))[:, :, None, None]
        else:
            patch = a_np[:, :, ys[0]:y1, xs[0]:x1].reshape(n, c, -1)
            first = patch.argmax(axis=2)
            yy, xx = np.unravel_index(first, (len(ys), len(xs)))
            nn, cc = np.indices((n, c))
            np.add.at(grad, (nn, cc, yy + ys[0], xx + xs[0]), g)
    return grad.astype(a_np.dtype)
