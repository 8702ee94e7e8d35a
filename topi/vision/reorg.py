"""YOLOv2's ``reorg`` (darknet's space-to-depth, classic ``topi.vision.reorg``).

The output ``[B, C*s*s, H/s, W/s]`` holds, in its row-major order, the input read as
darknet reads it: element ``(b, k, j, i)`` of the input-shaped walk takes input offset
``w2 + W*s * (h2 + H*s * (c2 + (C/(s*s)) * b))`` with ``c2 = k % (C/(s*s))``,
``o = k / (C/(s*s))``, ``h2 = j*s + o / s``, ``w2 = i*s + o % s``.
"""

from __future__ import annotations

import te
from te.errors import OpError
from topi import tag
from topi.utils import get_const_tuple, ravel_index, unravel_index


def reorg(data: te.Tensor, stride: int) -> te.Tensor:
    """Reorganise ``data [B, C, H, W]`` into ``[B, C*stride^2, H/stride, W/stride]`` (darknet order).

    Raises
    ------
    OpError
        ``C`` not a multiple of ``stride^2`` or ``H``, ``W`` not multiples of ``stride``.
    """
    shape = get_const_tuple(data.shape)
    s = int(stride)
    if len(shape) != 4 or s < 1 or shape[1] % (s * s) or shape[2] % s or shape[3] % s:
        raise OpError(f"reorg: data {shape} must be [B, C, H, W] with C a multiple of stride^2 and H, W of "
                      f"stride (stride {stride})")
    b_, c_, h_, w_ = shape
    out_c = c_ // (s * s)
    out_shape = (b_, c_ * s * s, h_ // s, w_ // s)

    def body(*o):
        b, k, j, i = unravel_index(ravel_index(o, out_shape), shape)
        c2, off = k % out_c, k // out_c
        src = i * s + off % s + w_ * s * (j * s + off // s + h_ * s * (c2 + out_c * b))
        return data(*unravel_index(src, shape))

    return te.compute(out_shape, body, name="reorg", tag=tag.INJECTIVE)
