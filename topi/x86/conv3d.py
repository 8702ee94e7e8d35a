"""x86 3-D convolutions and the transposed 3-D conv (classic ``topi.x86.conv3d_ncdhw``,
``conv3d_ndhwc``, ``conv3d_transpose_ncdhw``): the ``topi.nn`` computes under the direct
register-tiled schedule of :mod:`topi.x86.conv_direct`, whose tile (``fb`` channels x ``xb``
columns, config ``conv_direct.x86`` keyed by the stage name and output shape) accumulates in
registers while the reduction over (channels, taps) runs outside it::

    parallel (n.f.outer.z.y.fused)            // NCDHW; NDHWC: (n.z.y) parallel, channels vectorized
      for (x.outer)
        acc[fb, xb] = 0
        for (rc, rz, ry, rx): unrolled (f.inner): vectorized (x.inner)
          acc += PadInput[...] * kernel[...]
        out[tile] = epilogue(acc)
"""

from __future__ import annotations

import te
from topi.config import records_target
from topi.nn.conv2d_transpose import conv3d_transpose_ncdhw as _conv3d_transpose_ncdhw
from topi.nn.conv3d import conv3d_ncdhw as _conv3d_ncdhw, conv3d_ndhwc as _conv3d_ndhwc
from topi.x86.conv_direct import _outs, schedule_direct
from tune.autotvm.space import ConfigEntity


def conv3d_ncdhw(data, kernel, strides, padding, dilation, groups: int = 1, out_dtype=None):
    """The compute :func:`schedule_conv3d_ncdhw` tiles: ``topi.nn.conv3d_ncdhw``."""
    return _conv3d_ncdhw(data, kernel, strides, padding, dilation, groups, out_dtype)


def conv3d_ndhwc(data, kernel, strides, padding, dilation, groups: int = 1, out_dtype=None):
    """The compute :func:`schedule_conv3d_ndhwc` tiles: ``topi.nn.conv3d_ndhwc``."""
    return _conv3d_ndhwc(data, kernel, strides, padding, dilation, groups, out_dtype)


def conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype=None, output_padding=(0, 0, 0)):
    """The compute :func:`schedule_conv3d_transpose_ncdhw` tiles: ``topi.nn.conv3d_transpose_ncdhw``."""
    return _conv3d_transpose_ncdhw(data, kernel, strides, padding, out_dtype, output_padding)


def _schedule(outs, channels_last: bool, cfg):
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, channels_last, cfg)


@records_target
def schedule_conv3d_ncdhw(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv3d_ncdhw`` (and its epilogue): columns vectorized, channels unrolled."""
    return _schedule(outs, False, cfg)


@records_target
def schedule_conv3d_ndhwc(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv3d_ndhwc`` (and its epilogue): channels vectorized, columns unrolled."""
    return _schedule(outs, True, cfg)


@records_target
def schedule_conv3d_transpose_ncdhw(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv3d_transpose_ncdhw``: the dilated, padded input at the root (parallel),
    then the direct tile of :func:`schedule_conv3d_ncdhw`."""
    return _schedule(outs, False, cfg)
