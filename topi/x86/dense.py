"""x86 schedules of ``dense`` / ``matmul``: a register-blocked dot-product kernel.

``dense`` reads both operands along ``K`` (``data[i, k] * weight[j, k]``), so
the kernel vectorizes the reduction itself: ``k`` is split by ``vk`` lanes
and factored out (``rfactor``) into a partial-sum stage whose ``vk`` lanes
are a data axis.  Each ``mr x nr`` tile of the output keeps ``mr*nr`` vector
accumulators in registers while streaming ``mr`` rows of data and ``nr``
rows of weight; the lanes are summed once per tile in the copy-out, where
the bias add and a following activation are fused::

    parallel (j.outer, 0, N/nb)                 // nb weight rows stay in L2
      for (i.outer, 0, M/mr)
        for (j.inner.outer, 0, nb/nr)
          C.rf[mr, nr, vk] = 0                  // registers
          for (k.outer, 0, K/vk)
            unrolled (i, j): C.rf[i, j, :] += data[i, k.outer*vk:+vk] * weight[j, ...]
          out[tile] = relu(sum(C.rf[i, j, :]) + bias[j])

For ``M = 1`` (GEMV, bound by the weight stream) the tile is ``1 x nr`` with
wide ``vk`` so that several independent accumulators hide the FMA latency.

``dense_pack`` (classic TVM's name) takes the weight block-packed as
``[N/bn, K, bn]`` -- once, by :func:`pack_dense_weight_numpy` for a constant
weight, or in a stage.  Each output vector of ``bn`` units then reads one
contiguous stream, broadcasting ``data[i, k]`` into ``bn``-wide FMAs::

    parallel (b, 0, N/bn)                       // one K x bn weight block per task
      for (i.outer, 0, M/mr)
        C.local[mr, bn] = 0                     // registers
        for (k, 0, K)
          unrolled (i): C.local[i, :] += data[i, k] * weight_packed[b, k, :]
        T_dense_pack[tile] = C.local
    out[i, j] = epilogue(T_dense_pack[i, j/bn, j%bn])   // unpack + bias + activation

With the ``fuse`` knob (the rule's choice from four row tiles up) the product runs inside the
epilogue's loops instead: each ``mr x bn`` tile of the output computes its accumulators and
applies the bias, activation or residual add straight from them, so the packed product is
never written to memory and read back (the rows are padded to whole tiles, the padding rows
reading the last data row, so every tile is a full unrolled one)::

    parallel (b, 0, N/bn)                       // (i.outer parallel, b inside, with few
      for (i.outer, 0, ceil(M/mr))              //  blocks or data beyond L2, weight within)
        C.local[mr, bn] = sum_k data[min(i, M-1), k] * weight_packed[b, k, :]
        out[tile] = epilogue(C.local)
"""

from __future__ import annotations

import te
from te import expr as E
from te.dtype import bits
from topi import tag as tags
from topi.accumulate import accumulate_dtype, key_dtype
from tune.autotvm.config import check_config, choose_config, current_target, register_rule
from tune.autotvm.space import ConfigEntity
from topi.config import gemm_tile, records_target
from topi.generic.nn import default_schedule
from topi.utils import find_anchor, get_const_int, shape_str

TEMPLATE = "dense.x86"
TILE = list(range(1, 9))  # candidate register-tile rows / columns


def dense_workload(M: int, N: int, K: int, dtype: str = "float32", template: str = TEMPLATE) -> tuple:
    """The workload key of an ``[M, K] x [N, K]`` product."""
    return (template, int(M), int(N), int(K), str(dtype))


def dense_space(workload: tuple, target) -> dict:
    return {"vk": [4, 8, 16, 32, 64], "mr": TILE, "nr": TILE, "nb": [6, 8, 12, 16, 24, 32, 48, 64, 96, 128]}


def dense_rule(workload: tuple, target) -> dict:
    """``vk``: reduction lanes; ``mr``, ``nr``: the register tile; ``nb``: weight rows per task.

    For ``M <= 2`` (a GEMV) ``vk`` is the widest of 4, 2, 1 or 1/2 vectors of the
    target that divides ``K``, with ``nr`` rows so that eight vector accumulators
    hide the FMA latency; otherwise a 4 x 3 tile of 8-lane partial sums.  Lanes are
    the accumulation dtype's (float16 products sum in float32).
    """
    M, K, dtype = workload[1], workload[3], workload[4]
    vec = target.lanes(accumulate_dtype(dtype))
    if M <= 2:
        vk = next((v for v in (4 * vec, 2 * vec, vec, vec // 2) if K % v == 0 and v >= 4), max(vec // 2, 4))
        return {"vk": vk, "mr": 1, "nr": 2 if vk == 4 * vec else 4, "nb": 8}
    return {"vk": 8, "mr": 4, "nr": 3, "nb": 48}


register_rule(TEMPLATE, dense_space, dense_rule, doc="dense / matmul dot-product kernel")


def default_dense_config(M: int, N: int, K: int, dtype: str = "float32") -> ConfigEntity:
    """The chosen config of :func:`schedule_dense` for an ``[M, K] x [N, K]`` product
    (:func:`dense_rule` unless a dispatch context says otherwise)."""
    return choose_config(dense_workload(M, N, K, dtype))


def _find_anchor(s, out_op, tag: str):
    return find_anchor(s, out_op, lambda op: op.tag == tag and bool(op.reduce_axis))[0]


def _tile_output(s, out, cfg: ConfigEntity):
    """Tile ``out``'s two innermost axes; returns the axis the kernel attaches at."""
    st = s[out]
    *batch, i, j = st.op.axis
    jo, ji = st.split(j, factor=cfg["nb"].val)
    jio, jii = st.split(ji, factor=cfg["nr"].val)
    io, ii = st.split(i, factor=cfg["mr"].val)
    st.reorder(*batch, jo, io, jio, ii, jii)
    st.parallel(st.fuse(*batch, jo) if batch else jo)
    return jio


def _schedule_kernel(s, rf, cfg: ConfigEntity) -> None:
    """Registers for the ``C.rf`` tile: reduction outermost, tile unrolled, lanes vectorized."""
    st = s[rf]
    *tile, lanes = st.op.axis
    (ko,) = st.op.reduce_axis
    st.reorder(ko, *tile, lanes)
    for ax in tile:
        st.unroll(ax)
    st.vectorize(lanes)


@records_target
def schedule_dense_op(s, op, out_op, cfg: ConfigEntity | None = None, template: str = TEMPLATE) -> None:
    """Schedule the dense ``op`` (tag ``dense``) inside schedule ``s`` whose output is ``out_op``."""
    C = _tensor(op)
    M, N = (get_const_int(iv.dom.extent) for iv in op.axis[-2:])
    K = get_const_int(op.reduce_axis[0].dom.extent)
    key = dense_workload(M, N, K, key_dtype(op), template)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    out = _tensor(out_op)
    _, ki = s[C].split(s[C].op.reduce_axis[0], factor=cfg["vk"].val)
    rf = s.rfactor(C, ki, factor_axis=len(op.axis))
    jio = _tile_output(s, out, cfg)
    if out_op is op:
        s[rf].compute_at(s[C], jio)
    else:
        s[C].compute_at(s[out], jio)
        i_c = s[C].op.axis[-2]
        io_c, _ = s[C].split(i_c, factor=cfg["mr"].val)
        s[rf].compute_at(s[C], io_c)
    _schedule_kernel(s, rf, cfg)


def _tensor(op):
    from te.tensor import Tensor

    return Tensor(op, 0)


def _anchored(outs, tag: str):
    """(schedule, output op, static anchor tagged ``tag``), or None where only the
    generic schedule applies (several outputs, no anchor, symbolic extents)."""
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    if len(outs) > 1:
        return None
    out_op = outs[0].op
    s = te.create_schedule([out_op])
    anchor = _find_anchor(s, out_op, tag)
    if anchor is None or len(out_op.axis) < 2 or not _static(anchor):
        return None
    return s, out_op, anchor


def _schedule(outs, cfg: ConfigEntity | None, tag: str, template: str = TEMPLATE):
    found = _anchored(outs, tag)
    if found is None:
        return default_schedule(outs)
    s, out_op, anchor = found
    schedule_dense_op(s, anchor, out_op, cfg, template)
    return s


def _static(op) -> bool:
    return all(isinstance(iv.dom.extent, E.IntImm) for iv in list(op.axis) + list(op.reduce_axis))


@records_target
def schedule_dense(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.dense`` (and its bias add / activation epilogue) for x86.

    Parameters
    ----------
    outs : te.Tensor or list
        The output of ``dense`` or of an injective epilogue applied to it.
    cfg : ConfigEntity, optional
        Knobs (default :func:`default_dense_config`).

    Returns
    -------
    schedule.Schedule
    """
    return _schedule(outs, cfg, tags.DENSE)


@records_target
def schedule_matmul(outs, cfg: ConfigEntity | None = None):
    """Schedule ``topi.nn.matmul``: the same kernel as :func:`schedule_dense`.

    The kernel streams both operands along ``K``; with ``transpose_b=False``
    (or ``transpose_a``) the reads are strided and only the blocking helps.
    """
    return _schedule(outs, cfg, tags.DENSE)


# ------------------------------------------------------------ dense_pack ---
PACK_TEMPLATE = "dense_pack.x86"
DENSE_PACK = "dense_pack"  # tag of the packed product stage (an anchor, never inlined)
DENSE_PACK_WEIGHT = "dense_pack_weight"  # tag of the weight-packing stage (not injective: never inlined)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def dense_pack_space(workload: tuple, target) -> dict:
    return {"bn": [8, 16, 24, 32, 48, 64, 96, 128], "mr": TILE, "ku": TILE, "fuse": [False, True]}


# From this many row tiles the rule fuses the product into its epilogue's loops (``fuse``):
# one thread, Swin-T's 3136 x 96 -> 384 + GELU 5.3 -> 4.0 ms, 784 x 192 -> 768 + GELU
# 3.8 -> 3.2 ms (the packed product no longer goes through memory); a few rows keep their
# exact tail tile (3 rows padded to a 4-row tile would run at 0.75x the speed of 4).
FUSE_MIN_TILES = 4


def dense_pack_rule(workload: tuple, target) -> dict:
    """``bn``: output units per packed weight block (the vector of accumulators);
    ``mr``: data rows per register tile (``mr * bn / lanes`` vector accumulators);
    ``ku``: unroll of the reduction loop.

    ``bn`` is four vectors of the target (64 float32 lanes with AVX-512, 32 with
    AVX2) whatever ``M`` (the packed layout of a constant weight does not
    depend on the batch).  For ``M <= 2`` (a GEMV streaming the weight once, at
    the cache/memory read bandwidth) the tile is ``M x bn``: four independent
    accumulators per row, the weight read once at the cache or memory bandwidth;
    otherwise as many rows as the accumulator budget holds (4 x 64 = 16 zmm).
    With 16 vector registers (AVX2) and ``M > 2`` the tile is
    :func:`topi.config.gemm_tile`'s: two vectors by 6 rows (12 accumulators), 4
    reduction steps unrolled, about 0.8x the time of 4 vectors by 2 rows on
    transformer-sized dense layers (``benchmarks/topi_nn.py``); or three vectors by
    4 rows where :func:`tile_cost` finds it 15% cheaper (a few rows: 3-11), or two
    vectors by 5 rows where it finds that 10% cheaper (13 rows as 5 + 5 + 3, not
    6 + 6 + 1: 0.91x the time).  ``ku`` divides ``K`` (4, else 2, else 1): a partial
    unrolled step keeps a guard in every step (K = 197, an attention's ``p @ v``, ran
    at 0.46x the speed with 4).  ``fuse``: the product computed in its epilogue's row tiles
    (module docstring) from ``FUSE_MIN_TILES`` row tiles up.
    """
    M, K, dtype = workload[1], workload[3], workload[4]
    lanes = target.lanes(accumulate_dtype(dtype))
    if M <= 2:
        vectors, mr, ku = 4, max(M, 1), 4
    else:
        vectors, mr, ku = gemm_tile(target)
        if target.vector_registers < 32 and tile_cost(M, 3, 4) < 0.85 * tile_cost(M, vectors, mr):
            vectors, mr = 3, 4  # a few rows: three vectors by four rows leave a fuller tail tile
        elif target.vector_registers < 32 and tile_cost(M, vectors, mr - 1) < 0.9 * tile_cost(M, vectors, mr):
            mr -= 1  # a thin tail tile: one row fewer per tile leaves a fuller one
    ku = next(d for d in (ku, 2, 1) if K % d == 0)
    return {"bn": vectors * lanes, "mr": mr, "ku": ku, "fuse": _ceil(M, mr) >= FUSE_MIN_TILES}


FMA_LATENCY = 5  # cycles: an accumulator takes one FMA per reduction step at most this often


def tile_cost(M: int, vectors: int, mr: int) -> float:
    """Cycles per reduction step and output vector of ``M`` rows in ``mr``-row tiles of
    ``vectors`` vectors: a tile of ``r`` rows takes ``max(r * vectors / 2, FMA_LATENCY)``
    cycles a step (two FMA pipes, or the latency of one accumulator's chain).  A few rows
    leave a thin tail tile bound by the latency: 7 rows as 6 + 1 run at 0.65x the speed of 6,
    as 4 + 3 (three vectors) at 0.86x (``benchmarks/topi_nn.py --rows``)."""
    full, tail = divmod(M, mr)
    cycles = full * max(mr * vectors / 2, FMA_LATENCY) + (max(tail * vectors / 2, FMA_LATENCY) if tail else 0)
    return cycles / vectors


register_rule(PACK_TEMPLATE, dense_pack_space, dense_pack_rule, doc="dense over a block-packed weight",
              legacy={"fuse": False})  # records before the knob ran the product at root


# A GEMV (M <= 2) whose weight does not stay in cache is bound by memory either
# way, and there the plain [N, K] rows are the faster (VGG's 25088x4096 layer);
# a weight that stays in cache is faster packed (``benchmarks/topi_nn.py``,
# dense 1x2048->1000 both ways).
PACK_GEMV_MAX_BYTES = 32 * 2**20


def dense_template(M: int, N: int, K: int, dtype: str, weight_is_constant: bool) -> str:
    """Which template a graph's dense takes: ``dense_pack.x86`` for a constant float32
    weight (packed once at build), except a GEMV over a weight beyond
    ``PACK_GEMV_MAX_BYTES``; ``dense.x86`` otherwise."""
    if not weight_is_constant or dtype != "float32":
        return TEMPLATE
    if M <= 2 and N * K * 4 > PACK_GEMV_MAX_BYTES:
        return TEMPLATE
    return PACK_TEMPLATE


def default_dense_pack_config(M: int, N: int, K: int, dtype: str = "float32") -> ConfigEntity:
    """The chosen config of :func:`dense_pack` / :func:`schedule_dense_pack` for an
    ``[M, K] x [N, K]`` product (:func:`dense_pack_rule` unless a dispatch context
    says otherwise)."""
    return choose_config(dense_workload(M, N, K, dtype, PACK_TEMPLATE))


def pack_dense_weight(weight: te.Tensor, bn: int) -> te.Tensor:
    """``weight_packed[n/bn, k, n%bn]`` from an ``[N, K]`` weight (N zero-padded to ``bn``)."""
    N, K = get_const_int(weight.shape[0]), get_const_int(weight.shape[1])

    def body(b, k, lane):
        src = weight[b * bn + lane, k]
        if N % bn == 0:
            return src
        return te.if_then_else(b * bn + lane < N, src, te.const(0.0, weight.dtype))

    return te.compute((_ceil(N, bn), K, bn), body, name="T_dense_weight_pack", tag=DENSE_PACK_WEIGHT)


def pack_dense_weight_numpy(weight, bn: int):
    """The numpy twin of :func:`pack_dense_weight`, to pre-pack a constant weight once.

    ``[N, K] -> [ceil(N/bn), K, bn]``: block ``b`` holds units ``b*bn .. b*bn+bn-1``,
    lane-innermost, zero rows past ``N``.
    """
    import numpy as np

    n, k = weight.shape
    nb = _ceil(n, bn)
    padded = np.zeros((nb * bn, k), weight.dtype)
    padded[:n] = weight
    return np.ascontiguousarray(padded.reshape(nb, bn, k).transpose(0, 2, 1))


def dense_pack(data: te.Tensor, weight: te.Tensor, bias: te.Tensor | None = None,
               out_dtype: str | None = None, units: int | None = None,
               cfg: ConfigEntity | None = None) -> te.Tensor:
    """``data @ weight.T (+ bias)`` over a block-packed weight (classic TVM's ``dense_pack``).

    Parameters
    ----------
    data : te.Tensor
        ``[M, K]`` input rows.
    weight : te.Tensor
        Either pre-packed ``[ceil(N/bn), K, bn]`` (:func:`pack_dense_weight_numpy`;
        ``bn`` is read from the shape) or a plain ``[N, K]`` weight, packed in a
        stage with the config's ``bn``.
    bias : te.Tensor, optional
        ``[N]``; added in a ``broadcast`` stage.
    out_dtype : str, optional
        Output dtype (default: the data's); float16 accumulates in float32 and is
        rounded once, in the unpacking stage.
    units : int, optional
        ``N``, the output width (default: ``ceil(N/bn) * bn`` of a packed weight,
        ``N`` of a plain one); at most the packed width.
    cfg : ConfigEntity, optional
        The config of ``dense_workload(M, units, K, dtype, "dense_pack.x86")``
        (default: the chosen one; with a pre-packed weight, the weight's ``bn``);
        only ``bn`` shapes the compute, which stores the config on the packed
        stage (``attrs["config"]``) for the schedule.  A config for another
        workload, or whose ``bn`` is not a pre-packed weight's, is a ``ValueError``.

    Returns
    -------
    te.Tensor
        ``[M, N]``: the unpacking stage (tag ``injective``) over
        the packed product ``T_dense_pack[M', N/bn, bn]`` (tag ``dense_pack``; ``M'``:
        :func:`fused_rows`).
    """
    from topi.nn.dense import _check_rank, add_bias

    _check_rank("dense_pack", "data", data, 2)
    M, K = (get_const_int(d) for d in data.shape)
    out_dtype = out_dtype or data.dtype
    if len(weight.shape) == 2:
        N = units = get_const_int(weight.shape[0]) if units is None else units
        key = dense_workload(M, N, K, out_dtype, PACK_TEMPLATE)
        cfg = choose_config(key) if cfg is None else check_config(cfg, key)
        wp = pack_dense_weight(weight, cfg["bn"].val)
    else:
        _check_rank("dense_pack", "weight", weight, 3)
        wp = weight
    nb, wk, bn = (get_const_int(d) for d in wp.shape)
    if wk != K:
        raise ValueError(f"dense_pack: data has K={K} but the packed weight {shape_str(wp)} has K={wk}")
    units = units if units is not None else nb * bn
    if not 0 < units <= nb * bn:
        raise ValueError(f"dense_pack: units={units} must be in [1, {nb * bn}] for weight {shape_str(wp)}")
    key = dense_workload(M, units, K, out_dtype, PACK_TEMPLATE)
    cfg = _pack_config(key, cfg, bn)
    k = te.reduce_axis((0, K), name="k")
    acc = accumulate_dtype(out_dtype)
    rows = fused_rows(M, cfg)
    row = (lambda i: te.min(i, M - 1)) if rows != M else (lambda i: i)
    packed = te.compute(
        (rows, nb, bn),
        lambda i, b, lane: te.sum(data[row(i), k].astype(acc) * wp[b, k, lane].astype(acc), axis=k),
        name="T_dense_pack", tag=DENSE_PACK, attrs={"workload": key, "config": cfg},
    )

    def unpack(i, j):
        v = packed[i, j // bn, j % bn]
        return v if acc == out_dtype else v.astype(out_dtype)

    out = te.compute((M, units), unpack, name="T_dense", tag=tags.INJECTIVE)
    return add_bias(out, bias, "dense_pack") if bias is not None else out


def fused_rows(M: int, cfg: ConfigEntity) -> int:
    """Rows of the packed product: ``M`` rounded up to whole ``mr``-row tiles under a ``fuse``
    config (the product then runs in its epilogue's tiles, each a full one), else ``M``."""
    mr = cfg["mr"].val
    return _ceil(M, mr) * mr if cfg.values.get("fuse") and M > mr else M


def _pack_config(key: tuple, cfg: ConfigEntity | None, bn: int) -> ConfigEntity:
    """``cfg`` checked against ``key`` and the packed weight's ``bn``, or the chosen one for ``bn``."""
    from tune.autotvm.config import make_config

    if cfg is None:
        cfg = choose_config(key)
        return cfg if cfg["bn"].val == bn else make_config(key, {**cfg.values, "bn": bn})
    check_config(cfg, key)
    if cfg["bn"].val != bn:
        raise ValueError(f"dense_pack: config knob bn={cfg['bn'].val} but the packed weight is blocked "
                         f"by {bn}; pack the weight with the config's bn")
    return cfg


# Fewer weight blocks than this: the row tiles are the parallel tasks, each running every
# block.  Fusing (block, row tile) into one task loop instead leaves the row tail's guard on
# every tile (no loop to partition it off) and the register tile rolled: ConvNeXt-T's
# 3136 x 384 -> 96 ran at 0.4x the speed (``benchmarks/topi_nn.py --rows``).
FEW_BLOCKS = 8


def _schedule_pack_kernel(s, C, cfg: ConfigEntity) -> None:
    """``C[(batch,) M, nb, bn]`` at root: parallel blocks, an ``mr x bn`` register tile per task.

    ::

        parallel (b, 0, nb)                        // one weight block: K x bn contiguous
          for (i.outer, 0, M/mr)                   // (with < FEW_BLOCKS blocks: i.outer
            C.local[mr, bn] = 0                    //  parallel, b inside)
            for (k.outer, 0, K/ku)                 // mr*bn/lanes vector accumulators
              unrolled (k.inner, i.c): C.local[i.c, :] += data[i, k] * weight[b, k, :]
            C[i.outer*mr : +mr, b, :] = C.local

    A leading batch axis (:func:`topi.x86.batch_matmul.batch_matmul_pack`) is fused with the
    blocks: (batch, block) pairs are the tasks.
    """
    CL = s.cache_write(C, "local")
    *batch, i, b, lane = s[C].op.axis
    io, ii = s[C].split(i, factor=cfg["mr"].val)
    blocks = get_const_int(b.dom.extent)
    for ax in batch:
        blocks *= get_const_int(ax.dom.extent)
    few_blocks = blocks < FEW_BLOCKS
    if few_blocks and _ceil(get_const_int(i.dom.extent), cfg["mr"].val) < FEW_BLOCKS:
        s[C].reorder(*batch, b, io, ii, lane)  # a few of each: (block, row tile) tasks
        io = s[C].fuse(*batch, b, io)
        s[C].parallel(io)
    elif few_blocks:  # few blocks: row tiles are the tasks, every block
        s[C].reorder(io, *batch, b, ii, lane)  # inside (a loop of its own, not fused, so the row tail
        s[C].parallel(io)  # is partitioned off and the full tiles stay unrolled)
    else:
        s[C].reorder(*batch, b, io, ii, lane)
        s[C].parallel(s[C].fuse(*batch, b) if batch else b)
    s[C].vectorize(lane)
    s[CL].compute_at(s[C], io)
    _register_tile(s, CL, cfg)


def _register_tile(s, CL, cfg: ConfigEntity) -> None:
    """The ``mr x bn`` tile ``CL[(batch,) rows, 1, bn]``: reduction outermost (``ku`` steps
    unrolled), rows and vectors of lanes unrolled: ``mr * bn / lanes`` accumulators."""
    *_, ci, cb, cl = s[CL].op.axis
    (ck,) = s[CL].op.reduce_axis
    ko, ki = s[CL].split(ck, factor=cfg["ku"].val)
    lanes = current_target().lanes(CL.dtype)
    vec = lanes if cfg["bn"].val % lanes == 0 else cfg["bn"].val
    clo, cli = s[CL].split(cl, factor=vec)  # one register per vector of lanes, whatever bn
    s[CL].reorder(cb, ko, ki, ci, clo, cli)
    s[CL].unroll(ki)
    s[CL].unroll(ci)
    s[CL].unroll(clo)
    s[CL].vectorize(cli)


def _fusable(out_op, anchor, cfg: ConfigEntity) -> bool:
    """Whether ``anchor``'s product can run in ``out_op``'s tiles: a ``fuse`` config whose
    padded rows the compute has, and an ``[M, N]`` epilogue over a 2-D product."""
    if not cfg.values.get("fuse") or out_op is anchor or len(anchor.axis) != 3 or len(out_op.axis) != 2:
        return False
    rows = get_const_int(anchor.axis[0].dom.extent)
    M, units = (get_const_int(iv.dom.extent) for iv in out_op.axis)
    _, nb, bn = (get_const_int(iv.dom.extent) for iv in anchor.axis)
    return rows == fused_rows(M, cfg) and units <= nb * bn and bn == cfg["bn"].val


# An operand of at most this many bytes stays in L2 (512 KiB on Zen 3) while another streams
# past it.
L2_STREAM_BYTES = 256 * 1024
# From this reduction length a row tile's product outweighs the output lines a block-by-block
# pass writes (and its epilogue reads) one per row, out of the order a prefetcher follows.
DEEP_K = 512


def rows_outer(M: int, N: int, K: int, blocks: int, bn: int, itemsize: int = 4) -> bool:
    """Whether :func:`_schedule_fused_kernel` runs row tiles outermost (each streaming every
    weight block past its rows) rather than weight blocks (each streaming the data's rows
    past it): with fewer than ``FEW_BLOCKS`` blocks; never with ``M <= N``; else where the
    weight stays in L2 and the data does not, or where neither the data nor the output stays
    in L2 and ``K`` is short of ``DEEP_K``."""
    if blocks < FEW_BLOCKS:
        return True
    if M <= N:
        return False
    data, weight, out = (n * itemsize for n in (M * K, blocks * bn * K, M * N))
    if weight <= L2_STREAM_BYTES < data:
        return True
    return min(data, out) > L2_STREAM_BYTES and K < DEEP_K


def _schedule_fused_kernel(s, out_op, C, cfg: ConfigEntity) -> None:
    """The product in the epilogue's ``mr x bn`` output tiles (module docstring): weight
    blocks parallel, each streaming the data's rows past its block; or (:func:`rows_outer`)
    row tiles parallel, each streaming the whole weight past its rows (the data read once, the
    output written row by row: Swin-T's 3136 x 96 -> 384 3.7 -> 3.0 ms one thread).  Blocks
    outermost for ``M > N`` where the data or the output stays in L2, or ``K`` is deep
    (DeiT-tiny's 197 x 768 -> 192 and 197 x 192 -> 192 1.4x the speed of row tiles
    outermost, 784 x 768 -> 192 1.1x; 784 x 192 -> 768 0.9x, so row tiles there).  The
    epilogue over a tile is unrolled, its ``mr * bn / lanes`` vectors independent (a residual
    add 1.05-1.12x the speed, GELU 0.96-1.14x)."""
    st = s[out_op]
    i, j = st.op.axis
    bn, mr = cfg["bn"].val, cfg["mr"].val
    jo, ji = st.split(j, factor=bn)
    io, ii = st.split(i, factor=mr)
    blocks = get_const_int(C.op.axis[1].dom.extent)
    K = get_const_int(C.op.reduce_axis[0].dom.extent)
    M, N = (get_const_int(iv.dom.extent) for iv in st.op.axis)
    if rows_outer(M, N, K, blocks, bn, bits(C.dtype) // 8):
        st.reorder(io, jo, ii, ji)
        st.parallel(io)
        at = jo
    else:
        st.reorder(jo, io, ii, ji)
        st.parallel(jo)
        at = io
    lanes = current_target().lanes(out_op.output(0).dtype)
    jio, jii = st.split(ji, factor=lanes if bn % lanes == 0 else bn)
    st.vectorize(jii)
    st.unroll(ii)  # the tile's epilogue vectors in flight together, not one chain at a time
    st.unroll(jio)
    s[C].compute_at(st, at)
    _register_tile(s, C, cfg)


def _schedule_rows(s, out_op, vec: int) -> None:
    """The ``[M, N]`` unpack (+ fused epilogue): rows parallel when large, columns vectorized."""
    st = s[out_op]
    *rows, j = st.op.axis
    rows_total = 1
    for r in rows:
        rows_total *= get_const_int(r.dom.extent)
    _, ji = st.split(j, factor=vec)
    st.vectorize(ji)
    if rows and rows_total * get_const_int(j.dom.extent) >= 1 << 14 and rows_total > 1:
        st.parallel(st.fuse(*rows) if len(rows) > 1 else rows[0])


@records_target
def schedule_dense_pack(outs, cfg: ConfigEntity | None = None):
    """Schedule :func:`dense_pack` (and its bias add / activation epilogue) for x86.

    The packed product runs at root (:func:`_schedule_pack_kernel`: every block is
    whole, so no loop carries a guard and every task is alike); the unpacking
    copy to ``[M, N]`` with the fused epilogue follows.  A weight packed in a
    stage (plain ``[N, K]`` weight) is packed at root, parallel over blocks.

    Parameters
    ----------
    outs : te.Tensor or list
        The output of ``dense_pack`` or of an injective epilogue applied to it.
    cfg : ConfigEntity, optional
        Knobs (default: the config the product was computed with); its ``bn``
        must be the packed weight's.

    Returns
    -------
    schedule.Schedule
    """
    found = _anchored(outs, DENSE_PACK)
    if found is None:
        return default_schedule(outs)
    s, out_op, anchor = found
    M, nb, bn = (get_const_int(iv.dom.extent) for iv in anchor.axis)
    K = get_const_int(anchor.reduce_axis[0].dom.extent)
    units = get_const_int(out_op.axis[-1].dom.extent) if out_op is not anchor else nb * bn
    key = anchor.attrs.get("workload") or dense_workload(M, units, K, anchor.output(0).dtype, PACK_TEMPLATE)
    cfg = _pack_config(key, cfg or anchor.attrs.get("config"), bn)
    if _fusable(out_op, anchor, cfg):
        _schedule_fused_kernel(s, out_op, _tensor(anchor), cfg)
    else:
        _schedule_pack_kernel(s, _tensor(anchor), cfg)
        if out_op is not anchor:
            _schedule_rows(s, out_op, current_target().lanes(out_op.output(0).dtype))
    for t in anchor.input_tensors:
        if getattr(t.op, "tag", None) == DENSE_PACK_WEIGHT:
            b, _, lane = s[t.op].op.axis
            s[t.op].parallel(b)
            s[t.op].vectorize(lane)
    return s
