"""The direct register-tiled convolution schedule, its knobs read from a Config.

Used for plain NCHW/NHWC conv2d (:func:`topi.x86.conv2d.schedule_direct`),
conv1d and conv2d_transpose.  ``default_direct_config`` chooses ``fb``
(channels per tile), ``xb`` (columns per tile) and ``unroll``.
"""

from __future__ import annotations

import te
from topi.config import Config, divisors, largest_divisor
from topi.utils import get_const_tuple
from topi.x86.conv2d import VEC, _block, _direct_anchor


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def default_direct_config(out_shape: tuple, channels_last: bool, workload: str = "conv_direct") -> Config:
    """Knobs of the direct register-tiled conv for an output of ``out_shape``.

    * ``fb``: output channels per tile (unrolled channels-first, vectorized
      channels-last);
    * ``xb``: output columns per tile (vectorized channels-first, unrolled
      channels-last);
    * ``unroll``: unroll the tile's non-vector axis.

    The vectorized block is 16 lanes unless the extent has a divisor of at
    least 8 below that; the unrolled block is the largest divisor up to 8.
    """
    if channels_last:
        c, w = out_shape[-1], out_shape[-2]
        fb, xb = _block(c, VEC), largest_divisor(w, 8)
        space = {"fb": [4, 8, 16, 32], "xb": sorted({1, 2, 4, 8, *divisors(w, 8)})}
    else:
        c, w = out_shape[1], out_shape[-1]
        fb, xb = largest_divisor(c, 8), _block(w, VEC)
        space = {"fb": sorted({1, 2, 4, 8, *divisors(c, 8)}), "xb": [4, 8, 16, 32]}
    space["unroll"] = [True, False]
    return Config(workload, {"fb": fb, "xb": xb, "unroll": True}, space)


def _tile_output(s, out_op, channels_last: bool, cfg: Config):
    """Split the output into (parallel outer, tile); return the attach axis."""
    st = s[out_op]
    axes = list(st.op.axis)
    if channels_last:
        x, f, mid = axes[-2], axes[-1], axes[:-2]
        fo, fi = st.split(f, factor=cfg["fb"])
        xo, xi = st.split(x, factor=cfg["xb"])
        st.reorder(*mid, xo, fo, xi, fi)
        unrolled, vector, attach, outer = xi, fi, fo, mid
    else:
        f, x = axes[1], axes[-1]
        fo, fi = st.split(f, factor=cfg["fb"])
        xo, xi = st.split(x, factor=cfg["xb"])
        st.reorder(axes[0], fo, *axes[2:-1], xo, fi, xi)
        unrolled, vector, attach, outer = fi, xi, xo, [axes[0], fo, *axes[2:-1]]
    if cfg["unroll"]:
        st.unroll(unrolled)
    st.vectorize(vector)
    st.parallel(st.fuse(*outer) if len(outer) > 1 else outer[0])
    return attach


def schedule_direct_config(s, out_op, channels_last: bool, cfg: Config | None = None):
    """Register-tile a plain conv: ``fb`` channels x ``xb`` columns in a local accumulator.

    Channels-first (NCHW, NCW): columns vectorized, channels unrolled;
    channels-last (NHWC, NWC): channels vectorized, columns unrolled.  The
    reduction axes run outside the tile; (n, rows, channel blocks) are parallel.
    """
    conv_op = _direct_anchor(s, out_op)
    cfg = cfg or default_direct_config(get_const_tuple(out_op.output(0).shape), channels_last)
    acc = s.cache_write(conv_op.output(0), "local") if conv_op is out_op else conv_op.output(0)
    attach = _tile_output(s, out_op, channels_last, cfg)
    s[acc].compute_at(s[out_op], attach)
    aaxes = list(s[acc].op.axis)
    inner = [aaxes[-2], aaxes[-1]] if channels_last else [aaxes[1], aaxes[-1]]
    rest = [a for a in aaxes if not any(a is b for b in inner)]
    s[acc].reorder(*rest, *s[acc].op.reduce_axis, *inner)
    if cfg["unroll"]:
        s[acc].unroll(inner[0])
    s[acc].vectorize(inner[1])
    return s
