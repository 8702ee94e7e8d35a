"""3-D convolutions, grouped: NCDHW data with an OIDHW kernel, NDHWC data with a DHWIO kernel
(classic ``topi.nn.conv3d_ncdhw`` / ``conv3d_ndhwc``; ONNX Conv over volumes).

::

    PadInput = pad(data, (0, 0, d0, h0, w0), (0, 0, d1, h1, w1))
    out[n, f, z, y, x] = sum_{c, rz, ry, rx} PadInput[n, g(f)*ICg + c, z*sd + rz*dd, y*sh + ry*dh, x*sw + rx*dw]
                                             * kernel[f, c, rz, ry, rx]

with ``g(f) = f // (OC / groups)`` and ``ICg = IC / groups``.  ``padding`` is an int, one width
per axis, ``(front, top, left, back, bottom, right)`` or ``"SAME"`` / ``"VALID"``
(:func:`topi.nn.utils.get_pad_tuple3d`).
"""

from __future__ import annotations

import te
from topi.nn.conv2d import _mul
from topi.nn.pad import pad
from topi.nn.utils import get_pad_tuple_nd
from topi.utils import get_const_tuple


def conv3d_out_size(n: int, k: int, s: int, d: int, before: int, after: int) -> int:
    """Output extent of one axis; ``ValueError`` when the dilated kernel exceeds the padded input."""
    eff = (k - 1) * d + 1
    if n + before + after < eff:
        raise ValueError(f"conv3d: kernel extent {eff} (with dilation) exceeds the padded input {n + before + after}")
    return (n + before + after - eff) // s + 1


def _triple(v, op: str, arg: str) -> tuple:
    t = (int(v),) * 3 if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != 3 or min(t) < 1:
        raise ValueError(f"{op}: argument {arg}={v!r} must be a positive int or 3 of them")
    return t


def _geometry(op, dshape, kshape, spatial, ktaps, ic, icg, oc, strides, padding, dilation, groups):
    if len(dshape) != 5 or len(kshape) != 5:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 5-D")
    if groups < 1 or ic != icg * groups or oc % groups:
        raise ValueError(f"{op}: data has {ic} channels, kernel {kshape} with groups={groups} "
                         f"expects {icg * groups} (and OC a multiple of groups)")
    st, dil = _triple(strides, op, "strides"), _triple(dilation, op, "dilation")
    before, after = get_pad_tuple_nd(padding, tuple((k - 1) * d + 1 for k, d in zip(ktaps, dil)), op)
    outs = [conv3d_out_size(*args) for args in zip(spatial, ktaps, st, dil, before, after)]
    taps = [te.reduce_axis((0, k), name) for k, name in zip(ktaps, ("rz", "ry", "rx"))]
    return st, dil, before, after, outs, taps


def conv3d_ncdhw(data: te.Tensor, kernel: te.Tensor, strides, padding, dilation, groups: int = 1,
                 out_dtype: str | None = None) -> te.Tensor:
    """Grouped 3-D convolution of NCDHW ``data`` with an ``[OC, IC/groups, KD, KH, KW]`` kernel.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, D, H, W]``.
    kernel : te.Tensor
        ``[OC, IC/groups, KD, KH, KW]``.
    strides, dilation : int or 3 ints
    padding : int, tuple or str
        See the module docstring.
    groups : int
        It must divide IC and OC.
    out_dtype : str, optional
        Accumulation and output dtype (default: the data's).

    Returns
    -------
    te.Tensor
        ``[N, OC, OD, OH, OW]`` (tag ``conv3d_ncdhw``).
    """
    op = "conv3d_ncdhw"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    oc, icg = kshape[:2] if len(kshape) == 5 else (0, 0)
    st, dil, before, after, outs, (rz, ry, rx) = _geometry(
        op, dshape, kshape, dshape[2:], kshape[2:], dshape[1] if len(dshape) == 5 else 0, icg, oc, strides,
        padding, dilation, groups)
    if any(before) or any(after):
        data = pad(data, [0, 0, *before], [0, 0, *after], name="PadInput")
    ocg, out_dtype = oc // groups, out_dtype or data.dtype
    rc = te.reduce_axis((0, icg), "rc")
    (sd, sh, sw), (dd, dh, dw) = st, dil

    def body(b, f, z, y, x):
        c = (f // ocg) * icg + rc if groups > 1 else rc
        return te.sum(_mul(data[b, c, z * sd + rz * dd, y * sh + ry * dh, x * sw + rx * dw],
                           kernel[f, rc, rz, ry, rx], out_dtype), axis=[rc, rz, ry, rx])

    return te.compute((dshape[0], oc, *outs), body, name=op, tag=op,
                      attrs={"workload": (op, dshape, kshape, st, (*before, *after), dil, groups, out_dtype)})


def conv3d_ndhwc(data: te.Tensor, kernel: te.Tensor, strides, padding, dilation, groups: int = 1,
                 out_dtype: str | None = None) -> te.Tensor:
    """Grouped 3-D convolution of NDHWC ``data`` ``[N, D, H, W, IC]`` with a DHWIO kernel
    ``[KD, KH, KW, IC/groups, OC]``; returns ``[N, OD, OH, OW, OC]`` (tag ``conv3d_ndhwc``).
    The other arguments are as in :func:`conv3d_ncdhw`."""
    op = "conv3d_ndhwc"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    icg, oc = kshape[3:] if len(kshape) == 5 else (0, 0)
    st, dil, before, after, outs, (rz, ry, rx) = _geometry(
        op, dshape, kshape, dshape[1:4], kshape[:3], dshape[4] if len(dshape) == 5 else 0, icg, oc, strides,
        padding, dilation, groups)
    if any(before) or any(after):
        data = pad(data, [0, *before, 0], [0, *after, 0], name="PadInput")
    ocg, out_dtype = oc // groups, out_dtype or data.dtype
    rc = te.reduce_axis((0, icg), "rc")
    (sd, sh, sw), (dd, dh, dw) = st, dil

    def body(b, z, y, x, f):
        c = (f // ocg) * icg + rc if groups > 1 else rc
        return te.sum(_mul(data[b, z * sd + rz * dd, y * sh + ry * dh, x * sw + rx * dw, c],
                           kernel[rz, ry, rx, rc, f], out_dtype), axis=[rz, ry, rx, rc])

    return te.compute((dshape[0], *outs, oc), body, name=op, tag=op,
                      attrs={"workload": (op, dshape, kshape, st, (*before, *after), dil, groups, out_dtype)})
