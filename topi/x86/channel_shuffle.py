"""x86 schedule of the blocked channel shuffle (``topi.nn.channel_shuffle``).

The default injective schedule fuses every axis before it splits off a
vector, so each lane's source block and lane are a div/mod of the fused
index.  Here the channel chunk and row are the parallel loop and the block
axis alone is the vector (a gather whose offsets depend only on the chunk)::

    parallel (n.cc.y.fused, 0, N*C/b*H)
      for (x, 0, W)
        vectorized (cb, 0, b)
          out[n, cc, y, x, cb] = data[n, src(cc, cb) // b, y, x, src(cc, cb) % b]

The vectorized block axis is faster than unrolling it (ShuffleNet's 136
channels by 8 at 28x28, in ``benchmarks/graph_models.py``'s shufflenet).
"""

from __future__ import annotations

from topi.config import records_target


@records_target
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
        s[out].vectorize(cb)
    else:
        n, c, y, x = axes
        s[out].parallel(s[out].fuse(n, c, y))
        s[out].vectorize(x)
    return s
