"""x86 schedules of the integer products of :mod:`topi.nn.qnn`.

``qnn_dense`` takes the float dense kernel's schedule (:func:`topi.x86.dense.schedule_dense`:
the output tiled in registers, the reduction split and rfactored, lanes vectorized) on its int32
accumulator, with the zero-point subtractions inlined into the product (int32 multiplies:
the int8 dot-product instructions serve the QDQ convolutions, :mod:`topi.x86.conv2d_int8`).
"""

from __future__ import annotations

from topi.x86.dense import schedule_dense

CENTERED = ("data_centered", "weight_centered", "kernel_centered")


def schedule_qnn_dense(outs):
    """Schedule ``topi.nn.qnn.qnn_dense`` and its injective epilogue (requantize, bias)."""
    s = schedule_dense(outs)
    for stage in list(s.stages):
        if stage.op.name in CENTERED and not stage.is_output:
            s[stage.op].compute_inline()
    return s
