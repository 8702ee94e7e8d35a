"""numpy references of the transformer operators (attention, layer/RMS norm, activations)."""

from __future__ import annotations

import math

import numpy as np


def layer_norm_python(x, gamma=None, beta=None, epsilon: float = 1e-5, axis: int = -1):
    x64 = np.moveaxis(x.astype(np.float64), axis, -1)
    mean = x64.mean(-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(-1, keepdims=True)
    y = (x64 - mean) / np.sqrt(var + epsilon)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return np.moveaxis(y, -1, axis).astype(x.dtype)


def rms_norm_python(x, gamma=None, epsilon: float = 1e-5):
    x64 = x.astype(np.float64)
    y = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + epsilon)
    return (y * gamma if gamma is not None else y).astype(x.dtype)


def attention_python(
    q, k, v, mask=None, scale: float = 1.0, k_transposed: bool = False, softcap: float = 0.0
):
    """``softmax(q @ k^T * scale + mask) @ v`` over ``[BH, S, D]`` slices (``k`` as ``[BH, D, Sk]``
    with ``k_transposed``), in float64; a fully masked row (all ``-inf``) gives 0, as ONNX's.
    ``softcap > 0`` caps the scaled scores to ``softcap * tanh(s / softcap)`` before the mask."""
    kt = k if k_transposed else np.swapaxes(k, -1, -2)
    s = np.matmul(q.astype(np.float64), kt.astype(np.float64)) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    if mask is not None:
        s = s + mask
    m = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isneginf(m), 0.0, m))  # a fully masked row: all 0
    psum = p.sum(-1, keepdims=True)
    p /= np.where(psum == 0, 1.0, psum)
    return np.matmul(p, v.astype(np.float64)).astype(q.dtype)


def gelu_tanh_python(x):
    c = math.sqrt(2.0 / math.pi)
    return (0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x**3)))).astype(x.dtype)


def silu_python(x):
    return (x / (1.0 + np.exp(-x))).astype(x.dtype)
