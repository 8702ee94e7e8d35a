"""Max pooling with the positions of the maxima (ONNX ``MaxPool`` with its ``Indices`` output).

A tuple reduction keeps (row-major index in the plane, value) of the largest
tap, the lowest index on ties (the first maximum in scan order, as onnx's
reference).  That order is total, so the window reduces one axis at a time
(as ``pool2d``: contiguous loads along the rows first), then two elementwise
stages write the outputs::

    pool_argmax_h[n, c, oh, w] = argmax_rh (h*W + w, tap(data[n, c, clamp(h), w]))
    pool_argmax[n, c, oh, ow]  = argmax_rw (pool_argmax_h[n, c, oh, clamp(w)] where w is inside)
    pool_values[...]  = pool_argmax.v1                   (0 where the window is all padding)
    pool_indices[...] = pool_argmax.v0 as storage_order  (-1 where the window is all padding)

``flat(h, w) = (n*C + c)*H*W + h*W + w`` (int64; reduced as the int32
``h*W + w``, the plane's offset added in the last stage) and a padded tap has
index INT32_MAX, so it never wins a tie against a real value equal to the pad
value (the dtype's lowest).  ``storage_order=1`` (column-major) rewrites the
index in the last stage as ``(n*C + c)*H*W + h + w*H``; ties are still
broken in row-major scan order.  A NaN in a window is not propagated (a
comparison with NaN is false), where onnx's reference keeps a leading NaN.
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.pooling import _extremes, _ints, _out_size, _padding, _spatial_axes
from topi.utils import get_const_int

INDEX_DTYPE = "int64"


def _first_max(lhs, rhs):
    (i0, v0), (i1, v1) = lhs, rhs
    take = (v1 > v0) | ((v1 == v0) & (i1 < i0))
    return te.if_then_else(take, i1, i0), te.if_then_else(take, v1, v0)


_argmax = te.comm_reducer(_first_max, lambda ti, tv: (te.max_value(ti), _extremes(tv)[1]), name="pool_argmax")


def max_pool2d_with_indices(data: te.Tensor, kernel, stride, dilation=(1, 1), padding=(0, 0),
                            ceil_mode: bool = False, storage_order: int = 0) -> tuple:
    """2-D max pooling over NCHW data that also returns where each maximum was.

    Parameters
    ----------
    data : te.Tensor
        NCHW input, any dtype with an order.
    kernel, stride, dilation : int or (int, int)
    padding : int, (ph, pw) or (top, left, bottom, right)
    ceil_mode : bool
        As :func:`topi.nn.pool2d`.
    storage_order : {0, 1}
        Indices into the flattened input in row-major (0) or column-major (1)
        order of (H, W), after ``(n*C + c)*H*W`` (ONNX ``MaxPool``).

    Returns
    -------
    (te.Tensor, te.Tensor)
        The pooled values (``data.dtype``) and their int64 indices.
    """
    op = "max_pool2d_with_indices"
    if storage_order not in (0, 1):
        raise ValueError(f"{op}: argument 'storage_order' must be 0 or 1, got {storage_order!r}")
    _spatial_axes(op, data, "NCHW", "HW")
    ks, ss, ds = (_ints(op, a, v, 2) for a, v in (("kernel", kernel), ("stride", stride), ("dilation", dilation)))
    before, after = _padding(op, padding, 2)
    N, C, H, W = (get_const_int(d) for d in data.shape)
    outs = [_out_size(op, data, n, k, s, d, pb, pa, ceil_mode)
            for n, k, s, d, pb, pa in zip((H, W), ks, ss, ds, before, after)]
    local = "int32" if H * W < 2**31 - 1 else INDEX_DTYPE  # the index inside one plane
    none = te.max_value(local)
    hi, lo = _extremes(data.dtype)
    rh = te.reduce_axis((0, ks[0]), name="rh")
    rw = te.reduce_axis((0, ks[1]), name="rw")

    def rows(n, c, oh, w):  # the window's column of taps at input column w
        h = oh * ss[0] + rh * ds[0] - before[0]
        valid = te.all(h >= 0, h < H)
        x = data[n, c, te.min(te.max(h, 0), H - 1), w]
        tap = te.min(x, te.if_then_else(valid, hi, lo))  # select-free load; a pad tap loses every tie
        return _argmax((te.if_then_else(valid, h.astype(local) * W + w.astype(local), none), tap), axis=rh)

    idx_h, val_h = te.compute((N, C, outs[0], W), rows, name="pool_argmax_h", tag=tag.POOL)

    def cols(n, c, oh, ow):
        w = ow * ss[1] + rw * ds[1] - before[1]
        valid = te.all(w >= 0, w < W)
        wc = te.min(te.max(w, 0), W - 1)
        tap = te.min(val_h[n, c, oh, wc], te.if_then_else(valid, hi, lo))
        # max(i, 0) is i; max(i, INT_MAX) is none: a select-free load
        return _argmax((te.max(idx_h[n, c, oh, wc], te.if_then_else(valid, te.const(0, local), none)), tap),
                       axis=rw)

    shape = (N, C, outs[0], outs[1])
    idx, val = te.compute(shape, cols, name="pool_argmax", tag=tag.POOL)
    lowest = _extremes(data.dtype)[1]
    # max(val, lowest) is val; an all-padding window holds lowest: max(lowest, 0) = 0 (select-free load)
    values = te.compute(shape, lambda *i: te.max(val(*i), te.if_then_else(idx(*i) == none, te.const(0, data.dtype),
                                                                          lowest)),
                        name="pool_values", tag=tag.ELEMWISE)

    def index(n, c, oh, ow):
        hw = idx(n, c, oh, ow)
        if storage_order == 1:
            hw = te.floordiv(hw, W) + (hw % W) * H
        flat = (n.astype(INDEX_DTYPE) * C + c.astype(INDEX_DTYPE)) * (H * W) + hw.astype(INDEX_DTYPE)
        return te.if_then_else(idx(n, c, oh, ow) == none, te.const(-1, INDEX_DTYPE), flat)

    indices = te.compute(shape, index, name="pool_indices", tag=tag.ELEMWISE)
    return values, indices
