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
from tune.autotvm.config import Config, choose_config, current_target, make_config, register_rule
from topi.config import divisors, largest_divisor, max_accumulators
from topi.nn.conv2d import _spatial, nchwc_conv
from topi.utils import find_anchor, get_const_tuple
from topi.x86.conv_direct import schedule_direct

PACK = "conv2d_NCHWc_pack"  # tag of the layout-packing stages (not injective: never inlined)
TEMPLATE = "conv2d_NCHWc.x86"
OC_BLOCKS = (8, 16, 24, 32, 48, 64)  # output-channel blocks that divide a channel count (any target)
IN_PLACE_MIN_PLANE = 14 * 14


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def conv2d_workload(dshape, kshape, strides, pads, dilation, groups: int = 1, dtype: str = "float32",
                    out_dtype: str | None = None) -> tuple:
    """The workload key of the blocked conv: NCHW data, OIHW kernel ``[OC, IC/groups, KH, KW]``."""
    return (TEMPLATE, tuple(int(d) for d in dshape), tuple(int(d) for d in kshape),
            tuple(int(v) for v in strides), tuple(int(v) for v in pads), tuple(int(v) for v in dilation),
            int(groups), str(dtype), str(out_dtype or dtype))


def conv2d_key(workload: tuple) -> tuple:
    """The template key of a conv compute's ``attrs["workload"]``: the key itself, the
    ``("conv2d_nchw", ...)`` workload of ``topi.nn.conv2d_nchw``, or ``("conv2d_NCHWc", ...)``
    of the blocked ``topi.nn.conv2d_NCHWc`` (shapes read as NCHW / OIHW)."""
    if workload[0] == TEMPLATE:
        return tuple(workload)
    if workload[0] == "conv2d_nchw":
        _, dshape, kshape, st, pads, dil, groups, out_dtype = workload
        return conv2d_workload(dshape, kshape, st, pads, dil, groups, out_dtype, out_dtype)
    if workload[0] == "conv2d_NCHWc":
        _, (n, icc, h, w, icb), (occ, kicc, kh, kw, kicb, ocb), st, pads, dil = workload[:6]
        return conv2d_workload((n, icc * icb, h, w), (occ * ocb, kicc * kicb, kh, kw), st, pads, dil)
    raise ValueError(f"conv2d: workload {workload[0]!r} is not a conv2d workload")


def _geometry(workload: tuple) -> tuple:
    """(IC per group, OC per group, OH, OW, KW, groups, dtype) of a conv2d key."""
    _, dshape, kshape, stride, pads, dilation, groups, dtype, _ = workload
    _, _, _, (oh, ow) = _spatial(TEMPLATE, dshape, kshape, dshape[2:4], kshape[2:4], stride, pads, dilation)
    return kshape[1], kshape[0] // groups, oh, ow, kshape[3], groups, dtype


def conv2d_flop(workload: tuple) -> float:
    """Multiply-adds of a conv2d key, twice (the direct convolution's, whatever computes it: the
    GFLOP/s of a blocked config that pads its channels and of a Winograd config read alike)."""
    _, dshape, kshape, stride, pads, dilation, _, _, _ = workload
    oh, ow = _spatial(TEMPLATE, dshape, kshape, dshape[2:4], kshape[2:4], stride, pads, dilation)[3]
    return 2.0 * dshape[0] * kshape[0] * oh * ow * kshape[1] * kshape[2] * kshape[3]


def oc_block_candidates(workload: tuple, target) -> list:
    """Legal ``oc_bn``: blocks that divide the (per group) output channels; with one group
    also one and two vectors, the output channels then zero-padded to a whole block."""
    _, ocg, _, _, _, groups, dtype = _geometry(workload)
    cands = {b for b in OC_BLOCKS if ocg % b == 0}
    if groups == 1:
        vec = target.lanes(dtype)
        cands |= {vec, 2 * vec}
    return sorted(cands)


def conv2d_space(workload: tuple, target) -> dict:
    """Knob -> candidates of the blocked conv (see :func:`conv2d_rule`); ``flat`` (the output
    plane as one row of OH*OW columns, tiled by ``ow_bn``) where the conv has one group."""
    icg = _geometry(workload)[0]
    return {"ic_bn": divisors(icg, 64), "oc_bn": oc_block_candidates(workload, target),
            "ow_bn": list(range(1, max_accumulators(target) + 1)), "unroll_kw": [True, False],
            "flat": [False, True] if workload[6] == 1 else [False]}


def conv2d_rule(workload: tuple, target, ic_bn: int | None = None) -> dict:
    """Block sizes for a conv workload on ``target``, by rule (``ic_bn``: the input block
    when it is given, such as the block a producer in a graph writes).

    * ``ic_bn``: the largest divisor of IC (per group) up to 16 (3 for an RGB stem);
    * ``oc_bn``: two vectors (32 lanes of AVX-512, 16 of AVX2) when they divide OC
      and OW has a divisor of at least 4 that fits half the accumulators (or the
      wide tile below applies), else one
      vector if it divides, else the largest block of ``OC_BLOCKS`` that divides
      OC, whole vectors or a divisor of one first (one group: one vector, OC
      zero-padded up to it);
    * ``ow_bn``: the widest divisor of OW whose ``ow_bn * oc_bn / lanes`` vector
      accumulators fit in :func:`max_accumulators`; 8 columns (or the budget),
      with a narrower tail tile at the end of each row, when only a divisor
      below 4 exists;
    * ``unroll_kw``: unroll the kernel columns when KW <= 3 and ``ic_bn`` is at most one
      vector (an ``ic_bn`` of two AVX2 vectors, given by the producer, makes a 16 x 3 x 7
      body that spills: 512->512 3x3/2 @14 1.12x slower unrolled than rolled);
    * with 32 vector registers, the row tile of :func:`_row_tile_rule` instead (one
      vector of channels by a row);
    * on a target of 16 vector registers (AVX2), ``ic_bn`` is at most one vector
      (8: half the unrolled body, 512->512 @7 0.90x -> 0.99x of AVX-512), and a
      two-vector block takes the wide tile of :func:`wide_tile_columns` (6 or 5
      columns, 12 or 10 accumulators, kernel columns rolled) where its tail leaves at
      most 1/6 of the row's tile slots empty (3x3 128->128 @28: 0.92x -> 0.98x of the
      AVX-512 build, per-thread CPU time; SqueezeNet's 3x3 convs at 13 wide, 5 + 5 + 3,
      0.87-0.94x the time of one vector by 8 + 5); a conv without padding (1x1) takes a dividing
      tile of 4 or more columns instead where one exists (ResNet-50's 1x1 convs at 56 and
      28 wide, 8 layers, ran 1-26% faster when the wide tile padded the columns through
      a copy of the input; with a tail tile instead, 16 x 4 still ran 8% faster than
      16 x 6 on 64->256 @56, and 7% slower on 512->128 @28, a busy host), else the
      two-vector tile of 6, 5 or 4 columns that leaves the fewest tiles, then the fewest
      empty columns: 4 + 3 on a 7-wide plane, 5 + 5 + 3 on 13 (against one vector by 7
      or 8 columns: ResNet-50's 1x1 convs at 7 wide 0.71-0.85x the time, DenseNet's
      800->128 @7 0.83x, SqueezeNet's @13 0.70x; 16 x 5 and 16 x 6 on 7 wide 1.04-1.08x
      and 1.12-1.19x of 16 x 4).  A strided padded conv with no wide tile takes that
      two-vector tile too, where a stride-1 one keeps one vector by the row (ResNet-50's
      512->512 3x3/2 @14->7 0.87-0.89x the time of 8 x 7, Inception-v2's 256->256 and
      128->192 3x3/2 @7 0.90x and 0.87x; on the 16-channel blocks the graph gives them,
      0.68-0.76x, and 0.87x in place in ResNet-50's run; stride-1 3x3 convs at 7 wide ran
      16 x 4 + 3 0.96-1.18x slower);
    * ``flat``: an unpadded 1x1 conv, or a strided conv that no wide tile fits, runs over
      its output plane flattened to one row, in two-vector tiles of 5 columns, where those
      hold 10% more columns on average than the rows' tiles (:func:`_flat_fills`: 7 and 13
      wide, and rows in dividing tiles of 4 such as 28, 56 and 112 wide; not 14, nor rows
      that divide by 5 or 6).  A padded one then reads a padded copy of its input (the
      flattened columns cross rows, so the taps that read padding cannot be skipped by
      loop bounds): ResNet-50's 512->512 3x3/2 @14->7, 4 + 3 a row against 49 in 5s, ran
      in 0.76-0.89x the time in place in the model (3 runs; alone 0.90-0.95x); its strided
      1x1 convs 256->512 /2 @56->28 and 1024->2048 /2 @14->7 0.94x and 0.96x.  A stride-1
      3x3 conv at 7 wide keeps one vector by the row (flattened alone 0.96-1.06x).  With 32
      vector registers never (not measured: the row tile holds 7 columns of a 7-wide row
      already).
    """
    icg, ocg, oh, ow, kw, groups, dtype = _geometry(workload)
    vec, max_acc = target.lanes(dtype), max_accumulators(target)
    cands = oc_block_candidates(workload, target)
    if not cands:
        raise ValueError(f"{TEMPLATE}: {ocg} output channels per group cannot be blocked (need a multiple "
                         f"of one of {OC_BLOCKS}); use topi.nn.group_conv2d_nchw")
    if ic_bn is None:
        ic_bn = largest_divisor(icg, min(16, vec))
    if max_acc >= 16 and ocg % vec == 0:
        return {"ic_bn": ic_bn, "oc_bn": vec, **_row_tile_rule(ow, max_acc), "flat": False}
    cols = wide_tile_columns(target)
    narrow = _fullest_tile(ow, (*cols, 4)) if cols and ow > 4 else None  # a narrow plane's two-vector tile
    fits = [c for c in cols if 6 * (_ceil(ow, c) * c - ow) <= ow]  # tail gap <= 1/6
    if narrow and not any(workload[4]):
        # a conv without padding (1x1): a dividing tile of 4 or more, else the narrow plane's tile
        exact = largest_divisor(ow, max(cols))
        rows = exact if exact >= 4 else narrow
    elif fits:  # fewest tiles, the wider on a tie
        rows = min(fits, key=lambda c: _ceil(ow, c))
    else:  # a strided conv's narrow plane, as a 1x1 conv's
        rows = narrow if max(workload[3]) > 1 else None
    # a 1x1 conv's plane, or a strided conv's that no wide tile fits, flattened to one row
    # where its tiles fill better than the rows' (a padded one then reads a padded copy)
    pointwise = tuple(workload[2][2:4]) == (1, 1) and not any(workload[4])
    flattens = groups == 1 and (pointwise or max(workload[3]) > 1 and not fits)
    flat = bool(rows and flattens and _flat_fills(oh * ow, ow, rows, min(cols)))
    wide = min(cols) if flat else rows
    if 2 * vec in cands and ocg % (2 * vec) == 0 and (wide or largest_divisor(ow, max_acc // 2) >= 4):
        oc_bn = 2 * vec
    elif vec in cands and ocg % vec == 0:
        oc_bn = vec
    else:
        dividing = [b for b in cands if ocg % b == 0]
        whole = [b for b in dividing if b % vec == 0 or vec % b == 0]  # 24 on AVX-512: 3x slower than 8
        oc_bn = max(whole or dividing) if dividing else vec
    max_w = max(1, max_acc // max(1, oc_bn // vec))
    ow_bn = largest_divisor(ow, max_w)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_w, 8)
    unroll_kw = kw <= 3 and ic_bn <= vec
    two_vectors = oc_bn == 2 * vec and bool(wide)  # the wide or narrow two-vector tile (flat: over the plane)
    if two_vectors:
        ow_bn, unroll_kw = wide, False
    return {"ic_bn": ic_bn, "oc_bn": oc_bn, "ow_bn": ow_bn, "unroll_kw": unroll_kw, "flat": flat and two_vectors}


def _flat_fills(plane: int, ow: int, row_tile: int, flat_tile: int) -> bool:
    """Whether tiles of ``flat_tile`` columns over a flattened plane of ``plane`` points hold
    10% more columns on average than tiles of ``row_tile`` over its rows of ``ow``.  7 wide
    (4 + 3: 3.5 a tile; 49 in 5s: 4.9) ResNet-50's 2048->512 and 512->2048 1x1 convs ran
    flattened in 0.88-0.91x the time; 13 wide (5 + 5 + 3: 4.3; 169 in 5s: 5.0) SqueezeNet's
    0.92-0.94x; 14 wide (5 + 5 + 4: 4.7; 4.9) 0.99-1.03x, so rows stay (2 threads, interleaved).
    Rows of 56 and 28 in dividing tiles of 4 (8 accumulators, too few to hide the FMAs'
    latency) against 5s over the plane (10 accumulators), on 16-channel input blocks:
    ResNet-50's and MobileNet's 1x1 convs at 56 and 28 wide ran in 0.91-0.99x the time
    (ten layers, median 0.96x), 32->64 @112 0.975x; tiles of 6 over the plane 0.95-1.02x."""
    return plane / _ceil(plane, flat_tile) >= 1.1 * ow / _ceil(ow, row_tile)


def _fullest_tile(ow: int, cols: tuple) -> int:
    """The column count of ``cols`` that tiles a row of ``ow`` in the fewest tiles, then the
    fewest empty columns (7 wide: 4 + 3; 13 wide: 5 + 5 + 3)."""
    return min(cols, key=lambda c: (_ceil(ow, c), _ceil(ow, c) * c - ow))


def input_block_config(workload: tuple, ic_bn: int, target=None) -> Config:
    """The rule's config of a conv ``workload`` (a ``conv2d_workload`` key) reading its input
    in blocks of ``ic_bn`` (a legal ``ic_bn``: the block its producer writes, so that no
    layout transform sits between them)."""
    target = target or current_target()
    return make_config(workload, conv2d_rule(tuple(workload), target, ic_bn), target)


def _row_tile_rule(ow: int, max_acc: int) -> dict:
    """32 vector registers (AVX-512): one vector of output channels by a row of up to
    ``max_acc`` columns (14 of a 14, 28 or 56 wide plane).  The RGB stem too: its blocks
    then match the next layers' (DenseNet's first concatenation needed 12 transforms when
    the stem alone kept two vectors; its own time is the same within the noise).

    The kernel slice of an output block (IC x oc_bn) is read once per column tile; a row
    tile of one vector reads half the slice twice as rarely as the two-vector 7-column tile
    of the same 14 accumulators.  In a 60-minute tune of ResNet-50 (3,847 records) the
    best configs of 16 of its 24 direct convs had one vector (or less) of output channels
    (4 of the other 8 within 1% of one-vector configs), and where the tune measured this rule's config it beat the two-vector rule on 8 of 9
    layers: 1024->256 1x1 @14 0.81 -> 0.58 ms, 256->1024 1x1 @14 0.66 -> 0.53, 512->2048
    1x1 @7 1.13 -> 0.76, 512->1024 1x1/2 @28 1.58 -> 1.27 (128->128 3x3 @28: 1.10 -> 1.12).
    The kernel columns stay rolled (an unrolled 3 x 14 body spills; the tune preferred
    rolled on the 3x3 layers).
    """
    ow_bn = largest_divisor(ow, max_acc)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_acc, 8)  # a tile of 8, and a tail
    return {"ow_bn": ow_bn, "unroll_kw": False}


def wide_tile_columns(target) -> tuple:
    """Column counts of the wide two-vector tile on a 16-register target, preferred
    first (none with 32 registers).

    With the kernel columns rolled, 12 ymm accumulators (16 channels x 6 columns)
    plus kernel vectors and a broadcast fit AVX2's 16 registers: the ResNet
    128->128 @28 kernel made 38 stack references, where the same tile with
    ``unroll_kw`` made 583 (and 16x7 with 14 accumulators about 100, at half speed).
    5 columns tile OW 14 as 5 + 5 + 4 (256->256 @14: 0.90x -> 0.99x of AVX-512).
    """
    return (6, 5) if max_accumulators(target) < 16 else ()


def conv2d_deployable(workload: tuple, values: dict) -> bool:
    """Whether a graph runs ``values`` as measured: the blocked layout keeps no zero-padded
    channels, so the output block must divide each group's output channels (the template also
    measures blocks that pad them, which the layout pass would lower to a divisor)."""
    return (workload[2][0] // workload[6]) % values["oc_bn"] == 0


def conv2d_out_block(cfg: Config, target=None) -> int:
    """The channel block of the conv's output in a graph's blocked layout (0: NCHW)."""
    return cfg["oc_bn"] if conv2d_deployable(cfg.workload, cfg.values) else 0


register_rule(TEMPLATE, conv2d_space, conv2d_rule, doc="blocked NCHW[x]c conv2d (conv2d_nchw_x86)",
              legacy={"flat": False},  # records before the flattened plane ran its rows
              input_knob="ic_bn", in_block=lambda workload, block, target: conv2d_rule(workload, target, block),
              out_block=conv2d_out_block, deployable=conv2d_deployable)


def conv2d_blockable(workload: tuple, target=None) -> bool:
    """Whether the blocked template applies (a group's output channels divide into blocks)."""
    return bool(oc_block_candidates(conv2d_key(workload), target or current_target()))


def default_conv2d_config(workload, target=None) -> Config:
    """The config of a conv ``workload`` (a key or a compute's ``attrs["workload"]``):
    the current dispatch context's choice, else :func:`conv2d_rule` for ``target``."""
    return choose_config(conv2d_key(tuple(workload)), target)


# ------------------------------------------------------------- computes ---
def pack_data(data, ic_bn: int, pads: tuple):
    """``data_vec[n, c/ic_bn, y, x, c%ic_bn]``: NCHW -> padded NCHW[ic_bn]c in one stage."""
    n, ic, h, w = get_const_tuple(data.shape)
    top, left, bottom, right = pads
    zero = te.const(0.0, data.dtype)

    def body(b, cc, y, x, ci):
        inside = te.all(y >= top, y < top + h, x >= left, x < left + w)
        return te.if_then_else(inside, data[b, cc * ic_bn + ci, y - top, x - left], zero)

    return te.compute((n, ic // ic_bn, h + top + bottom, w + left + right, ic_bn), body, name="data_vec", tag=PACK)


def blocked_conv(data_pad, kernel, out_hw: tuple, stride, dilation, out_dtype: str, cfg: Config, attrs: dict,
                 groups: int = 1):
    """The ``conv2d_NCHWc`` stage over blocked, padded data: :func:`topi.nn.conv2d.nchwc_conv`,
    or with ``cfg["flat"]`` that conv over its output plane as one row of ``OH*OW`` columns
    (``attrs["flat"]``), returned through the view ``conv2d_NCHWc_plane`` of its
    ``[N, OCc, OH, OW, oc_bn]`` shape::

        conv[n, oc, 0, f, ob] += data[n, ico, (f // OW)*sh + kh, (f % OW)*sw + kw, ici] * kernel[...]
        plane[n, oc, y, x, ob] = conv[n, oc, 0, y*OW + x, ob]

    The schedule then tiles the flattened plane: a 7x7 plane's 49 columns in tiles of 5 (9 of
    10 accumulators, a tail of 4) where its rows take two tiles each (4 + 3)."""
    if not cfg.get("flat"):
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


def conv2d_nchw_x86(data, kernel, stride, padding, dilation, out_dtype=None, cfg: Config | None = None,
                    groups: int = 1):
    """NCHW conv through the blocked fast path: pack, ``conv2d_NCHWc``, unpack.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, H, W]``.
    kernel : te.Tensor
        ``[OC, IC/groups, KH, KW]``, packed in a stage; or a pre-packed 6-D
        ``[OCc, ICc, KH, KW, ic_bn, oc_bn]`` (see :func:`pack_kernel_numpy`)
        whose blocks must be the config's (the output keeps OCc*oc_bn channels).
    stride, padding, dilation
        As in :func:`topi.nn.conv2d_nchw`.
    cfg : Config, optional
        The config of this workload (:func:`conv2d_workload`); default: the
        one :func:`default_conv2d_config` chooses (with a pre-packed kernel,
        the kernel's blocks).  A config for another workload or with blocks
        other than a pre-packed kernel's is a ``ValueError``.
    groups : int
        Grouped convolution (kernel ``[OC, IC/groups, KH, KW]``); the blocks
        must divide each group's channels.

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
        oc, plain = occ * oc_bn, (oc_bn * occ, icc * ic_bn, kh, kw)
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
    kvec = kernel if len(kshape) == 6 else pack_kernel(kernel, cfg["ic_bn"], cfg["oc_bn"])
    dvec = pack_data(data, cfg["ic_bn"], pads)
    conv = blocked_conv(dvec, kvec, (oh, ow), st, dil, out_dtype or data.dtype, cfg,
                        {"workload": key, "config": cfg}, groups)
    ocb = cfg["oc_bn"]
    return te.compute((dshape[0], oc, oh, ow), lambda n, c, y, x: conv[n, c // ocb, y, x, c % ocb],
                      name="conv2d_nchw_unpack", tag=tag.INJECTIVE)


def _config_for(key: tuple, cfg: Config | None, kshape: tuple) -> Config:
    """``cfg`` checked against ``key`` (and a pre-packed kernel's blocks), or the chosen one."""
    blocks = {"ic_bn": kshape[4], "oc_bn": kshape[5]} if len(kshape) == 6 else {}
    if cfg is None:
        cfg = default_conv2d_config(key)
        if blocks and any(cfg[k] != v for k, v in blocks.items()):
            cfg = make_config(key, {**cfg.values, **blocks})
        return cfg
    cfg.check(key)
    for k, v in blocks.items():
        if cfg[k] != v:
            raise ValueError(f"conv2d_nchw_x86: config knob {k}={cfg[k]} but the pre-packed kernel "
                             f"{kshape} is blocked by {v}; pack the kernel with the config's blocks")
    return cfg


# ------------------------------------------------------------ schedules ---
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
    channel and column either way).  Measured on ResNet-50's 1x1 layers at 56x56,
    28x28 and 14x14: 10-40% faster; at 7x7 and stride 2 the packed copy wins."""
    wl = conv_op.attrs.get("workload")
    if data_vec_op.name != "data_vec" or wl is None or wl[0] not in ("conv2d_nchw", TEMPLATE):
        return False
    _, dshape, kshape, stride, pads = wl[:5]
    _, _, oh, ow, _ = get_const_tuple(conv_op.output(0).shape)
    return (tuple(kshape[2:4]) == (1, 1) and tuple(stride) == (1, 1) and not any(pads)
            and ow == dshape[3] and oh * ow >= IN_PLACE_MIN_PLANE)


def _schedule_inputs(s, conv_op, vec: int) -> None:
    """Compute packing stages at the root, parallel and vectorized; inline the data packing
    where the conv reads the data in place, and the zero padding of blocked data (the
    lowering then skips the taps that read it: stride-2 3x3 convs of ResNet-50 5-9% faster
    than over a padded copy, stride-1 ones 1-12%, measured alternately) unless the conv runs
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


def _tile_output(s, out, cfg: Config, ocb: int, flat: bool = False):
    """Split the output into (parallel rows, column tiles); return the attach axis.

    A 5-D output is NCHW[x]c; a 4-D output is NCHW (the unpacked form),
    whose channels are split by ``ocb`` to meet the accumulator's blocks.
    ``flat``: the rows fused into one before the column tiles (a flattened
    plane's conv), the channel blocks parallel.
    """
    axes = s[out].op.axis
    if len(axes) == 5:
        n, occ, oh, ow, ob = axes
    else:
        n, c, oh, ow = axes
        occ, ob = s[out].split(c, factor=ocb)
    if flat:
        ow = s[out].fuse(oh, ow)
    wo, wi = s[out].split(ow, factor=cfg["ow_bn"])
    outer = (n, occ, wo) if flat else (n, occ, oh, wo)
    if len(axes) == 5:
        s[out].reorder(*outer, wi, ob)
        s[out].vectorize(ob)
    else:
        s[out].reorder(*outer, ob, wi)
        s[out].unroll(ob)
    s[out].unroll(wi)
    s[out].parallel(s[out].fuse(n, occ) if flat else s[out].fuse(n, occ, oh))
    return wo


def conv_config(conv_op, cfg: Config | None = None) -> Config:
    """The config a schedule uses for ``conv_op``: ``cfg`` (which must be for its workload
    and blocks; its ``ow_bn`` and ``unroll_kw`` may differ from the compute's), else the
    one it was computed with, else the chosen one for its blocks."""
    key = conv2d_key(conv_op.attrs["workload"])
    kernel = next(t for t in conv_op.input_tensors if len(t.shape) == 6)
    ic_bn, oc_bn = get_const_tuple(kernel.shape)[4:]
    flat = bool(conv_op.attrs.get("flat"))
    if cfg is None:
        cfg = conv_op.attrs.get("config") or default_conv2d_config(key)
        if (cfg["ic_bn"], cfg["oc_bn"], cfg.get("flat", False)) != (ic_bn, oc_bn, flat):
            cfg = make_config(key, {**cfg.values, "ic_bn": ic_bn, "oc_bn": oc_bn, "flat": flat})
        return cfg
    cfg.check(key)
    if (cfg["ic_bn"], cfg["oc_bn"]) != (ic_bn, oc_bn):
        raise ValueError(f"schedule_conv2d_NCHWc: config blocks (ic_bn={cfg['ic_bn']}, oc_bn={cfg['oc_bn']}) "
                         f"differ from the conv's (ic_bn={ic_bn}, oc_bn={oc_bn})")
    if cfg["flat"] != flat:
        raise ValueError(f"schedule_conv2d_NCHWc: config knob flat={cfg['flat']} but the conv was computed with "
                         f"flat={flat} (its plane {'flattened' if flat else 'in rows'}); compute with the config "
                         f"you schedule with")
    return cfg


def _schedule_nchwc(s, out_op, cfg: Config | None = None):
    conv_op = _find_conv(s, out_op)
    cfg = conv_config(conv_op, cfg)
    ocb = cfg["oc_bn"]
    _schedule_inputs(s, conv_op, current_target().lanes(conv_op.output(0).dtype))
    conv = conv_op.output(0)
    if conv_op is out_op:
        conv = s.cache_write(conv, "local")
    wo = _tile_output(s, out_op, cfg, ocb, cfg["flat"])
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
        The conv's config (default: the one it was computed with); one for
        another workload, or with blocks other than the tensors', is a ``ValueError``.
    """
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    _schedule_nchwc(s, outs[0].op, cfg)
    return s


def schedule_conv2d_nchw(outs, cfg: Config | None = None):
    """Schedule an NCHW conv: the blocked path for :func:`conv2d_nchw_x86` outputs,
    a direct register-tiled schedule for plain (or grouped) ``topi.nn.conv2d_nchw``
    (``cfg`` is then a ``conv_direct.x86`` config)."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    if not _has_conv(outs[0].op):
        return schedule_direct(s, outs[0].op, channels_last=False, cfg=cfg)
    return _schedule_nchwc(s, outs[0].op, cfg)


def schedule_conv2d_nhwc(outs, cfg: Config | None = None):
    """Schedule ``topi.nn.conv2d_nhwc``: output channels vectorized, rows parallel."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=True, cfg=cfg)
