"""Channel shuffle (ShuffleNet's reshape -> transpose -> reshape) on NCHW or blocked data.

Output channel ``c`` of a shuffle in ``groups`` reads input channel
``(c % groups) * (C / groups) + c // groups``; on a blocked value
``[N, C/b, H, W, b]`` the channel ``c`` is ``(cc, cb) = (c // b, c % b)``::

    out[n, cc, y, x, cb] = data[n, src // b, y, x, src % b]    where src = perm(cc*b + cb)
"""

from __future__ import annotations

import te
from topi import tag
from topi.utils import get_const_tuple


def channel_shuffle(data, groups: int):
    """The shuffled ``data`` (4-D NCHW or 5-D NCHW[b]c), tag ``injective``."""
    shape = get_const_tuple(data.shape)
    block = shape[4] if len(shape) == 5 else 1
    channels = shape[1] * block
    if len(shape) not in (4, 5) or channels % groups:
        raise ValueError(f"channel_shuffle: data {shape} must be NCHW or NCHW[x]c with channels divisible "
                         f"by groups={groups}")
    per = channels // groups

    def src(c):
        return (c % groups) * per + c // groups

    if len(shape) == 4:
        return te.compute(shape, lambda n, c, y, x: data[n, src(c), y, x], name="channel_shuffle",
                          tag=tag.INJECTIVE)
    return te.compute(
        shape,
        lambda n, cc, y, x, cb: data[n, src(cc * block + cb) // block, y, x, src(cc * block + cb) % block],
        name="channel_shuffle", tag=tag.INJECTIVE,
    )


def channel_shuffle_python(x, groups: int):
    """numpy reference: ``x`` NCHW or NCHW[b]c."""
    import numpy as np

    if x.ndim == 5:
        n, cc, h, w, b = x.shape
        plain = x.transpose(0, 1, 4, 2, 3).reshape(n, cc * b, h, w)
        out = channel_shuffle_python(plain, groups)
        return np.ascontiguousarray(out.reshape(n, cc, b, h, w).transpose(0, 1, 3, 4, 2))
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(x.shape))
