"""Transformer activations as single elementwise operators: tanh-GELU and SiLU.

``gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`` (GPT-2's
``gelu_new``, ONNX ``Gelu(approximate="tanh")``, FastGelu); ``silu(x) = x * sigmoid(x)``.
"""

from __future__ import annotations

import math

import te

GELU_TANH_C = math.sqrt(2.0 / math.pi)


def gelu_tanh(x: te.Tensor) -> te.Tensor:
    """tanh-approximated GELU, elementwise (tag ``elemwise``), as ``x * sigmoid(2u)``, which
    ``(1 + tanh(u)) / 2`` is: one exponential, no cancellation where tanh(u) nears -1 (a
    vectorized tanh computes both its branches).  2u is clamped to [-80, 80] (x beyond 9.3 in
    magnitude: sigmoid(80) rounds to 1, and below -9.3 the result is under 1e-33): beyond,
    exp(-|2u|) would be a denormal, whose arithmetic x86 runs in microcode.  0.7x the time of
    the tanh form (``benchmarks/topi_elementwise.py``)."""

    def body(*i):
        v = x[i]
        a, b = 2.0 * GELU_TANH_C, 2.0 * GELU_TANH_C * 0.044715
        u2 = v * (te.const(a, x.dtype) + te.const(b, x.dtype) * v * v)
        return v * te.sigmoid(te.min(te.max(u2, te.const(-80.0, x.dtype)), te.const(80.0, x.dtype)))

    return te.compute(tuple(x.shape), body, name="T_gelu_tanh", tag="elemwise")


def silu(x: te.Tensor) -> te.Tensor:
    """``x * sigmoid(x)``, elementwise (tag ``elemwise``)."""
    return te.compute(tuple(x.shape), lambda *i: x[i] * te.sigmoid(x[i]), name="T_silu", tag="elemwise")
