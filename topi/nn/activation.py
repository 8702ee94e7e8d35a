"""Transformer activations as single elementwise operators: tanh-GELU and SiLU.

``gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` (GPT-2's
``gelu_new``, ONNX ``Gelu(approximate="tanh")``, FastGelu); ``silu(x) = x * sigmoid(x)``.
"""

from __future__ import annotations

import math

import te

GELU_TANH_C = math.sqrt(2.0 / math.pi)


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    """tanh-approximated GELU, elementwise (tag ``elemwise``)."""

    def body(*i):
        v = x[i]
        c = te.const(GELU_TANH_C, x.dtype)
        inner = c * (v + te.const(0.044715, x.dtype) * v * v * v)
        return te.const(0.5, x.dtype) * v * (te.const(1.0, x.dtype) + te.tanh(inner))

    return te.compute(tuple(x.shape), body, name="T_gelu_tanh", tag="elemwise")


def silu(x: te.Tensor) -> te.Tensor:
    """``x * sigmoid(x)``, elementwise (tag ``elemwise``)."""
    return te.compute(tuple(x.shape), lambda *i: x[i] * te.sigmoid(x[i]), name="T_silu", tag="elemwise")
