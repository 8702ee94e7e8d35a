"""x86 schedule of the transposed conv: the dilated, padded input is computed
at the root (parallel), then the direct register-tiled NCHW conv schedule
(:func:`topi.x86.conv1d.schedule_direct_config`)."""

from __future__ import annotations

import te
from topi.config import Config
from topi.utils import get_const_tuple
from topi.x86.conv_direct import default_direct_config, schedule_direct_config


def default_conv2d_transpose_config(out_shape: tuple) -> Config:
    """Knobs of :func:`schedule_conv2d_transpose_nchw` for an ``[N, OC, OH, OW]`` output:
    ``fb`` channels (unrolled) x ``xb`` columns (vectorized) per tile, and ``unroll``
    (see :func:`topi.x86.conv1d.default_direct_config`)."""
    return default_direct_config(out_shape, channels_last=False, workload="conv2d_transpose_nchw")


def schedule_conv2d_transpose_nchw(outs, cfg: Config | None = None):
    """Schedule ``conv2d_transpose_nchw`` (with any fused epilogue).

    ``cfg``: knobs of :func:`default_conv2d_transpose_config`.
    """
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    cfg = cfg or default_conv2d_transpose_config(get_const_tuple(outs[0].shape))
    return schedule_direct_config(s, outs[0].op, channels_last=False, cfg=cfg)
