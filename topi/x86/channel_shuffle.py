"""x86 schedule of the blocked channel shuffle (``topi.nn.channel_shuffle``).

The default injective schedule vectorizes the block axis, which turns each
output vector into a gather whose source block and lane are a div/mod per
lane.  Here the block axis is unrolled innermost instead: each of its ``b``
source offsets depends only on the channel chunk, so LLVM hoists them out of
the pixel loops and the body is ``b`` scalar moves per pixel::

    parallel (n.cc.y.fused, 0, N*C/b*H)
      for (x, 0, W)
        unrolled (cb, 0, b)
          out[n, cc, y, x, cb] = data[n, src(cc, cb) // b, y, x, src(cc, cb) % b]
"""

from __future__ import annotations


def schedule_channel_shuffle(outs):
    """Schedule :func:`topi.nn.channel_shuffle.channel_shuffle` and any elementwise ops
    after it (NCHW: plain rows; blocked: the loop nest of the module docstring)."""
    from topi.generic.injective import inlined_schedule

    s, outs = inlined_schedule(outs)  # the shuffle and an elementwise epilogue: one loop nest
    out = outs[0]
    axes = list(s[out].op.axis)
    if len(axes) == 5:
        n, cc, y, x, cb = axes
        s[out].parallel(s[out].fuse(n, cc, y))
        s[out].unroll(cb)
    else:
        n, c, y, x = axes
        s[out].parallel(s[out].fuse(n, c, y))
        s[out].vectorize(x)
    return s
