"""The x86 blocked conv2d's template: its workload key, config space and rule.

``conv2d_NCHWc.x86`` (classic TVM's task name): knobs ``ic_bn`` (the input channel
block), ``oc_bn`` (the output channel block: the vector width of the register tile),
``ow_bn`` (its columns), ``unroll_kw``, ``flat`` (the output plane as one row) and
``ic_chunk`` (input channels per reduction chunk over the whole plane; 0: none).
The rule reads the target's vector width and register count; the compute is
:mod:`topi.x86.conv2d`, the schedule :mod:`topi.x86.conv2d_schedule`.
"""

from __future__ import annotations

from te.dtype import bits
from topi.config import divisors, largest_divisor, max_accumulators
from topi.nn.conv2d import _spatial
from tune.autotvm.config import (
    check_config, choose_config, config_of, config_space, current_target, make_config, recorded_values,
    register_rule,
)
from tune.autotvm.space import ConfigEntity

TEMPLATE = "conv2d_NCHWc.x86"
OC_BLOCKS = (8, 16, 24, 32, 48, 64)  # output-channel blocks that divide a channel count (any target)
# On 16 registers a one-group conv whose channels are an odd number of vectors (72, 104, 1000)
# runs the two-vector wide tile over them zero-padded to whole tiles where the padding adds at
# most a fifth (from 40 channels): one vector by 8 columns issues a broadcast per FMA and holds
# too few accumulators to hide the FMA latency (0.63-0.91x the time of such layers of SqueezeNet,
# MobileNet-v3, RegNet alone).  Not where the whole reduction is one unrolled block of input
# channels (16 -> 72 on 16 channels: 1.35x), whose straight-line tile LLVM keeps in memory.
PAD_MIN_CHANNELS = 40
# Channels that are not whole vectors (ShuffleNet-v2's 116, GhostNet's 92 and 100: NCHW outputs,
# a one-vector tile of 7 columns) pad to two-vector tiles too where that adds at most an eighth
# and each output sums at least PAD_MIN_REDUCTION products: 0.86-0.91x the time of 80 -> 92,
# 80 -> 100, 116 -> 116 at 14x14 alone; 24, 40 and 58 input channels gained nothing (0.99-1.11x).
PAD_MIN_REDUCTION = 64
# A 1x1 conv whose weights for one block of output channels fill the L1 data cache (32 KiB on
# Zen 3; 512 input channels by 16) reads them from L2 once per column tile; in chunks of
# IC_CHUNK input channels (4 KiB of weights) run over the whole plane of the block, each chunk's
# weights stay in L1 across the tiles (the partial sums go through a buffer of the block's plane):
# ResNet-50's 1024 -> 256 14x14 layer 74-78 -> 82-88 GFLOP/s one thread (a 512-channel 28x28 one
# 84 -> 88, 256-channel inputs no gain).
L1_BYTES = 32 * 1024
IC_CHUNK = 64
IC_CHUNKS = (0, 32, 64, 128, 256)  # the knob's candidates


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
        groups = workload[8] if len(workload) > 8 else 1
        return conv2d_workload((n, icc * icb, h, w), (occ * ocb, kicc * kicb, kh, kw), st, pads, dil, groups)
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
            "flat": [False, True] if workload[6] == 1 else [False],
            "ic_chunk": [c for c in IC_CHUNKS if c < icg] if workload[6] == 1 else [0]}


def conv2d_rule(workload: tuple, target, ic_bn: int | None = None) -> dict:
    """Block sizes for a conv workload on ``target``, by rule (``ic_bn``: the input block
    when it is given, such as the block a producer in a graph writes).

    * ``ic_bn``: the largest divisor of IC (per group) up to one vector (at most 16);
    * 32 vector registers (AVX-512): one vector of output channels by a row
      (:func:`_row_tile_rule`);
    * 16 (AVX2): ``oc_bn`` two vectors where they divide OC and a tile of them fits
      (the wide tile of :func:`wide_tile_columns`, 6 or 5 columns and the kernel columns
      rolled, where its tail leaves at most 1/6 of a row's tile slots empty; an unpadded
      1x1 conv a dividing tile of 4 or more columns; a strided conv the narrow plane's tile),
      a one-group conv with an odd number of vectors of at least ``PAD_MIN_CHANNELS``
      channels (and more than one ``ic_bn`` block of reduction) that wide tile over them
      zero-padded (its output still blocked by one vector, :func:`out_block_of`), as
      channels that are not whole vectors where :func:`_pads_to_tiles` says, else one
      vector, else the largest block of ``OC_BLOCKS`` that divides OC;
    * ``ow_bn``: the widest divisor of OW whose accumulators fit :func:`max_accumulators`
      (8 columns and a tail tile where only a divisor below 4 exists);
    * ``unroll_kw``: unroll the kernel columns when KW <= 3 and ``ic_bn`` is at most one
      vector (a wider body spills);
    * ``flat``: an unpadded 1x1 conv, or a strided conv no wide tile fits, runs over its
      output plane flattened to one row where those tiles hold 10% more columns than the
      rows' (:func:`_flat_fills`; a 7-wide plane: 49 columns in 5s against 4 + 3 a row);
    * ``ic_chunk``: ``IC_CHUNK`` for a one-group 1x1 conv (16 registers) whose weights for one
      output block fill ``L1_BYTES``, with at least 4 output blocks to share out (the
      threads take whole blocks), else 0 (:func:`_ic_chunk`).

    Each choice was kept where it ran faster in whole models (``benchmarks/graph_models.py``,
    ``benchmarks/model_layers.py`` per layer); ResNet-50's 7-wide 1x1 convs, for one, took
    0.71-0.85x the time in two-vector tiles of 4 + 3 against one vector by the row.
    """
    icg, ocg, oh, ow, kw, groups, dtype = _geometry(workload)
    kh = workload[2][2]
    vec, max_acc = target.lanes(dtype), max_accumulators(target)
    cands = oc_block_candidates(workload, target)
    if not cands:
        raise ValueError(f"{TEMPLATE}: {ocg} output channels per group cannot be blocked (need a multiple "
                         f"of one of {OC_BLOCKS}); use topi.nn.group_conv2d_nchw")
    if ic_bn is None:
        ic_bn = largest_divisor(icg, min(16, vec))
    if max_acc >= 16 and ocg % vec == 0:
        return {"ic_bn": ic_bn, "oc_bn": vec, **_row_tile_rule(ow, max_acc), "flat": False, "ic_chunk": 0}
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
    elif groups == 1 and ocg >= PAD_MIN_CHANNELS and wide and icg * kh * kw > ic_bn and _pads_to_tiles(
            ocg, vec, icg * kh * kw):
        oc_bn = 2 * vec  # the wide tile over channels zero-padded to two vectors (output still by one)
    elif vec in cands and ocg % vec == 0:
        oc_bn = vec
    else:
        dividing = [b for b in cands if ocg % b == 0]
        whole = [b for b in dividing if b % vec == 0 or vec % b == 0]  # 24 on AVX-512: 3x slower than 8
        oc_bn = max(whole or dividing) if dividing else vec
    ow_bn, unroll_kw = _row_tile(ow, kw, ic_bn, oc_bn, vec, max_acc)
    two_vectors = oc_bn == 2 * vec and bool(wide)  # the wide or narrow two-vector tile (flat: over the plane)
    if two_vectors:
        ow_bn, unroll_kw = wide, False
    chunk = _ic_chunk(icg, ocg, oc_bn, pointwise and groups == 1, bits(dtype) // 8)
    return {"ic_bn": ic_bn, "oc_bn": oc_bn, "ow_bn": ow_bn, "unroll_kw": unroll_kw, "flat": flat and two_vectors,
            "ic_chunk": chunk}


def _pads_to_tiles(ocg: int, vec: int, reduction: int) -> bool:
    """Whether ``ocg`` output channels run the two-vector tile zero-padded: an odd number of
    vectors, or channels that are not whole vectors where the padding adds at most an eighth
    and the reduction has ``PAD_MIN_REDUCTION`` products or more."""
    if ocg % vec == 0:
        return True
    return 8 * _ceil(ocg, 2 * vec) * 2 * vec <= 9 * ocg and reduction >= PAD_MIN_REDUCTION


def _ic_chunk(icg: int, ocg: int, oc_bn: int, pointwise: bool, itemsize: int) -> int:
    """``IC_CHUNK`` where a pointwise conv's weights for one output block (``icg`` x ``oc_bn``)
    fill ``L1_BYTES``, the chunks divide the input channels and there are at least 4 output
    blocks; else 0."""
    fills = icg * oc_bn * itemsize >= L1_BYTES
    return IC_CHUNK if pointwise and fills and icg % IC_CHUNK == 0 and _ceil(ocg, oc_bn) >= 4 else 0


def _row_tile(ow: int, kw: int, ic_bn: int, oc_bn: int, vec: int, max_acc: int) -> tuple[int, bool]:
    """``(ow_bn, unroll_kw)`` of a row tile of ``oc_bn`` channels: the widest divisor of OW whose
    accumulators fit (8 columns and a tail where only a divisor below 4 exists); the kernel
    columns unrolled when KW <= 3 and ``ic_bn`` is at most one vector (a wider body spills)."""
    max_w = max(1, max_acc // max(1, oc_bn // vec))
    ow_bn = largest_divisor(ow, max_w)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_w, 8)
    return ow_bn, kw <= 3 and ic_bn <= vec


def _flat_fills(plane: int, ow: int, row_tile: int, flat_tile: int) -> bool:
    """Whether tiles of ``flat_tile`` columns over a flattened plane of ``plane`` points hold
    10% more columns on average than tiles of ``row_tile`` over its rows of ``ow`` (7 and 13
    wide, and rows in dividing tiles of 4; not 14 wide, where both hold about as many)."""
    return plane / _ceil(plane, flat_tile) >= 1.1 * ow / _ceil(ow, row_tile)


def _fullest_tile(ow: int, cols: tuple) -> int:
    """The column count of ``cols`` that tiles a row of ``ow`` in the fewest tiles, then the
    fewest empty columns (7 wide: 4 + 3; 13 wide: 5 + 5 + 3)."""
    return min(cols, key=lambda c: (_ceil(ow, c), _ceil(ow, c) * c - ow))


def input_block_config(workload: tuple, ic_bn: int, target=None) -> ConfigEntity:
    """The rule's config of a conv ``workload`` (a ``conv2d_workload`` key) reading its input
    in blocks of ``ic_bn`` (a legal ``ic_bn``: the block its producer writes, so that no
    layout transform sits between them)."""
    target = target or current_target()
    return make_config(workload, conv2d_rule(tuple(workload), target, ic_bn), target)


def _row_tile_rule(ow: int, max_acc: int) -> dict:
    """32 vector registers (AVX-512): one vector of output channels by a row of up to
    ``max_acc`` columns (14 of a 14, 28 or 56 wide plane), the kernel columns rolled.  The
    kernel slice of an output block is read once per column tile, so a row tile of one vector
    reads it half as often as a two-vector tile of the same accumulators; the RGB stem too, so
    its blocks match the next layers'."""
    ow_bn = largest_divisor(ow, max_acc)
    if ow_bn < 4 and ow > 4:
        ow_bn = min(max_acc, 8)  # a tile of 8, and a tail
    return {"ow_bn": ow_bn, "unroll_kw": False}


def wide_tile_columns(target) -> tuple:
    """Column counts of the wide two-vector tile on a 16-register target, preferred first
    (none with 32 registers): with the kernel columns rolled, 12 ymm accumulators (16 channels
    x 6 columns), the kernel vectors and a broadcast fit AVX2's 16 registers without spilling;
    5 columns tile a row of 14 as 5 + 5 + 4."""
    return (6, 5) if max_accumulators(target) < 16 else ()


def out_block_of(channels: int, oc_bn: int, groups: int = 1) -> int:
    """The channel block a conv's output keeps in a graph's blocked layout (0: none): ``oc_bn``
    where it divides each group's channels; for a one-group conv whose ``oc_bn`` zero-pads them
    (72 by 16), the largest of ``oc_bn``/2, /4, ... down to 8 that divides them (the padded
    channels are never stored: the epilogue re-blocks the register tile, see
    ``topi.x86.conv2d_nchwc.reblock_output``)."""
    if (channels // groups) % oc_bn == 0:
        return oc_bn
    block = oc_bn
    while groups == 1 and block % 2 == 0 and block > 8:
        block //= 2
        if channels % block == 0:
            return block
    return 0


def conv2d_deployable(workload: tuple, values: dict) -> bool:
    """Whether a graph runs ``values`` as measured: the blocked layout keeps no zero-padded
    channels, so the output must have a block (:func:`out_block_of`); a grouped conv's
    ``oc_bn`` must divide each group's channels (the template also measures blocks that pad
    them, which the layout pass would lower to a divisor)."""
    return out_block_of(workload[2][0], values["oc_bn"], workload[6]) > 0


def conv2d_out_block(cfg: ConfigEntity, target=None) -> int:
    """The channel block of the conv's output in a graph's blocked layout (0: NCHW)."""
    return out_block_of(cfg.workload[2][0], cfg["oc_bn"].val, cfg.workload[6])


register_rule(TEMPLATE, conv2d_space, conv2d_rule, doc="blocked NCHW[x]c conv2d (conv2d_nchw_x86)",
              legacy={"flat": False, "ic_chunk": 0},  # records before those knobs: rows, one reduction
              input_knob="ic_bn", in_block=lambda workload, block, target: conv2d_rule(workload, target, block),
              out_block=conv2d_out_block, deployable=conv2d_deployable)


def conv2d_blockable(workload: tuple, target=None) -> bool:
    """Whether the blocked template applies (a group's output channels divide into blocks)."""
    return bool(oc_block_candidates(conv2d_key(workload), target or current_target()))


def default_conv2d_config(workload, target=None) -> ConfigEntity:
    """The config of a conv ``workload`` (a key or a compute's ``attrs["workload"]``):
    the current dispatch context's choice, else :func:`conv2d_rule` for ``target``."""
    return choose_config(conv2d_key(tuple(workload)), target)


def blocks_config(workload, values: dict | None, ic_bn: int, oc_bn: int, target=None) -> ConfigEntity:
    """The config of ``values`` with the blocks ``ic_bn``/``oc_bn`` that a conv's pre-blocked tensors
    fix (classic ``conv2d_NCHWc`` takes any blocks: ``NCHW3c`` data, a kernel blocked by 5): blocks
    outside the template's space join this config's space, the other knobs keep theirs (a knob
    ``values`` does not name takes its legacy value: ``ic_chunk`` 0).  ``values`` None: the row
    tile of those blocks (:func:`_row_tile`, for a grouped conv whose groups the template would
    not block)."""
    target = target or current_target()
    if values is None:
        _, _, _, ow, kw, _, dtype = _geometry(tuple(workload))
        ow_bn, unroll_kw = _row_tile(ow, kw, ic_bn, oc_bn, target.lanes(dtype), max_accumulators(target))
        values = {"ow_bn": ow_bn, "unroll_kw": unroll_kw, "flat": False}
    space = config_space(tuple(workload), target)
    for knob, block in (("ic_bn", ic_bn), ("oc_bn", oc_bn)):
        space[knob] = sorted(set(space[knob]) | {block})
    values = recorded_values(workload, {**values, "ic_bn": ic_bn, "oc_bn": oc_bn})
    return check_config(config_of(workload, values, space))
