"""Pooling: ``pool1d/2d/3d``, ``global_pool``, ``adaptive_pool(3d)``; ``pool_grad`` in its own file.

Windowed pooling is separable, so it is computed one spatial axis at a time,
one reduction stage per axis (``pool_h`` then ``pool_w`` for 2-D)::

    pool_h[c, oh, w]  = max_kh  tap(data[c, oh*sh + kh*dh - pt, w])
    pool_w[c, oh, ow] = max_kw  tap(pool_h[c, oh, ow*sw + kw*dw - pl])

No separate padding stage exists and no load is guarded: every read uses an
index clamped into the tensor, and a tap outside the input is replaced by
the pad value arithmetically (``min(x, valid ? +inf : dtype_min)`` for max,
``min(max(x, valid ? -inf : 0), valid ? +inf : 0)`` for sums), so a schedule
can vectorize any axis (a guarded load keeps a vector loop scalar).

Average pooling divides the window sum by the number of taps inside the
padded input (``count_include_pad=True``) or inside the input itself, in an
``elemwise`` stage ``pool_avg``.  Over integers the sums run in a wider
accumulator (int32; int64 for 32-bit and wider inputs), taps are masked by a
multiply, and the mean is truncated toward zero and cast back, as ONNX's
reference (``np.average`` stored into the integer output)::

    pool_h[c, oh, w] = sum_kh int32(data[c, clamp(..), w]) * int32(valid)
    pool_avg[...]    = uint8(pool_w[...] / count)      // C division: truncation

``ceil_mode=True`` rounds the output extent up as classic TVM; ``"inside"`` also drops a last
window that would start past the input and its leading padding (PyTorch, ONNX).
"""

from __future__ import annotations

import te
from te.errors import OpError
from topi import tag
from topi.utils import get_const_int, get_const_tuple, layout_axes, shape_str

_INF = float("inf")


# False: floor; True: ceil (classic TVM: the last window may start in the trailing padding);
# "inside": ceil, but the last window starts inside the input or its leading padding (PyTorch, ONNX)
CEIL_MODES = (False, True, "inside")


def _ints(op: str, arg: str, v, n: int) -> tuple:
    t = (v,) * n if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != n:
        raise ValueError(f"{op}: argument '{arg}' must have {n} entries, got {v!r}")
    return t


def _padding(op: str, padding, n: int) -> tuple[tuple, tuple]:
    """(before, after) per spatial axis from an int, n or 2n entries (all befores first)."""
    p = (padding,) * n if isinstance(padding, int) else tuple(int(x) for x in padding)
    if len(p) == n:
        return p, p
    if len(p) == 2 * n:
        return p[:n], p[n:]
    raise ValueError(f"{op}: argument 'padding' must have {n} or {2 * n} entries, got {padding!r}")


def _spatial_axes(op: str, data: te.Tensor, layout: str, dims: str) -> list[int]:
    axes = layout_axes(layout)
    split = [c for c in axes if c.islower() and c.upper() in dims]
    if split:
        raise OpError(f"{op}: Unsupported layout {layout}: the spatial axis {split[0].upper()!r} is split "
                      f"into {split[0]!r} blocks; pooling can tile the channel ('NCHW16c'), not {dims}")
    if len(axes) != len(data.shape) or any(axes.count(d) != 1 for d in dims):
        raise OpError(f"{op}: layout {layout!r} does not fit data of shape {shape_str(data)}")
    return [axes.index(d) for d in dims]


def _out_size(op: str, data, n: int, k: int, s: int, d: int, pb: int, pa: int, ceil_mode: bool) -> int:
    eff = (k - 1) * d + 1
    total = n + pb + pa
    if min(k, s, d) <= 0:
        raise ValueError(f"{op}: kernel, stride and dilation must be positive, got {k}, {s}, {d}")
    if total < eff:
        raise ValueError(
            f"{op}: the kernel (extent {eff} with dilation) is larger than the padded input "
            f"(extent {total}) of data {shape_str(data)}"
        )
    if ceil_mode not in CEIL_MODES:
        raise OpError(f"{op}: argument 'ceil_mode' must be one of {CEIL_MODES}, got {ceil_mode!r}")
    if not ceil_mode:
        return (total - eff) // s + 1
    out = -(-(total - eff) // s) + 1
    if ceil_mode == "inside" and (out - 1) * s >= n + pb:
        out -= 1
    return out


def _count(o, k: int, s: int, d: int, pb: int, lo: int, hi: int):
    """Taps ``o*s + r*d - pb`` (r < k) that fall in ``[lo, hi)``, as an expression of ``o``."""
    start = o * s - pb
    r_min = te.max(te.floordiv(lo - start + (d - 1), d), 0)
    r_max = te.min(te.floordiv(hi - 1 - start, d), k - 1)
    return te.max(r_max - r_min + 1, 0)


def _acc_dtype(pool_type: str, dtype: str) -> str:
    """The dtype a window is reduced in: the input's, except integer sums, which widen
    (int32; int64 from 32 bits up) so that no sum of a window wraps around."""
    if pool_type == "max" or not te.dtype.is_int(dtype):
        return dtype
    return "int32" if te.dtype.bits(dtype) < 32 else "int64"


def _tap(x, valid, pool_type: str):
    """``x`` where ``valid``, else the pad value (max: the dtype's min; sums: 0), select-free loads."""
    dtype = x.dtype
    if pool_type != "max" and te.dtype.is_int(dtype):
        # integers: a multiply by 0/1 (a clamp to the type's extremes would overflow
        # once the simplifier distributes the running sum over it)
        return x * valid.astype(dtype)
    hi, lo_all = _extremes(dtype)
    if pool_type == "max":
        return te.min(x, te.if_then_else(valid, hi, te.min_value(dtype)))
    zero = te.const(0, dtype)
    lo = te.if_then_else(valid, lo_all, zero)
    return te.min(te.max(x, lo), te.if_then_else(valid, hi, zero))


def _extremes(dtype: str) -> tuple:
    """(+inf, -inf) for floats (an infinite input passes unchanged); the type's highest and
    lowest values for integers, which have no infinity."""
    if te.dtype.is_float(dtype):
        return te.const(_INF, dtype), te.const(-_INF, dtype)
    return te.max_value(dtype), te.min_value(dtype)


def _reduce(pool_type: str, expr, axis):
    return te.max(expr, axis=axis) if pool_type == "max" else te.sum(expr, axis=axis)


def _pool_axis(x: te.Tensor, axis: int, out: int, k: int, start, valid, pool_type: str, name: str):
    """Reduce ``x`` along ``axis`` over windows ``start(o) + r`` (``r < k``) with tap mask ``valid``."""
    n = get_const_int(x.shape[axis])
    r = te.reduce_axis((0, k), name=f"r{name[-1]}")
    shape = list(x.shape)
    shape[axis] = out

    def body(*idx):
        o = idx[axis]
        pos = start(o, r)
        src = list(idx)
        src[axis] = te.min(te.max(pos, 0), n - 1)
        v = x[tuple(src)]
        acc = _acc_dtype(pool_type, v.dtype)
        v = v if acc == v.dtype else v.astype(acc)
        return _reduce(pool_type, _tap(v, valid(o, r, pos), pool_type), r)

    return te.compute(shape, body, name=name, tag=tag.POOL)


def _check_type(op: str, pool_type: str) -> None:
    if pool_type not in ("max", "avg"):
        raise ValueError(f"{op}: argument 'pool_type' must be 'max' or 'avg', got {pool_type!r}")


def _pool_nd(op, data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout, dims,
             count_include_pad):
    _check_type(op, pool_type)
    nd = len(dims)
    axes = _spatial_axes(op, data, layout, dims)
    ks, ss, ds = (_ints(op, a, v, nd) for a, v in (("kernel", kernel), ("stride", stride),
                                                     ("dilation", dilation)))
    before, after = _padding(op, padding, nd)
    sizes = [get_const_int(data.shape[a]) for a in axes]
    outs = [_out_size(op, data, *args, ceil_mode)
            for args in zip(sizes, ks, ss, ds, before, after)]
    x = data
    for j, (ax, n, o, k, s, d, pb) in enumerate(zip(axes, sizes, outs, ks, ss, ds, before)):
        x = _pool_axis(
            x, ax, o, k,
            start=lambda o_, r, s=s, d=d, pb=pb: o_ * s + r * d - pb,
            valid=lambda o_, r, pos, n=n: te.all(pos >= 0, pos < n),
            pool_type=pool_type, name=f"pool_{dims[j].lower()}",
        )
    if pool_type == "max":
        return _zero_empty_windows(x, axes, sizes, outs, ks, ss, ds, before)
    lohi = [(-pb, n + pa) if count_include_pad else (0, n)
            for n, pb, pa in zip(sizes, before, after)]

    def divisor(idx):
        c = te.const(1)
        for ax, k, s, d, pb, (lo, hi) in zip(axes, ks, ss, ds, before, lohi):
            c = c * _count(idx[ax], k, s, d, pb, lo, hi)
        return te.max(c, 1).astype(total.dtype)

    total = x
    return te.compute(total.shape, lambda *i: _cast(total[i] / divisor(i), data.dtype),
                      name="pool_avg", tag=tag.ELEMWISE)


def _zero_empty_windows(x: te.Tensor, axes, sizes, outs, ks, ss, ds, before) -> te.Tensor:
    """A max window without one input tap (all padding, or past it with ``ceil_mode``) gives 0,
    as an average of none does, rather than the dtype's lowest value; an elementwise stage
    ``pool_empty`` is added only when the output has such windows."""
    def empty(o, n, k, s, d, pb):
        return all(not 0 <= o * s + r * d - pb < n for r in range(k))

    sparse = [j for j, args in enumerate(zip(sizes, outs, ks, ss, ds, before))
              if any(empty(o, args[0], *args[2:]) for o in range(args[1]))]
    if not sparse:
        return x
    zero = te.const(0, x.dtype)

    def body(*i):
        none = te.any(*[_count(i[axes[j]], ks[j], ss[j], ds[j], before[j], 0, sizes[j]) == 0 for j in sparse])
        return te.if_then_else(none, zero, x[i])

    return te.compute(x.shape, body, name="pool_empty", tag=tag.ELEMWISE)


def _cast(e, dtype: str):
    return e if e.dtype == dtype else e.astype(dtype)


def pool2d(data: te.Tensor, kernel, stride, dilation=(1, 1), padding=(0, 0), pool_type: str = "max",
           ceil_mode: bool = False, layout: str = "NCHW", count_include_pad: bool = True) -> te.Tensor:
    """2-D max or average pooling (classic ``topi.nn.pool2d``).

    Parameters
    ----------
    data : te.Tensor
        Input in ``layout`` (any layout with one ``H`` and one ``W``: NCHW, NHWC...).
    kernel, stride, dilation : int or (int, int)
        Window extent, step and tap spacing along (H, W).
    padding : int, (ph, pw) or (top, left, bottom, right)
        Implicit padding; max pooling pads with the dtype's minimum, average with 0.
    pool_type : {"max", "avg"}
    ceil_mode : bool or "inside"
        Round the output extent up: ``True`` as classic TVM (a last window may start in the
        trailing padding; taps past it are padding), ``"inside"`` as PyTorch and ONNX (the last
        window starts inside the input or its leading padding).
    layout : str
    count_include_pad : bool
        Average: divide by the taps inside the padded input (True) or the input (False).

    Returns
    -------
    te.Tensor
        The pooled tensor (stages ``pool_h``, ``pool_w`` tagged ``pool``; ``pool_avg``).

    Raises
    ------
    ValueError
        Naming ``pool2d`` and the argument: a bad layout, padding or pool type, or a
        kernel larger than the padded input.
    """
    return _pool_nd("pool2d", data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout,
                    "HW", count_include_pad)


def pool1d(data: te.Tensor, kernel, stride, dilation=1, padding=0, pool_type: str = "max",
           ceil_mode: bool = False, layout: str = "NCW", count_include_pad: bool = True) -> te.Tensor:
    """1-D pooling along ``W``; arguments as :func:`pool2d` with one spatial axis
    (``padding`` an int, ``(p,)`` or ``(left, right)``)."""
    return _pool_nd("pool1d", data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout,
                    "W", count_include_pad)


def pool3d(data: te.Tensor, kernel, stride, dilation=(1, 1, 1), padding=(0, 0, 0), pool_type: str = "max",
           ceil_mode: bool = False, layout: str = "NCDHW", count_include_pad: bool = True) -> te.Tensor:
    """3-D pooling along ``D``, ``H``, ``W`` (NCDHW, NDHWC...); arguments as :func:`pool2d`
    with three spatial axes (``padding`` 3 or 6 entries: front, top, left, back, bottom, right)."""
    return _pool_nd("pool3d", data, kernel, stride, dilation, padding, pool_type, ceil_mode, layout,
                    "DHW", count_include_pad)


def global_pool(data: te.Tensor, pool_type: str = "max", layout: str = "NCHW") -> te.Tensor:
    """Pool each (N, C) plane over all of H and W; the output keeps H = W = 1.

    Parameters
    ----------
    data : te.Tensor
        Input in ``layout`` (NCHW, NHWC...).
    pool_type : {"max", "avg"}
    layout : str

    Returns
    -------
    te.Tensor
        ``pool_type == "max"``: the ``global_pool`` reduction (tag ``pool``);
        ``"avg"``: its sum divided by H*W (``global_pool_avg``, ``elemwise``).
    """
    _check_type("global_pool", pool_type)
    hx, wx = _spatial_axes("global_pool", data, layout, "HW")
    H, W = data.shape[hx], data.shape[wx]
    rh = te.reduce_axis((0, H), name="rh")
    rw = te.reduce_axis((0, W), name="rw")
    shape = list(data.shape)
    shape[hx] = shape[wx] = 1

    acc = _acc_dtype(pool_type, data.dtype)

    def body(*idx):
        src = list(idx)
        src[hx], src[wx] = rh, rw
        return _reduce(pool_type, _cast(data[tuple(src)], acc), [rh, rw])

    red = te.compute(shape, body, name="global_pool", tag=tag.POOL)
    if pool_type == "max":
        return red
    n = get_const_int(H) * get_const_int(W)
    area = te.const(n if te.dtype.is_int(acc) else float(n), acc)
    return te.compute(shape, lambda *i: _cast(red[i] / area, data.dtype), name="global_pool_avg",
                      tag=tag.ELEMWISE)


def _adaptive_axis(x, ax: int, n: int, out: int, pool_type: str, name: str):
    kmax = max(-(-((o + 1) * n) // out) - (o * n) // out for o in range(out))

    def start(o, r):
        return te.floordiv(o * n, out) + r

    def valid(o, r, pos):
        return pos < te.floordiv((o + 1) * n + out - 1, out)

    return _pool_axis(x, ax, out, kmax, start, valid, pool_type, name)


def adaptive_pool(data: te.Tensor, output_size, pool_type: str = "max", layout: str = "NCHW") -> te.Tensor:
    """Adaptive pooling to ``output_size`` (PyTorch ``adaptive_{max,avg}_pool2d``).

    Output cell ``o`` of an axis of extent ``n`` covers
    ``[floor(o*n/out), ceil((o+1)*n/out))``.

    Parameters
    ----------
    data : te.Tensor
    output_size : int or tuple
        One entry per spatial axis of ``layout`` (``H``, ``W``; or ``W`` alone for NCW).
    pool_type : {"max", "avg"}
    layout : str
        NCHW, NHWC, NCW...
    """
    _check_type("adaptive_pool", pool_type)
    dims = "".join(d for d in "DHW" if d in layout)
    axes = _spatial_axes("adaptive_pool", data, layout, dims)
    outs = _ints("adaptive_pool", "output_size", output_size, len(axes))
    sizes = [get_const_int(data.shape[a]) for a in axes]
    if min(outs) <= 0:
        raise ValueError(f"adaptive_pool: argument 'output_size' must be positive, got {output_size!r}")
    x = data
    for ax, n, o, d in zip(axes, sizes, outs, dims):
        x = _adaptive_axis(x, ax, n, o, pool_type, f"adaptive_pool_{d.lower()}")
    if pool_type == "max":
        return x

    def divisor(idx):
        c = te.const(1)
        for ax, n, o in zip(axes, sizes, outs):
            c = c * (te.floordiv((idx[ax] + 1) * n + o - 1, o) - te.floordiv(idx[ax] * n, o))
        return c.astype(total.dtype)

    total = x
    return te.compute(get_const_tuple(total.shape), lambda *i: _cast(total[i] / divisor(i), data.dtype),
                      name="adaptive_pool_avg", tag=tag.ELEMWISE)


def adaptive_pool3d(data: te.Tensor, output_size, pool_type: str = "max", layout: str = "NCDHW") -> te.Tensor:
    """Adaptive pooling over ``D``, ``H``, ``W`` (classic ``topi.nn.adaptive_pool3d``): as
    :func:`adaptive_pool`, whose layout names the spatial axes."""
    if any(d not in layout for d in "DHW"):
        raise OpError(f"adaptive_pool3d: layout {layout!r} must hold D, H and W")
    return adaptive_pool(data, output_size, pool_type, layout)
