"""Schedules of the x86 blocked conv2d (:mod:`topi.x86.conv2d`) and of NCHW/NHWC convs.

The blocked conv keeps a register tile of ``ow_bn`` output columns x ``oc_bn``
output channels while the reduction streams over ``(ic_outer, kh, kw, ic_inner)``;
the packing stages run at the root, the unpacking and any elementwise epilogue in
the output loop.  With ``ic_chunk``, the conv of one output block runs over its whole
plane per chunk of input channels (the chunk's weights stay in L1 across the column
tiles, the partial sums in a buffer of the plane), the epilogue after it::

    parallel (n, oc block, row part):
        for (ic chunk) for (row) for (column tile) { tile += chunk }   // conv2d_NCHWc
        for (row) for (column tile) { out = epilogue(conv) }

Chunked and flattened convs cut their rows into parts (:func:`plane_parts`) where the
channel blocks alone are too few tasks to keep the threads busy.
"""

from __future__ import annotations

import os

import te
from codegen.parallel import finish_time, task_ranges
from topi import tag
from topi.utils import find_anchor, get_const_tuple
from topi.x86.conv2d_rule import TEMPLATE, blocks_config, conv2d_blockable, conv2d_key, default_conv2d_config
from topi.x86.conv_direct import schedule_direct
from tune.autotvm.config import check_config, current_target
from tune.autotvm.space import ConfigEntity
from topi.config import records_target

# plane_parts: at most this many parts of a plane; the slack between part counts; a slower thread's speed
MAX_PARTS, PART_SLACK, SLOW_THREAD = 16, 0.02, 0.75

# A 1x1 stride-1 unpadded conv reads NCHW data in place where its plane holds at least this many
# points (packing would only copy it); smaller planes and strided convs read a packed copy.
IN_PLACE_MIN_PLANE = 14 * 14


def _threads() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def _find_conv(s, out_op):
    """The conv2d_NCHWc anchor under ``out_op`` (the stages between are inlined)."""
    anchor, _ = find_anchor(s, out_op, lambda op: op.tag == tag.CONV2D_NCHWC)
    if anchor is None:
        raise ValueError(f"schedule_conv2d_NCHWc: no conv2d_NCHWc stage under output '{out_op.name}'")
    return anchor


def _has_conv(out_op) -> bool:
    return find_anchor(None, out_op, lambda op: op.tag == tag.CONV2D_NCHWC, inline=False)[0] is not None


def _reads_in_place(conv_op, data_vec_op) -> bool:
    """A 1x1, stride-1, unpadded conv over a wide enough plane reads NCHW data in place:
    packing would only copy it (the register tile broadcasts one scalar per
    channel and column either way); on small planes and with stride 2 the packed copy's
    contiguous reads win (``IN_PLACE_MIN_PLANE``; ``benchmarks/model_layers.py`` per layer)."""
    wl = conv_op.attrs.get("workload")
    if data_vec_op.name != "data_vec" or wl is None or wl[0] not in ("conv2d_nchw", TEMPLATE):
        return False
    _, dshape, kshape, stride, pads = wl[:5]
    _, _, oh, ow, _ = get_const_tuple(conv_op.output(0).shape)
    return (tuple(kshape[2:4]) == (1, 1) and tuple(stride) == (1, 1) and not any(pads)
            and ow == dshape[3] and oh * ow >= IN_PLACE_MIN_PLANE)


def _schedule_inputs(s, conv_op, vec: int) -> None:
    """Compute packing stages at the root, parallel and vectorized; inline the data packing
    where the conv reads the data in place, and the zero padding of blocked data (the lowering
    then skips the taps that read it, cheaper than reading a padded copy) unless the conv runs
    over its plane flattened (``flat``: a column tile crosses rows)."""
    stack = list(conv_op.input_tensors)
    while stack:
        t = stack.pop()
        op = t.op
        if not isinstance(op, te.ComputeOp):
            continue
        if _reads_in_place(conv_op, op) or (op.name == "data_pad" and not conv_op.attrs.get("flat")):
            s[op].compute_inline()
            continue
        axes = list(s[op].op.axis)
        fused = s[op].fuse(*axes[:3])
        s[op].parallel(fused)
        last = get_const_tuple(t.shape)[-1]
        if op.name == "kernel_vec" or last >= vec // 2:
            inner = s[op].split(axes[-1], factor=vec)[1] if last > vec else axes[-1]
            s[op].vectorize(inner)  # one vector of the target at a time


def _schedule_accumulator(s, conv, cfg: ConfigEntity, lanes: int = 0, ic_blocks: int = 0) -> None:
    """The register tile: reduction outside, ``ic_inner``/``ow`` unrolled, ``oc`` vectorized.
    ``ic_blocks``: the conv runs over its whole plane (computed at the output's channel
    block), tiled by ``ow_bn`` columns, per chunk of that many input blocks."""
    n, occ, oh, ow, ocb = s[conv].op.axis
    ico, kh, kw, ici = s[conv].op.reduce_axis
    outer = (n, occ, oh)
    if ic_blocks:
        chunk, ico = s[conv].split(ico, factor=ic_blocks)
        wo, ow = s[conv].split(ow, factor=cfg["ow_bn"].val)
        outer = (n, occ, chunk, oh, wo)
    if cfg["unroll_kw"].val:
        s[conv].reorder(*outer, ico, kh, ici, kw, ow, ocb)
        s[conv].unroll(kw)
    else:
        s[conv].reorder(*outer, ico, kh, kw, ici, ow, ocb)
    s[conv].unroll(ici)
    s[conv].unroll(ow)
    if lanes and get_const_tuple(conv.shape)[4] > lanes:
        # a reblocked output reads the tile by its blocks: the tile in vectors of that width, so
        # every access of it has one type (LLVM keeps it in registers; mixed widths it does not)
        ocb, lane = s[conv].split(ocb, factor=lanes)
        s[conv].unroll(ocb)
        ocb = lane
    s[conv].vectorize(ocb)


def plane_parts(blocks: int, rows: int, width: int = 1, tile: int = 1, threads: int | None = None) -> int:
    """In how many parts (a divisor of ``rows``: no part is partial) to cut the rows of each of
    ``blocks`` parallel channel blocks, so that the pool's tasks (``codegen.parallel.task_ranges``,
    handed out as ``codegen.parallel.finish_time`` simulates) keep ``threads`` threads busy to
    the end.  A part of ``r`` rows costs ``ceil(r*width/tile)`` column tiles (a flattened plane:
    ``width`` columns a row, ``tile`` a tile; else a row each).  The fewest parts whose simulated
    finish, with equal threads and with one at ``SLOW_THREAD`` speed (a shared vCPU), is within
    ``PART_SLACK`` of the best.
    MobileNet-v2's 32 -> 16 1x1 conv at 112x112 (one channel block) ran on one thread; its
    16 -> 96 (six blocks) in four tasks of 1, 2, 1, 2 blocks kept one thread busy 4 blocks of 6."""
    threads = threads or _threads()
    if threads <= 1:
        return 1
    whole = blocks * -(-rows * width // tile)
    scores = {}
    for parts in (p for p in range(1, min(rows, MAX_PARTS) + 1) if rows % p == 0):
        sizes = [-(-(rows // parts) * width // tile)] * (parts * blocks)
        tasks = [sum(sizes[a:b]) for a, b in task_ranges(len(sizes), threads)]
        scores[parts] = max(finish_time(tasks, speeds) * sum(speeds) / whole
                            for speeds in ((1.0,) * threads, (1.0,) * (threads - 1) + (SLOW_THREAD,)))
    best = min(scores.values())
    return min(p for p, score in scores.items() if score <= best * (1 + PART_SLACK))


def _tile_output(s, out, cfg: ConfigEntity, ocb: int, flat: bool = False, chunked: bool = False):
    """Split the output into (parallel rows, column tiles); return the attach axis (the column
    tiles; ``chunked``: the parallel channel blocks, the rows inside them).

    A 5-D output is NCHW[x]c (in blocks of ``ocb``, or of a divisor of it: a reblocked
    output, ``topi.x86.conv2d_nchwc.reblock_output``, whose blocks of one conv block are
    unrolled, the last conv block's padded ones skipped); a 4-D output is NCHW (the
    unpacked form), whose channels are split by ``ocb`` to meet the accumulator's blocks.
    ``flat``: the rows fused into one before the column tiles (a flattened
    plane's conv), the channel blocks parallel.
    """
    axes = s[out].op.axis
    blocks = []  # the output's channel blocks in one conv block (a reblocked output)
    if len(axes) == 5:
        n, occ, oh, ow, ob = axes
        if ocb > get_const_tuple(out.shape)[4]:
            occ, oci = s[out].split(occ, factor=ocb // get_const_tuple(out.shape)[4])
            blocks = [oci]
    else:
        n, c, oh, ow = axes
        occ, ob = s[out].split(c, factor=ocb)
    part = ()
    if flat or chunked:  # the rows in parts: parallel units beside the few channel blocks
        shape = get_const_tuple(out.shape)
        units = shape[0] * -(-shape[1] * (shape[4] if len(shape) == 5 else 1) // ocb)
        parts = plane_parts(units, shape[2], *((shape[3], cfg["ow_bn"].val) if flat else ()))
        if parts > 1:
            po, oh = s[out].split(oh, nparts=parts)
            part = (po,)
    if flat:
        ow = s[out].fuse(oh, ow)
    wo, wi = s[out].split(ow, factor=cfg["ow_bn"].val)
    outer = (n, occ, *part, wo) if flat else (n, occ, *part, oh, wo)
    if len(axes) == 5:
        s[out].reorder(*outer, *blocks, wi, ob)
        for b in blocks:
            s[out].unroll(b)
        s[out].vectorize(ob)
    else:
        s[out].reorder(*outer, ob, wi)
        s[out].unroll(ob)
    s[out].unroll(wi)
    par = s[out].fuse(n, occ, *part) if flat or chunked else s[out].fuse(n, occ, oh)
    s[out].parallel(par)
    return par if chunked else wo


def conv_config(conv_op, cfg: ConfigEntity | None = None) -> ConfigEntity:
    """The config a schedule uses for ``conv_op``: ``cfg`` (which must be for its workload
    and blocks; its ``ow_bn`` and ``unroll_kw`` may differ from the compute's), else the
    one it was computed with, else the chosen one for its blocks."""
    key = conv2d_key(conv_op.attrs["workload"])
    kernel = next(t for t in conv_op.input_tensors if len(t.shape) == 6)
    ic_bn, oc_bn = get_const_tuple(kernel.shape)[4:]
    flat = bool(conv_op.attrs.get("flat"))
    if cfg is None:
        cfg = conv_op.attrs.get("config") or (default_conv2d_config(key) if conv2d_blockable(key) else None)
        if cfg is None:  # groups the template would not block, blocked by the tensors
            return blocks_config(key, None, ic_bn, oc_bn)
        if (cfg["ic_bn"].val, cfg["oc_bn"].val, cfg.values.get("flat", False)) != (ic_bn, oc_bn, flat):
            cfg = blocks_config(key, {**cfg.values, "flat": flat}, ic_bn, oc_bn)
        return cfg
    check_config(cfg, key)
    if (cfg["ic_bn"].val, cfg["oc_bn"].val) != (ic_bn, oc_bn):
        raise ValueError(f"schedule_conv2d_NCHWc: config blocks (ic_bn={cfg['ic_bn'].val}, "
                         f"oc_bn={cfg['oc_bn'].val}) differ from the conv's (ic_bn={ic_bn}, oc_bn={oc_bn})")
    if cfg["flat"].val != flat:
        raise ValueError(f"schedule_conv2d_NCHWc: config knob flat={cfg['flat'].val} but the conv was "
                         f"computed with flat={flat} (its plane {'flattened' if flat else 'in rows'}); "
                         f"compute with the config you schedule with")
    return cfg


def _schedule_nchwc(s, out_op, cfg: ConfigEntity | None = None, target=None):
    conv_op = _find_conv(s, out_op)
    cfg = conv_config(conv_op, cfg)
    ocb = cfg["oc_bn"].val
    _schedule_inputs(s, conv_op, (target or current_target()).lanes(conv_op.output(0).dtype))
    conv = conv_op.output(0)
    if conv_op is out_op:
        conv = s.cache_write(conv, "local")
    chunk = cfg["ic_chunk"].val
    at = _tile_output(s, out_op, cfg, ocb, cfg["flat"].val, chunked=bool(chunk))
    s[conv].compute_at(s[out_op], at)
    out_shape = get_const_tuple(out_op.output(0).shape)
    reblocked = out_shape[4] if len(out_shape) == 5 and out_shape[4] < ocb else 0
    _schedule_accumulator(s, conv, cfg, reblocked, max(1, chunk // cfg["ic_bn"].val) if chunk else 0)
    return s


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


@records_target
def schedule_conv2d_NCHWc(outs, cfg: ConfigEntity | None = None, target=None):
    """Schedule ``conv2d_NCHWc`` (and any injective epilogue on its output).

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        The output: the conv itself, or an epilogue (bias add, relu, unpack
        to NCHW) computed from it; the epilogue is fused into the output loop.
    cfg : ConfigEntity, optional
        The conv's config (default: the one it was computed with); one for
        another workload, or with blocks other than the tensors', is a ``ValueError``.
    target : Target, optional
        The CPU it is for (default: the current one).
    """
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    _schedule_nchwc(s, outs[0].op, cfg, target)
    return s


@records_target
def schedule_conv2d_nchw(outs, cfg: ConfigEntity | None = None, target=None):
    """Schedule an NCHW conv for ``target`` (default: the current one): the blocked path for
    :func:`conv2d_nchw_x86` outputs, a direct register-tiled schedule for plain (or grouped)
    ``topi.nn.conv2d_nchw`` (``cfg`` is then a ``conv_direct.x86`` config)."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    if not _has_conv(outs[0].op):
        return schedule_direct(s, outs[0].op, channels_last=False, cfg=cfg)
    return _schedule_nchwc(s, outs[0].op, cfg, target)


@records_target
def schedule_conv2d_nhwc(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.conv2d_nhwc``: output channels vectorized, rows parallel."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=True, cfg=cfg)
