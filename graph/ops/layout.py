"""Graph operators of the blocked activation layout (NCHW[x]c), TVM's AlterOpLayout targets.

``conv2d_NCHWc`` is what ``graph.passes.alter_op_layout`` turns a ``conv2d``
with a constant kernel into: data NCHW (packed inside the kernel) or
already blocked ``[N, C/ic_bn, H, W, ic_bn]``, a pre-packed kernel
``[OC/oc_bn, IC/groups/ic_bn, KH, KW, ic_bn, oc_bn]``, the output blocked
``[N, OC/oc_bn, OH, OW, oc_bn]``.  Elementwise ops, pooling (``layout``
attribute ``"NCHWc"``) and channel concatenation then work on blocked
values unchanged; ``layout_transform`` (``graph.ops.transform``) converts
where a layout-bound operator needs NCHW.

Helpers here convert arrays between the two layouts (the numpy twins and
the pass's constant re-layout use them).  The computes and schedules of these
operators are a target's (``topi.x86.strategy`` for CPUs), as are the packed
kernels' layouts (its layout helpers).
"""

from __future__ import annotations

import numpy as np

import topi
from codegen.target import create
from graph.ops.registry import OUT_ELEMWISE_FUSABLE, default_schedule, register
from topi.nn.channel_shuffle import channel_shuffle, channel_shuffle_python
from topi.strategy import layout_helpers
from tune.layout import to_blocked, to_logical


def _helpers():
    """The blocked layouts of the current target (``topi.strategy.layout_helpers``)."""
    return layout_helpers(create(None))


def blocked_layout(block: int) -> str:
    """The layout string of a value blocked by ``block`` channels (``"NCHW16c"``)."""
    return f"NCHW{block}c"


def block_array(x: np.ndarray, block: int) -> np.ndarray:
    """``[N, C, H, W] -> [N, C/block, H, W, block]`` (layout ``NCHW[block]c``)."""
    return to_blocked(x, blocked_layout(block))


def unblock_array(x: np.ndarray) -> np.ndarray:
    """``[N, C/b, H, W, b] -> [N, C, H, W]``."""
    n, cc, h, w, b = x.shape
    return to_logical(x, blocked_layout(b), (n, cc * b, h, w))


def unpack_kernel_array(k: np.ndarray) -> np.ndarray:
    """``[OCc, ICc, KH, KW, ic_bn, oc_bn] -> [OC, IC, KH, KW]`` (inverse of ``pack_kernel_numpy``)."""
    occ, icc, kh, kw, ic_bn, oc_bn = k.shape
    return to_logical(k, _helpers().kernel_layout(ic_bn, oc_bn), (occ * oc_bn, icc * ic_bn, kh, kw))


def _conv_args(a):
    return (
        tuple(a.get("strides", (1, 1))),
        tuple(a.get("padding", (0, 0, 0, 0))),
        tuple(a.get("dilation", (1, 1))),
    )


def _conv2d_nchwc_types(values, a):
    data, kernel = values[0], values[1]
    if len(kernel.shape) != 6 or len(data.shape) not in (4, 5):
        raise ValueError(
            f"conv2d_NCHWc expects 4-D or 5-D data and a 6-D packed kernel, "
            f"got {data.shape} and {kernel.shape}"
        )
    occ, ic_bn, oc_bn = kernel.shape[0], kernel.shape[4], kernel.shape[5]
    if len(data.shape) == 5 and data.shape[4] != ic_bn:
        raise ValueError(
            f"conv2d_NCHWc: data {data.shape} is blocked by {data.shape[4]}, the kernel "
            f"{kernel.shape} by {ic_bn}"
        )
    from graph.ops.nn import _conv2d_types  # the NCHW shape rule

    dshape, kshape = _helpers().plain_shapes(data.shape, kernel.shape)
    probe = [type(data)(data.name, dshape, data.dtype), type(kernel)(kernel.name, kshape, kernel.dtype)]
    (n, _, oh, ow), dtype = _conv2d_types(probe, a)[0]
    channels, block = _out_channels(kernel.shape, a)
    return [((n, channels // block, oh, ow, block), dtype)]


def _out_channels(kshape: tuple, a: dict) -> tuple:
    """(output channels, output block) of a ``conv2d_NCHWc`` node: the packed kernel's, or its
    ``channels`` (the kernel's output channels past them are zero padding) by ``out_block``."""
    occ, oc_bn = kshape[0], kshape[5]
    block = a.get("out_block") or oc_bn
    channels = a.get("channels") or occ * oc_bn
    if channels > occ * oc_bn or channels % block or oc_bn % block:
        raise ValueError(f"conv2d_NCHWc: channels={channels} out_block={block} do not fit a kernel "
                         f"{tuple(kshape)} (the block must divide the channels and oc_bn={oc_bn})")
    return channels, block


def _np_conv2d_nchwc(xs, a):
    from graph.ops.nn import _np_conv2d

    data, kernel = xs
    if data.ndim == 5:
        data = unblock_array(data)
    channels, block = _out_channels(kernel.shape, a)
    out = _np_conv2d([data, unpack_kernel_array(kernel)], a)[0]
    return [block_array(out[:, :channels], block)]


register(
    "conv2d_NCHWc",
    None,
    OUT_ELEMWISE_FUSABLE,
    None,
    _conv2d_nchwc_types,
    _np_conv2d_nchwc,
    doc="blocked conv: data NCHW or [N, C/ic_bn, H, W, ic_bn], kernel [OCc, ICc, KH, KW, ic_bn, oc_bn], "
    "output [N, OC/oc_bn, OH, OW, oc_bn]; attrs as conv2d, and with channels (OC, the kernel zero-padded "
    "past it) and out_block (a divisor of oc_bn) the output [N, channels/out_block, OH, OW, out_block]",
)


def layout_transform_numpy(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The numpy twin of ``layout_transform`` (``topi.testing.layout_transform_python``)."""
    return topi.testing.layout_transform_python(x, src, dst)


# ------------------------------------------------- grouped, depthwise, shuffle ---
def _group_plain(values, a) -> tuple:
    """(NCHW data shape, OIHW kernel shape) of a ``group_conv2d_NCHWc`` node (OC from its config)."""
    data = values[0]
    template = _helpers().group_template
    if a.get("config") is None or a["config"].template != template:
        raise ValueError(f"group_conv2d_NCHWc: needs a {template} config (its workload gives "
                         f"the output channels), got {a.get('config')}")
    ic = data.shape[1] * (data.shape[4] if len(data.shape) == 5 else 1)
    return (data.shape[0], ic, *data.shape[2:4]), tuple(a["config"].workload[2])


def _group_conv_types(values, a):
    from graph.ops.nn import _conv2d_types

    data, kernel = values[0], values[1]
    if len(kernel.shape) != 6 or len(data.shape) not in (4, 5):
        raise ValueError(f"group_conv2d_NCHWc expects 4-D or 5-D data and a 6-D kernel, got {data.shape}, "
                         f"{kernel.shape}")
    dshape, kshape = _group_plain(values, a)
    probe = [type(data)(data.name, dshape, data.dtype), type(kernel)(kernel.name, kshape, kernel.dtype)]
    (n, oc, oh, ow), dtype = _conv2d_types(probe, a)[0]
    return [((n, oc // kernel.shape[5], oh, ow, kernel.shape[5]), dtype)]


def _np_group_conv(xs, a):
    from graph.ops.nn import _np_conv2d

    data, kernel = xs
    if data.ndim == 5:
        data = unblock_array(data)
    oc = a["config"].workload[2][0]
    plain = _helpers().unpack_group_kernel_numpy(kernel, data.shape[1], oc, a["groups"])
    return [block_array(_np_conv2d([data, plain], a)[0], kernel.shape[5])]


register(
    "group_conv2d_NCHWc",
    None,
    OUT_ELEMWISE_FUSABLE,
    None,
    _group_conv_types,
    _np_group_conv,
    doc="grouped blocked conv, blocks need not divide a group: data NCHW or [N, C/ic_bn, H, W, ic_bn], "
    "kernel [rows, span, KH, KW, ic_bn, oc_bn] (the target's packing), attrs as conv2d (groups, config)",
)


def _dw_nchwc_types(values, a):
    data, kernel = values[0], values[1]
    n, cc, h, w, b = data.shape
    st, (top, left, bottom, right), (dh, dw) = _conv_args(a)
    kh, kw = kernel.shape[1:3]
    oh = (h + top + bottom - (kh - 1) * dh - 1) // st[0] + 1
    ow = (w + left + right - (kw - 1) * dw - 1) // st[1] + 1
    return [((n, cc, oh, ow, b), data.dtype)]


def _np_dw_nchwc(xs, a):
    data, kernel = xs
    cc, kh, kw, b = kernel.shape
    plain = kernel.transpose(0, 3, 1, 2).reshape(cc * b, 1, kh, kw)
    st, pad, dil = _conv_args(a)
    padded = np.pad(unblock_array(data), ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    out = topi.testing.depthwise_conv2d_python_nchw(padded, plain, st, 0, dil).astype(data.dtype)
    return [block_array(out, b)]


register(
    "depthwise_conv2d_NCHWc",
    None,
    OUT_ELEMWISE_FUSABLE,
    None,
    _dw_nchwc_types,
    _np_dw_nchwc,
    doc="depthwise conv (multiplier 1) on [N, C/b, H, W, b], kernel [C/b, KH, KW, b]; attrs as conv2d",
)

register(
    "channel_shuffle",
    lambda xs, a: [channel_shuffle(xs[0], a["groups"])],
    OUT_ELEMWISE_FUSABLE,  # its own schedule, elementwise ops after it fused (no conv takes an injective op)
    default_schedule,
    lambda values, a: [(tuple(values[0].shape), values[0].dtype)],
    lambda xs, a: [channel_shuffle_python(xs[0], a["groups"])],
    doc="ShuffleNet's channel shuffle in `groups` on NCHW or NCHW[x]c data (reshape-transpose-reshape)",
)
