"""x86 conv2d: the blocked NCHW[x]c compute (its template: :mod:`topi.x86.conv2d_rule`; its
schedules: :mod:`topi.x86.conv2d_schedule`).

The fast path (classic TVM's ``conv2d_avx_common``) keeps a register tile of
``ow_bn`` output columns x ``oc_bn`` output channels in registers while the
reduction streams over ``(ic_outer, kh, kw, ic_inner)``::

    parallel (n.oc_chunk.oh.fused, 0, N*OCc*OH)
      for (ow.outer, 0, OW/ow_bn)
        conv.local[ow_bn, oc_bn] = 0                     // registers
        for (ic_outer, kh, kw)
          unrolled (ic_inner, 0, ic_bn)
            unrolled (ow.c, 0, ow_bn)                    // broadcast-FMA
              vectorized: conv.local[ow.c, :] += data[..] * kernel[.., :]
        out[tile] = epilogue(conv.local)                 // bias, relu, unpack

A user with NCHW tensors gets it through :func:`conv2d_nchw_x86`, which packs
data (and padding) and the kernel into blocked stages and unpacks the output
inside the output loop, where any elementwise epilogue is fused as well.
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.conv2d import nchwc_conv
from topi.utils import get_const_tuple
from topi.x86.conv2d_rule import TEMPLATE, conv2d_blockable, conv2d_key, default_conv2d_config
from tune.autotvm.config import check_config, make_config
from tune.autotvm.space import ConfigEntity

PACK = "conv2d_NCHWc_pack"  # tag of the layout-packing stages (not injective: never inlined)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def pack_data(data, ic_bn: int, pads: tuple):
    """``data_vec[n, c/ic_bn, y, x, c%ic_bn]``: NCHW -> padded NCHW[ic_bn]c in one stage."""
    n, ic, h, w = get_const_tuple(data.shape)
    top, left, bottom, right = pads
    zero = te.const(0.0, data.dtype)

    def body(b, cc, y, x, ci):
        inside = te.all(y >= top, y < top + h, x >= left, x < left + w)
        return te.if_then_else(inside, data[b, cc * ic_bn + ci, y - top, x - left], zero)

    return te.compute((n, ic // ic_bn, h + top + bottom, w + left + right, ic_bn), body, name="data_vec", tag=PACK)


def blocked_conv(data_pad, kernel, out_hw: tuple, stride, dilation, out_dtype: str, cfg: ConfigEntity,
                 attrs: dict,
                 groups: int = 1):
    """The ``conv2d_NCHWc`` stage over blocked, padded data: :func:`topi.nn.conv2d.nchwc_conv`,
    or with ``cfg["flat"].val`` that conv over its output plane as one row of ``OH*OW`` columns
    (``attrs["flat"]``), returned through the view ``conv2d_NCHWc_plane`` of its
    ``[N, OCc, OH, OW, oc_bn]`` shape::

        conv[n, oc, 0, f, ob] += data[n, ico, (f // OW)*sh + kh, (f % OW)*sw + kw, ici] * kernel[...]
        plane[n, oc, y, x, ob] = conv[n, oc, 0, y*OW + x, ob]

    The schedule then tiles the flattened plane: a 7x7 plane's 49 columns in tiles of 5 (9 of
    10 accumulators, a tail of 4) where its rows take two tiles each (4 + 3)."""
    if not cfg.values.get("flat"):
        return nchwc_conv(data_pad, kernel, out_hw, stride, dilation, out_dtype, attrs=attrs, groups=groups)
    if groups != 1:
        raise ValueError(f"{TEMPLATE}: flat=True needs an ungrouped conv; got groups={groups}")
    conv = nchwc_conv(data_pad, kernel, out_hw, stride, dilation, out_dtype, attrs={**attrs, "flat": True},
                      flat=True)
    (n, occ, _, _, ocb), (oh, ow) = get_const_tuple(conv.shape), out_hw
    return te.compute((n, occ, oh, ow, ocb), lambda b, c, y, x, o: conv[b, c, 0, y * ow + x, o],
                      name="conv2d_NCHWc_plane", tag=tag.INJECTIVE)


def pack_kernel(kernel, ic_bn: int, oc_bn: int):
    """``kernel_vec[o/oc_bn, i/ic_bn, kh, kw, i%ic_bn, o%oc_bn]`` (OC zero-padded to ``oc_bn``)."""
    oc, ic, kh, kw = get_const_tuple(kernel.shape)
    occ = _ceil(oc, oc_bn)

    def body(oo, ii, y, x, ib, ob):
        src = kernel[oo * oc_bn + ob, ii * ic_bn + ib, y, x]
        if oc % oc_bn == 0:
            return src
        return te.if_then_else(oo * oc_bn + ob < oc, src, te.const(0.0, kernel.dtype))

    return te.compute((occ, ic // ic_bn, kh, kw, ic_bn, oc_bn), body, name="kernel_vec", tag=PACK)


def kernel_layout(ic_bn: int, oc_bn: int) -> str:
    """The layout string of a packed kernel ``[OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn]``."""
    return f"OIHW{ic_bn}i{oc_bn}o"


def pack_kernel_numpy(kernel, ic_bn: int, oc_bn: int):
    """The numpy twin of :func:`pack_kernel`, to pre-pack constant weights once (layout
    :func:`kernel_layout` of ``tune.layout``; OC zero-padded to whole blocks)."""
    from tune.layout import to_blocked

    return to_blocked(kernel, kernel_layout(ic_bn, oc_bn))


def conv2d_nchw_x86(data, kernel, stride, padding, dilation, out_dtype=None, cfg: ConfigEntity | None = None,
                    groups: int = 1, channels: int | None = None):
    """NCHW conv through the blocked fast path: pack, ``conv2d_NCHWc``, unpack.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, H, W]``.
    kernel : te.Tensor
        ``[OC, IC/groups, KH, KW]``, packed in a stage; or a pre-packed 6-D
        ``[OCc, ICc, KH, KW, ic_bn, oc_bn]`` (see :func:`pack_kernel_numpy`)
        whose blocks must be the config's (the output keeps ``channels`` of its
        OCc*oc_bn channels, all by default: the others are zero padding).
    stride, padding, dilation
        As in :func:`topi.nn.conv2d_nchw`.
    cfg : ConfigEntity, optional
        The config of this workload (:func:`conv2d_workload`); default: the
        one :func:`default_conv2d_config` chooses (with a pre-packed kernel,
        the kernel's blocks).  A config for another workload or with blocks
        other than a pre-packed kernel's is a ``ValueError``.
    groups : int
        Grouped convolution (kernel ``[OC, IC/groups, KH, KW]``); the blocks
        must divide each group's channels.
    channels : int, optional
        The output channels of a pre-packed kernel whose last block is zero-padded.

    Returns
    -------
    te.Tensor
        ``[N, OC, OH, OW]`` (tag ``injective``: the unpacking stage, which
        :func:`schedule_conv2d_nchw` fuses with any epilogue).  The conv
        stage carries ``attrs["workload"]`` (the key) and ``attrs["config"]``.
    """
    from topi.nn.conv2d import group_conv2d_nchw

    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(kshape) == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kshape
        oc = channels or occ * oc_bn
        if not (occ - 1) * oc_bn < oc <= occ * oc_bn:
            raise ValueError(f"conv2d_nchw_x86: channels={oc} do not fit the kernel {kshape}: give "
                             f"{(occ - 1) * oc_bn + 1}..{occ * oc_bn} (its last block zero-padded)")
        plain = (oc, icc * ic_bn, kh, kw)
    else:
        oc, plain = kshape[0], kshape
    probe = group_conv2d_nchw(te.placeholder(dshape, data.dtype), te.placeholder(plain, kernel.dtype),
                              stride, padding, dilation, groups, out_dtype)  # validates
    key = conv2d_key(probe.op.attrs["workload"])
    if not conv2d_blockable(key):
        raise ValueError(f"conv2d_nchw_x86: groups={groups} leave {oc // groups} output channels per "
                         f"group, too few to block; use topi.nn.group_conv2d_nchw")
    cfg = _config_for(key, cfg, kshape)
    st, pads, dil = key[3], key[4], key[5]
    _, _, oh, ow = get_const_tuple(probe.shape)
    kvec = kernel if len(kshape) == 6 else pack_kernel(kernel, cfg["ic_bn"].val, cfg["oc_bn"].val)
    dvec = pack_data(data, cfg["ic_bn"].val, pads)
    conv = blocked_conv(dvec, kvec, (oh, ow), st, dil, out_dtype or data.dtype, cfg,
                        {"workload": key, "config": cfg}, groups)
    ocb = cfg["oc_bn"].val
    return te.compute((dshape[0], oc, oh, ow), lambda n, c, y, x: conv[n, c // ocb, y, x, c % ocb],
                      name="conv2d_nchw_unpack", tag=tag.INJECTIVE)


def _config_for(key: tuple, cfg: ConfigEntity | None, kshape: tuple) -> ConfigEntity:
    """``cfg`` checked against ``key`` (and a pre-packed kernel's blocks), or the chosen one."""
    blocks = {"ic_bn": kshape[4], "oc_bn": kshape[5]} if len(kshape) == 6 else {}
    if cfg is None:
        cfg = default_conv2d_config(key)
        if blocks and any(cfg[k].val != v for k, v in blocks.items()):
            cfg = make_config(key, {**cfg.values, **blocks})
        return cfg
    check_config(cfg, key)
    for k, v in blocks.items():
        if cfg[k].val != v:
            raise ValueError(f"conv2d_nchw_x86: config knob {k}={cfg[k].val} but the pre-packed kernel "
                             f"{kshape} is blocked by {v}; pack the kernel with the config's blocks")
    return cfg
