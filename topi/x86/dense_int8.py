"""x86 int8 dense (ONNX MatMulInteger with a constant weight) on the integer dot-product instructions.

``(x - x_zp) @ (w - w_zp).T`` in int32, ``x`` uint8 ``[M, K]``, the weight packed
``[N/nb, K/kb, nb, kb]`` (:func:`pack_weight`; ``kb`` reduction elements innermost, then ``nb``
output columns) so that one :mod:`topi.x86.int8_dot` intrinsic multiplies ``kb`` data elements
(one broadcast word) by ``nb x kb`` weights::

    data_q[m, k]    = x[m, k], zero past K                    (mode i16: int16(x - x_zp))
    dense_int8[m, n] = sum_{ko, ki} int32(data_q[m, ko*kb + ki]) * int32(weight[n/nb, ko, n%nb, ki])
    out[m, n]        = dense_int8[m, n] - x_zp * wsum[n]          (uint8 modes; i16: dense_int8)

``wsum[n] = sum_k (w - w_zp)[n, k]``: the data's zero point (known only at run time with
DynamicQuantizeLinear) taken out once per column.  Mode ``u8s8`` with weights small enough
(:func:`group`) packs ``[N/nb, K/(kb*G), G + 1, nb, kb]`` and sums ``G`` words in int16 before
widening (``int8_dot``: centered data, ``- (x_zp - 128) * wsum[n]`` then): 1.3x (G = 2) to 1.5x
(G = 4) the products per cycle of ``G = 1`` on Zen 3 (``benchmarks/quantized.py encoder4``).
The schedule keeps a register tile of ``mr`` rows x ``nb`` columns (int32 vectors) while the
reduction streams over ``K``; the subtraction is vectorized along the row; whatever follows (the
dequantization, a bias) runs in its own loop, vectorized.  The AutoTVM template ``dense_int8.x86``
tunes that tile (``nb``: one or two int32 vectors of columns, ``mr``: 1-8 rows; a tile the vector
registers cannot hold is refused) for a workload that names the group; a graph built with its
records packs the weight for the best record's ``nb`` (``graph.passes.lower_int8``).
"""

from __future__ import annotations

import numpy as np

import te
from topi import tag
from topi.utils import get_const_tuple
from topi.x86.injective import schedule_injective_from_existing
from topi.x86.int8_dot import (GROUPS, TILE_ROWS, dot_intrin, group_bias, group_fits, operand_dtypes,
                               reduce_block, register_tile_rule, tile_registers, vector_lanes)

DENSE_INT8 = "dense_int8"


def blocks(mode: str, target) -> tuple:
    """``(nb, mr)``: two int32 vectors of columns (one with 512-bit VNNI), and as many rows as
    the vector registers hold beside the weights, the broadcast and the temporaries
    (:func:`tile_registers`), at most 8: the rule's config of ``dense_int8.x86``."""
    vl = vector_lanes(mode, target)
    nb = vl if vl == 16 else 2 * vl
    mr = max(r for r in TILE_ROWS if r == 1 or tile_registers(mode, nb, r, target) <= target.vector_registers)
    return nb, mr


# --------------------------------------------------------------- AutoTVM ---
TEMPLATE = "dense_int8.x86"


def int8_workload(dshape, wshape, mode: str, group: int = 1) -> tuple:
    """The AutoTVM workload of an int8 dense: uint8 data ``dshape`` ``[M, K]``, centered weights
    ``wshape`` ``[N, K]`` of ``mode`` (:mod:`topi.x86.int8_dot`) in groups of ``group`` words
    (:func:`group`; named only when above 1)."""
    extra = (int(group),) if group > 1 else ()
    return (TEMPLATE, tuple(int(d) for d in dshape), tuple(int(d) for d in wshape), str(mode), *extra)


def weight_shape(n: int, k: int, mode: str, nb: int, group: int = 1) -> tuple:
    """The shape :func:`pack_weight` gives ``[N, K]`` weights."""
    kb = reduce_block(mode)
    if group == 1:
        return (-(-n // nb), -(-k // kb), nb, kb)
    return (-(-n // nb), -(-k // (kb * group)), group + 1, nb, kb)


def _default(workload: tuple, target) -> dict:
    nb, mr = blocks(workload[3], target)
    return {"nb": nb, "mr": mr}


register_tile_rule(TEMPLATE, lambda workload: workload[3], ("nb", "mr"), ("columns", "rows"), _default,
                   doc="int8 dense on the integer dot products (dense_int8): the register tile's columns "
                       "(one or two int32 vectors, the weight's packing block) and rows")


def pack_weight(w: np.ndarray, mode: str, nb: int, group: int = 1) -> np.ndarray:
    """Centered ``[N, K]`` weights (ints) -> ``[N/nb, K/kb, nb, kb]`` of the mode's kernel dtype,
    padded with zeros to whole blocks.  ``group > 1`` (mode ``u8s8``, :func:`group`):
    ``[N/nb, K/(kb*group), group + 1, nb, kb]``, each group's ``group`` words followed by its
    lanes' int16 biases (:func:`topi.x86.int8_dot.group_bias`, two per column, as bytes)."""
    kb = reduce_block(mode)
    n, k = w.shape
    span = kb * group
    np_, kp = -(-n // nb) * nb, -(-k // span) * span
    full = np.zeros((np_, kp), "int64")
    full[:n, :k] = w
    packed = full.reshape(np_ // nb, nb, kp // kb, kb).transpose(0, 2, 1, 3).astype(operand_dtypes(mode)[1])
    if group == 1:
        return np.ascontiguousarray(packed)
    bias = group_bias(full, group).reshape(np_ // nb, nb, kp // span, 2).transpose(0, 2, 1, 3)
    bias = np.ascontiguousarray(bias).view("int8").reshape(np_ // nb, kp // span, 1, nb, kb)
    words = packed.reshape(np_ // nb, kp // span, group, nb, kb)
    return np.ascontiguousarray(np.concatenate([words, bias], axis=2))


def unpack_weight(packed: np.ndarray, k: int, n: int) -> np.ndarray:
    """The centered ``[N, K]`` weights (int64) of a :func:`pack_weight` result."""
    if packed.ndim == 5:
        nbs, kgs, g1, nb, kb = packed.shape
        packed = packed[:, :, :g1 - 1].reshape(nbs, kgs * (g1 - 1), nb, kb)
    nbs, kbs, nb, kb = packed.shape
    return packed.astype("int64").transpose(0, 2, 1, 3).reshape(nbs * nb, kbs * kb)[:n, :k]


def group(w: np.ndarray, mode: str) -> int:
    """The words per ``vpmaddwd`` of an int8 dense of centered weights ``w [N, K]`` in ``mode``: the
    first of :data:`topi.x86.int8_dot.GROUPS` exact on ``w`` (``group_fits``) in mode ``u8s8``,
    else 1."""
    if mode != "u8s8":
        return 1
    return next((g for g in GROUPS if group_fits(w, g)), 1)


def dense_int8(data: te.Tensor, weight: te.Tensor, wsum: te.Tensor, x_zp: te.Tensor, n: int, mode: str,
               mr: int = 4) -> te.Tensor:
    """``(data - x_zp) @ W.T`` in int32 for uint8 ``data [M, K]``, the packed weight
    (:func:`pack_weight`), ``wsum`` (int32, per padded column) and a per-tensor ``x_zp``."""
    m, k = get_const_tuple(data.shape)
    wshape = get_const_tuple(weight.shape)
    grp = wshape[2] - 1 if len(wshape) == 5 else 1
    nbs, kgs, nb, kb = (wshape[0], wshape[1], wshape[3], wshape[4]) if grp > 1 else wshape
    kbs = kgs * grp
    if grp > 1 and mode != "u8s8":
        raise ValueError(f"dense_int8: a grouped weight {wshape} needs mode u8s8, not {mode}")
    if kb != reduce_block(mode) or data.dtype != "uint8" or kbs * kb < k or nbs * nb < n:
        raise ValueError(f"dense_int8: {data.dtype} data {(m, k)} and weight {get_const_tuple(weight.shape)} do not "
                         f"fit mode {mode} with {n} columns")
    if n < nb:
        raise ValueError(f"dense_int8: {n} columns are fewer than one block of {nb}; keep such a dense as it is")
    zp_shape = get_const_tuple(x_zp.shape)
    if zp_shape not in ((), (1,)):
        raise ValueError(f"dense_int8: the data's zero point must be per tensor, got shape {zp_shape}")

    def zero_point():
        return (x_zp() if zp_shape == () else x_zp[0]).astype("int32")

    kp = kbs * kb
    adt = operand_dtypes(mode)[0]
    if mode == "i16":
        a = te.compute((m, kp), lambda i, j: te.if_then_else(
            j < k, data[i, te.min(j, k - 1)].astype("int16") - zero_point().astype("int16"), te.const(0, "int16")),
            name="data_q", tag=tag.INJECTIVE)
    elif kp != k:
        a = te.compute((m, kp), lambda i, j: te.if_then_else(j < k, data[i, te.min(j, k - 1)], te.const(0, adt)),
                       name="data_q", tag=tag.INJECTIVE)
    else:
        a = data
    ki = te.reduce_axis((0, kb), name="ki")
    # blocked [M, N/nb, nb]: a tile always covers whole blocks (the last one's padding columns
    # are computed, never read), so the tensorized loop has a constant extent
    attrs = {"mode": mode, "mr": int(mr), "group": grp}
    if grp == 1:
        ko = te.reduce_axis((0, kbs), name="ko")
        acc = te.compute((m, nbs, nb), lambda i, jb, jj: te.sum(
            a[i, ko * kb + ki].astype("int32") * weight[jb, ko, jj, ki].astype("int32"), axis=[ko, ki]),
            name="dense_int8", tag=DENSE_INT8, attrs=attrs)
        offset = zero_point  # the data's zero point times each column's sum comes off
    else:  # centered data (int8_dot: the group's int16 sums), 128 - x_zp times the sum added back
        ko = te.reduce_axis((0, kgs), name="ko")
        g = te.reduce_axis((0, grp), name="g")
        acc = te.compute((m, nbs, nb), lambda i, jb, jj: te.sum(
            (a[i, (ko * grp + g) * kb + ki].astype("int32") - 128)
            * weight[jb, ko, g, jj, ki].astype("int32"), axis=[ko, g, ki]), name="dense_int8", tag=DENSE_INT8,
            attrs=attrs)

        def offset():
            return zero_point() - 128
    if mode == "i16":
        return te.compute((m, n), lambda i, j: acc[i, j // nb, j % nb], name="dense_int8_out", tag=tag.INJECTIVE)
    return te.compute((m, n), lambda i, j: acc[i, j // nb, j % nb] - offset() * wsum[j],
                      name="dense_int8_out", tag=tag.INJECTIVE)


def schedule_dense_int8(outs, target) -> te.Schedule:
    """Schedule :func:`dense_int8` (and any injective stages after it) for ``target``."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0]
    stack, seen, tile = [out.op], set(), None
    while stack:  # the stages between the output and the tile stage are inlined into the output
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.name == "dense_int8_out":
            tile = op
            continue
        if op is not out.op:
            s[op].compute_inline()
        stack.extend(t.op for t in op.input_tensors)
    if tile is None:
        raise ValueError(f"schedule_dense_int8: no dense_int8 stage under output '{out.name}'")
    acc = tile.input_tensors[0]
    mode, mr = acc.op.attrs["mode"], acc.op.attrs["mr"]
    a, weight = acc.op.input_tensors[:2]
    if a.op.name == "data_q":
        dq = s[a.op]
        dq.parallel(dq.op.axis[0])
    nb = get_const_tuple(weight.shape)[-2]
    grp = acc.op.attrs.get("group", 1)
    # the tile stage: rows x one block of columns per task, the subtraction vectorized
    i, j = s[tile].op.axis
    io, ii = s[tile].split(i, factor=mr)
    jo, ji = s[tile].split(j, factor=nb)
    s[tile].reorder(io, jo, ii, ji)
    s[tile].parallel(s[tile].fuse(io, jo))
    s[tile].vectorize(ji)
    s[acc.op].compute_at(s[tile], s[tile].leaf_iter_vars[0])
    ai, _, aj = s[acc.op].op.axis
    ko, *inner = s[acc.op].op.reduce_axis
    s[acc.op].reorder(ko, ai, aj, *inner)
    s[acc.op].unroll(ai)
    s[acc.op].tensorize(aj, dot_intrin(mode, nb, target, grp))
    if out.op is not tile:
        schedule_injective_from_existing(s, out)
    return s


__all__ = ["DENSE_INT8", "TEMPLATE", "blocks", "dense_int8", "group", "int8_workload", "pack_weight",
           "schedule_dense_int8", "unpack_weight", "weight_shape"]
