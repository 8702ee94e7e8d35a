"""x86 schedules of depthwise conv2d: vectorize along W (NCHW) or channels (NHWC).

NCHW: one parallel task per (n, channel) plane; the plane's padding is
computed inside the task (it stays in cache), and each block of ``rows``
output rows accumulates in registers, ``vec`` columns per vector::

    parallel (n.c.fused, 0, N*C)
      PadInput plane = pad(data[n, c])                 // in L1/L2
      for (y.outer, 0, OH/rows)
        rows.local[rows, OW] = 0
        for (x.outer): unrolled (ry, rx): unrolled (y.inner, 0, rows): vectorized (x.inner, 0, vec)
          rows.local[y.inner, x] += PadInput[y + ry, x + rx] * kernel[c, ry, rx]
        out[n, c, y.outer*rows : +rows, :] = rows.local

Every choice comes from a config (``tune.autotvm.config``)
(:func:`default_depthwise_conv2d_config`).
"""

from __future__ import annotations

import te
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.utils import find_anchor, get_const_tuple
from topi.config import max_accumulators, records_target

TEMPLATE_NCHW = "depthwise_conv2d_nchw.x86"
TEMPLATE_NHWC = "depthwise_conv2d_nhwc.x86"


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def _anchor(s, out_op, tag_name: str):
    """The depthwise stage under ``out_op``; injective stages between are inlined."""
    anchor, _ = find_anchor(s, out_op, lambda op: op.tag == tag_name)
    if anchor is None:
        raise ValueError(f"schedule: no '{tag_name}' stage under output '{out_op.name}'")
    return anchor


def depthwise_workload(out_shape: tuple, layout: str = "NCHW", dtype: str = "float32",
                       kernel: tuple | None = None) -> tuple:
    """The workload key of a depthwise schedule: the output shape decides every knob, and for
    NCHW the kernel's ``(KH, KW)`` when given (the row tile pays for many taps only)."""
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"default_depthwise_conv2d_config: layout {layout!r} is not one of 'NCHW', 'NHWC'")
    key = (TEMPLATE_NCHW if layout == "NCHW" else TEMPLATE_NHWC, tuple(int(d) for d in out_shape), str(dtype))
    return key + (tuple(int(d) for d in kernel),) if kernel is not None and layout == "NCHW" else key


def depthwise_space(workload: tuple, target) -> dict:
    space = {"vec": list(range(1, 33)), "unroll_taps": [True, False]}
    if workload[0] == TEMPLATE_NHWC:
        space["pad_vec_max"] = [0, 64, 256, 1024]
    else:
        space["rows"] = [r for r in range(1, 9) if workload[1][2] % r == 0]
    return space


def depthwise_rule(workload: tuple, target) -> dict:
    """* ``vec``: lanes along the vectorized axis (``OW`` for NCHW, channels for
      NHWC): one vector of the target, or half of one when the row is a
      multiple of half a vector narrower than a whole one;
    * ``unroll_taps``: unroll the kernel rows and columns around each vector;
    * ``pad_vec_max`` (NHWC only): vectorize the padding stage's channel axis
      when there are at most this many channels;
    * ``rows`` (NCHW only): output rows of a register tile, each an independent chain of
      FMAs over the taps: the largest divisor of ``OH`` up to the target's accumulators, half
      of them when a row ends in a partial vector (its accumulators join the tile; 7 rows of
      14 columns spilled); one row, one chain, ran ConvNeXt's 7x7 at half the speed
      (``benchmarks/topi_conv.py dw``),
      from ``ROW_TILE_TAPS`` kernel taps on, else 1 (a workload without its kernel: 1).
    """
    vec = target.lanes(workload[2])
    n = workload[1][3]
    values = {"vec": vec if n >= vec or n % (vec // 2) else vec // 2, "unroll_taps": True}
    if workload[0] == TEMPLATE_NHWC:
        values["pad_vec_max"] = 64
    elif len(workload) > 3 and workload[3][0] * workload[3][1] >= ROW_TILE_TAPS:
        v = values["vec"]
        pieces = 2 if n > v and n % v else 1  # a row's last, partial vector joins the tile
        budget = max_accumulators(target) // pieces
        values["rows"] = max(r for r in range(1, budget + 1) if workload[1][2] % r == 0)
    else:
        values["rows"] = 1
    return values


# Kernel taps from which the NCHW rule tiles rows: a 5x5 or 7x7 tap chain per row is latency-bound
# (rows 7: 0.5x -> 1x the time of rows 1 at 14x14 7x7, 1.7x faster at 5x5).  A 3x3 one gains
# 0-20% and loses as much at 112 columns (its 9 tap broadcasts beside 8 accumulators spill).
ROW_TILE_TAPS = 25


register_rule(TEMPLATE_NCHW, depthwise_space, depthwise_rule, doc="depthwise conv2d, NCHW",
              legacy={"rows": 1})  # records before the row tile ran one row at a time
register_rule(TEMPLATE_NHWC, depthwise_space, depthwise_rule, doc="depthwise conv2d, NHWC")


def default_depthwise_conv2d_config(out_shape: tuple, layout: str = "NCHW",
                                    dtype: str = "float32", kernel: tuple | None = None) -> ConfigEntity:
    """The chosen config (see :func:`depthwise_rule`) of a depthwise conv with output ``out_shape``
    (and, NCHW, kernel ``(KH, KW)``)."""
    return choose_config(depthwise_workload(out_shape, layout, dtype, kernel))


def _config(out, layout: str, cfg: ConfigEntity | None, kernel: tuple | None = None) -> ConfigEntity:
    key = depthwise_workload(get_const_tuple(out.shape), layout, out.dtype, kernel)
    if cfg is not None and len(cfg.workload) == 3 and len(key) > 3:
        key = key[:3]  # a config made for the workload without its kernel (classic callers, records)
    return choose_config(key) if cfg is None else check_config(cfg, key)


def _padding_stage(conv_op):
    for t in conv_op.input_tensors:
        if isinstance(t.op, te.ComputeOp) and t.op.name == "PadInput":
            return t
    return None


def _row_tiles(s, st, cfg: ConfigEntity) -> None:
    """Per ``rows`` output rows: ``x`` in vectors, the taps (unrolled) around each vector, the
    rows unrolled inside them (independent accumulators)."""
    _, _, y, x = s[st].op.axis
    ry, rx = s[st].op.reduce_axis
    xo, xi = s[st].split(x, factor=cfg["vec"].val)
    yo, yi = s[st].split(y, factor=cfg["rows"].val)
    s[st].reorder(yo, xo, ry, rx, yi, xi)
    s[st].unroll(yi)
    if cfg["unroll_taps"].val:
        s[st].unroll(ry)
        s[st].unroll(rx)
    s[st].vectorize(xi)


@records_target
def schedule_depthwise_conv2d_nchw(outs, cfg: ConfigEntity | None = None):
    """Schedule ``depthwise_conv2d_nchw`` (with any fused epilogue).

    One task per (n, channel) plane; the padded plane is computed inside the
    task, and an epilogue reads the conv's plane while it is still in cache.

    Parameters
    ----------
    outs : te.Tensor or list
        The conv output, or an injective epilogue of it.
    cfg : ConfigEntity, optional
        Knobs (default :func:`default_depthwise_conv2d_config`).
    """
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nchw")
    conv = conv_op.output(0)
    cfg = _config(out, "NCHW", cfg, tuple(int(r.dom.extent.value) for r in conv_op.reduce_axis))
    n, c, _, x = s[out].op.axis
    fused = s[out].fuse(n, c)
    s[out].parallel(fused)
    padded = _padding_stage(conv_op)
    _row_tiles(s, conv, cfg)
    if conv_op is not out.op:
        _xo, xi = s[out].split(x, factor=cfg["vec"].val)
        s[out].vectorize(xi)
        s[conv].compute_at(s[out], fused)
        if padded is not None:
            s[padded].compute_at(s[conv], s[conv].op.axis[1])
    elif padded is not None:
        s[padded].compute_at(s[out], fused)
    return s


@records_target
def schedule_depthwise_conv2d_nhwc(outs, cfg: ConfigEntity | None = None):
    """Schedule ``depthwise_conv2d_nhwc``: channels vectorized, rows parallel.

    Parameters
    ----------
    outs : te.Tensor or list
        The conv output, or an injective epilogue of it.
    cfg : ConfigEntity, optional
        Knobs (default :func:`default_depthwise_conv2d_config` with ``layout="NHWC"``).
    """
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nhwc")
    conv = conv_op.output(0)
    cfg = _config(out, "NHWC", cfg)
    acc = s.cache_write(conv, "local") if conv_op is out.op else conv
    n, y, x, f = s[out].op.axis
    fo, fi = s[out].split(f, factor=cfg["vec"].val)
    s[out].reorder(n, y, x, fo, fi)
    fused = s[out].fuse(n, y)
    s[out].parallel(fused)
    s[out].vectorize(fi)
    s[acc].compute_at(s[out], fo)
    _, _, _, af = s[acc].op.axis
    ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(ry, rx, af)
    if cfg["unroll_taps"].val:
        s[acc].unroll(ry)
        s[acc].unroll(rx)
    s[acc].vectorize(af)
    padded = _padding_stage(conv_op)
    if padded is not None:
        pn, py, _px, pc = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(pn, py))
        if get_const_tuple(padded.shape)[3] <= cfg["pad_vec_max"].val:
            s[padded].vectorize(pc)
    return s


# ------------------------------------------------------- blocked (NCHW[x]c) ---
# Between blocked convolutions (``graph.passes.alter_op_layout``) a depthwise conv
# runs on the blocked value itself: channels are the vector lanes, a register tile
# of ``ow_bn`` columns accumulates over the unrolled taps::
#
#     parallel (n.c_chunk.y.fused, 0, N*C/b*OH)
#       for (x.outer, 0, OW/ow_bn)
#         acc[ow_bn, b] = 0
#         unrolled (ry, rx): unrolled (x.c, 0, ow_bn): vectorized (cb, 0, b)
#           acc[x.c, cb] += data_pad[n, c, y*sh + ry*dh, (x*ow_bn + x.c)*sw + rx*dw, cb] * kernel[c, ry, rx, cb]
#         (data_pad inlined: the taps that read the zero border are skipped, not copied)
#         out[n, c, y, x.outer*ow_bn : +ow_bn, :] = epilogue(acc)
TEMPLATE_NCHWC = "depthwise_conv2d_NCHWc.x86"
DEPTHWISE_NCHWC = "depthwise_conv2d_NCHWc"  # tag of the reduction stage


def depthwise_nchwc_workload(data_shape, kernel_hw, stride, pads, dilation, dtype: str = "float32") -> tuple:
    """Key of the blocked depthwise conv: data ``[N, C/b, H, W, b]``, taps, stride, pads, dilation."""
    return (TEMPLATE_NCHWC, tuple(int(d) for d in data_shape), tuple(int(d) for d in kernel_hw),
            tuple(int(v) for v in stride), tuple(int(v) for v in pads), tuple(int(v) for v in dilation), str(dtype))


def _nchwc_out_width(workload: tuple) -> int:
    _, dshape, (_, kw), (_, sw), (_, left, _, right), (_, dw), _ = workload
    return (dshape[3] + left + right - (kw - 1) * dw - 1) // sw + 1


def depthwise_nchwc_space(workload: tuple, target) -> dict:
    from topi.config import max_accumulators

    return {"ow_bn": list(range(1, max_accumulators(target) + 1)), "unroll_taps": [True, False]}


def depthwise_nchwc_rule(workload: tuple, target) -> dict:
    """``ow_bn``: the widest divisor of OW up to half the accumulators (the taps' loads
    need registers too), or 4 columns and a tail where only a divisor below 4 exists (a
    7-wide row in 4 + 3, a 14-wide one in 4 + 4 + 4 + 2: 0.5-0.8x the time of one or two
    columns a tile, ``benchmarks/model_layers.py``); ``unroll_taps``: always."""
    from topi.config import largest_divisor, max_accumulators

    ow = _nchwc_out_width(workload)
    ow_bn = largest_divisor(ow, max(1, max_accumulators(target) // 2))
    if ow_bn < 4 < ow:
        ow_bn = 4
    return {"ow_bn": ow_bn, "unroll_taps": True}


register_rule(TEMPLATE_NCHWC, depthwise_nchwc_space, depthwise_nchwc_rule, doc="depthwise conv2d, NCHW[x]c")


def depthwise_conv2d_NCHWc(data, kernel, stride, padding, dilation, layout: str | None = None,
                           out_layout: str | None = None, out_dtype: str | None = None,
                           cfg: ConfigEntity | None = None):
    """Depthwise conv (multiplier 1) on blocked data (classic ``topi.x86.depthwise_conv2d_NCHWc``).

    Parameters
    ----------
    data : te.Tensor
        ``[N, C/b, H, W, b]``.
    kernel : te.Tensor
        ``[C/b, KH, KW, b]`` (see :func:`pack_depthwise_kernel_numpy`), or classic TVM's
        ``[C/b, 1, KH, KW, 1, b]``.
    stride, dilation : int or (int, int)
    padding : int, tuple or str
        As in ``topi.nn.conv2d_nchw``; a 4-tuple is (top, left, bottom, right).
    layout, out_layout : str, optional
        Informational (``"NCHW8c"``): the blocks come from the shapes.
    out_dtype : str, optional
        The product and sum dtype (default: the data's).
    cfg : ConfigEntity, optional
        A ``depthwise_conv2d_NCHWc.x86`` config (default: the chosen one).

    Returns
    -------
    te.Tensor
        ``[N, C/b, OH, OW, b]``, tag ``depthwise_conv2d_NCHWc``.
    """
    from topi.nn.conv2d import _mul, as_pair, get_pad_tuple

    op = "depthwise_conv2d_NCHWc"
    n, cc, h, w, b = get_const_tuple(data.shape)
    kshape = get_const_tuple(kernel.shape)
    classic = len(kshape) == 6
    kcc, kh, kw, kb = (kshape[0], kshape[2], kshape[3], kshape[5]) if classic else kshape
    if (kcc, kb) != (cc, b) or (classic and (kshape[1], kshape[4]) != (1, 1)):
        raise ValueError(f"{op}: kernel {kshape} does not match blocked data {(n, cc, h, w, b)}; expected "
                         f"[{cc}, KH, KW, {b}] or [{cc}, 1, KH, KW, 1, {b}] (channel multiplier 1)")
    (sh, sw), (dh, dw) = as_pair(stride, op, "stride"), as_pair(dilation, op, "dilation")
    padding = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), op)
    top, left, bottom, right = padding
    key = depthwise_nchwc_workload(data.shape, (kh, kw), (sh, sw), padding, (dh, dw), data.dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    oh = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1
    ow = _nchwc_out_width(key)
    zero = te.const(0.0, data.dtype)
    if any(padding):
        def body(bb, c, y, x, ci):
            inside = te.all(y >= top, y < top + h, x >= left, x < left + w)
            return te.if_then_else(inside, data[bb, c, y - top, x - left, ci], zero)

        data = te.compute((n, cc, h + top + bottom, w + left + right, b), body, name="PadInput", tag="pad")
    ry, rx = te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    tap = (lambda c, cb: kernel[c, 0, ry, rx, 0, cb]) if classic else (lambda c, cb: kernel[c, ry, rx, cb])
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (n, cc, oh, ow, b),
        lambda bb, c, y, x, cb: te.sum(_mul(data[bb, c, y * sh + ry * dh, x * sw + rx * dw, cb], tap(c, cb),
                                            out_dtype), axis=[ry, rx]),
        name=op, tag=DEPTHWISE_NCHWC, attrs={"workload": key, "config": cfg},
    )


def pack_depthwise_kernel_numpy(kernel, block: int):
    """``[C, 1, KH, KW] -> [C/block, KH, KW, block]``."""
    import numpy as np

    c, _, kh, kw = kernel.shape
    return np.ascontiguousarray(kernel.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1))


@records_target
def schedule_depthwise_conv2d_NCHWc(outs):
    """Schedule :func:`depthwise_conv2d_NCHWc` (and its elementwise epilogue): the register
    tile of the section comment, the zero padding inlined: the lowering skips the taps that
    read it (``guard_zero_terms``, ``partition_loops``) instead of copying the whole padded
    input first (a stride-2 3x3 layer on a 112x112 plane ran in 0.35-0.45x the time)."""
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, DEPTHWISE_NCHWC)
    cfg = conv_op.attrs["config"]
    conv = conv_op.output(0)
    acc = s.cache_write(conv, "local") if conv_op is out.op else conv
    n, c, y, x, cb = s[out].op.axis
    xo, xi = s[out].split(x, factor=cfg["ow_bn"].val)
    s[out].reorder(n, c, y, xo, xi, cb)
    s[out].parallel(s[out].fuse(n, c, y))
    s[out].unroll(xi)
    s[out].vectorize(cb)
    s[acc].compute_at(s[out], xo)
    _, _, _, ax, acb = s[acc].op.axis
    ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(ry, rx, ax, acb)
    if cfg["unroll_taps"].val:
        s[acc].unroll(ry)
        s[acc].unroll(rx)
    s[acc].unroll(ax)
    s[acc].vectorize(acb)
    padded = _padding_stage(conv_op)
    if padded is not None:
        s[padded].compute_inline()
    return s


def depthwise_conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype=None):
    """The compute :func:`schedule_depthwise_conv2d_nchw` tiles: ``topi.nn.depthwise_conv2d_nchw``."""
    from topi.nn.depthwise_conv2d import depthwise_conv2d_nchw as compute

    return compute(data, kernel, stride, padding, dilation, out_dtype)


def _fallback_schedule(cfg, wkl, target=None) -> None:
    """Set classic TVM's knobs of ``cfg`` (a fallback config) for the depthwise ``wkl``
    (``topi.nn.depthwise_conv2d.Workload``): ``tile_oc`` one vector of output channels (the
    blocked layout's lanes), ``tile_ic`` the input block it reads, ``tile_ow`` the register tile
    of :func:`depthwise_nchwc_rule` over that blocked layout; each block the largest divisor
    of its extent not above the one chosen (a classic split factors its extent)."""
    from tune.autotvm.config import current_target
    from topi.config import dividing_split
    from topi.nn.conv2d import workload_out_width

    target = target or current_target()
    tile_oc = dividing_split(wkl.out_filter, target.lanes(wkl.in_dtype))
    tile_ic = dividing_split(wkl.in_filter, tile_oc.size[1])
    ic_bn = tile_ic.size[1]
    key = depthwise_nchwc_workload((1, wkl.in_filter // ic_bn, wkl.height, wkl.width, ic_bn),
                                   (wkl.kernel_h, wkl.kernel_w), (wkl.stride_h, wkl.stride_w),
                                   (wkl.padt, wkl.padl, wkl.padb, wkl.padr), (wkl.dilation_h, wkl.dilation_w),
                                   wkl.in_dtype)
    cfg["tile_ic"], cfg["tile_oc"] = tile_ic, tile_oc
    cfg["tile_ow"] = dividing_split(workload_out_width(wkl), depthwise_nchwc_rule(key, target)["ow_bn"])
