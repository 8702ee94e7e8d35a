"""x86 conv2d between blocked activations: NCHW[x]c in, NCHW[y]c out (TVM's ``conv2d_NCHWc``).

The graph layout pass (``graph.passes.alter_op_layout``) keeps activations
in the blocked layout between convolutions.  This compute takes the data
either already blocked (5-D ``[N, IC/ic_bn, H, W, ic_bn]``: only padded, no
re-layout) or plain NCHW (4-D: packed block by block inside the kernel, as
:func:`topi.x86.conv2d.conv2d_nchw_x86` does), a pre-packed 6-D kernel, and
returns the blocked output ``[N, OC/oc_bn, OH, OW, oc_bn]``::

    data_pad[n, cc, y, x, ci] = inside ? data[n, cc, y - top, x - left, ci] : 0   // 5-D input
    conv[n, oc, y, x, ob]    += data_pad[n, ico, y*sh + kh*dh, x*sw + kw*dw, ici]
                                * kernel[oc, ico, kh, kw, ici, ob]

Its schedule is :func:`topi.x86.conv2d_schedule.schedule_conv2d_NCHWc` (the register
tile of ``ow_bn`` columns x ``oc_bn`` channels, epilogue fused into the
output loop; a 4-D epilogue that unpacks to NCHW is fused the same way).
A tile that does not divide OW leaves a narrower tail tile at the end of
each row (``schedule.passes.partition_loops``), not padded columns.  The
schedule computes ``data_pad`` inline: the reduction's border taps are
guarded instead of read from a padded copy, and the lowering trims the
kernel rows a border output row would read from the padding and peels the
border column tiles (``guard_zero_terms``, then ``partition_loops``), so the
inner tiles run unguarded and nothing is copied first::

    for (kh, max(1 - y*2, 0), min(y*2 + 2, 3))   // 3x3/2, pad 1: row 0 skips kh = 0
"""

from __future__ import annotations

import te
from tune.autotvm.config import with_values
from tune.autotvm.space import ConfigEntity
from topi import tag
from topi.nn.conv2d import group_conv2d_nchw
from topi.nn.pad import pad_spatial
from topi.utils import get_const_tuple
from topi.x86.conv2d import blocked_conv, pack_data
from topi.x86.conv2d_rule import default_conv2d_config


def padded_input(data, ic_bn: int, pads: tuple):
    """The blocked, zero-padded data the conv reads: NCHW data packed (and padded), blocked
    data padded (``data`` itself when nothing pads).  The blocked schedule computes the
    padding of blocked data inline, so that the conv skips the taps that read it."""
    if len(get_const_tuple(data.shape)) == 4:
        return pack_data(data, ic_bn, pads)
    return pad_spatial(data, pads, "NCHWc", name="data_pad")


def plain_shapes(dshape: tuple, kshape: tuple) -> tuple:
    """The NCHW data and OIHW kernel shapes that a blocked (data, kernel) pair stands for."""
    occ, icc, kh, kw, ic_bn, oc_bn = kshape
    if len(dshape) == 5:
        n, dcc, h, w, dbn = dshape
        dshape = (n, dcc * dbn, h, w)
    return tuple(dshape), (occ * oc_bn, icc * ic_bn, kh, kw)


def reblock_output(conv, channels: int, out_block: int):
    """The ``[N, OCc, OH, OW, oc_bn]`` conv (its channels past ``channels`` zero padding) stored by
    ``out_block`` channels, a divisor of ``oc_bn``: ``[N, channels/out_block, OH, OW, out_block]``
    (an injective stage, which the conv's schedule fuses into its output loop: the register tile
    of two vectors writes its channel blocks of one vector, and skips the padded ones)::

        out[n, c, y, x, b] = conv[n, c / r, y, x, (c % r)*out_block + b]      r = oc_bn / out_block
    """
    n, occ, oh, ow, oc_bn = get_const_tuple(conv.shape)
    if oc_bn % out_block or channels % out_block or channels > occ * oc_bn:
        raise ValueError(f"conv2d_NCHWc_x86: out_block={out_block} must divide channels={channels} and "
                         f"the kernel's oc_bn={oc_bn}, with channels at most {occ * oc_bn}")
    if out_block == oc_bn and channels == occ * oc_bn:
        return conv
    r = oc_bn // out_block
    return te.compute((n, channels // out_block, oh, ow, out_block),
                      lambda b, c, y, x, o: conv[b, c // r, y, x, (c % r) * out_block + o],
                      name="conv2d_NCHWc_reblock", tag=tag.INJECTIVE)


def conv2d_NCHWc_x86(
    data, kernel, stride, padding, dilation, cfg: ConfigEntity | None = None, groups: int = 1, out_dtype=None,
    channels: int | None = None, out_block: int = 0,
):
    """Blocked conv: NCHW or NCHW[ic_bn]c data, packed kernel, NCHW[oc_bn]c output.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC/ic_bn, H, W, ic_bn]`` (its block must be the kernel's ``ic_bn``)
        or ``[N, IC, H, W]`` (packed inside the kernel).
    kernel : te.Tensor
        ``[OC/oc_bn, IC/groups/ic_bn, KH, KW, ic_bn, oc_bn]``
        (see :func:`topi.x86.conv2d.pack_kernel_numpy`).
    stride, padding, dilation
        As in :func:`topi.nn.conv2d_nchw`.
    cfg : ConfigEntity, optional
        ``ow_bn``, ``unroll_kw`` (default: the NCHW workload's
        :func:`topi.x86.conv2d_rule.default_conv2d_config`); the blocks are the kernel's.
    groups : int
        Grouped convolution; a group's channels must be whole blocks.
    channels, out_block : int, optional
        A one-group conv's output channels, the kernel's past them zero padding (72 in a kernel
        blocked by 16: 80), and the block of the output (a divisor of ``oc_bn`` and of
        ``channels``; default ``oc_bn``): the output is then :func:`reblock_output` of the conv.

    Returns
    -------
    te.Tensor
        ``[N, OC/oc_bn, OH, OW, oc_bn]``: the ``conv2d_NCHWc`` stage; with ``channels`` or
        ``out_block``, ``[N, channels/out_block, OH, OW, out_block]``.
    """
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(kshape) != 6 or len(dshape) not in (4, 5):
        raise ValueError(f"conv2d_NCHWc_x86: data {dshape} must be 4-D or 5-D and kernel {kshape} 6-D")
    occ, _, _, kw, ic_bn, oc_bn = kshape
    if len(dshape) == 5 and dshape[4] != ic_bn:
        raise ValueError(
            f"conv2d_NCHWc_x86: data {dshape} is blocked by {dshape[4]} but kernel {kshape} "
            f"expects input blocks of {ic_bn}; insert a layout_transform"
        )
    plain_d, plain_k = plain_shapes(dshape, kshape)
    channels = channels or plain_k[0]
    if channels != plain_k[0] and groups != 1:
        raise ValueError(f"conv2d_NCHWc_x86: channels={channels} pads a grouped conv's kernel {kshape}; "
                         f"only a one-group conv's output channels may be zero-padded")
    plain_k = (channels, *plain_k[1:])
    probe = group_conv2d_nchw(
        te.placeholder(plain_d, data.dtype),
        te.placeholder(plain_k, kernel.dtype),
        stride,
        padding,
        dilation,
        groups,
        out_dtype,
    )  # validates, gives the workload
    wl = probe.op.attrs["workload"]
    cfg = with_values(cfg or default_conv2d_config(wl), ic_bn=ic_bn, oc_bn=oc_bn)
    st, pads, dil = wl[3], wl[4], wl[5]
    _, _, oh, ow = get_const_tuple(probe.shape)
    conv = blocked_conv(padded_input(data, ic_bn, pads), kernel, (oh, ow), st, dil, out_dtype or data.dtype, cfg,
                        {"workload": wl, "config": cfg}, groups)
    return reblock_output(conv, channels, out_block or oc_bn)
