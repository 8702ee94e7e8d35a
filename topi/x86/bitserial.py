"""x86 schedules of the bit-serial and binary operators (classic ``topi.x86.bitserial_conv2d_*``,
``schedule_binarize_pack``, ``schedule_binary_dense``); their computes are :mod:`topi.nn.bitserial`'s.

Padding is computed inside the packing stages, which run at the root with their outer axes
parallel; the conv keeps its bit-plane loops innermost and unrolled, so each packed word pair is
loaded once for all ``activation_bits x weight_bits`` popcounts::

    parallel (n.f.fused)                       // or (n.y.fused) for NHWC
      for (y, x): for (rc, ry, rx): unrolled (b2, b1): acc += popcount(a & w) << (b1 + b2)
"""

from __future__ import annotations

from topi.generic.nn import inline_then, parallel_outer
from topi.nn.bitserial import bitserial_conv2d_nchw, bitserial_conv2d_nhwc  # noqa: F401  (the computes)


def _bits_unrolled(s, op) -> None:
    parallel_outer(s, op)
    if op.tag.startswith("bitserial_conv2d"):
        for axis in op.reduce_axis:
            if axis.var.name in ("b1", "b2"):
                s[op].unroll(axis)


def schedule_bitserial_conv2d_nchw(outs):
    """Schedule ``bitserial_conv2d_nchw`` (and its epilogue)."""
    return inline_then(outs, _bits_unrolled)


def schedule_bitserial_conv2d_nhwc(outs):
    """Schedule ``bitserial_conv2d_nhwc`` (and its epilogue)."""
    return inline_then(outs, _bits_unrolled)


def schedule_binarize_pack(outs):
    """Schedule ``binarize_pack``: its outer axis parallel."""
    return inline_then(outs, parallel_outer)


def schedule_binary_dense(outs):
    """Schedule ``binary_dense``: the popcount product and its scaling, rows parallel."""
    return inline_then(outs, parallel_outer)
