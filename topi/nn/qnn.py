"""Quantized operators: quantize, dequantize, requantize, and integer conv2d / dense.

The arithmetic is ONNX's (and onnxruntime's) exactly:

* ``quantize``: ``saturate(round_half_even(x / scale) + zero_point)``, the division an IEEE
  float32 one (``div_ieee``: never a multiplication by a reciprocal);
* ``dequantize``: ``float32(x - zero_point) * scale``, the product rounded on its own
  (``mul_ieee``: an add after it is never contracted into a fused multiply-add);
* ``requantize`` (onnxruntime's QLinearConv/QLinearMatMul output stage):
  ``saturate(round_half_even(float32(acc) * multiplier) + zero_point)``;
* ``qnn_conv2d`` / ``qnn_dense``: the int32 sums of ``(x - x_zp) * (w - w_zp)``, exact
  (ONNX ConvInteger / MatMulInteger; the padding of a convolution reads ``x_zp``).

A scale or zero point is a tensor of shape ``()`` or ``(1,)`` (per tensor), ``(C,)`` for
the ``C`` entries of ``axis`` (per channel), with ``block_size`` ``x``'s shape with ``axis``
divided into blocks (ONNX blocked quantization), or of ``x``'s rank, each extent 1 or
``x``'s (broadcast: a per-channel parameter of data in a blocked layout, ``(1, C/b, 1, 1, b)``
for ``NCHW[b]c``, ``graph.passes.alter_op_layout``; ``axis`` is then unused).

A ``dequantize`` of a ``quantize`` or ``requantize`` computed in the same kernel (a fused
epilogue: conv, requantize, dequantize, batch norm, quantize, dequantize, residual add, ...)
with the same constant zero point ``z`` skips the integers: ``clamp(round(v), lo - z, hi - z)
* scale`` in float32 equals ``float32(saturate(round(v) + z) - z) * scale`` (the rounded value
is an integer; past +-2**24 both saturate), without the float -> int -> float conversions
(:func:`integer_form`).
"""

from __future__ import annotations

import weakref

import numpy as np

import te
from te import expr as E
from topi import tag
from topi.nn.conv2d import get_pad_tuple, out_size
from topi.utils import get_const_tuple

QUANTIZED_DTYPES = ("uint8", "int8", "uint16", "int16")


def qrange(dtype: str) -> tuple:
    """(min, max) of an integer ``dtype``."""
    info = np.iinfo(dtype)
    return int(info.min), int(info.max)


def mul_ieee(a: E.Expr, b: E.Expr) -> E.Expr:
    """``a * b`` rounded to float32 on its own: LLVM never contracts it with an add that follows
    into a fused multiply-add (a dequantized value is rounded before the residual or bias add,
    as ONNX computes)."""
    a, b = E.as_expr(a), E.as_expr(b)
    return E.Call("mul_ieee", (a, b), a.dtype)


def div_ieee(a: E.Expr, b: E.Expr) -> E.Expr:
    """``a / b`` correctly rounded (LLVM ``fdiv`` without fast-math: quantization rounds the
    exact quotient, as onnxruntime and onnx's reference do)."""
    a, b = E.as_expr(a), E.as_expr(b)
    return E.Call("div_ieee", (a, b), a.dtype)


def param_at(p: te.Tensor, idx: tuple, axis: int, block_size: int = 0) -> E.Expr:
    """The entry of scale or zero point ``p`` that applies at index ``idx`` of the data."""
    shape = get_const_tuple(p.shape)
    if len(shape) == 0:
        return p()
    if block_size:
        return p(*[i // block_size if k == axis else i for k, i in enumerate(idx)])
    if shape == (1,):
        return p[0]
    if len(shape) == len(idx) > 1:  # broadcast against the data
        return p(*[0 if d == 1 else i for d, i in zip(shape, idx)])
    return p[idx[axis]]


def _check_param(op: str, name: str, p: te.Tensor, x: te.Tensor, axis: int, block_size: int) -> None:
    shape, xshape = get_const_tuple(p.shape), get_const_tuple(x.shape)
    if len(shape) == 0 or shape == (1,):
        return
    if block_size:
        want = tuple(-(-d // block_size) if k == axis else d for k, d in enumerate(xshape))
        if shape != want:
            raise ValueError(f"{op}: {name} has shape {shape}; blocked (block_size={block_size}) along axis "
                             f"{axis} of {xshape} it must be {want}")
        return
    if len(shape) == len(xshape) > 1 and all(d in (1, e) for d, e in zip(shape, xshape)):
        return  # broadcast against the data
    if len(shape) != 1 or shape[0] != xshape[axis]:
        raise ValueError(f"{op}: {name} has shape {shape}; per channel it must be ({xshape[axis]},), the "
                         f"extent of axis {axis} of {xshape}, or broadcast against the data")


# quantized stage (its ComputeOp) -> (centered(*idx): the float32 value ``q - z`` of its entry, ``z``)
_INTEGER_FORMS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def constant_value(t: te.Tensor | None):
    """The number of a one-element tensor computed as a constant (a fused kernel's inlined scalar),
    else None."""
    op = getattr(t, "op", None)
    if not isinstance(op, te.ComputeOp) or op.reduce_axis or len(op.body) != 1 or \
            int(np.prod(get_const_tuple(t.shape) or (1,))) != 1:
        return None
    b = op.body[0]
    return b.value if isinstance(b, (E.IntImm, E.FloatImm)) else None


def register_integer_form(t: te.Tensor, centered, zero_point) -> te.Tensor:
    """Record that the entries of the quantized ``t`` are ``centered(*idx) + zero_point``, with
    ``centered`` a float32 expression of integer values already saturated to ``t``'s range minus
    ``zero_point`` (a number); :func:`dequantize` of ``t`` then reads ``centered``.  Returns ``t``."""
    if zero_point is not None:
        _INTEGER_FORMS[t.op] = (centered, zero_point)
    return t


def integer_form(t: te.Tensor, zero_point) -> object:
    """``centered`` of :func:`register_integer_form` where ``t`` was registered with the zero point
    ``zero_point`` (a number), else None."""
    form = _INTEGER_FORMS.get(t.op)
    return form[0] if form is not None and zero_point is not None and form[1] == zero_point else None


def clamp_centered(r: E.Expr, z, dtype: str, lo: int | None = None) -> E.Expr:
    """``clamp(r, lo - z, hi - z)`` in float32 for the rounded ``r`` and the number ``z``:
    ``saturate(r + z) - z`` (``lo``: a lower bound above the dtype's, a fused ReLU's)."""
    qlo, hi = qrange(dtype)
    lo = qlo if lo is None else max(qlo, lo)
    return te.min(te.max(r, te.const(float(lo - z), "float32")), te.const(float(hi - z), "float32"))


def _saturate_round(v: E.Expr, z: E.Expr, dtype: str) -> E.Expr:
    """``saturate(round(v) + z)``: rounded (llvm.nearbyint, half to even) before the zero point is
    added, as ONNX does (``round(2.5) + 1 = 3``, where ``round(2.5 + 1)`` would be 4)."""
    lo, hi = qrange(dtype)
    r = te.round(v) + z
    return te.min(te.max(r, te.const(float(lo), v.dtype)), te.const(float(hi), v.dtype)).astype(dtype)


def quantize(x: te.Tensor, scale: te.Tensor, zero_point: te.Tensor, axis: int = 1, dtype: str = "uint8",
             block_size: int = 0) -> te.Tensor:
    """``saturate(round(x / scale) + zero_point)`` as ``dtype`` (ONNX QuantizeLinear)."""
    if dtype not in QUANTIZED_DTYPES:
        raise ValueError(f"quantize: dtype {dtype!r} is not one of {QUANTIZED_DTYPES}")
    axis = axis % max(len(x.shape), 1)
    for name, p in (("scale", scale), ("zero_point", zero_point)):
        _check_param("quantize", name, p, x, axis, block_size)

    def body(*idx):
        s = param_at(scale, idx, axis, block_size).astype("float32")
        z = param_at(zero_point, idx, axis, block_size).astype("float32")
        return _saturate_round(div_ieee(x(*idx).astype("float32"), s), z, dtype)

    def centered(*idx):
        s = param_at(scale, idx, axis, block_size).astype("float32")
        return clamp_centered(te.round(div_ieee(x(*idx).astype("float32"), s)), zv, dtype)

    zv = constant_value(zero_point)
    out = te.compute(x.shape, body, name="quantize", tag=tag.BROADCAST)
    return register_integer_form(out, centered, zv)


def dequantize(x: te.Tensor, scale: te.Tensor, zero_point: te.Tensor | None, axis: int = 1,
               block_size: int = 0, dtype: str = "float32") -> te.Tensor:
    """``(x - zero_point) * scale`` (ONNX DequantizeLinear); the difference is exact in int32."""
    axis = axis % max(len(x.shape), 1)
    _check_param("dequantize", "scale", scale, x, axis, block_size)
    if zero_point is not None:
        _check_param("dequantize", "zero_point", zero_point, x, axis, block_size)

    form = integer_form(x, 0 if zero_point is None else constant_value(zero_point))

    def body(*idx):
        if form is not None:  # x computed in this kernel by a quantize: its float value, no integers
            v = form(*idx)
        else:
            v = x(*idx).astype("int32")
            if zero_point is not None:
                v = v - param_at(zero_point, idx, axis, block_size).astype("int32")
            v = v.astype("float32")
        r = mul_ieee(v, param_at(scale, idx, axis, block_size).astype("float32"))
        return r if dtype == "float32" else r.astype(dtype)

    return te.compute(x.shape, body, name="dequantize", tag=tag.BROADCAST)


def requantize(acc: te.Tensor, multiplier: te.Tensor, zero_point: te.Tensor, axis: int = 1,
               dtype: str = "uint8") -> te.Tensor:
    """``saturate(round(float32(acc) * multiplier) + zero_point)``: an int32 accumulator to
    ``dtype`` (onnxruntime's QLinearConv output stage; ``multiplier = x_scale * w_scale / y_scale``)."""
    axis = axis % max(len(acc.shape), 1)
    _check_param("requantize", "multiplier", multiplier, acc, axis, 0)

    def scaled(idx):
        return acc(*idx).astype("float32") * param_at(multiplier, idx, axis).astype("float32")

    def body(*idx):
        lo, hi = qrange(dtype)
        q = te.round(scaled(idx)).astype("int32") + param_at(zero_point, idx, axis).astype("int32")
        return te.min(te.max(q, te.const(lo, "int32")), te.const(hi, "int32")).astype(dtype)

    zv = constant_value(zero_point)
    out = te.compute(acc.shape, body, name="requantize", tag=tag.BROADCAST)
    return register_integer_form(out, lambda *idx: clamp_centered(te.round(scaled(idx)), zv, dtype), zv)


def _centered(t: te.Tensor, zp: te.Tensor | None, axis: int, name: str) -> te.Tensor:
    """``int32(t) - int32(zp)`` (zp per tensor, or per entry of ``axis``)."""
    def body(*idx):
        v = t(*idx).astype("int32")
        return v if zp is None else v - param_at(zp, idx, axis).astype("int32")

    return te.compute(t.shape, body, name=name, tag=tag.BROADCAST)


def qnn_conv2d(data: te.Tensor, kernel: te.Tensor, x_zp: te.Tensor | None, w_zp: te.Tensor | None,
               strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups: int = 1) -> te.Tensor:
    """The int32 NCHW convolution of ``data - x_zp`` by ``kernel - w_zp`` (OIHW; ``w_zp`` per
    tensor or per output channel), padded with ``x_zp`` (ONNX ConvInteger)."""
    n, c, h, w = get_const_tuple(data.shape)
    oc, icg, kh, kw = get_const_tuple(kernel.shape)
    if c != icg * groups or oc % groups:
        raise ValueError(f"qnn_conv2d: data {(n, c, h, w)} and kernel {(oc, icg, kh, kw)} do not fit groups={groups}")
    sh, sw = strides
    dh, dw = dilation
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw), "qnn_conv2d")
    oh = out_size("qnn_conv2d", h, kh, sh, dh, top, bottom, data.shape, kernel.shape)
    ow = out_size("qnn_conv2d", w, kw, sw, dw, left, right, data.shape, kernel.shape)
    x = _centered(data, x_zp, 1, "data_centered")
    wc = _centered(kernel, w_zp, 0, "kernel_centered")
    rc = te.reduce_axis((0, icg), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    ocg = oc // groups

    def body(b, f, y, xx):
        iy, ix = y * sh + ry * dh - top, xx * sw + rx * dw - left
        inside = te.all(iy >= 0, iy < h, ix >= 0, ix < w)
        c_in = (f // ocg) * icg + rc
        v = te.if_then_else(inside, x[b, c_in, te.max(te.min(iy, h - 1), 0), te.max(te.min(ix, w - 1), 0)], 0)
        return te.sum(v * wc[f, rc, ry, rx], axis=[rc, ry, rx])

    return te.compute((n, oc, oh, ow), body, name="qnn_conv2d", tag=tag.CONV2D_NCHW)


def qnn_dense(data: te.Tensor, weight: te.Tensor, x_zp: te.Tensor | None, w_zp: te.Tensor | None) -> te.Tensor:
    """``(data - x_zp) @ (weight - w_zp).T`` in int32: data ``[M, K]``, weight ``[N, K]``; ``x_zp``
    per tensor or per row, ``w_zp`` per tensor or per output unit (ONNX MatMulInteger)."""
    m, k = get_const_tuple(data.shape)
    nw, kw = get_const_tuple(weight.shape)
    if k != kw:
        raise ValueError(f"qnn_dense: data [{m}, {k}] and weight [{nw}, {kw}] disagree on K")
    x = _centered(data, x_zp, 0, "data_centered")
    w = _centered(weight, w_zp, 0, "weight_centered")
    r = te.reduce_axis((0, k), name="k")
    return te.compute((m, nw), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r), name="qnn_dense", tag=tag.DENSE)
