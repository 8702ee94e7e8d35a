"""1-D convolution computes: NCW (kernel ``[OC, IC, K]``) and NWC (kernel ``[K, IC, OC]``).

``padding`` is an int, a pair ``(left, right)``, ``"SAME"`` or ``"VALID"``;
``strides`` and ``dilation`` are ints (or 1-tuples).
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.conv2d import _mul, get_pad_tuple, out_size
from topi.nn.pad import pad
from topi.utils import get_const_tuple


def _one(value, op: str, arg: str) -> int:
    v = value[0] if isinstance(value, (tuple, list)) and len(value) == 1 else value
    if not isinstance(v, int) or v < 1:
        raise ValueError(f"{op}: argument {arg}={value!r} must be a positive int")
    return v


def _pads(padding, k: int, op: str) -> tuple[int, int]:
    if isinstance(padding, (tuple, list)) and len(padding) == 2:
        return int(padding[0]), int(padding[1])
    if isinstance(padding, (tuple, list)) and len(padding) == 1:
        padding = padding[0]
    top, _, bottom, _ = get_pad_tuple(padding, (k, 1), op)
    return top, bottom


def _conv1d(op: str, data, kernel, strides, padding, dilation, out_dtype, nwc: bool, groups: int = 1):
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 3 or len(kshape) != 3:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 3-D")
    n, w, ic = dshape if nwc else (dshape[0], dshape[2], dshape[1])
    k, kic, oc = kshape if nwc else (kshape[2], kshape[1], kshape[0])
    if groups < 1 or ic % groups or oc % groups:
        raise ValueError(f"{op}: argument groups={groups} must divide the input channels of data {dshape} "
                         f"and the output channels of kernel {kshape}")
    if kic * groups != ic:
        raise ValueError(f"{op}: argument kernel of shape {kshape} expects {kic * groups} input channels, "
                         f"but data of shape {dshape} has {ic}")
    s, d = _one(strides, op, "strides"), _one(dilation, op, "dilation")
    left, right = _pads(padding, (k - 1) * d + 1, op)
    ow = out_size(op, w, k, s, d, left, right, dshape, kshape)
    out_dtype = out_dtype or data.dtype
    if left + right:
        before, after = ([0, left, 0], [0, right, 0]) if nwc else ([0, 0, left], [0, 0, right])
        data = pad(data, before, after, name="PadInput")
    rc = te.reduce_axis((0, kic), "rc")
    rx = te.reduce_axis((0, k), "rx")
    attrs = {"workload": (op, dshape, kshape, s, (left, right), d, out_dtype)}
    ocg = oc // groups

    def cin(f):  # the input channel of reduction step rc for output channel f
        return rc if groups == 1 else f // ocg * kic + rc

    kind = tag.CONV1D if groups == 1 else "group_conv1d"
    if nwc:
        return te.compute((n, ow, oc), lambda b, x, f: te.sum(
            _mul(data[b, x * s + rx * d, cin(f)], kernel[rx, rc, f], out_dtype), axis=[rx, rc]),
            name=op, tag=kind, attrs=attrs)
    return te.compute((n, oc, ow), lambda b, f, x: te.sum(
        _mul(data[b, cin(f), x * s + rx * d], kernel[f, rc, rx], out_dtype), axis=[rc, rx]),
        name=op, tag=kind, attrs=attrs)


def conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D conv of ``[N, IC, W]`` data with an ``[OC, IC, K]`` kernel; returns ``[N, OC, OW]``."""
    return _conv1d("conv1d_ncw", data, kernel, strides, padding, dilation, out_dtype, nwc=False)


def conv1d_nwc(data, kernel, strides=1, padding="VALID", dilation=1, out_dtype=None):
    """1-D conv of ``[N, W, IC]`` data with a ``[K, IC, OC]`` kernel; returns ``[N, OW, OC]``."""
    return _conv1d("conv1d_nwc", data, kernel, strides, padding, dilation, out_dtype, nwc=True)


def group_conv1d_ncw(data, kernel, strides=1, padding="VALID", dilation=1, groups: int = 1, out_dtype=None):
    """Grouped 1-D conv of ``[N, IC, W]`` data with an ``[OC, IC // groups, K]`` kernel."""
    return _conv1d("group_conv1d_ncw", data, kernel, strides, padding, dilation, out_dtype, False, groups)


def group_conv1d_nwc(data, kernel, strides=1, padding="VALID", dilation=1, groups: int = 1, out_dtype=None):
    """Grouped 1-D conv of ``[N, W, IC]`` data with a ``[K, IC // groups, OC]`` kernel."""
    return _conv1d("group_conv1d_nwc", data, kernel, strides, padding, dilation, out_dtype, True, groups)


def conv1d(data, kernel, strides=1, padding="VALID", dilation=1, layout: str = "NCW", out_dtype=None):
    """Dispatch on ``layout`` (``"NCW"`` or ``"NWC"``)."""
    if layout == "NCW":
        return conv1d_ncw(data, kernel, strides, padding, dilation, out_dtype)
    if layout == "NWC":
        return conv1d_nwc(data, kernel, strides, padding, dilation, out_dtype)
    raise ValueError(f"conv1d: argument layout={layout!r} is not supported; use 'NCW' or 'NWC'")


