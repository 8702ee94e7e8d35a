"""Converters of the quantization operators: QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.

Each becomes the graph's quantization operators (:mod:`graph.ops.quantize`):
``quantize`` / ``dequantize`` with ONNX's rounding, and for the QOperator forms the
exact integer product (``qnn_conv2d`` / ``qnn_dense``, int32) followed by onnxruntime's
output stage (``requantize`` with ``multiplier = x_scale * w_scale / y_scale`` in float32).
A QDQ model's ``DequantizeLinear -> Conv -> QuantizeLinear`` is imported as written (dequantize,
float conv, quantize); the pass ``lower_qdq_conv`` (:mod:`graph.passes.lower_int8`) then makes it one int8 kernel.

Bad quantization parameters are refused here, naming the node: a scale that is zero or
not finite, a zero point outside its type's range (or not 0 for int32 data), a
per-channel parameter whose length is not the axis' extent, an axis out of range.
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Value
from graph.onnx.common import kernel_shape, norm_axis, spatial_ints, window_pads
from graph.onnx.context import Context, NeedsInputValue, OnnxNode, onnx_dtype
from graph.onnx.table import converter
from topi.nn.qnn import QUANTIZED_DTYPES

DEQUANTIZED_DTYPES = QUANTIZED_DTYPES + ("int32",)


def _known(ctx: Context, node: OnnxNode, k: int, what: str) -> np.ndarray | None:
    """Input ``k``'s value when it is known at import time (None when it is computed at run time)."""
    if not node.has_input(k):
        return None
    try:
        return np.asarray(ctx.value(node, k, what))
    except NeedsInputValue:
        return None


def check_scale(node: OnnxNode, scale: np.ndarray | None, what: str) -> None:
    if scale is None:
        return
    s = np.asarray(scale, "float64")
    if s.size and (not np.all(np.isfinite(s)) or np.any(s == 0)):
        bad = s[~np.isfinite(s) | (s == 0)].ravel()[:4]
        raise node.error(f"{what} holds {bad.tolist()}: a quantization scale must be finite and non-zero")


def check_zero_point(node: OnnxNode, zp: np.ndarray | None, dtype: str, what: str) -> None:
    if zp is None:
        return
    z = np.asarray(zp)
    if dtype == "int32":
        if np.any(z != 0):
            raise node.error(f"{what} holds {z.ravel()[:4].tolist()}: int32 data dequantizes with zero point 0")
        return
    info = np.iinfo(dtype)
    if z.size and (z.min() < info.min or z.max() > info.max):
        raise node.error(f"{what} holds {z.ravel()[:4].tolist()}, outside the range [{info.min}, {info.max}] "
                         f"of {dtype}")


def _check_layout(node: OnnxNode, p: Value | None, x: Value, axis: int, block: int, what: str) -> None:
    """A parameter is per tensor (``()`` or ``(1,)``), per entry of ``axis``, or blocked."""
    if p is None or p.shape in ((), (1,)):
        return
    if block:
        want = tuple(-(-d // block) if k == axis else d for k, d in enumerate(x.shape))
        if p.shape != want:
            raise node.error(f"{what} has shape {p.shape}; blocked by {block} along axis {axis} of input "
                             f"{x.shape} it must be {want}")
        return
    if len(p.shape) != 1 or p.shape[0] != x.shape[axis]:
        raise node.error(f"{what} has shape {p.shape}; per channel along axis {axis} of input {x.shape} it "
                         f"must be ({x.shape[axis]},)")


def _axis(node: OnnxNode, x: Value, params: tuple, default: int = 1) -> int:
    """The quantization axis, checked only where a parameter is per axis or blocked (ONNX ignores
    ``axis`` for per-tensor parameters, and its default 1 is out of range for 1-D data)."""
    rank = max(len(x.shape), 1)
    axis = int(node.attr("axis", default))
    if all(p is None or p.shape in ((), (1,)) for p in params):
        return axis % rank if -rank <= axis < rank else 0
    if not -rank <= axis < rank:
        raise node.error(f"quantization axis={axis} is not supported for a rank-{len(x.shape)} input "
                         f"(an axis in [{-rank}, {rank - 1}])")
    return axis % rank


def _block_size(node: OnnxNode) -> int:
    block = int(node.attr("block_size", 0))
    if block < 0:
        raise node.error(f"block_size={block} must be non-negative")
    return block


def _zero(ctx: Context, dtype: str) -> Value:
    return ctx.scalar(0, dtype)


def _float_param(ctx: Context, v: Value) -> Value:
    return ctx.cast(v, "float32")


@converter("QuantizeLinear", since=10, until=28)
def convert_quantize_linear(ctx: Context, node: OnnxNode) -> list:
    """``saturate(round(x / y_scale) + y_zero_point)``, per tensor, per axis or blocked."""
    x, scale = node.input(0, "x"), node.input(1, "y_scale")
    zp = node.inputs[2] if node.has_input(2) else None
    if zp is not None:
        dtype = zp.dtype
    elif node.attr("output_dtype"):
        dtype = onnx_dtype(node.attr("output_dtype")) or str(node.attr("output_dtype"))
    else:
        dtype = "uint8"
    if dtype not in QUANTIZED_DTYPES:
        raise node.error(f"quantizing to {dtype} is not supported; supported: {', '.join(QUANTIZED_DTYPES)}")
    axis, block = _axis(node, x, (scale, zp)), _block_size(node)
    for p, what in ((scale, "y_scale"), (zp, "y_zero_point")):
        _check_layout(node, p, x, axis, block, what)
    check_scale(node, _known(ctx, node, 1, "y_scale"), "y_scale")
    check_zero_point(node, _known(ctx, node, 2, "y_zero_point"), dtype, "y_zero_point")
    z = zp if zp is not None else _zero(ctx, dtype)
    attrs = {"axis": axis, "block_size": block, "dtype": dtype}
    return [ctx.op("quantize", [ctx.cast(x, "float32"), _float_param(ctx, scale), z], attrs)]


@converter("DequantizeLinear", since=10, until=28)
def convert_dequantize_linear(ctx: Context, node: OnnxNode) -> list:
    """``(x - x_zero_point) * x_scale`` in the scale's type (or ``output_dtype``)."""
    x, scale = node.input(0, "x"), node.input(1, "x_scale")
    if x.dtype not in DEQUANTIZED_DTYPES:
        raise node.error(f"dequantizing {x.dtype} is not supported; supported: {', '.join(DEQUANTIZED_DTYPES)}")
    zp = node.inputs[2] if node.has_input(2) else None
    if zp is not None and zp.dtype != x.dtype:
        check_zero_point(node, _known(ctx, node, 2, "x_zero_point"), x.dtype, "x_zero_point")
    axis, block = _axis(node, x, (scale, zp)), _block_size(node)
    for p, what in ((scale, "x_scale"), (zp, "x_zero_point")):
        _check_layout(node, p, x, axis, block, what)
    check_scale(node, _known(ctx, node, 1, "x_scale"), "x_scale")
    check_zero_point(node, _known(ctx, node, 2, "x_zero_point"), x.dtype, "x_zero_point")
    z = zp if zp is not None else _zero(ctx, x.dtype)
    y = ctx.op("dequantize", [x, _float_param(ctx, scale), z], {"axis": axis, "block_size": block})
    out = onnx_dtype(node.attr("output_dtype")) if node.attr("output_dtype") else scale.dtype
    return [ctx.cast(y, out)]


@converter("DynamicQuantizeLinear", since=11)
def convert_dynamic_quantize_linear(ctx: Context, node: OnnxNode) -> list:
    """uint8 ``y, y_scale, y_zero_point`` of ``x`` over the range ``[min(0, min x), max(0, max x)]``."""
    x = ctx.cast(node.input(0, "x"), "float32")
    lo = ctx.op("min", [x], {"axis": None, "keepdims": False})
    hi = ctx.op("max", [x], {"axis": None, "keepdims": False})
    scale = ctx.op("range_scale", [lo, hi])
    zp = ctx.op("range_zero_point", [lo, scale])
    return [ctx.op("quantize", [x, scale, zp], {"axis": 0, "block_size": 0, "dtype": "uint8"}), scale, zp]


# ------------------------------------------------------ integer products ---
def _int_input(node: OnnxNode, k: int, what: str) -> Value:
    v = node.input(k, what)
    if v.dtype not in QUANTIZED_DTYPES:
        raise node.error(f"input {what} is {v.dtype}; supported: {', '.join(QUANTIZED_DTYPES)}")
    return v


def _zero_point(ctx: Context, node: OnnxNode, k: int, x: Value, axis: int, what: str) -> Value:
    """Zero point input ``k`` of quantized input ``x`` (0 when absent), checked."""
    if not node.has_input(k):
        return _zero(ctx, x.dtype)
    zp = node.inputs[k]
    _check_layout(node, zp, x, axis, 0, what)
    check_zero_point(node, _known(ctx, node, k, what), x.dtype, what)
    return zp if zp.shape != (1,) else ctx.reshape(zp, ())


def _conv_attrs(node: OnnxNode, x: Value, w: Value) -> dict:
    if len(x.shape) != 4 or len(w.shape) != 4:
        raise node.error(f"only 2-D convolutions are supported, got x {x.shape} and w {w.shape}")
    kernel = kernel_shape(node, 2, w.shape)
    strides, dilations = spatial_ints(node, "strides", 2), spatial_ints(node, "dilations", 2)
    before, after = window_pads(node, x.shape[2:], kernel, strides, dilations)
    group = int(node.attr("group", 1))
    if group < 1 or x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise node.error(f"x {x.shape} and w {w.shape} do not fit group={group}")
    return {"strides": strides, "padding": (before[0], before[1], after[0], after[1]), "dilation": dilations,
            "groups": group}


@converter("ConvInteger", since=10)
def convert_conv_integer(ctx: Context, node: OnnxNode) -> list:
    """int32 convolution of ``x - x_zero_point`` by ``w - w_zero_point`` (per output channel)."""
    x, w = _int_input(node, 0, "x"), _int_input(node, 1, "w")
    attrs = _conv_attrs(node, x, w)
    xz = _zero_point(ctx, node, 2, x, 1, "x_zero_point")
    if xz.shape not in ((),):
        raise node.error(f"x_zero_point has shape {xz.shape}; it must be per tensor")
    wz = _zero_point(ctx, node, 3, w, 0, "w_zero_point")
    return [ctx.op("qnn_conv2d", [x, w, xz, wz], attrs)]


def _params(ctx: Context, node: OnnxNode, k: int, what: str) -> np.ndarray:
    s = np.asarray(ctx.value(node, k, what), "float32")
    check_scale(node, s, what)
    return s


def multiplier(x_scale, w_scale, y_scale) -> np.ndarray:
    """onnxruntime's requantization multiplier ``x_scale * w_scale / y_scale``, in float32."""
    x_scale, y_scale = np.float32(np.asarray(x_scale).reshape(-1)[0]), np.float32(np.asarray(y_scale).reshape(-1)[0])
    m = (x_scale * np.asarray(w_scale, "float32")) / y_scale
    return m.astype("float32").reshape(-1) if m.size > 1 else m.astype("float32").reshape(())


def _out_zero_point(ctx: Context, node: OnnxNode, k: int, what: str) -> Value:
    zp = node.input(k, what)
    if zp.dtype not in QUANTIZED_DTYPES or zp.shape not in ((), (1,)):
        raise node.error(f"{what} must be a per-tensor {'/'.join(QUANTIZED_DTYPES)} zero point, got "
                         f"{zp.dtype}{list(zp.shape)}")
    check_zero_point(node, _known(ctx, node, k, what), zp.dtype, what)
    return ctx.reshape(zp, ())


@converter("QLinearConv", since=10)
def convert_qlinear_conv(ctx: Context, node: OnnxNode) -> list:
    """``requantize(qnn_conv2d(x, w) + B)``: the exact int32 conv and onnxruntime's output stage."""
    x, w = _int_input(node, 0, "x"), _int_input(node, 3, "w")
    attrs = _conv_attrs(node, x, w)
    sx, sw, sy = _params(ctx, node, 1, "x_scale"), _params(ctx, node, 4, "w_scale"), _params(ctx, node, 6, "y_scale")
    if sx.size != 1 or sy.size != 1 or sw.size not in (1, w.shape[0]):
        raise node.error(f"x_scale and y_scale must be per tensor and w_scale per tensor or per output channel "
                         f"({w.shape[0]}); got sizes {sx.size}, {sy.size}, {sw.size}")
    xz = _zero_point(ctx, node, 2, x, 1, "x_zero_point")
    wz = _zero_point(ctx, node, 5, w, 0, "w_zero_point")
    yz = _out_zero_point(ctx, node, 7, "y_zero_point")
    acc = ctx.op("qnn_conv2d", [x, w, xz, wz], attrs)
    if node.has_input(8):
        bias = node.input(8, "B")
        if bias.dtype != "int32" or bias.shape != (w.shape[0],):
            raise node.error(f"B must be int32 [{w.shape[0]}], got {bias.dtype}{list(bias.shape)}")
        acc = ctx.op("add", [acc, ctx.reshape(bias, (w.shape[0], 1, 1))])
    m = ctx.const(multiplier(sx, sw, sy), "multiplier")
    return [ctx.op("requantize", [acc, m, yz], {"axis": 1, "dtype": yz.dtype})]


def _int_matmul(ctx: Context, node: OnnxNode, a: Value, b: Value, az: Value, bz: Value) -> Value:
    """The int32 ``(a - az) @ (b - bz)`` of ONNX MatMulInteger (numpy ``matmul`` shapes): ``qnn_dense``
    when ``b`` is 2-D, else an int32 ``batch_matmul`` of the centred operands."""
    from graph.onnx.nn import _matmul_nd

    if len(a.shape) < 2 or len(b.shape) < 2 or a.shape[-1] != b.shape[-2]:
        raise node.error(f"A {a.shape} and B {b.shape} must be matrices (or stacks) agreeing on the contracted axis")
    if az.shape not in ((),) and (len(a.shape) != 2 or az.shape != (a.shape[0],)):
        raise node.error(f"a_zero_point of shape {az.shape} must be per tensor (or per row of a 2-D A)")
    if bz.shape not in ((),) and bz.shape != (b.shape[-1],):
        raise node.error(f"b_zero_point of shape {bz.shape} must be per tensor or per column ({b.shape[-1]},)")
    if len(b.shape) == 2:
        lead = a.shape[:-1]
        a2 = ctx.reshape(a, (math.prod(lead), a.shape[-1]))
        y = ctx.op("qnn_dense", [a2, ctx.transpose(b, (1, 0)), az, bz])
        return ctx.reshape(y, lead + (b.shape[1],))
    ac = ctx.op("subtract", [ctx.cast(a, "int32"), ctx.cast(az, "int32")])
    bc = ctx.op("subtract", [ctx.cast(b, "int32"), ctx.cast(bz, "int32")])
    return _matmul_nd(ctx, node, ac, bc)


@converter("MatMulInteger", since=10)
def convert_matmul_integer(ctx: Context, node: OnnxNode) -> list:
    """int32 ``(A - a_zero_point) @ (B - b_zero_point)``."""
    a, b = _int_input(node, 0, "A"), _int_input(node, 1, "B")
    az = _zero_point(ctx, node, 2, a, 0, "a_zero_point") if len(a.shape) == 2 else _scalar_zp(ctx, node, 2, a)
    bz = _zero_point(ctx, node, 3, b, len(b.shape) - 1, "b_zero_point")
    return [_int_matmul(ctx, node, a, b, az, bz)]


def _scalar_zp(ctx: Context, node: OnnxNode, k: int, x: Value) -> Value:
    if not node.has_input(k):
        return _zero(ctx, x.dtype)
    zp = node.inputs[k]
    if zp.shape not in ((), (1,)):
        raise node.error(f"the zero point of input {k} must be per tensor for a {len(x.shape)}-D input, "
                         f"got shape {zp.shape}")
    check_zero_point(node, _known(ctx, node, k, "zero point"), x.dtype, "zero point")
    return ctx.reshape(zp, ())


@converter("QLinearMatMul", since=10)
def convert_qlinear_matmul(ctx: Context, node: OnnxNode) -> list:
    """``requantize(int32 (a - a_zp) @ (b - b_zp))`` with ``a_scale * b_scale / y_scale`` (b per column)."""
    a, b = _int_input(node, 0, "a"), _int_input(node, 3, "b")
    sa, sb, sy = _params(ctx, node, 1, "a_scale"), _params(ctx, node, 4, "b_scale"), _params(ctx, node, 6, "y_scale")
    if sa.size != 1 or sy.size != 1 or sb.size not in (1, b.shape[-1]):
        raise node.error(f"a_scale and y_scale must be per tensor and b_scale per tensor or per column "
                         f"({b.shape[-1]}); got sizes {sa.size}, {sy.size}, {sb.size}")
    az = _scalar_zp(ctx, node, 2, a)
    bz = _zero_point(ctx, node, 5, b, len(b.shape) - 1, "b_zero_point")
    yz = _out_zero_point(ctx, node, 7, "y_zero_point")
    acc = _int_matmul(ctx, node, a, b, az, bz)
    m = ctx.const(multiplier(sa, sb, sy), "multiplier")
    return [ctx.op("requantize", [acc, m, yz], {"axis": len(acc.shape) - 1, "dtype": yz.dtype})]


# ------------------------------------------- com.microsoft QOperator forms ---
# onnxruntime's quantize_static(quant_format=QOperator) writes these around QLinearConv.  Each runs
# as dequantize -> the float32 operator -> quantize (onnxruntime's kernels compute the same sums in
# fixed or float point and round once: a result may sit one quantization step away).
def _per_tensor_dequantized(ctx: Context, node: OnnxNode, k: int, what: str) -> Value:
    """Input ``k`` dequantized by the per-tensor scale ``k + 1`` and zero point ``k + 2``."""
    x = _int_input(node, k, what)
    s = node.input(k + 1, f"{what}_scale")
    if s.shape not in ((), (1,)):
        raise node.error(f"{what}_scale has shape {s.shape}; it must be per tensor")
    check_scale(node, _known(ctx, node, k + 1, f"{what}_scale"), f"{what}_scale")
    z = _scalar_zp(ctx, node, k + 2, x)
    return ctx.op("dequantize", [x, _float_param(ctx, ctx.reshape(s, ())), z], {"axis": 0, "block_size": 0})


def _per_tensor_quantized(ctx: Context, node: OnnxNode, y: Value, k: int, dtype: str) -> Value:
    """``y`` quantized by the per-tensor scale input ``k`` and zero point ``k + 1`` (of ``dtype`` when absent)."""
    s = node.input(k, "y_scale")
    if s.shape not in ((), (1,)):
        raise node.error(f"y_scale has shape {s.shape}; it must be per tensor")
    check_scale(node, _known(ctx, node, k, "y_scale"), "y_scale")
    if node.has_input(k + 1):
        z = _out_zero_point(ctx, node, k + 1, "y_zero_point")
        dtype = z.dtype
    else:
        z = _zero(ctx, dtype)
    return ctx.op("quantize", [y, _float_param(ctx, ctx.reshape(s, ())), z], {"axis": 0, "block_size": 0,
                                                                               "dtype": dtype})


def _ms_binary(op_type: str, op: str) -> None:
    def convert(ctx: Context, node: OnnxNode) -> list:
        a = _per_tensor_dequantized(ctx, node, 0, "A")
        b = _per_tensor_dequantized(ctx, node, 3, "B")
        return [_per_tensor_quantized(ctx, node, ctx.op(op, [a, b]), 6, node.input(0).dtype)]

    convert.__name__ = f"convert_{op_type.lower()}"
    convert.__doc__ = f"com.microsoft {op_type}: dequantize A and B, {op}, quantize (numpy broadcasting)."
    converter(f"com.microsoft.{op_type}")(convert)


_ms_binary("QLinearAdd", "add")
_ms_binary("QLinearMul", "multiply")


@converter("com.microsoft.QLinearGlobalAveragePool")
def convert_qlinear_global_average_pool(ctx: Context, node: OnnxNode) -> list:
    """Dequantize, the mean over the spatial axes (NCHW, or NHWC with ``channels_last``), quantize."""
    x = _per_tensor_dequantized(ctx, node, 0, "X")
    if len(x.shape) < 3:
        raise node.error(f"X {x.shape} has no spatial axes")
    axes = tuple(range(1, len(x.shape) - 1)) if node.attr("channels_last", 0) else tuple(range(2, len(x.shape)))
    y = ctx.op("mean", [x], {"axis": axes, "keepdims": True})
    return [_per_tensor_quantized(ctx, node, y, 3, node.input(0).dtype)]


@converter("com.microsoft.QGemm")
def convert_qgemm(ctx: Context, node: OnnxNode) -> list:
    """``alpha * (A' - a_zp) @ (B' - b_zp) + C`` (C int32, in the accumulator's scale), requantized
    by ``alpha * a_scale * b_scale / y_scale``, or float32 when ``y_scale`` is absent."""
    a, b = _int_input(node, 0, "A"), _int_input(node, 3, "B")
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise node.error(f"A {a.shape} and B {b.shape} must be 2-D")
    if node.attr("transA", 0):
        a = ctx.transpose(a, (1, 0))
    w = b if node.attr("transB", 0) else ctx.transpose(b, (1, 0))  # [N, K]
    if a.shape[1] != w.shape[1]:
        raise node.error(f"A' {a.shape} and B' (as [N, K]) {w.shape} disagree on K")
    alpha = float(node.attr("alpha", 1.0))
    sa, sb = _params(ctx, node, 1, "a_scale"), _params(ctx, node, 4, "b_scale")
    if sa.size != 1 or sb.size not in (1, w.shape[0]):
        raise node.error(f"a_scale must be per tensor and b_scale per tensor or per column ({w.shape[0]}); "
                         f"got sizes {sa.size}, {sb.size}")
    az = _scalar_zp(ctx, node, 2, a)
    bz = _zero_point(ctx, node, 5, w, 0, "b_zero_point")
    acc = ctx.op("qnn_dense", [a, w, az, bz])
    if node.has_input(6):
        c = node.input(6, "C")
        if c.dtype != "int32":
            raise node.error(f"C must be int32, got {c.dtype}")
        acc = ctx.op("add", [acc, c])
    if not node.has_input(7):
        scale = (np.float32(alpha) * sa.reshape(-1)[0] * sb).astype("float32").reshape(-1)
        deq = ctx.op("dequantize", [acc, ctx.const(scale if scale.size > 1 else scale.reshape(()), "scale"),
                                    _zero(ctx, "int32")], {"axis": 1, "block_size": 0})
        return [deq]
    sy = _params(ctx, node, 7, "y_scale")
    yz = _out_zero_point(ctx, node, 8, "y_zero_point") if node.has_input(8) else _zero(ctx, "uint8")
    m = ctx.const((np.float32(alpha) * multiplier(sa, sb, sy)).astype("float32"), "multiplier")
    return [ctx.op("requantize", [acc, m, yz], {"axis": 1, "dtype": yz.dtype})]
