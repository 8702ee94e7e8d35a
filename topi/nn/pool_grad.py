"""The gradient of 2-D pooling with respect to its input (classic ``topi.nn.pool_grad``).

Each input position gathers from the windows that cover it, so no stage
scatters.  Along an axis with stride ``s`` and window ``k``, padded position
``p = h + pad_before`` lies in the windows ``o = p // s - r`` for
``r < ceil(k / s)`` with ``0 <= o < out`` and ``p - o*s < k``::

    avg: grad[n, c, h, w] = sum_{rh, rw} valid ? out_grad[n, c, oh, ow] / count(oh, ow) : 0
    max: argmax[n, c, oh, ow] = first maximum of the window, as rh*kw + rw   (stage ``pool_grad_argmax``)
         grad[n, c, h, w] = sum_{rh, rw} valid && argmax[oh, ow] == (ph - oh*sh)*kw + (pw - ow*sw)
                                         ? out_grad[n, c, oh, ow] : 0

``count`` is the forward average's divisor (taps in the padded input, or in
the input with ``count_include_pad=False``); a max window's gradient goes to
its first maximum in scan order, never to a padded tap.
"""

from __future__ import annotations

import te
from te.errors import OpError
from topi import tag
from topi.nn.max_pool_indices import _argmax
from topi.nn.pooling import _check_type, _count, _extremes, _ints, _out_size, _padding, _spatial_axes
from topi.utils import get_const_int, get_const_tuple, shape_str


def _clamp(e, n: int):
    return te.min(te.max(e, 0), n - 1)


def _window_argmax(data: te.Tensor, axes, sizes, outs, ks, ss, before) -> te.Tensor:
    """The row-major offset in its window of each window's first maximum (INT32_MAX if the
    window is all padding)."""
    rs = [te.reduce_axis((0, k), name=f"r{j}") for j, k in enumerate(ks)]
    shape = list(data.shape)
    for a, o in zip(axes, outs):
        shape[a] = o
    hi, lo = _extremes(data.dtype)
    none = te.max_value("int32")

    def body(*idx):
        src, conds, local = list(idx), [], te.const(0)
        for ax, n, k, s, pb, r in zip(axes, sizes, ks, ss, before, rs):
            pos = idx[ax] * s + r - pb
            conds += [pos >= 0, pos < n]
            src[ax] = _clamp(pos, n)
            local = local * k + r
        valid = te.all(*conds)
        tap = te.min(data[tuple(src)], te.if_then_else(valid, hi, lo))  # a padded tap loses every tie
        return _argmax((te.if_then_else(valid, local, none), tap), axis=rs)

    where, _ = te.compute(shape, body, name="pool_grad_argmax", tag=tag.POOL)
    return where


def pool_grad(grads: te.Tensor, data: te.Tensor, kernel, stride, padding, pool_type: str,
              ceil_mode: bool = False, count_include_pad: bool = True, layout: str = "NCHW") -> te.Tensor:
    """Gradient of :func:`topi.nn.pool2d` (no dilation) with respect to ``data``.

    Parameters
    ----------
    grads : te.Tensor
        The gradient of the pooled output (its shape).
    data : te.Tensor
        The forward input, in ``layout`` (any with one ``H`` and one ``W``).
    kernel, stride : (int, int)
    padding : (top, left, bottom, right) or (ph, pw)
    pool_type : {"max", "avg"}
    ceil_mode, count_include_pad : bool
        As the forward pooling.
    layout : str

    Returns
    -------
    te.Tensor
        ``data``'s shape: stage ``pool_grad`` (tag ``pool``), fed by ``pool_grad_argmax`` for max.

    Raises
    ------
    OpError
        ``grads`` does not have the pooled shape, or a bad layout/argument (naming ``pool_grad``).
    """
    op = "pool_grad"
    _check_type(op, pool_type)
    axes = _spatial_axes(op, data, layout, "HW")
    ks, ss = _ints(op, "kernel", kernel, 2), _ints(op, "stride", stride, 2)
    before, after = _padding(op, padding, 2)
    sizes = [get_const_int(data.shape[a]) for a in axes]
    outs = [_out_size(op, data, n, k, s, 1, pb, pa, ceil_mode)
            for n, k, s, pb, pa in zip(sizes, ks, ss, before, after)]
    want = list(get_const_tuple(data.shape))
    for a, o in zip(axes, outs):
        want[a] = o
    if list(get_const_tuple(grads.shape)) != want:
        raise OpError(f"pool_grad: argument 'grads' must have the pooled shape {tuple(want)}, "
                      f"got {shape_str(grads)}")
    where = _window_argmax(data, axes, sizes, outs, ks, ss, before) if pool_type == "max" else None
    lohi = [(-pb, n + pa) if count_include_pad else (0, n) for n, pb, pa in zip(sizes, before, after)]
    zero = te.const(0, grads.dtype)

    def body(*idx):
        rs = [te.reduce_axis((0, -(-k // s)), name=f"r{j}") for j, (k, s) in enumerate(zip(ks, ss))]
        src, conds, offset, count = list(idx), [], te.const(0), te.const(1)
        for ax, o_n, k, s, pb, r, (lo, hi) in zip(axes, outs, ks, ss, before, rs, lohi):
            p = idx[ax] + pb
            o = te.floordiv(p, s) - r
            conds += [o >= 0, o < o_n, p - o * s < k]
            src[ax] = _clamp(o, o_n)
            offset = offset * k + (p - o * s)
            count = count * _count(src[ax], k, s, 1, pb, lo, hi)
        g = grads[tuple(src)]
        if where is None:
            return te.sum(te.if_then_else(te.all(*conds), g / te.max(count, 1).astype(g.dtype), zero), axis=rs)
        hit = te.all(*conds, where[tuple(src)] == offset)
        return te.sum(te.if_then_else(hit, g, zero), axis=rs)

    return te.compute(data.shape, body, name="pool_grad", tag=tag.POOL)
