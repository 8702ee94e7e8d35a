"""x86 int8 convolution on the integer dot-product instructions, requantization fused.

A quantized conv (ONNX ``DequantizeLinear -> Conv -> QuantizeLinear``, or ``QLinearConv``)
as one kernel: uint8 data in (NCHW, or NCHW[b]c), the ``dtype`` (uint8/int8) output out
(NCHW, or NCHW[oc_bn]c with ``out_block``: ``graph.passes.alter_op_layout`` keeps int8
activations blocked between convs)::

    data_q[n, cc, y, x, ci]   = packed NCHW[ic_bn]c copy of the data, padded with the zero point
                                (mode i16: int16(x) - x_zp, padded with 0)
    conv_int8[n, oc, y, x, o] = sum_{ic, kh, kw, icb, k} int32(data_q[n, ic, y*sh + kh*dh,
                                    x*sw + kw*dw, icb*kb + k]) * int32(kernel[oc, ic, kh, kw, icb, o, k])
    out[n, c, y, x]           = saturate(round_half_even(float32(conv_int8[.., c] + offset[c])
                                    * multiplier[c]) + y_zp), clamped below at ``lo``

The kernel is packed ``OIHW[ic_bn/kb]i[oc_bn]o[kb]i`` (:func:`pack_kernel`), ``kb`` = 4 bytes
(2 int16 in mode ``i16``) innermost, so that one :mod:`topi.x86.int8_dot` intrinsic multiplies
``kb`` data elements (one broadcast word) by ``oc_bn`` x ``kb`` weights.  In the uint8 modes the
weights are ``w - w_zp`` as int8 and ``offset = bias - x_zp * sum(w - w_zp)`` (the data's zero
point taken out once per channel; padding reads ``x_zp``, so it contributes nothing either);
in mode ``i16`` both operands are centered and ``offset = bias``.  Mode ``u8s8`` with weights small
enough sums groups of words along the channel block in int16 (:func:`group`, as
``topi.x86.dense_int8``; ResNet-50's 52 int8 convs take groups of 2: one thread 77 -> 65 ms,
``benchmarks/quantized.py resnet50 --cpu-time``): the data is centered, ``offset = bias -
(x_zp - 128) * sum(w - w_zp)``.  The channels are padded to whole blocks with zero weights.
``multiplier = x_scale * w_scale / y_scale`` in float32 and the rounding are onnxruntime's QLinearConv output stage (:func:`topi.nn.qnn.requantize`).

A strided 1x1 conv packs only the points it reads (and runs with stride 1 on them); data
already blocked by ``ic_bn`` that needs no padding is read in place (modes vnni, u8s8), any
other input is packed by a copy at the root.

The schedule keeps a register tile of ``ow_bn`` columns x ``oc_bn`` channels (int32 vectors)
while the reduction streams over ``(ic, kh, kw, icb)``; the tile's innermost ``oc_bn x kb``
is the tensorized intrinsic, whose output the reduction's zeros initialise before the reduce
loops (no branch inside them).  The requantization and any fused epilogue (dequantize, batch
norm, residual add, ReLU, quantize) run in the output loop: with a blocked output each tile
column's channels are one vector straight from its accumulator (ResNet-50's 256 -> 64 1x1 conv
in mode i16, one thread: 1.66 -> 1.35 ms against NCHW in and out); with an NCHW output the
loop is vectorized along the row (contiguous stores and residual reads).

A 3x3 stride-1 conv of at least 64 input channels without VNNI runs through integer Winograd
F(2x2, 3x3) (:func:`conv2d_int8_winograd`, its kernel packed by :func:`pack_winograd_kernel`):
4 products per output point and channel instead of 9, on ``vpmaddwd``, exact.  AVX2's integer
multiplies issue once a cycle on Zen 3 (16 int16 products, the rate of its two float32 FMA
ports), so only fewer products make int8 beat the float Winograd convs (ResNet-50's 56x56
64-channel layer, one thread: 2.35 ms direct, 1.27 ms Winograd in fused blocks).
"""

from __future__ import annotations

import numpy as np

import te
from topi import tag
from topi.nn.conv2d import get_pad_tuple, out_size
from topi.nn.qnn import clamp_centered, qrange, register_integer_form
from topi.nn.winograd import by_index, winograd_matrices
from topi.utils import get_const_tuple
from topi.x86.int8_dot import (GROUPS, dot_intrin, group_bias, group_fits, operand_dtypes, products_per_cycle,
                               reduce_block, register_tile_rule, vector_lanes)

CONV_INT8 = "conv2d_NCHWc_int8"
IC_BLOCKS = (64, 32, 16, 8, 4, 2)


def blocks(oc: int, ic: int, mode: str, target) -> tuple:
    """``(ic_bn, oc_bn, ow_bn)`` for a conv of ``ic`` -> ``oc`` channels.  ``oc_bn`` is two
    vectors of int32 where they divide ``oc`` (each broadcast data word then feeds two
    multiplies: ResNet-50's 28x28 512 -> 128 1x1 conv in mode i16, one thread, 1.33 -> 1.04 ms),
    else one; ``ow_bn`` the columns the vector registers hold beside the weights, the broadcast
    and the temporaries (up to 4 of two vectors, 8 of one: one vector of the NCHW output's row in
    the requantization loop).  ``ic_bn`` is the block the conv before writes (``oc_bn``'s rule
    on ``ic``: a blocked int8 input is then read in place, ``graph.passes.alter_op_layout``),
    else the largest block in ``IC_BLOCKS`` dividing ``ic`` rounded up to ``kb``."""
    vl, kb = vector_lanes(mode, target), reduce_block(mode)
    icp = -(-ic // kb) * kb
    ic_bn = next((b for b in (2 * vl, vl) if ic % b == 0), 0) or \
        next(b for b in IC_BLOCKS if b % kb == 0 and icp % b == 0)
    extra = 2 if mode == "u8s8" else 0  # vpmaddubsw's int16 pairs and the ones vector
    if oc % (2 * vl) == 0:
        return ic_bn, 2 * vl, max(1, min(4, (target.vector_registers - 3 - extra) // 2))
    return ic_bn, vl, max(1, min(8, target.vector_registers - 2 - extra))


# --------------------------------------------------------------- AutoTVM ---
TEMPLATE = "conv2d_NCHWc_int8.x86"


def int8_workload(dshape, kshape, strides, pads, mode: str, group: int = 1) -> tuple:
    """The AutoTVM workload of a direct int8 conv: uint8 NCHW data ``dshape``, centered OIHW
    weights ``kshape`` of ``mode`` (:mod:`topi.x86.int8_dot`) in groups of ``group`` words
    (:func:`group`; named only when above 1)."""
    extra = (int(group),) if group > 1 else ()
    return (TEMPLATE, tuple(int(d) for d in dshape), tuple(int(d) for d in kshape),
            tuple(int(d) for d in strides), tuple(int(d) for d in pads), str(mode), *extra)


def _int8_default(workload: tuple, target) -> dict:
    (n, ic, h, w), (oc, _, kh, kw), mode = workload[1], workload[2], workload[5]
    _, oc_bn, ow_bn = blocks(oc, ic, mode, target)
    return {"oc_bn": oc_bn, "ow_bn": ow_bn}


register_tile_rule(TEMPLATE, lambda workload: workload[5], ("oc_bn", "ow_bn"), ("channels", "columns"),
                   _int8_default, doc="direct int8 conv on the integer dot products (conv2d_int8): the register "
                                      "tile's channels (one or two vectors) and columns")


def float_is_faster(ic: int, kh: int, kw: int, mode: str, target) -> bool:
    """Whether the direct int8 conv of ``ic`` input channels (a ``kh`` x ``kw`` kernel) issues
    more multiply cycles than the float32 conv of the same integers: the int8 reduction runs over
    the channels padded to whole ``ic_bn`` blocks (:func:`blocks`), the float one over ``ic``
    (its channel block divides ``ic``), each at :func:`topi.x86.int8_dot.products_per_cycle`.
    True for a 3-channel stem (4 padded channels x 49 taps against 3 x 49 at equal rates
    without VNNI), false wherever the blocks divide the channels."""
    ic_bn = blocks(ic, ic, mode, target)[0]
    padded = -(-ic // ic_bn) * ic_bn
    return padded * kh * kw * products_per_cycle(None, target) > ic * kh * kw * products_per_cycle(mode, target)


def _taps_by_channels(w: np.ndarray) -> np.ndarray:
    """OIHW weights as rows ``(o, h, w)`` reduced over the input channels."""
    oc, ic, kh, kw = w.shape
    return np.asarray(w, "int64").transpose(0, 2, 3, 1).reshape(oc * kh * kw, ic)


def group(w: np.ndarray, mode: str, ic_bn: int) -> int:
    """The words per ``vpmaddwd`` of a direct int8 conv of centered OIHW weights ``w`` blocked by
    ``ic_bn`` input channels (``topi.x86.dense_int8.group``'s rule on each tap's channels): the
    first of ``GROUPS`` that divides the block into words and is exact on ``w`` in mode ``u8s8``,
    else 1."""
    if mode != "u8s8":
        return 1
    rows = _taps_by_channels(w)
    return next((g for g in GROUPS if ic_bn % (reduce_block(mode) * g) == 0 and group_fits(rows, g)), 1)


def kernel_shape(oc: int, ic: int, kh: int, kw: int, mode: str, ic_bn: int, oc_bn: int,
                 group: int = 1) -> tuple:
    """The shape :func:`pack_kernel` gives OIHW weights."""
    kb = reduce_block(mode)
    head = (-(-oc // oc_bn), -(-ic // ic_bn), kh, kw)
    if group == 1:
        return (*head, ic_bn // kb, oc_bn, kb)
    return (*head, ic_bn // (kb * group), group + 1, oc_bn, kb)


def pack_kernel(w: np.ndarray, mode: str, ic_bn: int, oc_bn: int, group: int = 1) -> np.ndarray:
    """Centered OIHW weights (ints) -> ``[OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/kb, oc_bn, kb]`` of the
    mode's kernel dtype, the channels padded with zeros to whole blocks.  ``group > 1`` (mode
    ``u8s8``, :func:`group`): ``[.., ic_bn/(kb*group), group + 1, oc_bn, kb]``, each group's words
    followed by its lanes' int16 biases (``topi.x86.int8_dot.group_bias``)."""
    kb = reduce_block(mode)
    oc, ic, kh, kw = w.shape
    ocp, icp = -(-oc // oc_bn) * oc_bn, -(-ic // ic_bn) * ic_bn
    full = np.zeros((ocp, icp, kh, kw), "int64")
    full[:oc, :ic] = w
    r = full.reshape(ocp // oc_bn, oc_bn, icp // ic_bn, ic_bn // kb, kb, kh, kw)
    packed = np.ascontiguousarray(r.transpose(0, 2, 5, 6, 3, 1, 4)).astype(operand_dtypes(mode)[1])
    if group == 1:
        return packed
    occ, icc, gs = ocp // oc_bn, icp // ic_bn, ic_bn // (kb * group)
    bias = group_bias(_taps_by_channels(full), group)  # [(o, h, w), icp / (kb * group), 2]
    bias = bias.reshape(occ, oc_bn, kh, kw, icc, gs, 2).transpose(0, 4, 2, 3, 5, 1, 6)
    bias = np.ascontiguousarray(bias).view("int8").reshape(occ, icc, kh, kw, gs, 1, oc_bn, kb)
    words = packed.reshape(occ, icc, kh, kw, gs, group, oc_bn, kb)
    return np.ascontiguousarray(np.concatenate([words, bias], axis=5))


def unpack_kernel(packed: np.ndarray, ic: int, oc: int) -> np.ndarray:
    """The centered OIHW weights (int64) of a :func:`pack_kernel` (or :func:`pack_winograd_kernel`:
    rank 6) result."""
    if packed.ndim == 6:
        return unpack_winograd_kernel(packed, ic, oc)
    if packed.ndim == 8:
        occ, icc, kh, kw, gs, g1, oc_bn, kb = packed.shape
        packed = packed[:, :, :, :, :, :g1 - 1].reshape(occ, icc, kh, kw, gs * (g1 - 1), oc_bn, kb)
    occ, icc, kh, kw, icbs, oc_bn, kb = packed.shape
    full = packed.astype("int64").transpose(0, 5, 1, 4, 6, 2, 3).reshape(occ * oc_bn, icc * icbs * kb, kh, kw)
    return full[:oc, :ic]


def conv2d_int8(data: te.Tensor, kernel: te.Tensor, offset: te.Tensor, multiplier: te.Tensor, oc: int,
                strides, padding, dilation, x_zp: int, y_zp: int, mode: str, dtype: str = "uint8",
                lo: int | None = None, ow_bn: int = 4, out_block: int = 0) -> te.Tensor:
    """The requantized int8 conv of uint8 ``data`` by the packed ``kernel`` (:func:`pack_kernel`);
    ``offset`` (int32) and ``multiplier`` (float32) per padded output channel; ``oc`` the real
    output channels; ``lo`` a lower clamp (a fused ReLU: ``y_zp``).

    ``data`` is NCHW, or blocked ``[N, C/b, H, W, b]`` (NCHW[b]c, rank 5); the output is NCHW,
    or with ``out_block`` (the kernel's ``oc_bn``, dividing ``oc``) blocked NCHW[oc_bn]c, each
    register tile's channels one vector (:func:`schedule_conv2d_int8`).  A kernel packed by
    :func:`pack_winograd_kernel` (rank 6) runs the 3x3 stride-1 conv through Winograd
    (:func:`conv2d_int8_winograd`)."""
    if len(kernel.shape) == 6:
        if tuple(strides) != (1, 1) or tuple(dilation) != (1, 1):
            raise ValueError(f"conv2d_int8: a Winograd kernel needs stride 1 and dilation 1, got {strides}, "
                             f"{dilation}")
        return conv2d_int8_winograd(data, kernel, offset, multiplier, oc, padding, x_zp, y_zp, dtype, lo, out_block)
    kshape = get_const_tuple(kernel.shape)
    grp = kshape[5] - 1 if len(kshape) == 8 else 1
    occ, icc, kh, kw, gs, oc_bn, kb = (*kshape[:5], *kshape[6:]) if grp > 1 else kshape
    icbs = gs * grp
    if grp > 1 and mode != "u8s8":
        raise ValueError(f"conv2d_int8: a grouped kernel {kshape} needs mode u8s8, not {mode}")
    if kb != reduce_block(mode) or data.dtype != "uint8" or len(data.shape) not in (4, 5):
        raise ValueError(f"conv2d_int8: mode {mode} needs uint8 NCHW or NCHW[b]c data and a kernel packed by "
                         f"{reduce_block(mode)}, got {data.dtype} data {get_const_tuple(data.shape)} and kernel "
                         f"{get_const_tuple(kernel.shape)}")
    if len(data.shape) == 5:
        n, icb, h, w, in_block = get_const_tuple(data.shape)
        ic = icb * in_block
    else:
        (n, ic, h, w), in_block = get_const_tuple(data.shape), 0
    ic_bn = icbs * kb
    if oc < oc_bn:
        raise ValueError(f"conv2d_int8: {oc} output channels are fewer than one block of {oc_bn} (the register "
                         f"tile would cover channels no one reads); keep such a conv in float32")
    if out_block and (out_block != oc_bn or oc % oc_bn):
        raise ValueError(f"conv2d_int8: a blocked output needs out_block = the kernel's oc_bn {oc_bn} dividing "
                         f"{oc} channels, got {out_block}")
    if icc * ic_bn < ic or occ * oc_bn < oc:
        raise ValueError(f"conv2d_int8: kernel {get_const_tuple(kernel.shape)} holds fewer channels than data "
                         f"{(n, ic, h, w)} -> {oc}")
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw), "conv2d_int8")
    oh = out_size("conv2d_int8", h, kh, sh, dh, top, bottom, data.shape, (oc, ic, kh, kw))
    ow = out_size("conv2d_int8", w, kw, sw, dw, left, right, data.shape, (oc, ic, kh, kw))
    adt = operand_dtypes(mode)[0]
    pad_value = te.const(0 if mode == "i16" else x_zp, adt)
    # a strided 1x1 conv packs only the points it reads, and runs with stride 1 on them
    subsample = (kh, kw) == (1, 1) and not any((top, left, bottom, right)) and (sh, sw) != (1, 1)
    ph, pw = (sh, sw) if subsample else (1, 1)
    rows, cols = (oh, ow) if subsample else (h + top + bottom, w + left + right)
    if subsample:
        sh, sw = 1, 1

    def read(b, c, iy, ix):
        if in_block:
            return data[b, c // in_block, iy, ix, c % in_block]
        return data[b, c, iy, ix]

    def packed(b, cc, y, x, ci):
        c, iy, ix = cc * ic_bn + ci, y * ph - top, x * pw - left
        inside = te.all(c < ic, iy >= 0, iy < h, ix >= 0, ix < w)
        v = read(b, te.min(c, ic - 1), te.max(te.min(iy, h - 1), 0), te.max(te.min(ix, w - 1), 0))
        if mode == "i16":
            v = v.astype("int16") - te.const(x_zp, "int16")
        return te.if_then_else(inside, v, pad_value)

    if in_block == ic_bn and mode != "i16" and not subsample and not any((top, left, bottom, right)) \
            and icc * ic_bn == ic:
        data_q = data  # already the packed layout: no copy
    else:
        data_q = te.compute((n, icc, rows, cols, ic_bn), packed, name="data_q", tag=tag.INJECTIVE)
    rc = te.reduce_axis((0, icc), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rb = te.reduce_axis((0, gs), name="rb")
    rk = te.reduce_axis((0, kb), name="rk")

    def body(b, o, y, x, ob):
        d = data_q[b, rc, y * sh + ry * dh, x * sw + rx * dw, rb * kb + rk].astype("int32")
        return te.sum(d * kernel[o, rc, ry, rx, rb, ob, rk].astype("int32"), axis=[rc, ry, rx, rb, rk])

    def grouped(b, o, y, x, ob):  # centered data (int8_dot's groups): the offset holds (x_zp - 128) * sum(w)
        d = data_q[b, rc, y * sh + ry * dh, x * sw + rx * dw, (rb * grp + rg) * kb + rk].astype("int32") - 128
        w = kernel[o, rc, ry, rx, rb, rg, ob, rk].astype("int32")
        return te.sum(d * w, axis=[rc, ry, rx, rb, rg, rk])

    rg = te.reduce_axis((0, grp), name="rg")
    conv = te.compute((n, occ, oh, ow, oc_bn), grouped if grp > 1 else body, name="conv_int8", tag=CONV_INT8,
                      attrs={"mode": mode, "ow_bn": int(ow_bn), "group": grp})
    return _requantized(lambda b, co, y, x, ob: conv[b, co, y, x, ob], (n, oc, oh, ow), oc_bn, out_block, offset,
                        multiplier, y_zp, lo, dtype)


def _requantized(acc, shape: tuple, oc_bn: int, out_block: int, offset, multiplier, y_zp: int, lo, dtype: str):
    """The requantization of the int32 accumulator ``acc(b, co, y, x, ob)`` (channel ``co * oc_bn +
    ob``) into the NCHW ``shape``, or NCHW[oc_bn]c with ``out_block``."""
    n, oc, oh, ow = shape
    qlo, qhi = qrange(dtype)
    lo = qlo if lo is None else max(qlo, int(lo))

    def rounded(b, co, ob, y, x):
        c = co * oc_bn + ob
        return te.round((acc(b, co, y, x, ob) + offset[c]).astype("float32") * multiplier[c])

    def requant(b, co, ob, y, x):
        q = rounded(b, co, ob, y, x).astype("int32") + te.const(y_zp, "int32")
        return te.min(te.max(q, te.const(lo, "int32")), te.const(qhi, "int32")).astype(dtype)

    def centered(b, co, ob, y, x):  # q - y_zp in float32, for a dequantize fused after (topi.nn.qnn)
        return clamp_centered(rounded(b, co, ob, y, x), y_zp, dtype, lo)

    if out_block:
        out = te.compute((n, oc // oc_bn, oh, ow, oc_bn), lambda b, co, y, x, ob: requant(b, co, ob, y, x),
                         name="requantize", tag=tag.INJECTIVE)
        return register_integer_form(out, lambda b, co, y, x, ob: centered(b, co, ob, y, x), y_zp)
    out = te.compute((n, oc, oh, ow), lambda b, c, y, x: requant(b, c // oc_bn, c % oc_bn, y, x),
                     name="requantize", tag=tag.INJECTIVE)
    return register_integer_form(out, lambda b, c, y, x: centered(b, c // oc_bn, c % oc_bn, y, x), y_zp)


# ------------------------------------------------------------- Winograd ---
# F(2x2, 3x3) in integers (topi.nn.winograd's matrices): V = B^T d B of the centered data,
# U' = (2G) g (2G)^T = 4U of the centered weights (integers: G's halves doubled),
# M = sum_c U' V, 4Y = A^T M A, Y = 4Y >> 2.
WINOGRAD_AT, WINOGRAD_BT, _G = winograd_matrices(2)
WINOGRAD_G2 = tuple(tuple(int(2 * x) for x in row) for row in _G)
WINOGRAD_MIN_CHANNELS = 64  # input channels from which integer Winograd runs (ResNet-50's 3x3 layers)


def winograd_exact(wc: np.ndarray) -> bool:
    """Whether the integer Winograd conv of 3x3 centered weights ``wc`` (OIHW) is exact: its
    transformed operands fit int16 (``|V| <= 4 * 255``, ``|U'| <= 9 * max|w|``) and 4Y fits
    int32 (``4 * 9 * IC * 255 * max|w| < 2**31``).  Everything before the final shift is
    additions and products, exact modulo 2**32, so only the result needs to fit."""
    m = int(np.abs(wc).max()) if wc.size else 0
    return wc.shape[2:] == (3, 3) and 9 * m < 2**15 and 36 * wc.shape[1] * 255 * m < 2**31


def winograd_block(mode: str, target) -> int:
    """The Winograd products' channel block: one int32 vector (its register tile is ``mr`` tiles
    by one vector, :func:`winograd_rows`)."""
    return vector_lanes("i16", target)


def winograd_kernel(wc: np.ndarray, strides, dilation, mode: str, oc_bn: int) -> np.ndarray | None:
    """The :func:`pack_winograd_kernel` of centered OIHW weights ``wc`` where the conv runs
    through integer Winograd: 3x3, stride 1, undilated, at least ``WINOGRAD_MIN_CHANNELS`` input
    channels, exact (:func:`winograd_exact`), and no VNNI (``mode``: its dot product does four
    products per lane, the direct conv keeps them); else None."""
    if mode == "vnni" or tuple(strides) != (1, 1) or tuple(dilation) != (1, 1) or wc.shape[2:] != (3, 3) \
            or wc.shape[1] < WINOGRAD_MIN_CHANNELS or not winograd_exact(wc):
        return None
    return pack_winograd_kernel(wc, oc_bn)


def pack_winograd_kernel(w: np.ndarray, oc_bn: int) -> np.ndarray:
    """Centered 3x3 OIHW weights -> ``U' = (2G) w (2G)^T`` as int16 ``[4, 4, OC/oc_bn, ICp/2, oc_bn, 2]``
    (the channels padded with zeros to whole blocks and an even count)."""
    oc, ic = w.shape[:2]
    ocp, icp = -(-oc // oc_bn) * oc_bn, -(-ic // 2) * 2
    g2 = np.array(WINOGRAD_G2, "int64")
    u = np.zeros((4, 4, ocp, icp), "int64")
    u[:, :, :oc, :ic] = np.einsum("er,kcrs,ns->enkc", g2, np.asarray(w, "int64"), g2)
    r = u.reshape(4, 4, ocp // oc_bn, oc_bn, icp // 2, 2).transpose(0, 1, 2, 4, 3, 5)
    return np.ascontiguousarray(r).astype("int16")


def unpack_winograd_kernel(packed: np.ndarray, ic: int, oc: int) -> np.ndarray:
    """The centered OIHW weights (int64) of a :func:`pack_winograd_kernel` result: ``L U' L^T``
    with ``L (2G) = I``."""
    _, _, occ, icc, oc_bn, _ = packed.shape
    u = packed.astype("float64").transpose(0, 1, 2, 4, 3, 5).reshape(4, 4, occ * oc_bn, icc * 2)
    left = np.array([[0.5, 0, 0, 0], [0, 0.5, -0.5, 0], [0, 0, 0, 0.5]])
    return np.rint(np.einsum("re,enkc,sn->kcrs", left, u, left)).astype("int64")[:oc, :ic]


def conv2d_int8_winograd(data: te.Tensor, kernel: te.Tensor, offset: te.Tensor, multiplier: te.Tensor, oc: int,
                         padding, x_zp: int, y_zp: int, dtype: str = "uint8", lo: int | None = None,
                         out_block: int = 0) -> te.Tensor:
    """:func:`conv2d_int8` of a 3x3 stride-1 conv through integer Winograd F(2x2, 3x3): the data
    centered (int16), ``V = B^T d B`` per 4x4 tile, the products ``M = sum_c V U'`` on the
    ``i16`` dot product (``vpmaddwd``) with tiles x ``oc_bn`` channels in registers,
    ``4Y = A^T M A``, then the requantization of ``4Y >> 2 + offset`` (exact:
    :func:`winograd_exact`).  9 products per output point and input channel become 4."""
    _, _, kcc, icc2, oc_bn, _ = get_const_tuple(kernel.shape)
    if len(data.shape) == 5:
        n, icb, h, w, in_block = get_const_tuple(data.shape)
        ic = icb * in_block
    else:
        (n, ic, h, w), in_block = get_const_tuple(data.shape), 0
    if kernel.dtype != "int16" or icc2 * 2 < ic or kcc * oc_bn < oc or data.dtype != "uint8":
        raise ValueError(f"conv2d_int8_winograd: kernel {get_const_tuple(kernel.shape)} {kernel.dtype} does not "
                         f"pack {oc} x {ic} channels of uint8 data")
    if out_block and (out_block != oc_bn or oc % oc_bn):
        raise ValueError(f"conv2d_int8_winograd: a blocked output needs out_block = {oc_bn} dividing {oc}")
    top, left, bottom, right = get_pad_tuple(padding, (3, 3), "conv2d_int8_winograd")
    oh, ow = h + top + bottom - 2, w + left + right - 2
    nh, nw = -(-oh // 2), -(-ow // 2)
    tiles, icp = n * nh * nw, icc2 * 2

    def centered(b, c, iy, ix):
        inside = te.all(c < ic, iy >= 0, iy < h, ix >= 0, ix < w)
        cc, yy, xx = te.min(c, ic - 1), te.max(te.min(iy, h - 1), 0), te.max(te.min(ix, w - 1), 0)
        v = data[b, cc // in_block, yy, xx, cc % in_block] if in_block else data[b, cc, yy, xx]
        return te.if_then_else(inside, v.astype("int16") - te.const(x_zp, "int16"), te.const(0, "int16"))

    def corner(p):
        return p // (nh * nw), (p % (nh * nw)) // nw * 2 - top, p % nw * 2 - left

    def v_rows(e, p, s, c):
        b, y0, x0 = corner(p)
        return by_index(e, WINOGRAD_BT, lambda r: centered(b, c, y0 + r, x0 + s), "int16")

    vr = te.compute((4, tiles, 4, icp), v_rows, name="winograd_int8_V_rows", tag=tag.INJECTIVE,
                    attrs={"in_block": in_block})
    v = te.compute((4, 4, tiles, icp),
                   lambda e, nu, p, c: by_index(nu, WINOGRAD_BT, lambda s: vr[e, p, s, c], "int16"),
                   name="winograd_int8_V", tag=tag.INJECTIVE)
    rc = te.reduce_axis((0, icc2), name="rc")
    rk = te.reduce_axis((0, 2), name="rk")
    m = te.compute((4, 4, tiles, kcc, oc_bn),
                   lambda e, nu, p, k, ob: te.sum(v[e, nu, p, rc * 2 + rk].astype("int32")
                                                  * kernel[e, nu, k, rc, ob, rk].astype("int32"), axis=[rc, rk]),
                   name="winograd_int8_M", tag=CONV_INT8, attrs={"mode": "i16", "winograd": 2})

    def four_y(b, co, y, x, ob):  # 4Y = A^T M A at output point (y, x) of its tile
        p = (b * nh + y // 2) * nw + x // 2
        rows = [by_index(x % 2, WINOGRAD_AT, lambda nu, e=e: m[e, nu, p, co, ob], "int32") for e in range(4)]
        return by_index(y % 2, WINOGRAD_AT, lambda e: rows[e], "int32")

    return _requantized(lambda *i: te.shift_right(four_y(*i), te.const(2, "int32")), (n, oc, oh, ow), oc_bn,
                        out_block, offset, multiplier, y_zp, lo, dtype)


def winograd_rows(oh: int, ow: int, blocked: bool) -> tuple:
    """``(rows, mr)`` of :func:`_schedule_winograd`: tile rows per fused block (0: the stages
    apart) and the register tile's tiles.  A block of at least ``WINOGRAD_BLOCK_TILES`` tiles
    dividing the image, with at least ``WINOGRAD_MIN_BLOCKS`` blocks (the parallel loop), keeps
    its transformed data and products in the core's cache; ``mr`` then divides the block."""
    nh, nw = -(-oh // 2), -(-ow // 2)
    rows = next((r for r in range(1, nh + 1) if r * nw >= WINOGRAD_BLOCK_TILES and nh % r == 0), 0)
    if not blocked or not rows or nh // rows < WINOGRAD_MIN_BLOCKS:
        return 0, 8
    return rows, next((m for m in (8, 7, 6, 5, 4) if rows * nw % m == 0), 8)


WINOGRAD_BLOCK_TILES = 24
WINOGRAD_MIN_BLOCKS = 4


def _schedule_winograd(s, out, m_op, target) -> te.Schedule:
    """Input transform per (tile, channel vector) with its 16 points unrolled; the products
    ``mr`` tiles x ``oc_bn`` channels in registers (tensorized as the direct conv's tile); the
    output per (channel block, output row pair), its 2x2 points unrolled, the channels (blocked
    output) or the row (NCHW) vectorized.  Fused (:func:`winograd_rows`), one parallel loop over
    blocks of tile rows runs the three stages per block; else each stage is a parallel loop of
    its own (the products over (point, channel block))."""
    v = m_op.input_tensors[0]
    vr = v.op.input_tensors[0]
    oc_bn = get_const_tuple(m_op.input_tensors[1].shape)[4]
    blocked = len(s[out].op.axis) == 5
    oh, ow = get_const_tuple(out.output(0).shape)[2:4]
    rows, mr = winograd_rows(oh, ow, blocked)
    if blocked:
        n, co, y, x, ob = s[out].op.axis
        yo, yi = s[out].split(y, factor=2)
        xo, xi = s[out].split(x, factor=2)
        if rows:
            block, yo = s[out].split(yo, factor=rows)
            s[out].reorder(n, block, co, yo, xo, yi, xi, ob)
            at = s[out].fuse(n, block)
        else:
            s[out].reorder(n, co, yo, xo, yi, xi, ob)
            at = s[out].fuse(n, co, yo)
        s[out].parallel(at)
        s[out].unroll(yi)
        s[out].unroll(xi)
        s[out].vectorize(ob)
    else:
        n, c, y, x = s[out].op.axis
        yo, yi = s[out].split(y, factor=2)
        s[out].reorder(n, c, yo, yi, x)
        s[out].parallel(s[out].fuse(n, c, yo))
        s[out].unroll(yi)
        s[out].vectorize(x)
    e, nu, vp, c = s[v].op.axis
    # one vector per channel block of a blocked input (no gather); 2 channels of NCHW data
    in_block = vr.op.attrs["in_block"]
    lanes = next((b for b in (16, 8, 4, 2) if in_block % b == 0), 2) if in_block else 2
    co, ci = s[v].split(c, factor=lanes)
    s[v].reorder(vp, co, e, nu, ci)
    s[v].unroll(e)
    s[v].unroll(nu)
    s[v].vectorize(ci)
    s[vr].compute_at(s[v], co)
    re_, _, rs, rci = s[vr].op.axis
    s[vr].unroll(re_)
    s[vr].unroll(rs)
    s[vr].vectorize(rci)
    mo = m_op.output(0)
    ml = s.cache_write(mo, "local")
    e, nu, p, k, ob = s[mo].op.axis
    po, pi = s[mo].split(p, factor=mr)
    s[mo].reorder(e, nu, k, po, pi, ob)
    s[mo].vectorize(ob)
    if rows:
        s[v].compute_at(s[out], at)
        s[mo].compute_at(s[out], at)
    else:
        s[v].parallel(vp)
        s[mo].parallel(s[mo].fuse(e, nu, k))
    s[ml].compute_at(s[mo], po)
    _, _, lp, _, lob = s[ml].op.axis
    rc, rk = s[ml].op.reduce_axis
    s[ml].reorder(rc, lp, lob, rk)
    s[ml].unroll(lp)
    s[ml].tensorize(lob, dot_intrin("i16", oc_bn, target))
    return s


def _find(s, out_op):
    stack, seen = [out_op], set()
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        if op.tag == CONV_INT8:
            return op
        seen.add(id(op))
        if op is not out_op:
            s[op].compute_inline()
        stack.extend(t.op for t in op.input_tensors)
    raise ValueError(f"schedule_conv2d_int8: no {CONV_INT8} stage under output '{out_op.name}'")


def schedule_conv2d_int8(outs, target) -> te.Schedule:
    """Schedule :func:`conv2d_int8` (and any injective stage after it) for ``target``."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    out = outs[0].op
    conv_op = _find(s, out)
    if conv_op is out:
        raise ValueError("schedule_conv2d_int8: the int8 conv needs its requantization after it")
    if conv_op.attrs.get("winograd"):
        return _schedule_winograd(s, out, conv_op, target)
    mode, ow_bn = conv_op.attrs["mode"], conv_op.attrs["ow_bn"]
    kernel = conv_op.input_tensors[1]
    data_q = conv_op.input_tensors[0]
    oc_bn = get_const_tuple(kernel.shape)[-2]
    grp = conv_op.attrs.get("group", 1)
    if isinstance(data_q.op, te.ComputeOp):  # the packed data: a copy at the root, one (n, block, row) per task
        dq = s[data_q.op]
        dq.parallel(dq.fuse(*dq.op.axis[:3]))
        dq.vectorize(dq.op.axis[4])  # a block's channels: one load from a blocked input
    if len(s[out].op.axis) == 5:
        # blocked output: rows parallel, column tiles of ow_bn, each column's channels one vector
        n, co, oh, ow, ci = s[out].op.axis
        wo, wi = s[out].split(ow, factor=ow_bn)
        s[out].reorder(n, co, oh, wo, wi, ci)
        s[out].parallel(s[out].fuse(n, co, oh))
        s[out].unroll(wi)
        s[out].vectorize(ci)
    else:
        # NCHW output: rows parallel, column tiles of ow_bn, channels split by oc_bn
        n, c, oh, ow = s[out].op.axis
        co, ci = s[out].split(c, factor=oc_bn)
        wo, wi = s[out].split(ow, factor=ow_bn)
        s[out].reorder(n, co, oh, wo, ci, wi)
        s[out].parallel(s[out].fuse(n, co, oh))
        s[out].vectorize(wi)  # NCHW rows: contiguous stores and residual reads
    cl = conv_op.output(0)
    s[cl].compute_at(s[out], wo)
    _, _, _, x, ob = s[cl].op.axis
    rc, ry, rx, rb, *inner = s[cl].op.reduce_axis
    s[cl].reorder(rc, ry, rx, rb, x, ob, *inner)
    s[cl].unroll(x)
    s[cl].tensorize(ob, dot_intrin(mode, oc_bn, target, grp))
    return s


__all__ = ["CONV_INT8", "TEMPLATE", "blocks", "conv2d_int8", "conv2d_int8_winograd", "float_is_faster",
           "group", "int8_workload", "kernel_shape", "pack_kernel", "pack_winograd_kernel",
           "schedule_conv2d_int8", "unpack_kernel", "unpack_winograd_kernel", "winograd_block", "winograd_exact",
           "winograd_kernel"]
