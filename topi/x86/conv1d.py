"""x86 schedules of 1-D convolution (the direct register-tiled conv schedule)."""

from __future__ import annotations

import te
from topi.x86.conv2d import schedule_direct


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def schedule_conv1d_ncw(outs):
    """Schedule ``conv1d_ncw``: ``OW`` vectorized, a block of channels unrolled,
    (n, channel blocks) parallel, the reduction over (ic, k) outside the tile."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=False)


def schedule_conv1d_nwc(outs):
    """Schedule ``conv1d_nwc``: output channels vectorized, columns unrolled."""
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=True)
