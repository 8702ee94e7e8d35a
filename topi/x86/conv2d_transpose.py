"""x86 schedule of the transposed conv: the dilated, padded input is computed
at the root (parallel), then the direct register-tiled NCHW conv schedule."""

from __future__ import annotations

import te
from topi.x86.conv2d import schedule_direct


def schedule_conv2d_transpose_nchw(outs):
    """Schedule ``conv2d_transpose_nchw`` (with any fused epilogue)."""
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=False)
