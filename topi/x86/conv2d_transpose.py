"""x86 transposed conv: the compute is ``topi.nn.conv2d_transpose_nchw``; its schedule computes
the dilated, padded input at the root (parallel), then runs the direct register-tiled NCHW conv
schedule (:func:`topi.x86.conv_direct.schedule_direct`)."""

from __future__ import annotations

import te
from tune.autotvm.space import ConfigEntity
from topi.x86.conv_direct import default_direct_config, schedule_direct
from topi.config import records_target
from topi.nn.conv2d_transpose import conv2d_transpose_nchw as _conv2d_transpose_nchw


def conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0)):
    """The compute :func:`schedule_conv2d_transpose_nchw` tiles (classic ``topi.x86.conv2d_transpose_nchw``)."""
    return _conv2d_transpose_nchw(data, kernel, strides, padding, out_dtype, output_padding)


def default_conv2d_transpose_config(out_shape: tuple, dtype: str = "float32") -> ConfigEntity:
    """Knobs of :func:`schedule_conv2d_transpose_nchw` for an ``[N, OC, OH, OW]`` output:
    ``fb`` channels (unrolled) x ``xb`` columns (vectorized) per tile, and ``unroll``
    (see :func:`topi.x86.conv_direct.direct_rule`)."""
    return default_direct_config(out_shape, False, "conv2d_transpose_nchw", dtype)


@records_target
def schedule_conv2d_transpose_nchw(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv2d_transpose_nchw`` (with any fused epilogue).

    ``cfg``: knobs of :func:`default_conv2d_transpose_config`.
    """
    outs = [outs] if isinstance(outs, te.Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last=False, cfg=cfg)
