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
from topi.config import Config
from topi.utils import get_const_tuple

VEC = 16


def _outs(outs) -> list:
    return [outs] if isinstance(outs, te.Tensor) else list(outs)


def _anchor(s, out_op, tag_name: str):
    """The depthwise stage under ``out_op``; injective stages between are inlined."""
    stack, seen = [out_op], set()
    while stack:
        op = stack.pop()
        if id(op) in seen or not isinstance(op, te.ComputeOp):
            continue
        seen.add(id(op))
        if op.tag == tag_name:
            return op
        if op is not out_op:
            s[op].compute_inline()
        stack.extend(t.op for t in op.input_tensors)
    raise ValueError(f"schedule: no '{tag_name}' stage under output '{out_op.name}'")


def _vec_width(n: int) -> int:
    """The vector width for a row of ``n``: 16, or 8 when 16 would leave a big tail."""
    return VEC if n >= VEC or n % 8 else 8


def default_depthwise_conv2d_config(out_shape: tuple, layout: str = "NCHW") -> Config:
    """Knobs of the depthwise schedules for an output of ``out_shape``.

    * ``vec``: lanes along the vectorized axis (``OW`` for NCHW, channels for
      NHWC): 16, or 8 when the axis is a multiple of 8 below 16;
    * ``unroll_taps``: unroll the kernel rows and columns around each vector;
    * ``pad_vec_max`` (NHWC only): vectorize the padding stage's channel axis
      when there are at most this many channels.
    """
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"default_depthwise_conv2d_config: layout {layout!r} is not one of 'NCHW', 'NHWC'")
    values = {"vec": _vec_width(out_shape[3]), "unroll_taps": True}
    space = {"vec": [4, 8, 16, 32], "unroll_taps": [True, False]}
    if layout == "NHWC":
        values["pad_vec_max"] = 64
        space["pad_vec_max"] = [0, 64, 256, 1024]
    return Config(f"depthwise_conv2d_{layout.lower()}", values, space)


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
    cfg = cfg or default_depthwise_conv2d_config(get_const_tuple(out.shape), "NCHW")
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
    cfg = cfg or default_depthwise_conv2d_config(get_const_tuple(out.shape), "NHWC")
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
