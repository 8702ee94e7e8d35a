"""x86 schedules of 1-D convolution: the direct register-tiled schedule of
:mod:`topi.x86.conv_direct`."""

from __future__ import annotations

import te
from tune.autotvm.space import ConfigEntity
from topi.x86.conv_direct import _outs, default_direct_config, schedule_direct
from topi.config import records_target


def default_conv1d_config(out_shape: tuple, layout: str = "NCW", dtype: str = "float32") -> ConfigEntity:
    """Knobs of :func:`schedule_conv1d_ncw` / :func:`schedule_conv1d_nwc` (see
    :func:`topi.x86.conv_direct.direct_rule`)."""
    if layout not in ("NCW", "NWC"):
        raise ValueError(f"default_conv1d_config: layout {layout!r} is not one of 'NCW', 'NWC'")
    return default_direct_config(out_shape, layout == "NWC", f"conv1d_{layout.lower()}", dtype)


def _schedule(outs, layout: str, cfg: ConfigEntity | None):
    outs = _outs(outs)
    s = te.create_schedule([o.op for o in outs])
    return schedule_direct(s, outs[0].op, layout == "NWC", cfg)


@records_target
def schedule_conv1d_ncw(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv1d_ncw``: ``OW`` vectorized, a block of channels unrolled,
    (n, channel blocks) parallel, the reduction over (ic, k) outside the tile.

    ``cfg``: knobs of :func:`default_conv1d_config`.
    """
    return _schedule(outs, "NCW", cfg)


@records_target
def schedule_conv1d_nwc(outs, cfg: ConfigEntity | None = None):
    """Schedule ``conv1d_nwc``: output channels vectorized, columns unrolled.

    ``cfg``: knobs of :func:`default_conv1d_config` with ``layout="NWC"``.
    """
    return _schedule(outs, "NWC", cfg)
