"""Numpy references of the topi.nn operators (classic ``*_python`` names)."""

from __future__ import annotations

import numpy as np


def dense_python(data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """``data @ weight.T (+ bias)``."""
    out = data @ weight.T
    return out + bias if bias is not None else out


def batch_matmul_python(x: np.ndarray, y: np.ndarray, transpose_a: bool = False,
                        transpose_b: bool = True) -> np.ndarray:
    """``x @ y^T`` per batch (``transpose_b=False``: ``x @ y``), batch 1 broadcasting."""
    a = np.swapaxes(x, 1, 2) if transpose_a else x
    b = np.swapaxes(y, 1, 2) if transpose_b else y
    return np.matmul(a, b)


def batch_matmul(x: np.ndarray, y: np.ndarray, out_dtype: str | None = None, trans_x: bool = False,
                 trans_y: bool = True) -> np.ndarray:
    """Classic ``topi.testing.batch_matmul``: :func:`batch_matmul_python` accumulated in ``out_dtype``
    (default: ``x``'s dtype), so that int8 operands give exact int32 sums."""
    out_dtype = out_dtype or x.dtype
    return batch_matmul_python(x.astype(out_dtype), y.astype(out_dtype), trans_x, trans_y).astype(out_dtype)


def _pad_value(pool_type: str, dtype):
    if pool_type == "max":
        return np.finfo(dtype).min if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min
    return 0


def _out_size(n, k, s, d, pb, pa, ceil_mode):
    eff = (k - 1) * d + 1
    if not ceil_mode:
        return (n + pb + pa - eff) // s + 1
    out = -(-(n + pb + pa - eff) // s) + 1
    return out - 1 if ceil_mode == "inside" and (out - 1) * s >= n + pb else out


def _pool_nd_python(data, kernel, stride, dilation, before, after, pool_type, ceil_mode,
                    count_include_pad, axes):
    """Loop over output windows of the spatial ``axes`` (a direct, slow reference)."""
    sizes = [data.shape[a] for a in axes]
    outs = [_out_size(*a, ceil_mode) for a in zip(sizes, kernel, stride, dilation, before, after)]
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - (n + pb + pa))
             for o, s, k, d, n, pb, pa in zip(outs, stride, kernel, dilation, sizes, before, after)]
    pw = [(0, 0)] * data.ndim
    for a, pb, pa, e in zip(axes, before, after, extra):
        pw[a] = (pb, pa + e)
    padded = np.pad(data, pw, constant_values=_pad_value(pool_type, data.dtype))
    valid = np.pad(np.ones(data.shape, bool), pw, constant_values=False)
    in_pad = np.ones(padded.shape, bool)  # inside the declared padding (not the ceil extra)
    for a, n, pb, pa in zip(axes, sizes, before, after):
        keep = np.arange(padded.shape[a]) < n + pb + pa
        in_pad &= keep.reshape([-1 if d == a else 1 for d in range(data.ndim)])
    shape = list(data.shape)
    for a, o in zip(axes, outs):
        shape[a] = o
    out = np.zeros(shape, data.dtype)
    for oidx in np.ndindex(*outs):
        sl = [slice(None)] * data.ndim
        for a, o, s, k, d in zip(axes, oidx, stride, kernel, dilation):
            sl[a] = slice(o * s, o * s + (k - 1) * d + 1, d)
        win = padded[tuple(sl)]
        red = tuple(axes)
        dst = [slice(None)] * data.ndim
        for a, o in zip(axes, oidx):
            dst[a] = o
        if pool_type == "max":  # a window without an input tap gives 0
            out[tuple(dst)] = np.where(valid[tuple(sl)].any(axis=red), win.max(axis=red), 0)
        else:
            cnt = (in_pad if count_include_pad else valid)[tuple(sl)].sum(axis=red)
            out[tuple(dst)] = win.sum(axis=red) / np.maximum(cnt, 1)
    return out


def max_pool2d_with_indices_python(data, kernel, stride, dilation=(1, 1), padding=(0, 0),
                                   ceil_mode=False, storage_order=0) -> tuple:
    """Reference of ``topi.nn.max_pool2d_with_indices`` (NCHW): the values and the int64
    flat indices of the first maximum of each window in scan order, as onnx's reference
    (a window of padding only gives 0 and -1)."""
    two = lambda v: (v, v) if np.isscalar(v) else tuple(v)
    (kh, kw), (sh, sw), (dh, dw) = two(kernel), two(stride), two(dilation)
    (pt, pl), (pb, pr) = _pads(padding, 2)
    N, C, H, W = data.shape
    oh = _out_size(H, kh, sh, dh, pt, pb, ceil_mode)
    ow = _out_size(W, kw, sw, dw, pl, pr, ceil_mode)
    values = np.zeros((N, C, oh, ow), data.dtype)
    indices = np.full((N, C, oh, ow), -1, np.int64)
    for n, c, y, x in np.ndindex(N, C, oh, ow):
        best = None
        for h in range(y * sh - pt, y * sh - pt + kh * dh, dh):
            for w in range(x * sw - pl, x * sw - pl + kw * dw, dw):
                if 0 <= h < H and 0 <= w < W and (best is None or data[n, c, h, w] > best[0]):
                    best = (data[n, c, h, w], h, w)
        if best is not None:
            v, h, w = best
            base = (n * C + c) * H * W
            values[n, c, y, x] = v
            indices[n, c, y, x] = base + (h * W + w if storage_order == 0 else h + w * H)
    return values, indices


def _pads(padding, n):
    p = (padding,) * n if np.isscalar(padding) else tuple(padding)
    return (p, p) if len(p) == n else (p[:n], p[n:])


def pool2d_python(data, kernel, stride, dilation=(1, 1), padding=(0, 0), pool_type="max",
                  ceil_mode=False, layout="NCHW", count_include_pad=True) -> np.ndarray:
    """Reference of ``topi.nn.pool2d`` (same arguments, numpy arrays)."""
    before, after = _pads(padding, 2)
    axes = [layout.index("H"), layout.index("W")]
    two = lambda v: (v, v) if np.isscalar(v) else tuple(v)
    return _pool_nd_python(data, two(kernel), two(stride), two(dilation), before, after,
                           pool_type, ceil_mode, count_include_pad, axes)


def pool1d_python(data, kernel, stride, dilation=1, padding=0, pool_type="max", ceil_mode=False,
                  layout="NCW", count_include_pad=True) -> np.ndarray:
    """Reference of ``topi.nn.pool1d``."""
    before, after = _pads(padding, 1)
    one = lambda v: (v,) if np.isscalar(v) else tuple(v)
    return _pool_nd_python(data, one(kernel), one(stride), one(dilation), before, after,
                           pool_type, ceil_mode, count_include_pad, [layout.index("W")])


def global_pool_python(data, pool_type="max", layout="NCHW") -> np.ndarray:
    """Max or mean over H and W, keeping them as extent-1 axes."""
    axes = (layout.index("H"), layout.index("W"))
    if pool_type == "max":
        return data.max(axis=axes, keepdims=True)
    return data.mean(axis=axes, keepdims=True, dtype=np.float64).astype(data.dtype)


def adaptive_pool_python(data, output_size, pool_type="max", layout="NCHW") -> np.ndarray:
    """Windows ``[floor(o*n/out), ceil((o+1)*n/out))`` per spatial axis."""
    axes = [layout.index(d) for d in "DHW" if d in layout]
    outs = (output_size,) * len(axes) if np.isscalar(output_size) else tuple(output_size)
    shape = list(data.shape)
    for a, o in zip(axes, outs):
        shape[a] = o
    out = np.zeros(shape, data.dtype)
    for oidx in np.ndindex(*outs):
        sl = [slice(None)] * data.ndim
        dst = [slice(None)] * data.ndim
        for a, o, m in zip(axes, oidx, outs):
            n = data.shape[a]
            sl[a] = slice(o * n // m, -(-((o + 1) * n) // m))
            dst[a] = o
        win = data[tuple(sl)]
        out[tuple(dst)] = win.max(axis=tuple(axes)) if pool_type == "max" else win.mean(axis=tuple(axes))
    return out


def softmax_python(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable softmax along ``axis``."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_python(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Stable log-softmax along ``axis``."""
    m = x - x.max(axis=axis, keepdims=True)
    return m - np.log(np.exp(m).sum(axis=axis, keepdims=True))


def batch_norm_python(data, gamma, beta, moving_mean, moving_var, axis=1, epsilon=1e-5,
                      center=True, scale=True, training=False, momentum=0.1) -> list:
    """``[out, moving_mean, moving_var]`` of batch norm: in inference by the moving statistics
    (returned unchanged), in training by the batch's (the moving ones updated by ``momentum``)."""
    shape = [1] * data.ndim
    shape[axis] = -1
    r = lambda v: v.reshape(shape)
    if training:
        others = tuple(d for d in range(data.ndim) if d != axis)
        mean, var = np.mean(data, axis=others), np.var(data, axis=others)
    else:
        mean, var = moving_mean, moving_var
    out = (data - r(mean)) / np.sqrt(r(var) + epsilon)
    if scale:
        out = out * r(gamma)
    if center:
        out = out + r(beta)
    if training:
        return [out.astype(data.dtype), (1 - momentum) * moving_mean + momentum * mean,
                (1 - momentum) * moving_var + momentum * var]
    return [out.astype(data.dtype), moving_mean, moving_var]


def lrn_python(data, size, axis=1, bias=2.0, alpha=1e-4, beta=0.75) -> np.ndarray:
    """Across-channel LRN, window ``[c - (size-1)//2, c + size//2]`` (classic argument order:
    ``bias`` before ``alpha`` and ``beta``, unlike ``topi.nn.lrn``'s)."""
    sq = np.moveaxis(data.astype(np.float64) ** 2, axis, 0)
    n = sq.shape[0]
    acc = np.zeros_like(sq)
    lo = (size - 1) // 2
    for c in range(n):
        acc[c] = sq[max(0, c - lo):min(n, c + size - lo)].sum(axis=0)
    acc = np.moveaxis(acc, 0, axis)
    return (data / (bias + alpha / size * acc) ** beta).astype(data.dtype)
