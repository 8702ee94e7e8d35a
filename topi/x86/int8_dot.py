"""Integer dot products on x86 vector instructions, as tensor intrinsics (``s[C].tensorize``).

One intrinsic computes ``lanes`` int32 sums of ``kb`` products, the inner step of an int8
convolution or matmul whose kernel is packed ``[..., lanes, kb]`` (``kb`` reduction elements
innermost, then the output lanes)::

    c[i] += sum_k int32(a[k]) * int32(b[i, k])        i < lanes, k < kb

``a``'s ``kb`` elements are one 32-bit word, broadcast to every lane.  The instruction comes from
the *target's* feature string (``Target.features``), never the host's:

=========  ===================================  ====  ===============  ===========================
mode       instructions                         kb    a, b             exact when
=========  ===================================  ====  ===============  ===========================
``vnni``   ``vpdpbusd`` (AVX512-VNNI: zmm,      4     uint8, int8      always (4 products summed
           AVX-VNNI / AVX512VL: ymm)                                   into int32)
``u8s8``   ``vpmaddubsw`` + ``vpmaddwd`` by 1   4     uint8, int8      every pair of weights
           (AVX2)                                                      ``|b[i,2j]| + |b[i,2j+1]|
                                                                       <= 128``
``i16``    ``vpmaddwd`` (AVX2)                  2     int16, int16     always
=========  ===================================  ====  ===============  ===========================

``vpmaddubsw`` sums two ``u8 x s8`` products into a *saturating* int16: ``255 * (-128) * 2``
does not fit.  onnxruntime's AVX2 kernels accept that (their results then drift from ONNX's
arithmetic; its quantizer offers ``reduce_range``, 7-bit weights, against it).  Tessera
computes ONNX's arithmetic exactly instead: ``u8s8`` is chosen only when the constant weights
cannot saturate (:func:`pairs_fit_int16`: true for every 7-bit weight), otherwise ``i16``
(operands widened to int16 and ``vpmaddwd``, onnxruntime's own exact u8 x u8 path), which
does half the products per instruction pair but never saturates.

``u8s8`` spends two instructions of the one vector multiply port (Zen 3: one ``vpmaddubsw`` or
``vpmaddwd`` a cycle) on 32 products, as many products a cycle as float32 FMAs.  A *group* of
``G`` words (:func:`dot_intrin` ``group``) adds ``G`` ``vpmaddubsw`` results in int16
(wrapping ``vpaddw``) before one ``vpmaddwd``: ``G + 1`` instructions for ``32 G`` products.
It computes ``sum (a - 128) * b``, data centered: each int16 lane then sums ``2 G`` products
of magnitude at most ``128 |b|``, exact in int16 when the lane's weights have
``sum |b| <= 255`` (:func:`group_fits`), and the wrapping sum becomes the centered one by
adding the lane's ``-128 * sum b`` (mod 2^16), an int16 the packed weight stores after its ``G``
words (``topi.x86.dense_int8.pack_weight``).
"""

from __future__ import annotations

import numpy as np

import te
from schedule import stmt as S
from te import expr as E

MODES = ("vnni", "u8s8", "i16")
PMADDUBSW = "llvm.x86.avx2.pmadd.ub.sw"
PMADDWD = "llvm.x86.avx2.pmadd.wd"
VPDPBUSD = {8: "llvm.x86.avx512.vpdpbusd.256", 16: "llvm.x86.avx512.vpdpbusd.512"}


def reduce_block(mode: str) -> int:
    """Reduction elements per 32-bit lane: 4 bytes, or 2 int16."""
    return 2 if mode == "i16" else 4


def operand_dtypes(mode: str) -> tuple:
    """(data dtype, kernel dtype) the mode multiplies."""
    return ("int16", "int16") if mode == "i16" else ("uint8", "int8")


def vector_lanes(mode: str, target) -> int:
    """int32 lanes of one vector of the mode on ``target``."""
    return 16 if mode == "vnni" and target.has("avx512vnni") and target.has("avx512bw") else 8


def choose_mode(target, weights_fit_int8: bool, pairs_fit: bool) -> str | None:
    """The mode for ``target`` (None: no integer dot product, keep float): VNNI when the target
    has it and the centered weights are int8, else ``u8s8`` when no pair can saturate, else
    ``i16``; nothing without AVX2."""
    vnni = target.has("avxvnni") or (target.has("avx512vnni") and (target.has("avx512vl") or target.has("avx512bw")))
    if vnni and weights_fit_int8:
        return "vnni"
    if not target.has("avx2"):
        return None
    return "u8s8" if weights_fit_int8 and pairs_fit else "i16"


def products_per_cycle(mode: str | None, target) -> int:
    """Products one core issues per cycle in ``mode`` on ``target`` (None: float32 FMAs), the
    model the int8 / float32 choice of :func:`topi.x86.conv2d_int8.float_is_faster` compares:
    two FMA ports of ``target.lanes()`` float32, one integer multiply port (``vpdpbusd``: 4
    products per int32 lane; ``vpmaddwd``: 2; ``u8s8``: 4 over two instructions).  On AVX2 all
    three are 16: without VNNI only a shorter reduction or fewer bytes make int8 faster."""
    if mode is None:
        return 2 * target.lanes("float32")
    vl = vector_lanes(mode, target)
    return {"vnni": 4 * vl, "u8s8": 2 * vl, "i16": 2 * vl}[mode]


def tile_registers(mode: str, lanes: int, rows: int, target) -> int:
    """Vector registers of a register tile of ``rows`` x ``lanes`` int32 sums: the accumulators,
    one row of weights, the broadcast data word and the mode's temporaries (``u8s8``: the int16
    pairs and the ones)."""
    vectors = lanes // vector_lanes(mode, target)
    return vectors * rows + vectors + 1 + (2 if mode == "u8s8" else 0)


TILE_ROWS = (1, 2, 3, 4, 5, 6, 7, 8)


def register_tile_rule(template: str, mode_of, knobs: tuple, what: tuple, default, doc: str):
    """Register the AutoTVM rule of an int8 kernel's register tile (``tune.autotvm.config``):
    knobs ``(lanes, rows)``: one or two int32 vectors of output lanes and 1-8 rows
    (``TILE_ROWS``); ``mode_of(workload)`` the workload's mode; a tile the vector registers
    cannot hold refused, naming ``what`` (the lanes' and the rows' names)."""
    from tune.autotvm.config import current_target, register_rule

    lanes_knob, rows_knob = knobs

    def space(workload: tuple, target) -> dict:
        vl = vector_lanes(mode_of(workload), target)
        return {lanes_knob: [vl, 2 * vl], rows_knob: list(TILE_ROWS)}

    def constraint(workload: tuple, values: dict) -> str | None:
        target = current_target()
        need = tile_registers(mode_of(workload), values[lanes_knob], values[rows_knob], target)
        if need > target.vector_registers:
            return (f"a register tile of {values[rows_knob]} {what[1]} x {values[lanes_knob]} {what[0]} needs "
                    f"{need} vector registers, the target has {target.vector_registers}; take fewer {what[1]} "
                    f"or one vector of {what[0]}")
        return None

    return register_rule(template, space, default, constraint, doc=doc)


def pairs_fit_int16(w: np.ndarray, axis: int = 1) -> bool:
    """Whether ``vpmaddubsw`` is exact on int8 weights ``w`` reduced along ``axis`` in pairs
    ``(2j, 2j+1)``: ``255 * (|w[2j]| + |w[2j+1]|) <= 32767``, i.e. the pair's magnitudes sum to
    at most 128 (an odd extent's last element pairs with a zero)."""
    a = np.abs(np.moveaxis(np.asarray(w, "int32"), axis, 0))
    if a.shape[0] % 2:
        a = np.concatenate([a, np.zeros((1,) + a.shape[1:], "int32")])
    return bool(np.all(a[0::2] + a[1::2] <= 128))


GROUPS = (4, 2)  # words per vpmaddwd a dense tries, most products per instruction first (3 pads K = 256)


def _lane_sums(w: np.ndarray, group: int) -> np.ndarray:
    """``[N, K / (4 group), 2]``: the sum of each int16 lane's ``2 * group`` weights
    ``{b*4G + g*4 + h*2 + e}`` of ``w [N, K]`` (int64, zero past ``K``)."""
    n, k = w.shape
    span = 4 * group
    full = np.zeros((n, -(-k // span) * span), "int64")
    full[:, :k] = w
    return full.reshape(n, -1, group, 2, 2).sum(axis=(2, 4))


def group_fits(w: np.ndarray, group: int) -> bool:
    """Whether a ``u8s8`` group of ``group`` 4-byte words is exact on centered int8 weights
    ``w [N, K]`` (reduced along axis 1, zero past ``K``): every int16 lane's ``2 * group``
    weights have ``sum |w| <= 255`` (then ``|sum (x - 128) w| <= 32640``), and every pair fits
    ``vpmaddubsw`` (:func:`pairs_fit_int16`)."""
    w = np.asarray(w, "int64")
    return bool(_lane_sums(np.abs(w), group).max(initial=0) <= 255) and pairs_fit_int16(w, 1)


def group_bias(w: np.ndarray, group: int) -> np.ndarray:
    """``[N, K / (4 group), 2]`` int16: each lane's ``-128 * sum w`` wrapped to int16, the term
    that turns a group's wrapping int16 sum of ``x * w`` into ``sum (x - 128) * w``."""
    sums = -128 * _lane_sums(np.asarray(w, "int64"), group)
    return ((sums + 32768) % 65536 - 32768).astype("int16")


def _vload(buf: E.Buffer, offset: int, n: int, dtype: str) -> E.Expr:
    return E.Load(buf, E.Ramp(E.const(offset), E.const(1), n, f"int32x{n}"), f"{dtype}x{n}")


def _reinterpret(x: E.Expr, dtype: str) -> E.Expr:
    return E.Call("reinterpret", (x,), dtype)


def dot_intrin(mode: str, lanes: int, target, group: int = 1) -> te.TensorIntrin:
    """The tensor intrinsic ``c[lanes] (+)= a[kb] . b[lanes, kb]`` of ``mode`` on ``target``
    (``lanes`` a multiple of :func:`vector_lanes`; all three regions contiguous).

    ``group > 1`` (mode ``u8s8``): ``c[lanes] (+)= sum_g (a[g*kb:(g+1)*kb] - 128) . b[g, lanes, kb]``
    with one ``vpmaddwd`` per vector for the ``group`` words; ``b``'s region must be followed
    by its lanes' int16 biases (:func:`group_bias`; ``group_fits`` true of the weights)."""
    if mode not in MODES:
        raise ValueError(f"dot_intrin: mode {mode!r} is not one of {MODES}")
    if group != 1 and mode != "u8s8":
        raise ValueError(f"dot_intrin: a group of {group} words needs mode u8s8, not {mode!r}")
    vl, kb = vector_lanes(mode, target), reduce_block(mode)
    if lanes % vl:
        raise ValueError(f"dot_intrin: {lanes} lanes are not whole vectors of {vl} int32 on {target}")
    adt, bdt = operand_dtypes(mode)
    if group == 1:
        a = te.placeholder((kb,), adt, name="a")
        b = te.placeholder((lanes, kb), bdt, name="b")
        k = te.reduce_axis((0, kb), name="k")
        c = te.compute((lanes,), lambda i: te.sum(a[k].astype("int32") * b[i, k].astype("int32"), axis=k),
                       name="c")
    else:
        a = te.placeholder((group * kb,), adt, name="a")
        b = te.placeholder((group, lanes, kb), bdt, name="b")
        g = te.reduce_axis((0, group), name="g")
        k = te.reduce_axis((0, kb), name="k")
        c = te.compute((lanes,), lambda i: te.sum(
            (a[g * kb + k].astype("int32") - 128) * b[g, i, k].astype("int32"), axis=[g, k]), name="c")
    i32 = f"int32x{vl}"
    i16 = f"int16x{2 * vl}"

    def grouped(ins, j: int) -> E.Expr:
        """Vector ``j``'s int16 lanes: the group's wrapping sum of pairs plus the stored bias."""
        total = None
        for gi in range(group):
            word = _reinterpret(_vload(ins[0], gi * kb, kb, adt), "int32")
            avec = _reinterpret(E.Broadcast(word, vl, i32), f"{adt}x{vl * kb}")
            pairs = E.Call(PMADDUBSW, (avec, _vload(ins[1], (gi * lanes + j * vl) * kb, vl * kb, bdt)), i16)
            total = pairs if total is None else E.Add(total, pairs, i16)
        bias = _reinterpret(_vload(ins[1], (group * lanes + j * vl) * kb, vl * kb, bdt), i16)
        return E.Add(total, bias, i16)

    def products(ins, j: int, acc: E.Expr | None) -> E.Expr:
        """The ``vl`` sums of vector ``j`` (added to ``acc``)."""
        if group > 1:
            ones = E.Broadcast(E.const(1, "int16"), 2 * vl, i16)
            sums = E.Call(PMADDWD, (grouped(ins, j), ones), i32)
            return sums if acc is None else E.Add(acc, sums, i32)
        word = _reinterpret(_vload(ins[0], 0, kb, adt), "int32")  # a's kb elements as one word
        bvec = _vload(ins[1], j * vl * kb, vl * kb, bdt)
        if mode == "vnni":
            zero = E.Broadcast(E.const(0, "int32"), vl, i32)
            return E.Call(VPDPBUSD[vl], (acc if acc is not None else zero, E.Broadcast(word, vl, i32),
                                         _reinterpret(bvec, i32)), i32)
        avec = _reinterpret(E.Broadcast(word, vl, i32), f"{adt}x{vl * kb}")
        if mode == "u8s8":
            pairs = E.Call(PMADDUBSW, (avec, bvec), f"int16x{2 * vl}")
            ones = E.Broadcast(E.const(1, "int16"), 2 * vl, f"int16x{2 * vl}")
            sums = E.Call(PMADDWD, (pairs, ones), i32)
        else:
            sums = E.Call(PMADDWD, (avec, bvec), i32)
        return sums if acc is None else E.Add(acc, sums, i32)

    def fcompute(ins, outs):
        out = outs[0]
        ramp = [E.Ramp(E.const(j * vl), E.const(1), vl, i32) for j in range(lanes // vl)]
        body = S.seq(*[S.Store(out, products(ins, j, None), ramp[j]) for j in range(len(ramp))])
        update = S.seq(*[S.Store(out, products(ins, j, _vload(out, j * vl, vl, "int32")), ramp[j])
                         for j in range(len(ramp))])
        # no reset: the reduction's zeros initialise the tile before the reduce loops, so no
        # first-iteration branch sits inside them (schedule.tensorize)
        return body, None, update

    name = f"dot_{mode}_{lanes}x{kb}" + (f"x{group}" if group > 1 else "")
    return te.decl_tensor_intrin(c.op, fcompute, name=name)


__all__ = ["GROUPS", "MODES", "TILE_ROWS", "choose_mode", "dot_intrin", "group_bias", "group_fits",
           "operand_dtypes", "pairs_fit_int16", "products_per_cycle", "reduce_block", "register_tile_rule",
           "tile_registers", "vector_lanes"]
