"""x86 int8 convolution on the integer dot-product instructions, requantization fused.

A quantized conv (ONNX ``DequantizeLinear -> Conv -> QuantizeLinear``, or ``QLinearConv``)
as one kernel: uint8 NCHW data in, the ``dtype`` (uint8/int8) NCHW output out::

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
in mode ``i16`` both operands are centered and ``offset = bias``.  The channels are padded
to whole blocks with zero weights.  ``multiplier = x_scale * w_scale / y_scale`` in float32 and
the rounding are onnxruntime's QLinearConv output stage (:func:`topi.nn.qnn.requantize`).

A strided 1x1 conv packs only the points it reads (and runs with stride 1 on them).

The schedule keeps a register tile of ``ow_bn`` columns x ``oc_bn`` channels (int32 vectors)
while the reduction streams over ``(ic, kh, kw, icb)``; the tile's innermost ``oc_bn x kb``
is the tensorized intrinsic, whose output the reduction's zeros initialise before the reduce
loops (no branch inside them).  The requantization and any fused epilogue (dequantize, batch
norm, residual add, ReLU, quantize) run in the output loop, vectorized along the NCHW row
(contiguous stores and residual reads; along the channels, each lane would be a scattered
store: 2.8 -> 2.3 ms on ResNet-50's 64 -> 256 1x1 conv with its residual epilogue, one thread).
The packed data is a copy at the root.  The QDQ ResNet-50 (``benchmarks/quantized.py``) runs
as fast as onnxruntime's int8 session on an AVX2 host.
"""

from __future__ import annotations

import numpy as np

import te
from topi import tag
from topi.nn.conv2d import get_pad_tuple, out_size
from topi.nn.qnn import qrange
from topi.utils import get_const_tuple
from topi.x86.int8_dot import dot_intrin, operand_dtypes, reduce_block, vector_lanes

CONV_INT8 = "conv2d_NCHWc_int8"
IC_BLOCKS = (64, 32, 16, 8, 4, 2)


def blocks(oc: int, ic: int, mode: str, target) -> tuple:
    """``(ic_bn, oc_bn, ow_bn)`` for a conv of ``ic`` -> ``oc`` channels: ``oc_bn`` one vector of
    int32, ``ow_bn`` columns (up to 8, one vector of the NCHW output's row in the requantization
    loop) as the vector registers allow beside the weights, the broadcast and the temporaries,
    ``ic_bn`` the largest block in ``IC_BLOCKS`` dividing ``ic`` rounded up to ``kb``."""
    vl, kb = vector_lanes(mode, target), reduce_block(mode)
    icp = -(-ic // kb) * kb
    ic_bn = next(b for b in IC_BLOCKS if b % kb == 0 and icp % b == 0)
    spare = target.vector_registers - 2 - (2 if mode == "u8s8" else 0)
    return ic_bn, vl, max(1, min(8, spare))


def pack_kernel(w: np.ndarray, mode: str, ic_bn: int, oc_bn: int) -> np.ndarray:
    """Centered OIHW weights (ints) -> ``[OC/oc_bn, IC/ic_bn, KH, KW, ic_bn/kb, oc_bn, kb]`` of the
    mode's kernel dtype, the channels padded with zeros to whole blocks."""
    kb = reduce_block(mode)
    oc, ic, kh, kw = w.shape
    ocp, icp = -(-oc // oc_bn) * oc_bn, -(-ic // ic_bn) * ic_bn
    full = np.zeros((ocp, icp, kh, kw), "int64")
    full[:oc, :ic] = w
    r = full.reshape(ocp // oc_bn, oc_bn, icp // ic_bn, ic_bn // kb, kb, kh, kw)
    return np.ascontiguousarray(r.transpose(0, 2, 5, 6, 3, 1, 4)).astype(operand_dtypes(mode)[1])


def unpack_kernel(packed: np.ndarray, ic: int, oc: int) -> np.ndarray:
    """The centered OIHW weights (int64) of a :func:`pack_kernel` result."""
    occ, icc, kh, kw, icbs, oc_bn, kb = packed.shape
    full = packed.astype("int64").transpose(0, 5, 1, 4, 6, 2, 3).reshape(occ * oc_bn, icc * icbs * kb, kh, kw)
    return full[:oc, :ic]


def conv2d_int8(data: te.Tensor, kernel: te.Tensor, offset: te.Tensor, multiplier: te.Tensor, oc: int,
                strides, padding, dilation, x_zp: int, y_zp: int, mode: str, dtype: str = "uint8",
                lo: int | None = None, ow_bn: int = 4) -> te.Tensor:
    """The requantized int8 conv of uint8 NCHW ``data`` by the packed ``kernel``
    (:func:`pack_kernel`); ``offset`` (int32) and ``multiplier`` (float32) per padded output
    channel; ``oc`` the real output channels; ``lo`` a lower clamp (a fused ReLU: ``y_zp``)."""
    n, ic, h, w = get_const_tuple(data.shape)
    occ, icc, kh, kw, icbs, oc_bn, kb = get_const_tuple(kernel.shape)
    if kb != reduce_block(mode) or data.dtype != "uint8":
        raise ValueError(f"conv2d_int8: mode {mode} needs uint8 data and a kernel packed by {reduce_block(mode)}, "
                         f"got {data.dtype} data and kernel {get_const_tuple(kernel.shape)}")
    ic_bn = icbs * kb
    if oc < oc_bn:
        raise ValueError(f"conv2d_int8: {oc} output channels are fewer than one block of {oc_bn} (the register "
                         f"tile would cover channels no one reads); keep such a conv in float32")
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

    def packed(b, cc, y, x, ci):
        c, iy, ix = cc * ic_bn + ci, y * ph - top, x * pw - left
        inside = te.all(c < ic, iy >= 0, iy < h, ix >= 0, ix < w)
        v = data[b, te.min(c, ic - 1), te.max(te.min(iy, h - 1), 0), te.max(te.min(ix, w - 1), 0)]
        if mode == "i16":
            v = v.astype("int16") - te.const(x_zp, "int16")
        return te.if_then_else(inside, v, pad_value)

    data_q = te.compute((n, icc, rows, cols, ic_bn), packed, name="data_q",
                        tag=tag.INJECTIVE)
    rc = te.reduce_axis((0, icc), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    rb = te.reduce_axis((0, icbs), name="rb")
    rk = te.reduce_axis((0, kb), name="rk")

    def body(b, o, y, x, ob):
        d = data_q[b, rc, y * sh + ry * dh, x * sw + rx * dw, rb * kb + rk].astype("int32")
        return te.sum(d * kernel[o, rc, ry, rx, rb, ob, rk].astype("int32"), axis=[rc, ry, rx, rb, rk])

    conv = te.compute((n, occ, oh, ow, oc_bn), body, name="conv_int8", tag=CONV_INT8,
                      attrs={"mode": mode, "ow_bn": int(ow_bn)})
    qlo, qhi = qrange(dtype)
    lo = qlo if lo is None else max(qlo, int(lo))

    def requant(b, c, y, x):
        acc = conv[b, c // oc_bn, y, x, c % oc_bn] + offset[c]
        q = te.round(acc.astype("float32") * multiplier[c]).astype("int32") + te.const(y_zp, "int32")
        return te.min(te.max(q, te.const(lo, "int32")), te.const(qhi, "int32")).astype(dtype)

    return te.compute((n, oc, oh, ow), requant, name="requantize", tag=tag.INJECTIVE)


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
    mode, ow_bn = conv_op.attrs["mode"], conv_op.attrs["ow_bn"]
    kernel = conv_op.input_tensors[1]
    data_q = conv_op.input_tensors[0]
    oc_bn = get_const_tuple(kernel.shape)[5]
    # the packed data: a copy at the root, one (n, block, row) per task
    dq = s[data_q.op]
    dq.parallel(dq.fuse(*dq.op.axis[:3]))
    # the output: rows parallel, column tiles of ow_bn, channels split by oc_bn
    n, c, oh, ow = s[out].op.axis
    co, ci = s[out].split(c, factor=oc_bn)
    wo, wi = s[out].split(ow, factor=ow_bn)
    s[out].reorder(n, co, oh, wo, ci, wi)
    s[out].parallel(s[out].fuse(n, co, oh))
    s[out].vectorize(wi)  # NCHW rows: contiguous stores and residual reads
    conv = conv_op.output(0)
    if conv_op is out:
        raise ValueError("schedule_conv2d_int8: the int8 conv needs its requantization after it")
    cl = conv
    s[cl].compute_at(s[out], wo)
    _, _, _, x, ob = s[cl].op.axis
    rc, ry, rx, rb, rk = s[cl].op.reduce_axis
    s[cl].reorder(rc, ry, rx, rb, x, ob, rk)
    s[cl].unroll(x)
    s[cl].tensorize(ob, dot_intrin(mode, oc_bn, target))
    return s


__all__ = ["CONV_INT8", "blocks", "conv2d_int8", "pack_kernel", "schedule_conv2d_int8", "unpack_kernel"]
