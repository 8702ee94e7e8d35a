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
"""

from __future__ import annotations

import te
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


def _padding_stage(conv_op):
    for t in conv_op.input_tensors:
        if isinstance(t.op, te.ComputeOp) and t.op.name == "PadInput":
            return t
    return None


def _row_tiles(s, st, ow: int) -> None:
    """Per output row: ``x`` in vectors, the taps unrolled around each vector."""
    _, _, y, x = s[st].op.axis
    ry, rx = s[st].op.reduce_axis
    xo, xi = s[st].split(x, factor=_vec_width(ow))
    s[st].reorder(y, xo, ry, rx, xi)
    s[st].unroll(ry)
    s[st].unroll(rx)
    s[st].vectorize(xi)


def schedule_depthwise_conv2d_nchw(outs):
    """Schedule ``depthwise_conv2d_nchw`` (with any fused epilogue).

    One task per (n, channel) plane; the padded plane is computed inside the
    task, and an epilogue reads the conv's plane while it is still in cache.
    """
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nchw")
    conv = conv_op.output(0)
    ow = get_const_tuple(out.shape)[3]
    n, c, _, x = s[out].op.axis
    fused = s[out].fuse(n, c)
    s[out].parallel(fused)
    padded = _padding_stage(conv_op)
    _row_tiles(s, conv, ow)
    if conv_op is not out.op:
        xo, xi = s[out].split(x, factor=_vec_width(ow))
        s[out].vectorize(xi)
        s[conv].compute_at(s[out], fused)
        if padded is not None:
            s[padded].compute_at(s[conv], s[conv].op.axis[1])
    elif padded is not None:
        s[padded].compute_at(s[out], fused)
    return s


def schedule_depthwise_conv2d_nhwc(outs):
    """Schedule ``depthwise_conv2d_nhwc``: channels vectorized, rows parallel."""
    outs = _outs(outs)
    out = outs[0]
    s = te.create_schedule([o.op for o in outs])
    conv_op = _anchor(s, out.op, "depthwise_conv2d_nhwc")
    conv = conv_op.output(0)
    acc = s.cache_write(conv, "local") if conv_op is out.op else conv
    n, y, x, f = s[out].op.axis
    cb = _vec_width(get_const_tuple(out.shape)[3])
    fo, fi = s[out].split(f, factor=cb)
    s[out].reorder(n, y, x, fo, fi)
    fused = s[out].fuse(n, y)
    s[out].parallel(fused)
    s[out].vectorize(fi)
    s[acc].compute_at(s[out], fo)
    _, _, _, af = s[acc].op.axis
    ry, rx = s[acc].op.reduce_axis
    s[acc].reorder(ry, rx, af)
    s[acc].unroll(ry)
    s[acc].unroll(rx)
    s[acc].vectorize(af)
    padded = _padding_stage(conv_op)
    if padded is not None:
        pn, py, px, pc = s[padded].op.axis
        s[padded].parallel(s[padded].fuse(pn, py))
        if get_const_tuple(padded.shape)[3] <= 64:
            s[padded].vectorize(pc)
    return s
