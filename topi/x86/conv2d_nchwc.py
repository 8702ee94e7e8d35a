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

Its schedule is :func:`topi.x86.conv2d.schedule_conv2d_NCHWc` (the register
tile of ``ow_bn`` columns x ``oc_bn`` channels, epilogue fused into the
output loop; a 4-D epilogue that unpacks to NCHW is fused the same way).
"""

from __future__ import annotations

import te
from topi import tag
from topi.config import Config, register_template
from topi.nn.conv2d import group_conv2d_nchw, nchwc_conv
from topi.utils import get_const_tuple
from topi.x86.conv2d import PACK, default_conv2d_config, pack_data


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def pad_blocked(data, pads: tuple, width: int):
    """``data_pad[n, cc, y, x, ci]``: the blocked data zero-padded in H and W (to ``width`` columns)."""
    n, icc, h, w, ic_bn = get_const_tuple(data.shape)
    top, left, bottom, _ = pads
    zero = te.const(0.0, data.dtype)

    def body(b, cc, y, x, ci):
        inside = te.all(y >= top, y < top + h, x >= left, x < left + w)
        return te.if_then_else(inside, data[b, cc, y - top, x - left, ci], zero)

    return te.compute((n, icc, h + top + bottom, width, ic_bn), body, name="data_pad", tag=PACK)


def plain_shapes(dshape: tuple, kshape: tuple) -> tuple:
    """The NCHW data and OIHW kernel shapes that a blocked (data, kernel) pair stands for."""
    occ, icc, kh, kw, ic_bn, oc_bn = kshape
    if len(dshape) == 5:
        n, dcc, h, w, dbn = dshape
        dshape = (n, dcc * dbn, h, w)
    return tuple(dshape), (occ * oc_bn, icc * ic_bn, kh, kw)


def conv2d_NCHWc_x86(
    data, kernel, stride, padding, dilation, cfg: Config | None = None, groups: int = 1, out_dtype=None
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
    cfg : Config, optional
        ``ow_bn``, ``pad_ow``, ``unroll_kw`` (default: the NCHW workload's
        :func:`topi.x86.conv2d.default_conv2d_config`); the blocks are the kernel's.
    groups : int
        Grouped convolution; a group's channels must be whole blocks.

    Returns
    -------
    te.Tensor
        ``[N, OC/oc_bn, OH, OW, oc_bn]``: the ``conv2d_NCHWc`` stage, or a
        crop of it (tag ``injective``) when the columns were padded up to
        a multiple of ``ow_bn``.
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
    cfg = (cfg or default_conv2d_config(wl)).with_values(ic_bn=ic_bn, oc_bn=oc_bn)
    st, pads, dil = wl[3], wl[4], wl[5]
    n, _, oh, ow = get_const_tuple(probe.shape)
    owp = _ceil(ow, cfg["ow_bn"]) * cfg["ow_bn"]
    width = max(plain_d[3] + pads[1] + pads[3], (owp - 1) * st[1] + (kw - 1) * dil[1] + 1)
    if len(dshape) == 4:
        dvec = pack_data(data, ic_bn, pads, width)
    elif any(pads) or width > dshape[3]:
        dvec = pad_blocked(data, pads, width)
    else:
        dvec = data
    conv = nchwc_conv(
        dvec,
        kernel,
        (oh, owp),
        st,
        dil,
        out_dtype or data.dtype,
        attrs={"workload": wl, "config": cfg},
        groups=groups,
    )
    if owp == ow:
        return conv
    return te.compute(
        (n, occ, oh, ow, oc_bn),
        lambda b, c, y, x, cb: conv[b, c, y, x, cb],
        name="conv2d_NCHWc_crop",
        tag=tag.INJECTIVE,
    )


# ------------------------------------------- grouped convs, blocks spanning groups ---
# A grouped conv whose per-group channels no block of a vector divides (ShuffleNet's
# 28 / 34 / 68 per group) still runs in the blocked layout: the blocks are the whole
# tensor's, and output block ``oc`` reduces over the ``span`` consecutive input blocks
# that cover the input channels of every group its lanes belong to.  The packed kernel
# holds zeros where an input channel is not in the output lane's group::
#
#     start(oc) = min((oc*oc_bn // OCg) * ICg // ic_bn, ICc - span)
#     conv[n, oc, y, x, ob] += data_pad[n, start(oc) + s, y*sh + kh*dh, x*sw + kw*dw, ici]
#                              * kernel[oc, s, kh, kw, ici, ob]          # s < span
#
# When the blocks divide each group's channels this is exactly the grouped
# ``conv2d_NCHWc`` (``span = ICg / ic_bn``, ``start = group * span``).
GROUP_TEMPLATE = "group_conv2d_NCHWc.x86"


def group_span(ic: int, oc: int, groups: int, ic_bn: int, oc_bn: int) -> tuple:
    """(span, starts): input blocks per output block, and each output block's first one."""
    icg, ocg, icc = ic // groups, oc // groups, ic // ic_bn
    lo = [(o * oc_bn // ocg) * icg // ic_bn for o in range(oc // oc_bn)]
    hi = [_ceil(((o * oc_bn + oc_bn - 1) // ocg + 1) * icg, ic_bn) for o in range(oc // oc_bn)]
    span = max(h - l for l, h in zip(lo, hi))
    return span, [min(l, icc - span) for l in lo]


def pack_group_kernel_numpy(kernel, groups: int, ic_bn: int, oc_bn: int):
    """``[OC, ICg, KH, KW] -> [OC/oc_bn, span, KH, KW, ic_bn, oc_bn]`` with zeros across groups."""
    import numpy as np

    oc, icg, kh, kw = kernel.shape
    ic, ocg = icg * groups, oc // groups
    span, starts = group_span(ic, oc, groups, ic_bn, oc_bn)
    out = np.zeros((oc // oc_bn, span, kh, kw, ic_bn, oc_bn), kernel.dtype)
    for o, start in enumerate(starts):
        for ob in range(oc_bn):
            co = o * oc_bn + ob
            first = start * ic_bn
            lo = max((co // ocg) * icg, first)
            hi = min((co // ocg + 1) * icg, first + span * ic_bn)
            for ci in range(lo, hi):  # input channel ci of group co // ocg
                out[o, (ci - first) // ic_bn, :, :, (ci - first) % ic_bn, ob] = kernel[co, ci - (co // ocg) * icg]
    return out


def unpack_group_kernel_numpy(packed, ic: int, groups: int):
    """The inverse of :func:`pack_group_kernel_numpy` (``ic``: the conv's input channels)."""
    import numpy as np

    occ, _, kh, kw, ic_bn, oc_bn = packed.shape
    oc = occ * oc_bn
    icg, ocg = ic // groups, oc // groups
    _, starts = group_span(ic, oc, groups, ic_bn, oc_bn)
    out = np.zeros((oc, icg, kh, kw), packed.dtype)
    for o, start in enumerate(starts):
        for ob in range(oc_bn):
            co = o * oc_bn + ob
            g0 = (co // ocg) * icg
            for j in range(icg):
                rel = g0 + j - start * ic_bn
                out[co, j] = packed[o, rel // ic_bn, :, :, rel % ic_bn, ob]
    return out


def group_conv2d_workload(dshape, kshape, strides, pads, dilation, groups: int, dtype: str = "float32") -> tuple:
    """The key of :data:`GROUP_TEMPLATE`: NCHW data, OIHW kernel ``[OC, IC/groups, KH, KW]``."""
    return (GROUP_TEMPLATE, tuple(int(d) for d in dshape), tuple(int(d) for d in kshape),
            tuple(int(v) for v in strides), tuple(int(v) for v in pads), tuple(int(v) for v in dilation),
            int(groups), str(dtype))


def _group_geometry(workload: tuple) -> tuple:
    """(IC, OC, ICg, OCg, OW, KW) of a :data:`GROUP_TEMPLATE` key."""
    from topi.nn.conv2d import _spatial

    _, dshape, kshape, stride, pads, dilation, groups, _ = workload
    _, _, _, (_, ow) = _spatial(GROUP_TEMPLATE, dshape, kshape, dshape[2:4], kshape[2:4], stride, pads, dilation)
    return dshape[1], kshape[0], kshape[1], kshape[0] // groups, ow, kshape[3]


def group_conv2d_space(workload: tuple, target) -> dict:
    """Knob -> candidates: blocks dividing the whole tensor's channels (not a group's)."""
    from topi.config import divisors, max_accumulators
    from topi.x86.conv2d import OC_BLOCKS

    ic, oc = _group_geometry(workload)[:2]
    return {"ic_bn": divisors(ic, 64), "oc_bn": [b for b in OC_BLOCKS if oc % b == 0],
            "ow_bn": list(range(1, max_accumulators(target) + 1)), "unroll_kw": [True, False]}


def group_conv2d_rule(workload: tuple, target) -> dict:
    """Blocks of whole vectors where they divide the channels (else the widest block of
    ``OC_BLOCKS`` that does); a block dividing each group's channels (no zeros in the
    kernel) when one of at least 8 does; ``ow_bn`` and ``unroll_kw`` as :func:`conv2d_rule`."""
    from topi.config import largest_divisor, max_accumulators

    ic, oc, icg, ocg, ow, kw = _group_geometry(workload)
    vec, max_acc = target.lanes(workload[-1]), max_accumulators(target)
    cands = group_conv2d_space(workload, target)["oc_bn"]
    if not cands:
        raise ValueError(f"{GROUP_TEMPLATE}: {oc} output channels cannot be blocked (need a multiple of 8)")
    exact = [b for b in cands if b <= vec and ocg % b == 0]
    if exact and largest_divisor(icg, vec) >= 8:
        oc_bn, ic_bn = max(exact), largest_divisor(icg, vec)
    else:
        oc_bn, ic_bn = max([b for b in cands if b <= vec] or cands[:1]), largest_divisor(ic, vec)
    max_w = max(1, max_acc // max(1, oc_bn // vec))
    ow_bn = largest_divisor(ow, max_w)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_w, 8)
    return {"ic_bn": ic_bn, "oc_bn": oc_bn, "ow_bn": ow_bn, "unroll_kw": kw <= 3}


def group_conv2d_NCHWc_x86(data, kernel, stride, padding, dilation, groups: int, cfg: Config | None = None):
    """Grouped blocked conv whose blocks may span groups (see the section comment above).

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC/ic_bn, H, W, ic_bn]`` or ``[N, IC, H, W]`` (packed inside the kernel).
    kernel : te.Tensor
        ``[OC/oc_bn, span, KH, KW, ic_bn, oc_bn]`` from :func:`pack_group_kernel_numpy`.
    groups : int
        The conv's groups (IC and OC divide by it).
    cfg : Config, optional
        A :data:`GROUP_TEMPLATE` config (``ow_bn``, ``unroll_kw``; its blocks must be the kernel's).

    Returns
    -------
    te.Tensor
        ``[N, OC/oc_bn, OH, OW, oc_bn]`` (tag ``conv2d_NCHWc``, or an injective crop of it).
    """
    from topi.config import choose_config

    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    occ, span, kh, kw, ic_bn, oc_bn = kshape
    ic = dshape[1] * (dshape[4] if len(dshape) == 5 else 1)
    if len(dshape) == 5 and dshape[4] != ic_bn or ic % groups or (occ * oc_bn) % groups:
        raise ValueError(f"group_conv2d_NCHWc_x86: data {dshape}, kernel {kshape} and groups={groups} do not "
                         f"match (data blocks must be the kernel's ic_bn, channels divisible by groups)")
    if span != group_span(ic, occ * oc_bn, groups, ic_bn, oc_bn)[0]:
        raise ValueError(f"group_conv2d_NCHWc_x86: kernel {kshape} is not packed for IC={ic}, groups={groups}; "
                         f"use pack_group_kernel_numpy")
    plain_d = (dshape[0], ic, *dshape[2:4])
    plain_k = (occ * oc_bn, ic // groups, kh, kw)
    probe = group_conv2d_nchw(te.placeholder(plain_d, data.dtype), te.placeholder(plain_k, kernel.dtype),
                              stride, padding, dilation, groups)  # validates
    _, _, _, st, pads, dil, _, _ = probe.op.attrs["workload"]
    key = group_conv2d_workload(plain_d, plain_k, st, pads, dil, groups, data.dtype)
    cfg = (cfg or choose_config(key)).check(key)
    if (cfg["ic_bn"], cfg["oc_bn"]) != (ic_bn, oc_bn):
        raise ValueError(f"group_conv2d_NCHWc_x86: config blocks ({cfg['ic_bn']}, {cfg['oc_bn']}) differ from "
                         f"the kernel's ({ic_bn}, {oc_bn})")
    n, _, oh, ow = get_const_tuple(probe.shape)
    owp = _ceil(ow, cfg["ow_bn"]) * cfg["ow_bn"]
    width = max(plain_d[3] + pads[1] + pads[3], (owp - 1) * st[1] + (kw - 1) * dil[1] + 1)
    if len(dshape) == 4:
        dvec = pack_data(data, ic_bn, pads, width)
    elif any(pads) or width > dshape[3]:
        dvec = pad_blocked(data, pads, width)
    else:
        dvec = data
    conv = _span_conv(dvec, kernel, (oh, owp), st, dil, (ic, groups), {"workload": key, "config": cfg})
    if owp == ow:
        return conv
    return te.compute((n, occ, oh, ow, oc_bn), lambda b, c, y, x, cb: conv[b, c, y, x, cb],
                      name="conv2d_NCHWc_crop", tag=tag.INJECTIVE)


def _span_conv(dvec, kernel, out_hw, stride, dilation, channels: tuple, attrs: dict):
    """The reduction stage: output block ``oc`` reads input blocks ``start(oc) + s``."""
    ic, groups = channels
    occ, span, kh, kw, ic_bn, oc_bn = get_const_tuple(kernel.shape)
    icg, ocg, icc = ic // groups, occ * oc_bn // groups, ic // ic_bn
    (sh, sw), (dh, dw) = stride, dilation
    rs = te.reduce_axis((0, span), "ic_outer")
    ry, rx = te.reduce_axis((0, kh), "kh"), te.reduce_axis((0, kw), "kw")
    ici = te.reduce_axis((0, ic_bn), "ic_inner")

    clamp = any((o * oc_bn // ocg) * icg // ic_bn > icc - span for o in range(occ))

    def start(oc):
        lo = (oc * oc_bn) // ocg * icg // ic_bn
        return te.min(lo, icc - span) if clamp else lo

    return te.compute(
        (get_const_tuple(dvec.shape)[0], occ, out_hw[0], out_hw[1], oc_bn),
        lambda b, oc, y, x, ob: te.sum(
            dvec[b, start(oc) + rs, y * sh + ry * dh, x * sw + rx * dw, ici] * kernel[oc, rs, ry, rx, ici, ob],
            axis=[rs, ry, rx, ici]),
        name="conv2d_NCHWc", tag=tag.CONV2D_NCHWC, attrs=attrs,
    )


def schedule_group_conv2d_NCHWc(outs):
    """Schedule :func:`group_conv2d_NCHWc_x86` (and its elementwise epilogue) as
    :func:`topi.x86.conv2d.schedule_conv2d_NCHWc`: the same register tile, the config
    the conv stage was computed with."""
    from topi.config import current_target
    from topi.x86.conv2d import _find_conv, _schedule_accumulator, _schedule_inputs, _tile_output

    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    out_op = outs[0].op
    conv_op = _find_conv(s, out_op)
    cfg = conv_op.attrs["config"]
    _schedule_inputs(s, conv_op, current_target().lanes(conv_op.output(0).dtype))
    conv = conv_op.output(0)
    if conv_op is out_op:
        conv = s.cache_write(conv, "local")
    wo = _tile_output(s, out_op, cfg, cfg["oc_bn"])
    s[conv].compute_at(s[out_op], wo)
    _schedule_accumulator(s, conv, cfg)
    return s


register_template(GROUP_TEMPLATE, group_conv2d_space, group_conv2d_rule,
                  doc="grouped conv in NCHW[x]c, blocks spanning groups (group_conv2d_NCHWc_x86)")
