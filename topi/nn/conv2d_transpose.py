"""Transposed convolutions over 1, 2 or 3 spatial axes, grouped (classic
``topi.nn.conv1d_transpose_ncw``, ``conv2d_transpose_nchw``, ``group_conv2d_transpose_nchw``,
``conv3d_transpose_ncdhw``).

The gradient of a strided conv: the input is dilated by the strides, padded
by ``K - 1 - pad`` (plus ``output_padding`` at the end) in one stage, then
convolved with the spatially flipped kernel (2-D shown)::

    data_pad[n, c, y, x] = (y - top) % sh == 0 && ... ? data[n, c, (y - top) / sh, ...] : 0
    out[n, o, y, x] += data_pad[n, g(o)*ICg + c, y + ry, x + rx] * kernel[g(o)*ICg + c, o % OCg, KH-1-ry, KW-1-rx]

with ``g(o) = o // OCg``, ``ICg = IC / groups`` and ``OCg = OC / groups`` (the kernel is
``[IC, OC / groups, *K]``).
"""

from __future__ import annotations

import inspect

import te
from topi import tag
from topi.nn.conv2d import _mul
from topi.nn.utils import get_pad_tuple_nd
from topi.utils import get_const_tuple

OP = "conv2d_transpose_nchw"
_AXES = ("z", "y", "x")


def _named(fn, *names: str):
    """``fn`` (taking ``*idx``) with positional parameters ``names``: the axis names of its compute."""
    fn.__signature__ = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in names])
    return fn


def _dilate_pad(data, strides, before, after):
    """``data`` dilated by ``strides`` and padded by ``before``/``after`` (spatial axes) in one stage."""
    n, c, *size = get_const_tuple(data.shape)
    dilated = [(s - 1) * st + 1 for s, st in zip(size, strides)]
    zero = te.const(0.0, data.dtype)

    def body(b, cc, *idx):
        shifted = [i - p for i, p in zip(idx, before)]
        conds = [c for v, d in zip(shifted, dilated) for c in (v >= 0, v < d)]
        conds += [v % st == 0 for v, st in zip(shifted, strides) if st > 1]
        return te.if_then_else(te.all(*conds), data[(b, cc, *(v // st for v, st in zip(shifted, strides)))], zero)

    shape = tuple(p + d + q for p, d, q in zip(before, dilated, after))
    return te.compute((n, c, *shape), _named(body, "b", "cc", *_AXES[-len(size):]), name="data_pad",
                      tag=tag.INJECTIVE)


def _tuple(value, nd: int, op: str, arg: str) -> tuple:
    out = (int(value),) * nd if isinstance(value, int) else tuple(int(v) for v in value)
    if len(out) != nd:
        raise ValueError(f"{op}: argument {arg}={value!r} must be an int or {nd} of them")
    return out


def conv_transpose(data, kernel, strides, padding, out_dtype=None, output_padding=0, groups: int = 1,
                   op: str = OP):
    """Transposed convolution of ``[N, IC, *S]`` data with an ``[IC, OC / groups, *K]`` kernel
    over ``len(S)`` spatial axes (see the module docstring).

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, *S]``.
    kernel : te.Tensor
        ``[IC, OC / groups, *K]`` (the layout of the forward conv's kernel seen from its output).
    strides : int or tuple
    padding : int, tuple or str
        The forward conv's padding: an int, one width per axis, the widths before then
        after every axis, or ``"SAME"`` / ``"VALID"``; at most ``K - 1`` on every side.
    out_dtype : str, optional
    output_padding : int or tuple
        Extra elements at the end of each axis (each smaller than its stride).
    groups : int
        It must divide IC and OC.
    op : str
        The operator name (stage name, tag and messages).

    Returns
    -------
    te.Tensor
        ``[N, OC, *((S - 1) * stride - pad_before - pad_after + K + output_padding)]``.
    """
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    nd = len(dshape) - 2
    if nd < 1 or len(kshape) != nd + 2:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must have the same rank, 3 to 5")
    n, ic, *_ = dshape
    kic, ocg, *ks = kshape
    if kic != ic:
        raise ValueError(f"{op}: argument kernel of shape {kshape} expects {kic} input channels, "
                         f"but data of shape {dshape} has {ic}")
    if groups < 1 or ic % groups:
        raise ValueError(f"{op}: argument groups={groups} must divide the {ic} input channels of data {dshape}")
    st = _tuple(strides, nd, op, "strides")
    outpad = _tuple(output_padding, nd, op, "output_padding")
    if any(not (0 <= p < s or p == 0) for p, s in zip(outpad, st)):
        raise ValueError(f"{op}: argument output_padding={output_padding!r} must be smaller than the strides")
    before, after = get_pad_tuple_nd(padding, tuple(ks), op)
    if any(max(p, q) > k - 1 for p, q, k in zip(before, after, ks)):
        raise ValueError(f"{op}: argument padding={padding!r} must not exceed kernel size - 1 "
                         f"for kernel of shape {kshape}")
    padded = _dilate_pad(data, st, tuple(k - 1 - p for k, p in zip(ks, before)),
                         tuple(k - 1 - q + o for k, q, o in zip(ks, after, outpad)))
    out_sizes = [p - k + 1 for p, k in zip(get_const_tuple(padded.shape)[2:], ks)]
    out_dtype = out_dtype or data.dtype
    icg = ic // groups
    rc = te.reduce_axis((0, icg), "rc")
    taps = [te.reduce_axis((0, k), "r" + a) for k, a in zip(ks, _AXES[-nd:])]

    def body(b, o, *idx):
        c = rc if groups == 1 else o // ocg * icg + rc
        window = [i + r for i, r in zip(idx, taps)]
        flipped = [k - 1 - r for k, r in zip(ks, taps)]
        w = kernel[(c, o, *flipped)] if groups == 1 else kernel[(c, o % ocg, *flipped)]
        return te.sum(_mul(padded[(b, c, *window)], w, out_dtype), axis=[rc, *taps])

    workload = (op, dshape, kshape, st, (*before, *after), outpad, out_dtype) + ((groups,) if groups > 1 else ())
    return te.compute((n, ocg * groups, *out_sizes), _named(body, "b", "o", *_AXES[-nd:]), name=op, tag=tag.CONV2D_TRANSPOSE if nd == 2 else op,
                      attrs={"workload": workload})


def conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0)):
    """Transposed convolution of NCHW ``data`` with an ``[IC, OC, KH, KW]`` kernel
    (:func:`conv_transpose`; padding ``(top, left, bottom, right)`` when a 4-tuple).

    Returns ``[N, OC, (H-1)*sh - pt - pb + KH + oph, (W-1)*sw - pl - pr + KW + opw]``.
    """
    _rank(data, kernel, 4, OP)
    return conv_transpose(data, kernel, strides, padding, out_dtype, output_padding)


def group_conv2d_transpose_nchw(data, kernel, stride, padding, out_dtype, output_padding, groups):
    """Grouped transposed conv of NCHW ``data`` with an ``[IC, OC / groups, KH, KW]`` kernel."""
    _rank(data, kernel, 4, "group_conv2d_transpose_nchw")
    return conv_transpose(data, kernel, stride, padding, out_dtype, output_padding, groups,
                          op="group_conv2d_transpose_nchw")


def conv1d_transpose_ncw(data, kernel, stride, padding, out_dtype=None, output_padding=0):
    """Transposed 1-D conv of NCW ``data`` with an ``[IC, OC, K]`` kernel (padding an int,
    ``(left, right)`` or a string)."""
    _rank(data, kernel, 3, "conv1d_transpose_ncw")
    return conv_transpose(data, kernel, stride, padding, out_dtype, output_padding, op="conv1d_transpose_ncw")


def conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0, 0)):
    """Transposed 3-D conv of NCDHW ``data`` with an ``[IC, OC, KD, KH, KW]`` kernel (padding
    ``(front, top, left, back, bottom, right)`` when a 6-tuple)."""
    _rank(data, kernel, 5, "conv3d_transpose_ncdhw")
    return conv_transpose(data, kernel, strides, padding, out_dtype, output_padding, op="conv3d_transpose_ncdhw")


def _rank(data, kernel, rank: int, op: str) -> None:
    if len(data.shape) != rank or len(kernel.shape) != rank:
        raise ValueError(f"{op}: data {get_const_tuple(data.shape)} and kernel {get_const_tuple(kernel.shape)} "
                         f"must both be {rank}-D")
