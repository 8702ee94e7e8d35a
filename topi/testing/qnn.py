"""numpy references of the quantized operators (:mod:`topi.nn.qnn`), with ONNX's rounding:
half to even (``np.rint``) and saturation to the output type; float32 arithmetic where
onnxruntime computes in float32, exact integers elsewhere."""

from __future__ import annotations

import numpy as np

from topi.testing.conv import group_conv2d_nchw_python


def _param(p, x_shape: tuple, axis: int, block_size: int = 0) -> np.ndarray:
    """A scale or zero point shaped to broadcast against data of ``x_shape``."""
    p = np.asarray(p)
    if p.ndim == 0 or p.shape == (1,):
        return p.reshape(())
    if block_size:
        return np.repeat(p, block_size, axis=axis)[tuple(slice(0, d) for d in x_shape)]
    if p.ndim == len(x_shape) > 1:  # broadcast against the data (a blocked layout's per channel)
        return p
    shape = [1] * len(x_shape)
    shape[axis] = -1
    return p.reshape(shape)


def saturate(v: np.ndarray, dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def quantize_python(x, scale, zero_point, axis: int = 1, dtype: str = "uint8", block_size: int = 0):
    """ONNX QuantizeLinear: ``saturate(rint(x / scale) + zero_point)``, the quotient in float32."""
    x = np.asarray(x, "float32")
    axis = axis % max(x.ndim, 1)
    s = _param(scale, x.shape, axis, block_size).astype("float32")
    z = _param(zero_point, x.shape, axis, block_size).astype("float32")
    with np.errstate(divide="ignore", invalid="ignore"):
        return saturate(np.rint(x / s) + z, dtype)


def dequantize_python(x, scale, zero_point, axis: int = 1, block_size: int = 0):
    """ONNX DequantizeLinear: ``float32(x - zero_point) * scale``."""
    x = np.asarray(x)
    axis = axis % max(x.ndim, 1)
    z = 0 if zero_point is None else _param(zero_point, x.shape, axis, block_size).astype("int64")
    s = _param(scale, x.shape, axis, block_size).astype("float32")
    return (x.astype("int64") - z).astype("float32") * s


def requantize_python(acc, multiplier, zero_point, axis: int = 1, dtype: str = "uint8"):
    """onnxruntime's output stage: ``saturate(rint(float32(acc) * multiplier) + zero_point)``."""
    acc = np.asarray(acc)
    axis = axis % max(acc.ndim, 1)
    m = _param(multiplier, acc.shape, axis).astype("float32")
    z = _param(zero_point, acc.shape, axis).astype("int64")
    return saturate(np.rint(acc.astype("float32") * m).astype("int64") + z, dtype)


def qnn_conv2d_python(x, w, x_zp, w_zp, strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups: int = 1):
    """ONNX ConvInteger: the int32 conv of ``x - x_zp`` by ``w - w_zp`` (padding reads ``x_zp``)."""
    xc = np.asarray(x).astype("int64") - _param(x_zp, np.shape(x), 1).astype("int64")
    wc = np.asarray(w).astype("int64") - _param(w_zp, np.shape(w), 0).astype("int64")
    out = group_conv2d_nchw_python(xc.astype("float64"), wc.astype("float64"), strides, padding, groups, dilation)
    return np.rint(out).astype("int32")


def qnn_dense_python(x, w, x_zp, w_zp):
    """ONNX MatMulInteger as dense: ``(x - x_zp) @ (w - w_zp).T`` in int32 (w ``[N, K]``)."""
    xc = np.asarray(x).astype("int64") - _param(x_zp, np.shape(x), 0).astype("int64")
    wc = np.asarray(w).astype("int64") - _param(w_zp, np.shape(w), 0).astype("int64")
    return (xc @ wc.T).astype("int32")
