"""x86 ``batch_matmul``: a block-packed product (the ``dense_pack`` kernel per slice) and,
for ``topi.nn.batch_matmul``'s compute, the dense dot-product kernel per batch.

:func:`batch_matmul` (classic ``topi.x86.batch_matmul``) packs ``y`` per call into
``[B, N/bn, K, bn]`` blocks, then runs :mod:`topi.x86.dense`'s broadcast register tile over
each (slice, block)::

    parallel (b, o)                                  // y packed: yp[b, o, k, :] = y[b, o*bn:+bn, k]
    parallel (b, o)
      for (i.outer, 0, M/mr)
        C.local[mr, bn] = 0
        for (k, 0, K)
          unrolled (i): C.local[i, :] += x[b, i, k] * yp[b, o, k, :]
    out[b, i, j] = C[b, i, j/bn, j%bn]               // + a fused injective epilogue

so any ``M``, ``N`` and ``K`` run at the packed dense's speed (the rows' tail as a partial
register tile, ``N`` zero-padded to the block).  With ``transpose_b=False`` and ``bn`` dividing
``N``, ``y[b]``'s rows already hold the blocks' rows (``yp[b, o, k, :] = y[b, k, o*bn:+bn]``):
for a few row tiles the product reads them in place (:func:`y_in_place`), no copy.  The
dot-product kernel over the plain operands (template ``batch_matmul.x86``) lanes the reduction
and reads ``K`` in vectors, which costs a horizontal sum per output and crawls when ``K`` is
short or not a multiple of the vector (``benchmarks/topi_nn.py --rows``).
"""

from __future__ import annotations

import te
from te.dtype import bits
from topi import nn, tag as tags
from topi.accumulate import accumulate_dtype
from topi.config import gemm_tile, records_target
from topi.nn.batch_matmul import _batch_extent
from topi.utils import get_const_int, get_const_tuple
from topi.x86.dense import (
    _anchored, _ceil, _pack_config, _schedule, _schedule_pack_kernel, _schedule_rows, _tensor, dense_pack_rule,
    dense_pack_space, dense_rule, dense_space, dense_workload, tile_cost,
)
from tune.autotvm.config import check_config, choose_config, current_target, register_rule
from tune.autotvm.space import ConfigEntity

TEMPLATE = "batch_matmul.x86"
PACK_TEMPLATE = "batch_matmul_pack.x86"
BATCH_MATMUL_PACK = "batch_matmul_pack"  # tag of the packed product stage (the anchor)
PACK_Y = "batch_matmul_pack_y"  # tag of y's packing stage (not injective: never inlined)
register_rule(TEMPLATE, dense_space, dense_rule, doc="batch_matmul: the dense kernel per slice")


def _without_fuse(knobs: dict) -> dict:
    return {k: v for k, v in knobs.items() if k != "fuse"}  # the product runs at root, unfused


def batch_matmul_pack_rule(workload: tuple, target) -> dict:
    """:func:`topi.x86.dense.dense_pack_rule`'s tile, or where its ``bn`` does not divide ``N``
    (a whole number of vectors) the cheapest tile whose ``bn`` does, if its product costs at
    most 1.25x (:func:`topi.x86.dense.tile_cost` over ``N``'s blocks): no padded lanes, no
    guarded packing, and with ``transpose_b=False`` ``y[b]`` itself serves as the packed blocks
    (:func:`y_in_place`).  An attention's ``p @ v`` (``N`` = 64) with 3 rows takes 32 x 3, with
    4 rows 32 x 2, not 24 x 4 (three blocks, the last padded: 4 rows 5x the speed)."""
    knobs = _without_fuse(dense_pack_rule(workload, target))
    M, N = workload[1], workload[2]
    lanes = target.lanes(accumulate_dtype(workload[4]))
    if N % lanes or N % knobs["bn"] == 0:
        return knobs
    vectors, mr, _ = gemm_tile(target)
    budget = vectors * mr  # accumulators of the full GEMM tile

    def cost(vectors: int, mr: int) -> float:
        return _ceil(N, vectors * lanes) * vectors * tile_cost(M, vectors, mr)

    fits = [(v, mr) for v in (4, 3, 2, 1) for mr in range(1, min(M, 8) + 1)
            if N % (v * lanes) == 0 and v * mr <= budget]
    best = min(fits, key=lambda t: cost(*t))
    if cost(*best) > 1.25 * cost(knobs["bn"] // lanes, knobs["mr"]):
        return knobs
    return {**knobs, "bn": best[0] * lanes, "mr": best[1]}


register_rule(PACK_TEMPLATE, lambda w, t: _without_fuse(dense_pack_space(w, t)), batch_matmul_pack_rule,
              doc="batch_matmul: y block-packed per call (or read in place), the dense_pack kernel per slice")


def default_batch_matmul_config(batch: int, M: int, N: int, K: int, dtype: str = "float32",
                                template: str = TEMPLATE) -> ConfigEntity:
    """Knobs of one ``[M, K] x [N, K]`` slice's kernel (the batch does not change them; the
    key is the slice's): :func:`topi.x86.dense.dense_rule`'s (``vk``, ``mr``, ``nr``, ``nb``) for
    ``topi.nn.batch_matmul``'s compute, or with ``template=PACK_TEMPLATE``
    :func:`batch_matmul_pack_rule`'s (``bn``, ``mr``, ``ku``) for :func:`batch_matmul`."""
    return choose_config(dense_workload(M, N, K, dtype, template))


# Packing y with transpose_b (a transpose) costs about a cycle per element, what the product
# costs for about four rows: below that the dot-product kernel runs the plain operands where
# the vector divides K (12 slices of [3, 64] x [197, 64]^T: 16 GFLOP/s plain, 12 packed; 4 rows
# 17 / 16; 8 rows 17 / 25, ``benchmarks/topi_nn.py --rows``).  Without transpose_b y's rows
# are the packed blocks' rows (or a vector copy of them), and the dot-product kernel would
# read y's columns: the packed product runs any row count.
PACK_MIN_ROWS = 4


def batch_matmul_template(M: int, K: int, dtype: str, target=None, transpose_b: bool = True) -> str:
    """The template :func:`batch_matmul` takes for ``[M, K]`` slices: ``batch_matmul_pack.x86``
    unless fewer than ``PACK_MIN_ROWS`` rows over a ``K`` of whole vectors with ``transpose_b``."""
    if not (isinstance(M, int) and isinstance(K, int)):
        return TEMPLATE
    lanes = (target or current_target()).lanes(accumulate_dtype(dtype))
    few = M < PACK_MIN_ROWS and K % lanes == 0 and transpose_b
    return TEMPLATE if few else PACK_TEMPLATE


# y read in place (its blocks' rows N apart) up to this many row tiles, or where a slice of y
# stays in L1: past them every tile re-reads a block whose rows share a few cache sets (12 x
# [M, 197] x [197, 64], one thread: in place 1.4-1.9x the speed of packed at 3-8 rows, 1.1x
# at 25-50, 0.8-0.9x at 64-197; [128, 128] x [128, 64] 1.07x, ``benchmarks/topi_nn.py --rows``).
IN_PLACE_MAX_TILES = 10
IN_PLACE_SLICE_BYTES = 32 * 1024


def y_in_place(M: int, N: int, K: int, bn: int, mr: int, transpose_b: bool, itemsize: int = 4) -> bool:
    """Whether :func:`batch_matmul` reads ``y[b]`` (``[K, N]``, ``transpose_b=False``) as its
    ``bn``-wide blocks in place: ``bn`` divides ``N``, and few row tiles or a slice within L1."""
    if transpose_b or N % bn:
        return False
    return _ceil(M, mr) <= IN_PLACE_MAX_TILES or K * N * itemsize <= IN_PLACE_SLICE_BYTES


def _y_blocks(y, N: int, K: int, bn: int, transpose_b: bool, in_place: bool):
    """``(b, o, k, lane) -> y's element (k, o*bn + lane)`` of slice ``b`` (``y[b]`` as
    ``[K, N]``): read from ``y`` itself (:func:`y_in_place`: block ``o`` is the columns
    ``o*bn:+bn`` of ``K`` rows ``N`` apart, no copy), else from a per-call packing stage
    ``[B, N/bn, K, bn]`` (tag ``PACK_Y``, ``N`` zero-padded)."""
    if in_place:
        return lambda b, o, kk, lane: y[b, kk, o * bn + lane]

    def read_y(b, kk, j):
        return y[b, j, kk] if transpose_b else y[b, kk, j]

    def pack(b, o, kk, lane):
        j = o * bn + lane
        if N % bn == 0:
            return read_y(b, kk, j)
        return te.if_then_else(j < N, read_y(b, kk, te.min(j, N - 1)), te.const(0.0, y.dtype))

    yp = te.compute((get_const_int(y.shape[0]), _ceil(N, bn), K, bn), pack, name="T_batch_matmul_ypack",
                    tag=PACK_Y, attrs={"transpose_b": bool(transpose_b)})
    return lambda b, o, kk, lane: yp[b, o, kk, lane]


def batch_matmul(x, y, out_shape=None, out_dtype=None, transpose_a: bool = False, transpose_b: bool = True,
                 cfg: ConfigEntity | None = None):
    """``x[b] @ y[b]^T`` (``topi.nn.batch_matmul``'s arguments and result) through a per-call
    block packing of ``y`` (see the module docstring), or ``topi.nn.batch_matmul``'s compute
    for a few rows (:func:`batch_matmul_template`), symbolic shapes or a ``batch_matmul.x86``
    config.

    Parameters
    ----------
    cfg : ConfigEntity, optional
        A config of ``dense_workload(M, N, K, dtype, template)`` (default: the chosen one of
        :func:`batch_matmul_template`'s); a packed one is stored on the packed stage for
        :func:`schedule_batch_matmul`.

    Returns
    -------
    te.Tensor
        ``[B, M, N]``: the unpacking stage (tag ``injective``) over the packed product
        ``[B, M, N/bn, bn]`` (tag ``batch_matmul_pack``).
    """
    plain = nn.batch_matmul(x, y, out_shape, out_dtype, transpose_a, transpose_b)  # checks the arguments
    if not all(isinstance(d, int) for d in get_const_tuple(tuple(x.shape) + tuple(y.shape))):
        return plain
    B, bcast_x, bcast_y = _batch_extent(x, y)
    M, N = get_const_tuple(plain.shape)[1:]
    K = get_const_int(x.shape[1 if transpose_a else 2])
    out_dtype = out_dtype or x.dtype
    template = cfg.template if cfg is not None else batch_matmul_template(M, K, out_dtype, None, transpose_b)
    if template == TEMPLATE:
        return plain
    acc = accumulate_dtype(out_dtype)
    key = dense_workload(M, N, K, out_dtype, PACK_TEMPLATE)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    bn = cfg["bn"].val
    nb = _ceil(N, bn)

    in_place = y_in_place(M, N, K, bn, cfg["mr"].val, transpose_b, bits(y.dtype) // 8)
    yblock = _y_blocks(y, N, K, bn, transpose_b, in_place)
    k = te.reduce_axis((0, K), name="k")

    def product(b, i, o, lane):
        bx = 0 if bcast_x else b
        by = 0 if bcast_y else b
        xv = x[bx, k, i] if transpose_a else x[bx, i, k]
        return te.sum(xv.astype(acc) * yblock(by, o, k, lane).astype(acc), axis=k)

    packed = te.compute((B, M, nb, bn), product, name="T_batch_matmul_pack", tag=BATCH_MATMUL_PACK,
                        attrs={"workload": key, "config": cfg})

    def unpack(b, i, j):
        v = packed[b, i, j // bn, j % bn]
        return v if acc == out_dtype else v.astype(out_dtype)

    return te.compute((B, M, N), unpack, name="T_batch_matmul", tag=tags.INJECTIVE)


def _schedule_pack(s, out_op, anchor, cfg: ConfigEntity | None):
    B, M, nb, bn = (get_const_int(iv.dom.extent) for iv in anchor.axis)
    cfg = _pack_config(anchor.attrs["workload"], cfg or anchor.attrs.get("config"), bn)
    _schedule_pack_kernel(s, _tensor(anchor), cfg)
    if out_op is not anchor:
        _schedule_rows(s, out_op, current_target().lanes(out_op.output(0).dtype))
    for t in anchor.input_tensors:
        if getattr(t.op, "tag", None) == PACK_Y:
            st = s[t.op]
            b, o, kk, lane = st.op.axis
            st.parallel(st.fuse(b, o))
            if t.op.attrs["transpose_b"]:  # y[b, j, :] rows read contiguously, one lane at a time
                st.reorder(lane, kk)
            else:
                st.vectorize(lane)
    return s


@records_target
def schedule_batch_matmul(outs, cfg: ConfigEntity | None = None):
    """Schedule a batch_matmul (and an injective epilogue) for x86.

    :func:`batch_matmul`'s packed product runs :func:`topi.x86.dense._schedule_pack_kernel`
    per (slice, block), ``y`` packed at root in parallel; ``topi.nn.batch_matmul``'s compute
    runs :mod:`topi.x86.dense`'s register-blocked dot-product kernel per slice, the batch
    fused with the weight-row blocks into the parallel loop (``transpose_b=False`` stays
    correct with strided reads).

    Parameters
    ----------
    outs : te.Tensor or list
    cfg : ConfigEntity, optional
        Knobs of :func:`default_batch_matmul_config` for the compute's template (default:
        the packed stage's config, or the chosen one).
    """
    found = _anchored(outs, BATCH_MATMUL_PACK)
    if found is not None:
        return _schedule_pack(*found, cfg)
    return _schedule(outs, cfg, tags.BATCH_MATMUL, TEMPLATE)


__all__ = ["BATCH_MATMUL_PACK", "PACK_TEMPLATE", "TEMPLATE", "batch_matmul", "batch_matmul_pack_rule",
           "default_batch_matmul_config", "schedule_batch_matmul", "y_in_place"]
