"""Quantization graph operators (computes in :mod:`topi.nn.qnn`, numpy twins in :mod:`topi.testing.qnn`).

=====================  ==========================================================  ===========
op                     inputs -> output                                            pattern
=====================  ==========================================================  ===========
``quantize``           x float, scale, zero_point -> ``dtype`` (attrs axis,         broadcast
                       block_size, dtype)
``dequantize``         x int, scale, zero_point -> float32 (attrs axis, block_size) broadcast
``requantize``         acc int32, multiplier, zero_point -> ``dtype`` (attrs axis)  broadcast
``qnn_conv2d``         x, w OIHW, x_zp, w_zp -> int32 (conv2d's attrs)              anchor
``qnn_dense``          x [M, K], w [N, K], x_zp, w_zp -> int32                      anchor
``range_scale``        min, max (scalars) -> the uint8 scale of [min(0, min),       elemwise
                       max(0, max)] (DynamicQuantizeLinear)
``range_zero_point``   min, scale -> the uint8 zero point                           elemwise
``conv2d_int8``        x uint8 NCHW or NCHW[b]c, packed kernel, offset int32,      anchor
                       multiplier float32 -> ``dtype`` (a requantized conv, one
                       kernel; NCHW[oc_bn]c with attr ``out_block``)
``dense_int8``         x uint8 [M, K], packed weight, wsum int32, x_zp -> int32    anchor
=====================  ==========================================================  ===========

``qnn_dense`` runs the target's dense schedule on its int32 accumulator (x86: ``topi.x86.qnn``), with
a requantize fused after it; ``qnn_conv2d`` runs the generic schedule.  QDQ convolutions
(``DequantizeLinear -> Conv -> QuantizeLinear``) become ``conv2d_int8``
(:mod:`graph.passes.lower_int8`, :mod:`topi.x86.conv2d_int8`: the target's integer
dot-product instructions), and a ``qnn_dense`` with a constant weight ``dense_int8``
(:mod:`topi.x86.dense_int8`); other QDQ pairs run dequantized in float32.
"""

from __future__ import annotations

import numpy as np

import te
import topi
from codegen.target import create
from graph.ops.registry import BROADCAST, ELEMWISE, OUT_ELEMWISE_FUSABLE, default_schedule, register
from topi.nn import qnn
from topi.strategy import layout_helpers
from topi.testing import qnn as ref


def _same_shape(dtype_of):
    return lambda values, a: [(values[0].shape, dtype_of(values, a))]


def _conv_args(a: dict) -> tuple:
    return (tuple(a.get("strides", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))),
            tuple(a.get("dilation", (1, 1))), a.get("groups", 1))


def _conv_types(values, a):
    x, w = values[0], values[1]
    out = qnn.qnn_conv2d(te.placeholder(x.shape, x.dtype), te.placeholder(w.shape, w.dtype), None, None,
                         *_conv_args(a))
    return [(tuple(int(d) for d in out.shape), "int32")]


def _dense_types(values, a):
    x, w = values[0], values[1]
    if len(x.shape) != 2 or len(w.shape) != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"qnn_dense expects data [M, K] and weight [N, K], got {x.shape} and {w.shape}")
    return [((x.shape[0], w.shape[0]), "int32")]


register("quantize",
         lambda xs, a: [qnn.quantize(xs[0], xs[1], xs[2], a.get("axis", 1), a["dtype"], a.get("block_size", 0))],
         BROADCAST, default_schedule, _same_shape(lambda v, a: a["dtype"]),
         lambda xs, a: [ref.quantize_python(xs[0], xs[1], xs[2], a.get("axis", 1), a["dtype"],
                                            a.get("block_size", 0))],
         doc="saturate(round_half_even(x / scale) + zero_point); attrs axis, block_size, dtype")
register("dequantize",
         lambda xs, a: [qnn.dequantize(xs[0], xs[1], xs[2], a.get("axis", 1), a.get("block_size", 0))],
         BROADCAST, default_schedule, _same_shape(lambda v, a: "float32"),
         lambda xs, a: [ref.dequantize_python(xs[0], xs[1], xs[2], a.get("axis", 1), a.get("block_size", 0))],
         doc="float32(x - zero_point) * scale; attrs axis, block_size")
register("requantize",
         lambda xs, a: [qnn.requantize(xs[0], xs[1], xs[2], a.get("axis", 1), a["dtype"])],
         BROADCAST, default_schedule, _same_shape(lambda v, a: a["dtype"]),
         lambda xs, a: [ref.requantize_python(xs[0], xs[1], xs[2], a.get("axis", 1), a["dtype"])],
         doc="saturate(round_half_even(float32(acc) * multiplier) + zero_point); attrs axis, dtype")
register("qnn_conv2d",
         lambda xs, a: [qnn.qnn_conv2d(xs[0], xs[1], xs[2], xs[3], *_conv_args(a))],
         OUT_ELEMWISE_FUSABLE, default_schedule, _conv_types,
         lambda xs, a: [ref.qnn_conv2d_python(xs[0], xs[1], xs[2], xs[3], *_conv_args(a)[:2],
                                              _conv_args(a)[2], _conv_args(a)[3])],
         doc="int32 NCHW conv of (x - x_zp) by (w - w_zp), OIHW kernel; attrs strides, padding, dilation, groups")
register("qnn_dense", lambda xs, a: [qnn.qnn_dense(*xs)], OUT_ELEMWISE_FUSABLE, default_schedule,
         _dense_types,
         lambda xs, a: [ref.qnn_dense_python(*xs)],
         doc="int32 (x - x_zp) @ (w - w_zp).T, x [M, K], w [N, K]")


# ------------------------------------------------------------ int8 kernels ---
# Their layouts (packed kernel, packed weight) and instructions are the target's: the strategy of
# a target with integer kernels registers compute and schedule (x86: topi/x86/strategy.py), its
# layout helpers unpack for the numpy evaluation (``graph.passes.lower_int8`` makes these nodes).
def _nchw_shape(shape: tuple) -> tuple:
    """The NCHW shape of an NCHW or NCHW[b]c shape."""
    return tuple(shape) if len(shape) == 4 else (shape[0], shape[1] * shape[4], shape[2], shape[3])


def _conv_int8_types(values, a):
    x = _nchw_shape(values[0].shape)
    window = (3, 3) if len(values[1].shape) == 6 else tuple(values[1].shape[2:4])  # 6: a Winograd kernel
    out = qnn.qnn_conv2d(te.placeholder(x, values[0].dtype), te.placeholder(
        (a["channels"], x[1]) + window, "int8"), None, None, a["strides"], a["padding"], a["dilation"])
    n, c, h, w = (int(d) for d in out.shape)
    b = a.get("out_block", 0)
    return [((n, c // b, h, w, b) if b else (n, c, h, w), a["dtype"])]


def _conv_int8_evaluate(xs, a):
    """ONNX's arithmetic: the int32 conv of ``x - x_zp`` (padding reads ``x_zp``) by the centered
    weights plus the bias, then onnxruntime's requantization (NCHW[b]c in and out as the node's
    input and ``out_block`` are)."""
    x, kernel, offset, mult = xs
    if x.ndim == 5:
        x = x.transpose(0, 1, 4, 2, 3).reshape(_nchw_shape(x.shape))
    y = _conv_int8_nchw(x, kernel, offset, mult, a)
    b = a.get("out_block", 0)
    if b:
        n, c, h, w = y.shape
        y = np.ascontiguousarray(y.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))
    return [y]


def _conv_int8_nchw(x, kernel, offset, mult, a):
    oc = a["channels"]
    w = layout_helpers(create(None)).unpack_int8_conv_kernel(kernel, x.shape[1], oc)
    bias = offset[:oc].astype("int64")
    if a["mode"] != "i16":  # the offset holds -(x_zp - center) * sum(w): the kernel multiplies x - center
        center = 128 if kernel.ndim == 8 else 0  # grouped words (topi.x86.conv2d_int8.group) center the data
        bias = bias + (a["x_zp"] - center) * w.reshape(oc, -1).sum(1)
    acc = ref.qnn_conv2d_python(x, w, np.int64(a["x_zp"]), np.int64(0), a["strides"], a["padding"],
                                a["dilation"]).astype("int64") + bias.reshape(-1, 1, 1)
    y = ref.requantize_python(acc, mult[:oc], np.int64(a["y_zp"]), 1, a["dtype"])
    return y if a.get("lo") is None else np.maximum(y, a["lo"]).astype(a["dtype"])


register("conv2d_int8", None, OUT_ELEMWISE_FUSABLE, default_schedule, _conv_int8_types, _conv_int8_evaluate,
         doc="a requantized int8 conv on the target's integer dot-product instructions: uint8 NCHW or "
             "NCHW[b]c data, packed kernel, int32 offset and float32 multiplier per channel; attrs channels, "
             "strides, padding, dilation, x_zp, y_zp, mode, dtype, lo, ow_bn, oc_bn, out_block (NCHW[oc_bn]c out); "
             "a rank-6 kernel is a 3x3 conv's integer Winograd transform")


def _dense_int8_evaluate(xs, a):
    x, weight, _, zx = xs
    w = layout_helpers(create(None)).unpack_int8_dense_weight(weight, x.shape[1], a["units"])
    return [ref.qnn_dense_python(x, w, np.asarray(zx).reshape(()), np.int64(0))]


register("dense_int8", None, OUT_ELEMWISE_FUSABLE, default_schedule,
         lambda v, a: [((v[0].shape[0], a["units"]), "int32")], _dense_int8_evaluate,
         doc="qnn_dense with a packed constant weight on the target's integer dot-product instructions: "
             "uint8 x [M, K], weight, wsum int32, x_zp -> int32 [M, units]; attrs units, mode, mr")


# ------------------------------------------------- DynamicQuantizeLinear ---
def range_scale_compute(lo: te.Tensor, hi: te.Tensor) -> te.Tensor:
    """``(max(hi, 0) - min(lo, 0)) / 255``, or 1 for an all-zero range (onnxruntime's guard)."""
    def body():
        a, b = te.min(lo(), te.const(0.0, "float32")), te.max(hi(), te.const(0.0, "float32"))
        return te.if_then_else(b == a, te.const(1.0, "float32"), qnn.div_ieee(b - a, te.const(255.0, "float32")))

    return te.compute((), body, name="range_scale", tag=topi.tag.ELEMWISE)


def range_zero_point_compute(lo: te.Tensor, scale: te.Tensor) -> te.Tensor:
    """``saturate(round_half_even(0 - min(lo, 0) / scale))`` as uint8."""
    def body():
        z = te.const(0.0, "float32") - qnn.div_ieee(te.min(lo(), te.const(0.0, "float32")), scale())
        return te.round(te.min(te.max(z, te.const(0.0, "float32")), te.const(255.0, "float32"))).astype("uint8")

    return te.compute((), body, name="range_zero_point", tag=topi.tag.ELEMWISE)


def _np_range_scale(lo, hi):
    a, b = np.minimum(np.float32(lo), np.float32(0)), np.maximum(np.float32(hi), np.float32(0))
    return np.float32(1.0) if a == b else np.float32((b - a) / np.float32(255))


def _np_range_zero_point(lo, scale):
    z = np.float32(0) - np.minimum(np.float32(lo), np.float32(0)) / np.float32(scale)
    return np.uint8(np.rint(np.clip(z, 0, 255)))


register("range_scale", lambda xs, a: [range_scale_compute(*xs)], ELEMWISE, default_schedule,
         lambda v, a: [((), "float32")], lambda xs, a: [np.asarray(_np_range_scale(*xs), "float32")],
         doc="the uint8 scale of the range [min(0, lo), max(0, hi)] (DynamicQuantizeLinear)")
register("range_zero_point", lambda xs, a: [range_zero_point_compute(*xs)], ELEMWISE, default_schedule,
         lambda v, a: [((), "uint8")], lambda xs, a: [np.asarray(_np_range_zero_point(*xs), "uint8")],
         doc="the uint8 zero point of the range starting at min(0, lo) (DynamicQuantizeLinear)")
