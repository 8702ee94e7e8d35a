"""x86 schedules of depthwise conv2d: vectorize along W (NCHW) or channels (NHWC).

NCHW: one parallel task per (n, channel) plane; the plane's padding is
computed inside the task (it stays in cache), and each output row
accumulates in registers, ``vec`` columns per vector::

    parallel (n.c.fused, 0, N*C)
      PadInput plane = pad(data[n, c])                 // in L1/L2
      for (y, 0, OH)
        row.local[OW] = 0
        unrolled (ry, rx): unrolled (x.outer): vectorized (x.inner, 0, vec)
          row.local[x] += PadInput[y + ry, x + rx] * kernel[c, ry, rx]
        out[n, c, y, :] = row.local

Every choice comes from a :class:`topi.config.Config`
(:func:`default_depthwise_conv2d_config`).
"""

from __future__ import annotations

import te
from topi.config import Config, choose_config, register_template
from topi.utils import find_anchor, get_const_tuple

TEMPLATE_NCHW = "depthwise_conv2d_nchw.x86"
TEMPLATE_NHWC = "depthwise_conv2d_nhwc.x86"


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def _anchor(s, out_op, tag_name: str):
    """The depthwise stage under ``out_op``; injective stages between are inlined."""
    anchor, _ = find_anchor(s, out_op, lambda op: op.tag == tag_name)
    if anchor is None:
        raise ValueError(f"schedule: no '{tag_name}' stage under output '{out_op.name}'")
    return anchor


def depthwise_workload(out_shape: tuple, layout: str = "NCHW", dtype: str = "float32") -> tuple:
    """The workload key of a depthwise schedule: the output shape decides every knob."""
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"default_depthwise_conv2d_config: layout {layout!r} is not one of 'NCHW', 'NHWC'")
    return (TEMPLATE_NCHW if layout == "NCHW" else TEMPLATE_NHWC, tuple(int(d) for d in out_shape), str(dtype))


def depthwise_space(workload: tuple, target) -> dict:
    space = {"vec": list(range(1, 33)), "unroll_taps": [True, False]}
    if workload[0] == TEMPLATE_NHWC:
        space["pad_vec_max"] = [0, 64, 256, 1024]
    return space


def depthwise_rule(workload: tuple, target) -> dict:
    """* ``vec``: lanes along the vectorized axis (``OW`` for NCHW, channels for
      NHWC): one vector of the target, or half of one when the row is a
      multiple of half a vector narrower than a whole one;
    * ``unroll_taps``: unroll the kernel rows and columns around each vector;
    * ``pad_vec_max`` (NHWC only): vectorize the padding stage's channel axis
      when there are at most this many channels.
    """
    vec = target.lanes(workload[2])
    n = workload[1][3]
    values = {"vec": vec if n >= vec or n % (vec // 2) else vec // 2, "unroll_taps": True}
    if workload[0] == TEMPLATE_NHWC:
        values["pad_vec_max"] = 64
    return values


register_template(TEMPLATE_NCHW, depthwise_space, depthwise_rule, doc="depthwise conv2d, NCHW")
register_template(TEMPLATE_NHWC, depthwise_space, depthwise_rule, doc="depthwise conv2d, NHWC")


def default_depthwise_conv2d_config(out_shape: tuple, layout: str = "NCHW", dtype: str = "float32") -> Config:
    """The chosen config (see :func:`depthwise_rule`) of a depthwise conv with output ``out_shape``."""
    return choose_config(depthwise_workload(out_shape, layout, dtype))


def _config(out, layout: str, cfg: Config | None) -> Config:
    key = depthwise_workload(get_const_tuple(out.shape), layout, out.dtype)
    return choose_config(key) if cfg is None else cfg.check(key)


def _padding_stage(conv_op):
    for t in conv_op.input_tensors:
        if isinstance(t.op, te.ComputeOp) and t.op.name == "PadInput":
            return t
    return None


def _row_tiles(s, st, cfg: Config) -> None:
    """Per output row: ``x`` in vectors, the taps (unrolled) around each vector."""
    _, _, y, x = s[st].op.axis
    ry, rx = s[st].op.reduce_axis
    xo, xi = s[st].split(x, factor=cfg["vec"])
    s[st].reorder(y, xo, ry, rx, xi)
    if cfg["unroll_taps"]:
        s[st].unroll(ry)
        s[st].unroll(rx)
    s[st].vectorize(xi)


def schedule_depthwise_conv2d_nchw(outs, cfg: Config | None = None):
    """Schedule ``depthwise_conv2d_nchw`` (with any fused epilogue).

    One task per (n, channel) plane; the padded plane is computed inside the
    task, and an epilogue reads the conv's plane while it is still in cache.

    Parameters
    ----------
    outs : te.Tensor or list
        The conv output, or an injective epilogue of it.
    cfg : Config, optional
        Knobs (default :func:`default_depthwise_conv2d_config`).
    """
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nchw")
    conv = conv_op.output(0)
    cfg = _config(out, "NCHW", cfg)
    n, c, _, x = s[out].op.axis
    fused = s[out].fuse(n, c)
    s[out].parallel(fused)
    padded = _padding_stage(conv_op)
    _row_tiles(s, conv, cfg)
    if conv_op is not out.op:
        _xo, xi = s[out].split(x, factor=cfg["vec"])
        s[out].vectorize(xi)
        s[conv].compute_at(s[out], fused)
        if padded is not None:
            s[padded].compute_at(s[conv], s[conv].op.axis[1])
    elif padded is not None:
        s[padded].compute_at(s[out], fused)
    return s


def schedule_depthwise_conv2d_nhwc(outs, cfg: Config | None = None):
    """Schedule ``depthwise_conv2d_nhwc``: channels vectorized, rows parallel.

    Parameters
    ----------
    outs : te.Tensor or list
        The conv output, or an injective epilogue of it.
    cfg : Config, optional
        Knobs (default :func:`default_depthwise_conv2d_config` with ``layout="NHWC"``).
    """
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nhwc")
    conv = conv_op.output(0)
    cfg = _config(out, "NHWC", cfg)
    acc = s.cache_write(conv, "local") if conv_op is out.op else conv
    n, y, x, f = s[out].op.axis
    fo, fi = s[out].split(f, factor=cfg["vec"])
    s[out].reorder(n, y, x, fo, fi)
    fused = s[out].fuse(n, y)
    s[out].parallel(fused)
    s[out].vectorize(fi)
    s[acc].compute_at(s[out], fo)
    _, _, _, af = s[acc].op.axis
    ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(ry, rx, af)
    if cfg["unroll_taps"]:
        s[acc].unroll(ry)
        s[acc].unroll(rx)
    s[acc].vectorize(af)
    padded = _padding_stage(conv_op)
    if padded is not None:
        pn, py, _px, pc = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(pn, py))
        if get_const_tuple(padded.shape)[3] <= cfg["pad_vec_max"]:
            s[padded].vectorize(pc)
    return s
