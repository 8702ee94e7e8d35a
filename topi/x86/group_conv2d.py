"""x86 grouped conv2d in NCHW[x]c whose blocks need not divide a group's channels.

ShuffleNet's grouped 1x1 convs have 28 / 34 / 68 channels a group: no block of
a vector divides them, yet the blocked layout pays off only if they run in
it.  Here the blocks are the whole tensor's.  Output block ``oc`` (lanes
``oc*oc_bn ..``) belongs to group ``g0(oc)``, or straddles ``g0`` and
``g0 + 1`` (when a group has at least ``oc_bn`` channels).  Two layouts of the
packed kernel, both ``[rows, span, KH, KW, ic_bn, oc_bn]`` with zeros where an
input channel is not in the output lane's group:

* split (a block spans at most two groups, some do): ``span`` covers one
  group's inputs; row ``oc`` holds the lanes of ``g0(oc)``, and ``groups - 1``
  extra rows (``fix``) hold, for the block at each group boundary, the lanes
  of the group that starts inside it::

      conv[n, oc, y, x, ob] += data_pad[n, start(g0(oc)) + s, y*sh + kh*dh, x*sw + kw*dw, ici]
                               * kernel[oc, s, kh, kw, ici, ob]                    # s < span
      fix[n, g-1, y, x, ob] += data_pad[n, start(g) + s, ...] * kernel[OCc + g - 1, s, ...]
      out[n, oc, y, x, ob]   = conv[..] + (g1(oc) != g0(oc) ? fix[n, g1(oc) - 1, y, x, ob] : 0)

  ShuffleNet's 136 -> 136 in 4 groups by 8: 17 + 3 rows of 5 input blocks
  (100 block pairs) where one span over both groups of a straddling block
  would take 17 rows of 9 (153);
* span (otherwise): one row per output block over ``span`` input blocks that
  cover every group its lanes belong to.

When the blocks divide each group's channels both are the grouped
``conv2d_NCHWc`` (``span = ICg / ic_bn``, no fix rows).  ``start(g) =
min(g*ICg // ic_bn, ICc - span)``.  The layout is a function of (IC, OC,
groups, ic_bn, oc_bn): :func:`group_blocks`.
"""

from __future__ import annotations

from typing import NamedTuple

import te
from topi import tag
from tune.autotvm.config import check_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.nn.conv2d import group_conv2d_nchw
from topi.utils import get_const_tuple
from topi.x86.conv2d_nchwc import padded_input
from topi.config import records_target

GROUP_TEMPLATE = "group_conv2d_NCHWc.x86"
FIX_TAG = "conv2d_NCHWc_group_fix"  # the boundary rows' stage (computed at root, not inlined)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


class GroupBlocks(NamedTuple):
    """How a grouped conv's packed kernel is laid out (see the module docstring)."""

    span: int  # input blocks each row reduces over
    starts: list  # first input block of each output block's row
    fix: int  # boundary rows after the OC/oc_bn output rows (0: the span layout)


def group_blocks(ic: int, oc: int, groups: int, ic_bn: int, oc_bn: int) -> GroupBlocks:
    """The kernel layout of a grouped conv blocked by (ic_bn, oc_bn)."""
    icg, ocg, icc, occ = ic // groups, oc // groups, ic // ic_bn, oc // oc_bn
    first = [o * oc_bn // ocg for o in range(occ)]
    last = [(o * oc_bn + oc_bn - 1) // ocg for o in range(occ)]
    if groups > 1 and ocg >= oc_bn and first != last:
        span = max(_ceil((g + 1) * icg, ic_bn) - g * icg // ic_bn for g in range(groups))
        return GroupBlocks(span, [min(g * icg // ic_bn, icc - span) for g in first], groups - 1)
    lo = [g * icg // ic_bn for g in first]
    span = max(_ceil((g + 1) * icg, ic_bn) - start for g, start in zip(last, lo))
    return GroupBlocks(span, [min(start, icc - span) for start in lo], 0)


def _rows(ic: int, oc: int, groups: int, ic_bn: int, oc_bn: int):
    """(row, first input block, output channel, its group) of every packed kernel lane."""
    icg, ocg, icc = ic // groups, oc // groups, ic // ic_bn
    lay = group_blocks(ic, oc, groups, ic_bn, oc_bn)
    for o, start in enumerate(lay.starts):
        for ob in range(oc_bn):
            co = o * oc_bn + ob
            if not lay.fix or co // ocg == o * oc_bn // ocg:
                yield o, start, co, co // ocg
    for k in range(lay.fix):
        g = k + 1
        o = g * ocg // oc_bn
        for ob in range(oc_bn):
            co = o * oc_bn + ob
            if co // ocg == g and o * oc_bn // ocg != g:
                yield oc // oc_bn + k, min(g * icg // ic_bn, icc - lay.span), co, g


def pack_group_kernel_numpy(kernel, groups: int, ic_bn: int, oc_bn: int):
    """``[OC, ICg, KH, KW] -> [rows, span, KH, KW, ic_bn, oc_bn]`` (:func:`group_blocks`)."""
    import numpy as np

    oc, icg, kh, kw = kernel.shape
    ic = icg * groups
    lay = group_blocks(ic, oc, groups, ic_bn, oc_bn)
    out = np.zeros((oc // oc_bn + lay.fix, lay.span, kh, kw, ic_bn, oc_bn), kernel.dtype)
    for row, start, co, g in _rows(ic, oc, groups, ic_bn, oc_bn):
        rel = np.arange(g * icg, (g + 1) * icg) - start * ic_bn  # the group's inputs, from the row's first block
        out[row, rel // ic_bn, :, :, rel % ic_bn, co % oc_bn] = kernel[co]
    return out


def unpack_group_kernel_numpy(packed, ic: int, oc: int, groups: int):
    """The inverse of :func:`pack_group_kernel_numpy` (``ic``, ``oc``: the conv's channels)."""
    import numpy as np

    _, _, kh, kw, ic_bn, oc_bn = packed.shape
    icg = ic // groups
    out = np.zeros((oc, icg, kh, kw), packed.dtype)
    for row, start, co, g in _rows(ic, oc, groups, ic_bn, oc_bn):
        rel = np.arange(g * icg, (g + 1) * icg) - start * ic_bn
        out[co] = packed[row, rel // ic_bn, :, :, rel % ic_bn, co % oc_bn]
    return out


# ------------------------------------------------------------- template ---
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
    from topi.x86.conv2d_rule import OC_BLOCKS

    ic, oc = _group_geometry(workload)[:2]
    return {"ic_bn": divisors(ic, 64), "oc_bn": [b for b in OC_BLOCKS if oc % b == 0],
            "ow_bn": list(range(1, max_accumulators(target) + 1)), "unroll_kw": [True, False]}


def group_conv2d_rule(workload: tuple, target) -> dict:
    """Blocks of a whole vector where they divide each group's channels (no zeros in the
    kernel), else a vector across groups where it divides the channels (ShuffleNet's
    544 -> 544 in 4 groups at 7x7 runs 1.5x faster by 16 across groups than by 8 within
    them), else the widest block of ``OC_BLOCKS`` that does; ``ow_bn`` and ``unroll_kw``
    as ``conv2d_rule``."""
    from topi.config import largest_divisor, max_accumulators

    ic, oc, icg, ocg, ow, kw = _group_geometry(workload)
    vec, max_acc = target.lanes(workload[-1]), max_accumulators(target)
    cands = group_conv2d_space(workload, target)["oc_bn"]
    if not cands:
        raise ValueError(f"{GROUP_TEMPLATE}: {oc} output channels cannot be blocked (need a multiple of 8)")
    exact = [b for b in cands if b <= vec and ocg % b == 0]
    if exact and largest_divisor(icg, vec) >= 8 and (max(exact) == vec or vec not in cands):
        oc_bn, ic_bn = max(exact), largest_divisor(icg, vec)
    else:
        oc_bn, ic_bn = max([b for b in cands if b <= vec] or cands[:1]), largest_divisor(ic, vec)
    max_w = max(1, max_acc // max(1, _ceil(oc_bn, vec)))
    ow_bn = largest_divisor(ow, max_w)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_w, 8)
    return {"ic_bn": ic_bn, "oc_bn": oc_bn, "ow_bn": ow_bn, "unroll_kw": kw <= 3}


register_rule(GROUP_TEMPLATE, group_conv2d_space, group_conv2d_rule,
                  doc="grouped conv in NCHW[x]c, blocks need not divide a group (group_conv2d_NCHWc_x86)")


# ------------------------------------------------------------- compute ---
def group_conv2d_NCHWc_x86(data, kernel, stride, padding, dilation, groups: int, cfg: ConfigEntity):
    """Grouped blocked conv whose blocks need not divide a group's channels (module docstring).

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC/ic_bn, H, W, ic_bn]`` or ``[N, IC, H, W]`` (packed inside the kernel).
    kernel : te.Tensor
        ``[rows, span, KH, KW, ic_bn, oc_bn]`` from :func:`pack_group_kernel_numpy`.
    stride, padding, dilation
        As in :func:`topi.nn.conv2d_nchw`.
    groups : int
        The conv's groups.
    cfg : ConfigEntity
        A :data:`GROUP_TEMPLATE` config; its workload gives the output channels, its blocks
        must be the kernel's.

    Returns
    -------
    te.Tensor
        ``[N, OC/oc_bn, OH, OW, oc_bn]``: the ``conv2d_NCHWc`` stage, or an injective stage
        over it (the boundary rows added, the padded columns cropped).
    """
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    _, span, kh, kw, ic_bn, oc_bn = kshape
    ic = dshape[1] * (dshape[4] if len(dshape) == 5 else 1)
    oc = cfg.workload[2][0]
    if len(dshape) == 5 and dshape[4] != ic_bn or ic % groups or oc % groups:
        raise ValueError(f"group_conv2d_NCHWc_x86: data {dshape}, kernel {kshape} and groups={groups} do not "
                         f"match (data blocks must be the kernel's ic_bn, channels divisible by groups)")
    lay = group_blocks(ic, oc, groups, ic_bn, oc_bn)
    if (kshape[0], span) != (oc // oc_bn + lay.fix, lay.span):
        raise ValueError(f"group_conv2d_NCHWc_x86: kernel {kshape} is not packed for IC={ic}, OC={oc}, "
                         f"groups={groups}; use pack_group_kernel_numpy")
    plain_d, plain_k = (dshape[0], ic, *dshape[2:4]), (oc, ic // groups, kh, kw)
    probe = group_conv2d_nchw(te.placeholder(plain_d, data.dtype), te.placeholder(plain_k, kernel.dtype),
                              stride, padding, dilation, groups)  # validates
    _, _, _, st, pads, dil, _, _ = probe.op.attrs["workload"]
    key = group_conv2d_workload(plain_d, plain_k, st, pads, dil, groups, data.dtype)
    check_config(cfg, key)
    if (cfg["ic_bn"].val, cfg["oc_bn"].val) != (ic_bn, oc_bn):
        raise ValueError(f"group_conv2d_NCHWc_x86: config blocks ({cfg['ic_bn'].val}, "
                         f"{cfg['oc_bn'].val}) differ from the kernel's ({ic_bn}, {oc_bn})")
    _, _, oh, ow = get_const_tuple(probe.shape)
    dvec = padded_input(data, ic_bn, pads)
    geo = (ic, oc, groups, (oh, ow), st, dil)
    conv = _rows_conv(dvec, kernel, geo, 0, oc // oc_bn, "conv2d_NCHWc", tag.CONV2D_NCHWC,
                      {"workload": key, "config": cfg})
    if lay.fix:
        fix = _rows_conv(dvec, kernel, geo, oc // oc_bn, lay.fix, "conv2d_NCHWc_fix", FIX_TAG, {})
        conv = _add_boundaries(conv, fix, oc // groups, oc_bn, ow)
    return conv


def _rows_conv(dvec, kernel, geo: tuple, row0: int, rows: int, name: str, tag_name: str, attrs: dict):
    """Rows ``row0 ..`` of the packed kernel over their input blocks: output block ``o`` of
    the stage starts at ``start(g)``, ``g`` = the group of its first lane (output rows) or
    ``o + 1`` (boundary rows)."""
    ic, oc, groups, out_hw, (sh, sw), (dh, dw) = geo
    _, span, kh, kw, ic_bn, oc_bn = get_const_tuple(kernel.shape)
    icg, ocg, icc = ic // groups, oc // groups, ic // ic_bn
    rs = te.reduce_axis((0, span), "ic_outer")
    ry, rx = te.reduce_axis((0, kh), "kh"), te.reduce_axis((0, kw), "kw")
    ici = te.reduce_axis((0, ic_bn), "ic_inner")
    groups_of = [o * oc_bn // ocg for o in range(rows)] if row0 == 0 else [o + 1 for o in range(rows)]
    clamp = any(g * icg // ic_bn > icc - span for g in groups_of)

    def start(o):
        g = o * oc_bn // ocg if row0 == 0 else o + 1
        return te.min(g * icg // ic_bn, icc - span) if clamp else g * icg // ic_bn

    return te.compute(
        (get_const_tuple(dvec.shape)[0], rows, out_hw[0], out_hw[1], oc_bn),
        lambda b, o, y, x, ob: te.sum(
            dvec[b, start(o) + rs, y * sh + ry * dh, x * sw + rx * dw, ici] * kernel[row0 + o, rs, ry, rx, ici, ob],
            axis=[rs, ry, rx, ici]),
        name=name, tag=tag_name, attrs=attrs,
    )


def _add_boundaries(conv, fix, ocg: int, oc_bn: int, ow: int):
    """``conv`` plus, in each block that straddles a group boundary, the boundary row (cropped to ``ow``)."""
    n, occ, oh, _, _ = get_const_tuple(conv.shape)
    zero = te.const(0.0, conv.dtype)

    def body(b, c, y, x, cb):
        g0, g1 = c * oc_bn // ocg, (c * oc_bn + oc_bn - 1) // ocg
        return conv[b, c, y, x, cb] + te.if_then_else(g1 != g0, fix[b, te.max(g1 - 1, 0), y, x, cb], zero)

    return te.compute((n, occ, oh, ow, oc_bn), body, name="conv2d_NCHWc_groups", tag=tag.INJECTIVE)


# ------------------------------------------------------------ schedule ---
def _stages(s, out_op):
    """(conv, fix or None): the anchor stages under ``out_op``; the stages between are inlined."""
    conv = fix = None
    stack, seen, between = [out_op], set(), []
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.tag in (tag.CONV2D_NCHWC, FIX_TAG):
            conv, fix = (op, fix) if op.tag == tag.CONV2D_NCHWC else (conv, op)
            continue
        between.append(op)
        stack.extend(t.op for t in op.input_tensors)
    if conv is None:
        raise ValueError(f"schedule_group_conv2d_NCHWc: no conv2d_NCHWc stage under output '{out_op.name}'")
    for op in between:
        if op is not out_op:
            s[op].compute_inline()
    return conv, fix


@records_target
def schedule_group_conv2d_NCHWc(outs):
    """Schedule :func:`group_conv2d_NCHWc_x86` and its elementwise epilogue: the register tile
    of ``topi.x86.conv2d_schedule.schedule_conv2d_NCHWc`` for the output rows (in the output loop)
    and for the boundary rows (at the root, before it)."""
    from tune.autotvm.config import current_target
    from topi.x86.conv2d_schedule import _schedule_accumulator, _schedule_inputs, _tile_output

    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    out_op = outs[0].op
    conv_op, fix_op = _stages(s, out_op)
    cfg = conv_op.attrs["config"]
    _schedule_inputs(s, conv_op, current_target().lanes(conv_op.output(0).dtype))
    conv = conv_op.output(0)
    if conv_op is out_op:
        conv = s.cache_write(conv, "local")
    wo = _tile_output(s, out_op, cfg, cfg["oc_bn"].val)
    s[conv].compute_at(s[out_op], wo)
    _schedule_accumulator(s, conv, cfg)
    if fix_op is not None:
        fix = fix_op.output(0)
        acc = s.cache_write(fix, "local")
        fwo = _tile_output(s, fix_op, cfg, cfg["oc_bn"].val)
        s[acc].compute_at(s[fix], fwo)
        _schedule_accumulator(s, acc, cfg)
    return s
