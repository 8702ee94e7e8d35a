"""The direct register-tiled convolution schedule, its knobs read from a ConfigEntity.

Used for plain NCHW/NHWC conv2d (:func:`topi.x86.conv2d_schedule.schedule_conv2d_nchw`),
conv1d and conv2d_transpose.  The template ``conv_direct.x86`` chooses ``fb``
(channels per tile), ``xb`` (columns per tile) and ``unroll``; its workload key
is ``("conv_direct.x86", op name, channels_last, output shape, dtype)``.
"""

from __future__ import annotations

import te
from tune.autotvm.config import check_config, choose_config, register_rule
from tune.autotvm.space import ConfigEntity
from topi.config import largest_divisor, records_target
from topi.utils import find_anchor, get_const_tuple

TEMPLATE = "conv_direct.x86"
MAX_BLOCK = 32  # the widest tile of either axis a config may ask for


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def direct_workload(op_name: str, out_shape: tuple, channels_last: bool, dtype: str = "float32") -> tuple:
    """The workload key of the direct conv schedule of an output ``out_shape``."""
    return (TEMPLATE, str(op_name), bool(channels_last), tuple(int(d) for d in out_shape), str(dtype))


def _block(n: int, want: int) -> int:
    d = largest_divisor(n, want)
    return d if d >= want // 2 else want


def direct_space(workload: tuple, target) -> dict:
    return {"fb": list(range(1, MAX_BLOCK + 1)), "xb": list(range(1, MAX_BLOCK + 1)), "unroll": [True, False]}


def direct_rule(workload: tuple, target) -> dict:
    """* ``fb``: output channels per tile (unrolled channels-first, vectorized channels-last);
    * ``xb``: output columns per tile (vectorized channels-first, unrolled channels-last);
    * ``unroll``: unroll the tile's non-vector axis.

    The vectorized block is one vector of the target (16 float32 lanes with
    AVX-512, 8 with AVX2) unless the extent has a divisor of at least half
    that below it; the unrolled block is the largest divisor up to 8.
    """
    _, _, channels_last, out_shape, dtype = workload
    vec = target.lanes(dtype)
    if channels_last:
        c, w = out_shape[-1], out_shape[-2]
        fb, xb = _block(c, vec), largest_divisor(w, 8)
    else:
        c, w = out_shape[1], out_shape[-1]
        fb, xb = largest_divisor(c, 8), _block(w, vec)
    return {"fb": min(fb, MAX_BLOCK), "xb": min(xb, MAX_BLOCK), "unroll": True}


register_rule(TEMPLATE, direct_space, direct_rule, doc="direct register-tiled conv (NCHW/NHWC, conv1d, transpose)")


def default_direct_config(out_shape: tuple, channels_last: bool, workload: str = "conv_direct",
                          dtype: str = "float32") -> ConfigEntity:
    """The chosen config (rule default unless a dispatch context says otherwise) of the
    direct conv named ``workload`` with output ``out_shape``."""
    return choose_config(direct_workload(workload, out_shape, channels_last, dtype))


def _tile_output(s, out_op, channels_last: bool, cfg: ConfigEntity):
    """Split the output into (parallel outer, tile); return the attach axis."""
    st = s[out_op]
    axes = list(st.op.axis)
    if channels_last:
        x, f, mid = axes[-2], axes[-1], axes[:-2]
        fo, fi = st.split(f, factor=cfg["fb"].val)
        xo, xi = st.split(x, factor=cfg["xb"].val)
        st.reorder(*mid, xo, fo, xi, fi)
        unrolled, vector, attach, outer = xi, fi, fo, mid
    else:
        f, x = axes[1], axes[-1]
        fo, fi = st.split(f, factor=cfg["fb"].val)
        xo, xi = st.split(x, factor=cfg["xb"].val)
        st.reorder(axes[0], fo, *axes[2:-1], xo, fi, xi)
        unrolled, vector, attach, outer = fi, xi, xo, [axes[0], fo, *axes[2:-1]]
    if cfg["unroll"].val:
        st.unroll(unrolled)
    st.vectorize(vector)
    st.parallel(st.fuse(*outer) if len(outer) > 1 else outer[0])
    return attach


def _direct_anchor(s, out_op):
    """The reduction stage under ``out_op`` (epilogue inlined), its padding at root, parallel."""
    anchor, _ = find_anchor(s, out_op, lambda op: bool(op.reduce_axis))
    if anchor is None:
        raise ValueError(f"schedule: no convolution stage under output '{out_op.name}'")
    for t in anchor.input_tensors:
        if isinstance(t.op, te.ComputeOp):
            axes = s[t.op].op.axis
            s[t.op].parallel(s[t.op].fuse(*axes[:2]))
    return anchor


@records_target
def schedule_direct(s, out_op, channels_last: bool, cfg: ConfigEntity | None = None):
    """Register-tile a plain conv: ``fb`` channels x ``xb`` columns in a local accumulator.

    Channels-first (NCHW, NCW): columns vectorized, channels unrolled;
    channels-last (NHWC, NWC): channels vectorized, columns unrolled.  The
    reduction axes run outside the tile; (n, rows, channel blocks) are parallel.
    ``cfg`` must be for this output (:func:`direct_workload` of the conv stage's
    name and the output's shape); default: :func:`default_direct_config`.
    """
    conv_op = _direct_anchor(s, out_op)
    out = out_op.output(0)
    key = direct_workload(conv_op.name, get_const_tuple(out.shape), channels_last, out.dtype)
    cfg = choose_config(key) if cfg is None else check_config(cfg, key)
    acc = s.cache_write(conv_op.output(0), "local") if conv_op is out_op else conv_op.output(0)
    attach = _tile_output(s, out_op, channels_last, cfg)
    s[acc].compute_at(s[out_op], attach)
    aaxes = list(s[acc].op.axis)
    inner = [aaxes[-2], aaxes[-1]] if channels_last else [aaxes[1], aaxes[-1]]
    rest = [a for a in aaxes if not any(a is b for b in inner)]
    s[acc].reorder(*rest, *s[acc].op.reduce_axis, *inner)
    if cfg["unroll"].val:
        s[acc].unroll(inner[0])
    s[acc].vectorize(inner[1])
    return s


schedule_direct_config = schedule_direct  # the name conv1d and conv2d_transpose used
