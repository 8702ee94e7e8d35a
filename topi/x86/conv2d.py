"""x86 conv2d: the blocked NCHW[x]c fast path, its config rules, and NCHW/NHWC schedules.

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
from topi.config import Config, largest_divisor
from topi.nn.conv2d import _spatial, nchwc_conv
from topi.utils import get_const_tuple

PACK = "conv2d_NCHWc_pack"  # tag of the layout-packing stages (not injective: never inlined)
MAX_ACC = 16  # vector accumulators kept in registers (LLVM spills past ~20 of the 32 zmm)
VEC = 16  # float32 lanes of one zmm register


IN_PLACE_MIN_PLANE = 14 * 14


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def default_conv2d_config(workload) -> Config:
    """Block sizes for a conv ``workload`` (the ``attrs["workload"]`` tuple), by rule.

    * ``ic_bn``: the largest divisor of IC up to 16 (3 for an RGB stem);
    * ``oc_bn``: 32 when OC is a multiple of 32 and OW has a divisor in [4, 8],
      else 16
      (OC is padded up to a multiple of ``oc_bn`` when it does not divide);
    * ``ow_bn``: the widest divisor of OW whose ``ow_bn * oc_bn / 16`` vector
      accumulators fit in registers (``pad_ow`` if only a tiny one exists);
    * ``unroll_kw``: unroll the kernel columns when KW is small.
    """
    _, dshape, kshape, stride, _, dilation = workload[:6]
    if workload[0] == "conv2d_NCHWc":
        ic = dshape[1] * dshape[4]
        oc = kshape[0] * kshape[5]
        hw, khw = dshape[2:4], kshape[2:4]
    else:
        ic, hw = dshape[1], dshape[2:4]
        oc, khw = kshape[0], kshape[2:4]
    pads = workload[4]
    _, _, _, (_, ow) = _spatial("default_conv2d_config", dshape, kshape, hw, khw, stride, pads, dilation)
    ic_bn = largest_divisor(ic, 16)
    oc_bn = 32 if oc % 32 == 0 and largest_divisor(ow, MAX_ACC // 2) >= 4 else 16
    max_w = MAX_ACC // (oc_bn // VEC)
    ow_bn = largest_divisor(ow, max_w)
    pad_ow = ow_bn < 4 and ow > 4
    if pad_ow:
        ow_bn = min(max_w, 8)
    values = {"ic_bn": ic_bn, "oc_bn": oc_bn, "ow_bn": ow_bn, "pad_ow": pad_ow,
              "unroll_kw": khw[1] <= 3, "is_1x1": tuple(khw) == (1, 1)}
    space = {"ic_bn": [d for d in (1, 2, 4, 8, 16, 32) if ic % d == 0] or [ic_bn],
             "oc_bn": [8, 16, 32], "ow_bn": list(range(1, max_w + 1)),
             "unroll_kw": [True, False]}
    return Config("conv2d_NCHWc", values, space)


# ------------------------------------------------------------- computes ---
def pack_data(data, ic_bn: int, pads: tuple, width: int):
    """``data_vec[n, c/ic_bn, y, x, c%ic_bn]``: NCHW -> padded NCHW[ic_bn]c in one stage."""
    n, ic, h, w = get_const_tuple(data.shape)
    top, left, bottom, _ = pads
    zero = te.const(0.0, data.dtype)

    def body(b, cc, y, x, ci):
        inside = te.all(y >= top, y < top + h, x >= left, x < left + w)
        return te.if_then_else(inside, data[b, cc * ic_bn + ci, y - top, x - left], zero)

    return te.compute((n, ic // ic_bn, h + top + bottom, width, ic_bn), body, name="data_vec", tag=PACK)


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


def pack_kernel_numpy(kernel, ic_bn: int, oc_bn: int):
    """The numpy twin of :func:`pack_kernel`, to pre-pack constant weights once."""
    import numpy as np

    oc, ic, kh, kw = kernel.shape
    occ = _ceil(oc, oc_bn)
    k = np.zeros((occ * oc_bn, ic, kh, kw), kernel.dtype)
    k[:oc] = kernel
    k = k.reshape(occ, oc_bn, ic // ic_bn, ic_bn, kh, kw)
    return np.ascontiguousarray(k.transpose(0, 2, 4, 5, 3, 1))


def group_blocks(icg: int, ocg: int, cfg: Config) -> tuple | None:
    """(ic_bn, oc_bn) for a grouped blocked conv: the config's, shrunk to divide each
    group's channels; None when a group is too narrow to vectorize (OC/groups < 8)."""
    ic_bn = largest_divisor(icg, cfg["ic_bn"])
    oc_bn = cfg["oc_bn"]
    while oc_bn >= 8 and ocg % oc_bn:
        oc_bn //= 2
    return (ic_bn, oc_bn) if oc_bn >= 8 else None


def conv2d_nchw_x86(data, kernel, stride, padding, dilation, out_dtype=None, cfg: Config | None = None,
                    groups: int = 1):
    """NCHW conv through the blocked fast path: pack, ``conv2d_NCHWc``, unpack.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, H, W]``.
    kernel : te.Tensor
        ``[OC, IC, KH, KW]``, packed in a stage; or a pre-packed 6-D
        ``[OCc, ICc, KH, KW, ic_bn, oc_bn]`` (see :func:`pack_kernel_numpy`),
        whose blocks then override the config's (the output keeps OCc*oc_bn
        channels).
    stride, padding, dilation
        As in :func:`topi.nn.conv2d_nchw`.
    cfg : Config, optional
        Block sizes (default: :func:`default_conv2d_config`).
    groups : int
        Grouped convolution (kernel ``[OC, IC/groups, KH, KW]``); the blocks
        must divide each group's channels (see :func:`group_blocks`).

    Returns
    -------
    te.Tensor
        ``[N, OC, OH, OW]`` (tag ``injective``: the unpacking stage, which
        :func:`schedule_conv2d_nchw` fuses with any epilogue).
    """
    from topi.nn.conv2d import group_conv2d_nchw

    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(kshape) == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kshape
        oc, plain = occ * oc_bn, (oc_bn * occ, icc * ic_bn, kh, kw)
    else:
        oc, plain = kshape[0], kshape
    probe = group_conv2d_nchw(te.placeholder(dshape, data.dtype), te.placeholder(plain, kernel.dtype),
                              stride, padding, dilation, groups, out_dtype)  # validates, gives the workload
    wl = probe.op.attrs["workload"]
    cfg = cfg or default_conv2d_config(wl)
    if groups > 1:
        blocks = group_blocks(plain[1], oc // groups, cfg)
        if blocks is None or (len(kshape) == 6 and (oc // groups) % kshape[5]):
            raise ValueError(f"conv2d_nchw_x86: groups={groups} leave {oc // groups} output channels per "
                             f"group, too few to block; use topi.nn.group_conv2d_nchw")
        cfg = cfg.with_values(ic_bn=blocks[0], oc_bn=blocks[1])
    st, pads, dil = wl[3], wl[4], wl[5]
    _, _, oh, ow = get_const_tuple(probe.shape)
    ow_bn = cfg["ow_bn"]
    owp = _ceil(ow, ow_bn) * ow_bn
    kh, kw = plain[2], plain[3]
    width = max(dshape[3] + pads[1] + pads[3], (owp - 1) * st[1] + (kw - 1) * dil[1] + 1)
    if len(kshape) == 6:
        kvec, ic_bn = kernel, kshape[4]
    else:
        ic_bn = cfg["ic_bn"]
        kvec = pack_kernel(kernel, ic_bn, cfg["oc_bn"])
    dvec = pack_data(data, ic_bn, pads, width)
    conv = nchwc_conv(dvec, kvec, (oh, owp), st, dil, out_dtype or data.dtype,
                      attrs={"workload": wl, "config": cfg}, groups=groups)
    ocb = get_const_tuple(kvec.shape)[5]
    return te.compute((dshape[0], oc, oh, ow), lambda n, c, y, x: conv[n, c // ocb, y, x, c % ocb],
                      name="conv2d_nchw_unpack", tag=tag.INJECTIVE)


# ------------------------------------------------------------ schedules ---
def _find_conv(out_op):
    """The conv2d_NCHWc anchor under ``out_op`` and the injective ops between them."""
    between, stack, seen = [], [out_op], set()
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.tag == tag.CONV2D_NCHWC:
            return op, between
        between.append(op)
        stack.extend(t.op for t in op.input_tensors)
    raise ValueError(f"schedule_conv2d_NCHWc: no conv2d_NCHWc stage under output '{out_op.name}'")


def _reads_in_place(conv_op, data_vec_op) -> bool:
    """A 1x1, stride-1, unpadded conv over a wide enough plane reads NCHW data in place:
    packing would only copy it (the register tile broadcasts one scalar per
    channel and column either way).  Measured on ResNet-50's 1x1 layers at 56x56,
    28x28 and 14x14: 10-40% faster; at 7x7 and stride 2 the packed copy wins."""
    wl = conv_op.attrs.get("workload")
    if data_vec_op.name != "data_vec" or wl is None or wl[0] != "conv2d_nchw":
        return False
    _, dshape, kshape, stride, pads = wl[:5]
    _, _, oh, ow, _ = get_const_tuple(conv_op.output(0).shape)
    return (tuple(kshape[2:4]) == (1, 1) and tuple(stride) == (1, 1) and not any(pads)
            and ow == dshape[3] and oh * ow >= IN_PLACE_MIN_PLANE)


def _schedule_inputs(s, conv_op) -> None:
    """Compute padding and packing stages at the root, parallel and vectorized
    (or inline the data packing where the conv reads the data in place)."""
    for t in conv_op.input_tensors:
        op = t.op
        if not isinstance(op, te.ComputeOp):
            continue
        if _reads_in_place(conv_op, op):
            s[op].compute_inline()
            continue
        axes = list(s[op].op.axis)
        fused = s[op].fuse(*axes[:3])
        s[op].parallel(fused)
        if op.name == "kernel_vec" or get_const_tuple(t.shape)[-1] >= 8:
            s[op].vectorize(axes[-1])


def _schedule_accumulator(s, conv, cfg: Config) -> None:
    """The register tile: reduction outside, ``ic_inner``/``ow`` unrolled, ``oc`` vectorized."""
    n, occ, oh, ow, ocb = s[conv].op.axis
    ico, kh, kw, ici = s[conv].op.reduce_axis
    if cfg["unroll_kw"]:
        s[conv].reorder(n, occ, oh, ico, kh, ici, kw, ow, ocb)
        s[conv].unroll(kw)
    else:
        s[conv].reorder(n, occ, oh, ico, kh, kw, ici, ow, ocb)
    s[conv].unroll(ici)
    s[conv].unroll(ow)
    s[conv].vectorize(ocb)


def _tile_output(s, out, cfg: Config, ocb: int):
    """Split the output into (parallel rows, column tiles); return the attach axis.

    A 5-D output is NCHW[x]c; a 4-D output is NCHW (the unpacked form),
    whose channels are split by ``ocb`` to meet the accumulator's blocks.
    """
    axes = s[out].op.axis
    if len(axes) == 5:
        n, occ, oh, ow, ob = axes
        wo, wi = s[out].split(ow, factor=cfg["ow_bn"])
        s[out].reorder(n, occ, oh, wo, wi, ob)
        s[out].vectorize(ob)
        s[out].unroll(wi)
    else:
        n, c, oh, ow = axes
        occ, ob = s[out].split(c, factor=ocb)
        wo, wi = s[out].split(ow, factor=cfg["ow_bn"])
        s[out].reorder(n, occ, oh, wo, ob, wi)
        s[out].unroll(ob)
        s[out].unroll(wi)
    s[out].parallel(s[out].fuse(n, occ, oh))
    return wo


def _schedule_nchwc(s, out_op, cfg: Config | None = None):
    conv_op, between = _find_conv(out_op)
    cfg = cfg or conv_op.attrs.get("config") or default_conv2d_config(conv_op.attrs["workload"])
    ocb = get_const_tuple(conv_op.output(0).shape)[4]
    cfg = cfg.with_values(oc_bn=ocb)
    for op in between:
        if op is not out_op:
            s[op].compute_inline()
    _schedule_inputs(s, conv_op)
    conv = conv_op.output(0)
    if conv_op is out_op:
        conv = s.cache_write(conv, "local")
    wo = _tile_output(s, out_op, cfg, ocb)
    s[conv].compute_at(s[out_op], wo)
    _schedule_accumulator(s, conv, cfg)
    return s


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def schedule_conv2d_NCHWc(outs, cfg: Config | None = None):
    """Schedule ``conv2d_NCHWc`` (and any injective epilogue on its output).

    Parameters
    ----------
    outs : te.Tensor or list of te.Tensor
        The output: the conv itself, or an epilogue (bias add, relu, unpack
        to NCHW) computed from it; the epilogue is fused into the output loop.
    cfg : Config, optional
        Overrides the conv's default config.
    """
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    _schedule_nchwc(s, outs[0].op, cfg)
    return s


def schedule_conv2d_nchw(outs, cfg: Config | None = None):
    """Schedule an NCHW conv: the blocked path for :func:`conv2d_nchw_x86` outputs,
    a direct register-tiled schedule for plain (or grouped) ``topi.nn.conv2d_nchw``."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    try:
        _find_conv(outs[0].op)
    except ValueError:
        return schedule_direct(s, outs[0].op, channels_last=False)
    return _schedule_nchwc(s, outs[0].op, cfg)


def schedule_conv2d_nhwc(outs):
    """Schedule ``topi.nn.conv2d_nhwc``: output channels vectorized, rows parallel."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=True)


# ------------------------------------------------------ direct schedules ---
def _direct_anchor(s, out_op):
    """The reduction stage under ``out_op``; inline the epilogue, compute padding at root."""
    stack, seen, anchor = [out_op], set(), None
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.reduce_axis:
            anchor = op
            continue
        if op is not out_op:
            s[op].compute_inline()
        stack.extend(t.op for t in op.input_tensors)
    if anchor is None:
        raise ValueError(f"schedule: no convolution stage under output '{out_op.name}'")
    for t in anchor.input_tensors:
        if isinstance(t.op, te.ComputeOp):
            axes = s[t.op].op.axis
            s[t.op].parallel(s[t.op].fuse(*axes[:2]))
    return anchor


def _block(n: int, want: int) -> int:
    d = largest_divisor(n, want)
    return d if d >= want // 2 else want


def schedule_direct(s, out_op, channels_last: bool, cfg=None):
    """Register-tile a plain conv: ``fb`` channels x ``xb`` columns in a local accumulator.

    Channels-first (NCHW, NCW): columns vectorized, channels unrolled;
    channels-last (NHWC, NWC): channels vectorized, columns unrolled.  The
    reduction axes run outside the tile; (n, rows, channel blocks) are parallel.
    Knobs: :func:`topi.x86.conv_direct.default_direct_config`.
    """
    from topi.x86.conv_direct import schedule_direct_config

    return schedule_direct_config(s, out_op, channels_last, cfg)
