"""x86 Winograd conv2d (3x3, stride 1): config rules and the schedule of :mod:`topi.nn.winograd`.

The products of the transformed tiles take the time; they are scheduled like
``dense_pack``: for each of the ``alpha^2`` points and each block of ``bn``
output channels, an ``mr x bn`` register tile streams the input channels::

    parallel (e.nu.kc.fused, 0, alpha*alpha*Kp/bn)   // one U block [Cp, bn] per task
      for (p.outer, 0, Pp/mr)
        M.local[mr, bn] = 0                          // mr*bn/lanes vector accumulators
        for (c.outer, 0, Cp/ku)
          unrolled (c.inner, p.c): M.local[p.c, :] += V[e, nu, p, c] * U[e, nu, kc, c, :]
        M[e, nu, p.outer*mr : +mr, kc, :] = M.local

The input transform runs per (tile, channel block), vectorized over the
channel block, its ``alpha x alpha`` points unrolled (the transform matrices
then fold into adds and multiplies by their non-zero entries); the output
transform runs per (output channel block, tile row, tile), vectorized over
the channel block, and writes NCHW rows of the tile.

Knob ``rows`` (0: as above, each stage a parallel loop of its own) fuses the
stages: one parallel loop over blocks of ``rows`` tile rows, each block
padding its input rows, transforming its tiles, multiplying them by the whole
transformed kernel and writing its output rows, all in buffers of its own::

    parallel (b.block, 0, N*nH/rows)
      data_vec[rows*m + 2 rows]; V[alpha, alpha, slots, Cp]; M[alpha, alpha, slots, Kp/bn, bn]
      for (e, nu) for (kc) for (p.outer): mr x bn register tile   // as above
      for (kc, tile row, tile): Y = A^T M A -> out

The products walk the transformed kernel in its storage order (point outside channel
block), so a kernel that comes from memory streams.  Knob ``kc_outer`` instead runs
the products and the output transform one output channel block at a time, where a
block's products would not stay in L2 (:func:`m_block_bytes`); knob ``oc_parts`` cuts
a block's output channel blocks into parallel parts (:func:`channel_parts`): each part
transforms the block's tiles and multiplies them by its share of the kernel.  The three
together: GoogLeNet one thread 0.76x the time (its 64 -> 192 at 56x56 blocks hold
2.8 MB of products), SqueezeNet 1.1 0.92x (CPU time, both schedules of the model interleaved).

Apart, a thread reads intermediates another core wrote; fused, it reads only
the input and the kernel.  So ``rows=0`` is legal only where fusing is not: a
transformed kernel over ``FUSE_MAX_KERNEL_BYTES``, or fewer tile rows than
threads (:func:`_must_fuse`).

The workload key is the direct template's (``conv2d_workload``) under the
name ``conv2d_winograd.x86``: the same convolution, a second implementation.
"""

from __future__ import annotations

import math

import te
from topi.config import YMM_GEMM_TILE, max_accumulators, records_target
from topi.x86.conv2d_rule import TEMPLATE as DIRECT
from topi.nn.winograd import (TILES, WINOGRAD, check_winograd_args, conv2d_winograd_nchw, winograd_geometry,
                               winograd_kernel_shape, winograd_slots)
from topi.utils import find_anchor, get_const_tuple
from tune.autotvm.config import check_config, choose_config, current_target, register_rule
from tune.autotvm.space import ConfigEntity

TEMPLATE = "conv2d_winograd.x86"
ROWS = (0, 1, 2, 4, 7)  # knob ``rows``: 0 runs the stages apart, else tile rows per fused block
OC_PARTS = (1, 2, 4, 8)  # knob ``oc_parts``: parallel parts of a fused block's output channel blocks
# channel_parts: an image with at most one tile per this many output channels runs in channel parts
# (one thread's share of the kernel against its tiles; whole-model A/B in benchmarks/user_models.py)
PART_CHANNELS = 20
# A fused block whose products M (alpha^2 x its tile slots x Kp floats) pass this does not keep
# them in a core's L2 (512 KiB on Zen 3) until the output transform reads them: knob ``kc_outer``
# then runs the products and output transform one output channel block at a time
# (:func:`m_block_bytes`).
M_BLOCK_BYTES = 512 * 1024
# The rule's ``rows`` where each thread's share passes 7 tile rows: blocks of 7 then hold megabytes
# of V and M (and a last partial block computes all its slots). Inception-v3's 80 -> 192 at 73x73
# (18 tile rows, one thread's CPU time) 0.69x the time of rows=7, its 32 -> 64 at 147x147 0.75x;
# also where the last block of 7 would be under half full (its 35x35 layers, 9 tile rows: 0.6-0.7x).
MANY_ROWS = 2
# A fused block reads the whole transformed kernel, and so does each core: past this size the
# stages run apart (``rows`` 0 only; ResNet-50's 512 @7 in F(2x2), 16.8 MB, ran faster apart).
FUSE_MAX_KERNEL_BYTES = 12 << 20
# A transformed kernel past this does not stay in a 32 MiB last-level cache shared with the
# activations: every call streams it from memory, and the rule takes F(2x2), whose kernel is
# 4/9 the size of F(4x4)'s (:func:`f4x4_streams`).
STREAM_KERNEL_BYTES = 24 << 20
# In a model run the other layers evict a transformed kernel between its calls; past this size,
# with F(4x4)'s products over fewer than ``STREAM_MIN_TILES`` tiles (each kernel float then serves
# under 16 flops per byte read), reading it is the call's time, and the rule takes F(2x2) too.
STREAM_SHARED_BYTES = 8 << 20
STREAM_MIN_TILES = 32


def winograd_workload(dshape, kshape, strides, pads, dilation, groups: int = 1, dtype: str = "float32",
                      out_dtype: str | None = None) -> tuple:
    """The workload key: NCHW data, OIHW kernel, as ``topi.x86.conv2d_rule.conv2d_workload``."""
    return (TEMPLATE, tuple(int(d) for d in dshape), tuple(int(d) for d in kshape),
            tuple(int(v) for v in strides), tuple(int(v) for v in pads), tuple(int(v) for v in dilation),
            int(groups), str(dtype), str(out_dtype or dtype))


def winograd_applicable(workload: tuple) -> bool:
    """Whether a conv2d key (any template name) is 3x3, stride 1, undilated, ungrouped, float32."""
    _, dshape, kshape, strides, _, dilation, groups, dtype, _ = workload
    try:
        check_winograd_args(dshape, kshape, strides, dilation, groups)
    except ValueError:
        return False
    return dtype == "float32"


def kernel_bytes(kshape, tile: int, bn: int, cb: int) -> int:
    """Bytes of the transformed float32 kernel."""
    return math.prod(winograd_kernel_shape(kshape, tile, bn, cb)) * 4


def f4x4_streams(workload: tuple, size: int) -> bool:
    """Whether F(4x4)'s transformed kernel (``size`` bytes) is read from memory faster than its
    products use it: past ``STREAM_KERNEL_BYTES`` (it streams even when timed alone), or past
    ``STREAM_SHARED_BYTES`` over fewer than ``STREAM_MIN_TILES`` 4x4 tiles.  Timed alone F(4x4)
    wins such layers; in the model F(2x2) does (ResNet-50 0.949x the time with it on its two
    such layers, ``benchmarks/winograd_stream_ab.py``)."""
    tiles = winograd_geometry(workload[1], workload[4], 4)[4]
    return size > STREAM_KERNEL_BYTES or (size > STREAM_SHARED_BYTES and tiles < STREAM_MIN_TILES)


def _tile_rows(workload: tuple, tile: int) -> int:
    """Tile rows of the output image (per image) in ``tile`` x ``tile`` tiles."""
    return winograd_geometry(workload[1], workload[4], tile)[2]


def _threads() -> int:
    import os

    return max(1, len(os.sched_getaffinity(0)))


def _must_fuse(workload: tuple, tile: int, size: int) -> bool:
    """Whether a config of ``tile`` whose transformed kernel is ``size`` bytes may only fuse
    (``rows > 0``): the kernel is within ``FUSE_MAX_KERNEL_BYTES`` and the image has a block
    of tile rows for every thread.  Run apart, the stages hand their intermediates from thread
    to thread, which costs most where the threads' cores share no cache (:func:`fused_rows`)."""
    return size <= FUSE_MAX_KERNEL_BYTES and _tile_rows(workload, tile) >= _threads()


def winograd_space(workload: tuple, target) -> dict:
    """The knobs' candidates; ``rows``: fused blocks only where every (tile, bn, cb) must fuse,
    0 only where none may, both otherwise (the constraint then refuses per config)."""
    vec = target.lanes(workload[7])
    space = {"tile": list(TILES), "cb": [vec // 2, vec, 2 * vec], "bn": [vec, 2 * vec, 3 * vec, 4 * vec],
             "mr": list(range(1, 9)), "ku": [1, 2, 4], "oc_parts": list(OC_PARTS), "kc_outer": [False, True]}
    sizes = [(t, kernel_bytes(workload[2], t, bn, cb)) for t in space["tile"] for bn in space["bn"]
             for cb in space["cb"]]
    if all(_must_fuse(workload, t, size) for t, size in sizes):
        space["rows"] = list(ROWS[1:])
    else:
        space["rows"] = list(ROWS) if any(size <= FUSE_MAX_KERNEL_BYTES for _, size in sizes) else [0]
    return space


def winograd_rule(workload: tuple, target) -> dict:
    """``tile``: F(4x4) unless the output is narrower than 7 (a 7x7 output in 4x4 tiles computes
    64 points for 49) or its transformed kernel streams from memory (:func:`f4x4_streams`), then
    F(2x2); ``cb``: one vector; ``rows``: :func:`fused_rows`; the register tile (``bn`` x ``mr``,
    ``ku``):

    * 32 vector registers (AVX-512): ``bn`` four vectors when K holds them (else the
      fewest vectors covering K), ``mr`` the rows 16 accumulators allow, ``ku`` 1;
    * 16 (AVX2): :func:`ymm_tile` (two vectors by 6 or 4 slots), ``ku`` 4."""
    _, dshape, kshape, _, pads, _, _, dtype, _ = workload
    vec = target.lanes(dtype)
    oh = dshape[2] + pads[0] + pads[2] - 2
    width = dshape[3] + pads[1] + pads[3] - 2
    ow = min(oh, width)
    k = kshape[0]
    blocks = min(4, -(-k // vec))
    tile = 4 if ow >= 7 and not f4x4_streams(workload, kernel_bytes(kshape, 4, blocks * vec, vec)) else 2
    nh, nw = -(-oh // tile), -(-width // tile)
    rows = fused_rows(nh, kernel_bytes(kshape, tile, blocks * vec, vec))
    if max_accumulators(target) >= 16 or k <= vec:
        bn, mr, ku = blocks * vec, min(8, max(1, max_accumulators(target) // blocks)), 1
        rows, oc_parts = channel_parts(rows, nh, nw, k, -(-k // bn))
    else:
        rows, oc_parts = channel_parts(rows, nh, nw, k, -(-k // (YMM_GEMM_TILE[0] * vec)))
        bn, mr = ymm_tile((dshape[0], k, nh, nw), rows, vec)
        ku = YMM_GEMM_TILE[2]
    values = {"tile": tile, "cb": vec, "bn": bn, "mr": mr, "ku": ku, "rows": rows, "oc_parts": oc_parts}
    return {**values, "kc_outer": m_block_bytes(workload, values) > M_BLOCK_BYTES}


def m_block_bytes(workload: tuple, values: dict) -> int:
    """Bytes of a fused block's products ``M`` (0 apart): alpha^2 x the block's tile slots
    (:func:`topi.nn.winograd.winograd_slots`) x its part of the output channels."""
    if not values["rows"]:
        return 0
    _, dshape, kshape, _, pads, _, _, _, _ = workload
    oshape = winograd_geometry(dshape, pads, values["tile"], values["rows"])
    slots = winograd_slots(oshape, values["mr"], values["rows"])[1]
    kp = -(-kshape[0] // values["bn"]) * values["bn"] // values.get("oc_parts", 1)
    return (values["tile"] + 2) ** 2 * slots * kp * 4


def channel_parts(rows: int, tile_rows: int, tile_cols: int, channels: int, kblocks: int,
                  threads: int | None = None) -> tuple:
    """``(rows, oc_parts)``: where the image's tiles are few against its ``channels`` output
    channels (at most one tile per ``PART_CHANNELS`` channels) and fit one fused block, one block
    covers the image and the threads share its ``kblocks`` output channel blocks in ``oc_parts``
    parts (the fewest of ``OC_PARTS``, at least one per thread, that divide them); else
    ``(rows, 1)``.  Every block reads the whole transformed kernel: blocks of tile rows read it
    once each for a few tiles (GoogLeNet's 160 -> 320 at 7x7 in F(4x4): 2 blocks of 2 tiles, a
    7.4 MB kernel each); in parts each thread reads its channels' share once and transforms the
    image's tiles itself, which costs more than it saves where the tiles are many (SqueezeNet's
    64 -> 256 at 13x13: 16 tiles)."""
    threads = threads or _threads()
    whole = next((r for r in ROWS[1:] if r >= tile_rows), 0)
    if not rows or threads <= 1 or not whole or channels < PART_CHANNELS * tile_rows * tile_cols:
        return rows, 1
    parts = next((p for p in OC_PARTS if p >= threads and kblocks % p == 0), 0)
    return (whole, parts) if parts else (rows, 1)


def ymm_tile(tiles: tuple, rows: int, vec: int) -> tuple:
    """``(bn, mr)`` of the products' register tile with 16 vector registers, ``YMM_GEMM_TILE``'s
    (:mod:`topi.config`): two vectors of output channels (the block the graph's direct convs
    write, so the output keeps it) by 6 tile slots, 12 accumulators; by 4 where padding a block's
    slots (:func:`topi.nn.winograd.winograd_slots`; ``tiles``: ``(N, K, nH, nW)``) up to 6s wastes
    more than a sixth of them.  Wider blocks (three vectors) ran some layers faster alone but
    their output blocks differ from the direct convs', and the layout transforms between cost more
    (``benchmarks/topi_winograd.py`` per layer, ``benchmarks/graph_models.py`` whole)."""
    vectors, mr, _ = YMM_GEMM_TILE
    n, k, nh, nw = tiles
    shape = (n, k, nh, nw, n * nh * nw)
    slots, base = winograd_slots(shape, mr, rows)[0], winograd_slots(shape, 1, rows)[0]
    return vectors * vec, mr if mr * (slots - base) <= base else 4


def fused_rows(tile_rows: int, kernel_size: int, threads: int | None = None) -> int:
    """The rule's ``rows`` for an image ``tile_rows`` tiles high: one block of tile rows per
    thread (``threads``: the CPUs this process may use), the smallest candidate that covers a
    share; 0 (stages apart) when there are fewer tile rows than threads or the transformed
    kernel passes ``FUSE_MAX_KERNEL_BYTES``; ``MANY_ROWS`` where a share passes the largest
    candidate or the last block would be under half full (it computes all its slots: 9 tile
    rows in blocks of 7 computed 14).  Fused, each thread reads only what it computes:
    run apart, each stage splits its work its own way and a thread reads intermediates another
    core wrote, at a cache line's round trip between cores that may share no cache."""
    threads = threads or _threads()
    if kernel_size > FUSE_MAX_KERNEL_BYTES or tile_rows < threads:
        return 0
    share = -(-tile_rows // threads)
    rows = next((r for r in ROWS if r >= share), ROWS[-1])
    last = tile_rows - (-(-tile_rows // rows) - 1) * rows  # the last block's tile rows
    return MANY_ROWS if share > ROWS[-1] or 2 * last < rows else rows


def winograd_constraint(workload: tuple, values: dict) -> str | None:
    if not winograd_applicable(workload):
        return f"workload {workload[1:3]} is not a 3x3 stride-1 dilation-1 ungrouped float32 conv"
    size = kernel_bytes(workload[2], values["tile"], values["bn"], values["cb"])
    if not values.get("rows") and _must_fuse(workload, values["tile"], size):
        nh = _tile_rows(workload, values["tile"])
        return (f"rows=0 runs the stages apart, each thread reading intermediates another core wrote "
                f"(slower wherever the cores share no cache, which one tuning measurement may not see); "
                f"this {size / 2**20:.1f} MiB kernel and {nh} tile rows fuse: use rows={fused_rows(nh, size)}")
    if values.get("rows") and size > FUSE_MAX_KERNEL_BYTES:
        return (f"rows={values['rows']} fuses a block over a {size / 2**20:.1f} MiB transformed kernel "
                f"(at most {FUSE_MAX_KERNEL_BYTES >> 20} MiB: each block reads all of it); use rows=0, "
                f"a smaller tile or bn")
    return None


def default_winograd_config(workload: tuple, target=None) -> ConfigEntity:
    """The config of a Winograd workload outside a graph (an ``ApplyChoices`` answer, else
    :func:`winograd_rule`)."""
    return choose_config((TEMPLATE, *tuple(workload)[1:]), target)


# Without records, a graph runs a 3x3 conv as Winograd where the wider channel count reaches
# WIDE_CHANNELS and the narrower MIN_CHANNELS (ResNet's 64..512, DenseNet's 128 -> 32,
# SqueezeNet's 32 -> 128 and 48 -> 192), or NARROW_CHANNELS on a plane at least
# NARROW_MIN_WIDTH wide, whose tiles waste little (SqueezeNet's 16 -> 64 at 55x55; not
# GoogLeNet's 24 -> 64 at 14x14).  Below them the products, which Winograd makes cheaper,
# shrink while the transforms do not.  One thread's CPU time, whole models against 64 channels
# both: DenseNet-121 0.85x, SqueezeNet 1.1 0.93x, Inception-v3 0.96x, GoogLeNet 0.97x.
MIN_CHANNELS, WIDE_CHANNELS = 32, 64
NARROW_CHANNELS, NARROW_MIN_WIDTH = 16, 28


def winograd_preferred(workload: tuple) -> bool:
    """Whether a graph runs the conv ``workload`` as Winograd when no records compare the two."""
    narrow, wide = sorted(workload[2][:2])
    if wide < WIDE_CHANNELS:
        return False
    return narrow >= MIN_CHANNELS or (narrow >= NARROW_CHANNELS and workload[1][3] >= NARROW_MIN_WIDTH)


def winograd_out_block(workload: tuple, cfg: ConfigEntity, target=None) -> int:
    """The channel block of a Winograd conv's blocked output in a graph: the ``oc_bn`` the
    direct template's rule gives the same layer (so its neighbours see the layout they would
    see without Winograd) when it divides ``bn`` and K, else ``bn`` when it divides K, else
    their largest common divisor when it is whole vectors (``bn`` 24 on K 256: 8), else 0
    (NCHW output, which makes a blocked consumer pack its input)."""
    k = workload[2][0]
    try:
        direct = choose_config((DIRECT, *tuple(workload)[1:]), target)["oc_bn"].val
    except ValueError:
        direct = 0
    common = math.gcd(k, cfg["bn"].val)
    whole = common if common % (target or current_target()).lanes(workload[7]) == 0 else 0
    for ob in (direct, cfg["bn"].val, whole):
        if ob and k % ob == 0 and cfg["bn"].val % ob == 0:
            return ob
    return 0



register_rule(TEMPLATE, winograd_space, winograd_rule, winograd_constraint,
              doc="Winograd F(m x m, 3x3) conv2d (conv2d_winograd_x86)",
              legacy={"rows": 0, "oc_parts": 1, "kc_outer": False},  # records before these knobs
              input_knob="cb", out_block=lambda cfg, target: winograd_out_block(cfg.workload, cfg, target),
              implements=DIRECT, applicable=winograd_applicable, preferred=winograd_preferred, option="winograd")


def conv2d_winograd_x86(data: te.Tensor, kernel: te.Tensor, padding, out_dtype: str | None = None,
                        cfg: ConfigEntity | None = None, kshape: tuple | None = None, out_block: int = 0):
    """3x3 stride-1 conv through Winograd with the config's knobs.

    ``data`` is NCHW ``[N, C, H, W]`` or blocked ``[N, C/b, H, W, b]`` (any ``b``).
    ``kernel`` is OIHW (transformed in a stage) or pre-transformed by
    ``topi.nn.winograd.winograd_kernel_transform_numpy(w, cfg["tile"].val, cfg["bn"].val,
    Cp)``; then ``kshape`` (the OIHW shape) names the workload.  The output is
    NCHW, or with ``out_block`` ``ob`` (dividing K and ``bn``: see
    :func:`winograd_out_block`) ``[N, K/ob, OH, OW, ob]``.  The product stage
    carries ``attrs["workload"]`` and ``attrs["config"]``."""
    from topi.nn.conv2d import get_pad_tuple
    from topi.nn.winograd import plain_data_shape

    dshape = plain_data_shape(get_const_tuple(data.shape))
    kshape = tuple(kshape or get_const_tuple(kernel.shape))
    check_winograd_args(dshape, kshape, (1, 1), (1, 1))
    pads = get_pad_tuple(padding, (3, 3), "conv2d_winograd_x86")
    key = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1), 1, data.dtype, out_dtype)
    cfg = default_winograd_config(key) if cfg is None else check_config(cfg, key)
    v = cfg.values
    return conv2d_winograd_nchw(data, kernel, pads, v["tile"], v["cb"], v["bn"], v["mr"], out_dtype,
                                attrs={"workload": key, "config": cfg}, channels=kshape[0], out_block=out_block,
                                rows=v["rows"])


# ------------------------------------------------------------ schedules ---
def _stage(op_or_tensor, name: str):
    for t in op_or_tensor.input_tensors:
        if t.op.name == name:
            return t
    raise ValueError(f"schedule_conv2d_winograd: no stage {name!r} under {op_or_tensor.name!r}")


def _schedule_gemm(s, m, cfg: ConfigEntity, lanes: int, at=None) -> None:
    """``M``: an ``mr x bn`` register tile; at root parallel over (point, channel
    block), or computed ``at`` a fused block (its tiles only, points outermost: the
    transformed kernel in its storage order) or at one output channel block of it."""
    mc = s.cache_write(m, "local")
    e, nu, p, kc, kb = s[m].op.axis
    po, pi = s[m].split(p, factor=cfg["mr"].val)
    if at is None:
        s[m].reorder(e, nu, kc, po, pi, kb)
        s[m].parallel(s[m].fuse(e, nu, kc))
    else:
        s[m].reorder(e, nu, kc, po, pi, kb)
        s[m].compute_at(*at)
    s[m].vectorize(kb)
    s[mc].compute_at(s[m], po)
    ce, cn, cp, ckc, ckb = s[mc].op.axis
    (c,) = s[mc].op.reduce_axis
    ko, ki = s[mc].split(c, factor=cfg["ku"].val)
    vec = lanes if cfg["bn"].val % lanes == 0 else cfg["bn"].val
    kbo, kbi = s[mc].split(ckb, factor=vec)
    s[mc].reorder(ce, cn, ckc, ko, ki, cp, kbo, kbi)
    s[mc].unroll(ki)
    s[mc].unroll(cp)
    s[mc].unroll(kbo)
    s[mc].vectorize(kbi)


def _schedule_input(s, v, cfg: ConfigEntity, at=None) -> None:
    """``V`` per (tile, channel block): points unrolled, channels vectorized; its row pass
    inside.  At root the padded input and ``V`` are parallel loops of their own;
    ``at`` a fused block both cover that block's tiles only."""
    vt = _stage(v.op, "winograd_V_rows")
    dvec = _stage(vt.op, "winograd_data_vec")
    e, nu, p, c = s[v].op.axis
    cc, ci = s[v].split(c, factor=cfg["cb"].val)
    s[v].reorder(p, cc, e, nu, ci)
    s[v].unroll(e)
    s[v].unroll(nu)
    s[v].vectorize(ci)
    s[vt].compute_at(s[v], cc)
    _, _, te_, tr, tci = s[vt].op.axis
    s[vt].unroll(te_)
    s[vt].unroll(tr)
    s[vt].vectorize(tci)
    b, dcc, y, _, dci = s[dvec].op.axis
    s[dvec].vectorize(dci)
    if at is None:
        s[v].parallel(p)
        s[dvec].parallel(s[dvec].fuse(b, dcc, y))
    else:
        s[v].compute_at(*at)
        s[dvec].compute_at(*at)


def _schedule_kernel_stage(s, u) -> None:
    """A kernel transformed in a stage (not pre-transformed): points unrolled, lanes vectorized."""
    e, nu, kc, c, kb = s[u].op.axis
    s[u].reorder(kc, c, e, nu, kb)
    s[u].parallel(kc)
    s[u].unroll(e)
    s[u].unroll(nu)
    s[u].vectorize(kb)


def _schedule_output(s, out_op, y, tile: int, bn: int, rows: int = 0, oc_parts: int = 1):
    """The output (+ fused epilogue) by (channel block, tile row, tile); the tile's
    ``A^T M A`` computed there, vectorized over the channel block.  NCHW output::

        parallel (b.k.outer.yy.outer.fused, ...)
          for (xx.outer, ...)
            Y_rows, Y of the tile [tile, tile, bn]
            for (yy.inner, kb) unrolled (xx.inner): out[b, k, yy, xx] = Y[...]

    A blocked output ``[N, K/ob, OH, OW, ob]`` takes ``bn/ob`` blocks per tile and
    stores whole vectors: ``for (yy.inner) unrolled (xx.inner, kc.inner) vectorized (kb)``.

    With ``rows`` the parallel loop runs over blocks of ``rows`` tile rows
    instead (channel blocks inside), and with ``oc_parts`` over (block, part of the
    channel blocks: the largest divisor of their count up to ``oc_parts`` parts); that
    loop and the channel block loop are returned (else None)."""
    tile_rows = _stage(y.op, "winograd_Y_rows")
    axes = s[out_op].op.axis
    if len(axes) == 5:
        b, kc, yy, xx, kb = axes
        ob = get_const_tuple(out_op.output(0).shape)[4]
        kco, kci = s[out_op].split(kc, factor=max(1, bn // ob) if bn % ob == 0 else 1)
        inner = (kci, kb)
    else:
        b, k, yy, xx = axes
        kco, kb = s[out_op].split(k, factor=bn)
        inner = (kb,)
    if rows:
        blk, yy = s[out_op].split(yy, factor=tile * rows)
    yo, yi = s[out_op].split(yy, factor=tile)
    xo, xi = s[out_op].split(xx, factor=tile)
    if len(axes) == 5:
        order = (yi, xi, *inner)
    else:
        order = (yi, kb, xi)
    if len(axes) == 5:
        blocks = -(-get_const_tuple(out_op.output(0).shape)[1] // (bn // ob if bn % ob == 0 else 1))
    else:
        blocks = -(-get_const_tuple(out_op.output(0).shape)[1] // bn)
    oc_parts = max(d for d in range(1, min(oc_parts, blocks) + 1) if blocks % d == 0)
    if rows and oc_parts > 1:
        kpart, kco = s[out_op].split(kco, nparts=oc_parts)
        s[out_op].reorder(b, blk, kpart, kco, yo, xo, *order)
        par = s[out_op].fuse(b, blk, kpart)
    elif rows:
        s[out_op].reorder(b, blk, kco, yo, xo, *order)
        par = s[out_op].fuse(b, blk)
    else:
        s[out_op].reorder(b, kco, yo, xo, *order)
        par = s[out_op].fuse(b, kco, yo)
    s[out_op].parallel(par)
    s[out_op].unroll(xi)
    if len(axes) == 5:
        s[out_op].unroll(inner[0])
        s[out_op].vectorize(inner[1])
    s[y].compute_at(s[out_op], xo)
    s[tile_rows].compute_at(s[out_op], xo)
    _, _, vy, vx, ykb = s[y].op.axis
    s[y].unroll(vy)
    s[y].unroll(vx)
    s[y].vectorize(ykb)
    _, _, ry, rnu, rkb = s[tile_rows].op.axis
    s[tile_rows].unroll(ry)
    s[tile_rows].unroll(rnu)
    s[tile_rows].vectorize(rkb)
    return (par, kco) if rows else None


@records_target
def schedule_conv2d_winograd(outs, cfg: ConfigEntity | None = None, target=None):
    """Schedule :func:`conv2d_winograd_x86` (and an injective epilogue on its output) for
    ``target`` (default: the current one).

    ``cfg`` (default: the one the conv was computed with) must be for the
    conv's workload, with the compute's ``tile``, ``cb``, ``bn`` and ``mr``;
    only ``ku`` may differ."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    out_op = outs[0].op
    anchor, between = find_anchor(s, out_op, lambda op: op.tag == WINOGRAD, inline=False)
    if anchor is None:
        raise ValueError(f"schedule_conv2d_winograd: no conv2d_winograd stage under output '{out_op.name}'")
    have = anchor.attrs["config"]
    if cfg is None:
        cfg = have
    else:
        check_config(cfg, anchor.attrs["workload"])
        diff = [k for k in ("tile", "cb", "bn", "mr", "rows") if cfg[k].val != have[k].val]
        if diff:
            raise ValueError(f"schedule_conv2d_winograd: config knobs {diff} differ from the compute's "
                             f"({have.text()}); compute with the config you schedule with")
    lanes = (target or current_target()).lanes(anchor.output(0).dtype)
    m = anchor.output(0)
    v = _stage(anchor, "winograd_V")
    u = next(t for t in anchor.input_tensors if t is not v)
    unpack = next(op for op in between if op.name == "conv2d_winograd_unpack")
    y = _stage(unpack, "winograd_Y")
    for op in between:  # the epilogue (and the unpack) run in the output loop
        if op is not out_op and op.name not in ("winograd_Y", "winograd_Y_rows"):
            s[op].compute_inline()
    block = _schedule_output(s, out_op, y, cfg["tile"].val, cfg["bn"].val, cfg["rows"].val,
                             cfg["oc_parts"].val)
    at = None if block is None else (s[out_op], block[0])
    _schedule_gemm(s, m, cfg, lanes, (s[out_op], block[1]) if at and cfg["kc_outer"].val else at)
    _schedule_input(s, v, cfg, at)
    if isinstance(u.op, te.ComputeOp):
        _schedule_kernel_stage(s, u)
    return s


__all__ = ["MIN_CHANNELS", "TEMPLATE", "conv2d_winograd_x86", "default_winograd_config", "schedule_conv2d_winograd",
           "winograd_applicable", "winograd_out_block", "winograd_preferred", "winograd_workload"]
