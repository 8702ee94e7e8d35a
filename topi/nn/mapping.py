"""Per-channel scale and shift (classic ``topi.nn.scale_shift_nchw`` / ``_nhwc`` / ``_nchwc``), a
broadcast stage that schedules fuse into their producer's output loop::

    out[n, c, y, x] = data[n, c, y, x] * scale[c] + shift[c]
"""

from __future__ import annotations

import te
from topi import tag
from topi.utils import get_const_tuple


def _check(op: str, data, scale, shift, rank: int, channels: tuple) -> None:
    if len(data.shape) != rank or get_const_tuple(scale.shape) != channels or get_const_tuple(shift.shape) != channels:
        raise ValueError(f"{op}: data {get_const_tuple(data.shape)} must be {rank}-D and scale "
                         f"{get_const_tuple(scale.shape)} and shift {get_const_tuple(shift.shape)} of shape {channels}")


def scale_shift_nchw(data, scale, shift):
    """``data [N, C, H, W] * scale[c] + shift[c]``."""
    _check("scale_shift_nchw", data, scale, shift, 4, (get_const_tuple(data.shape)[1],))
    return te.compute(data.shape, lambda b, c, i, j: data[b, c, i, j] * scale[c] + shift[c], name="ScaleShift",
                      tag=tag.BROADCAST)


def scale_shift_nhwc(data, scale, shift):
    """``data [N, H, W, C] * scale[c] + shift[c]``."""
    _check("scale_shift_nhwc", data, scale, shift, 4, (get_const_tuple(data.shape)[3],))
    return te.compute(data.shape, lambda b, i, j, c: data[b, i, j, c] * scale[c] + shift[c], name="ScaleShift",
                      tag=tag.BROADCAST)


def scale_shift_nchwc(data, scale, shift):
    """``data [N, C/b, H, W, b] * scale[cc, cb] + shift[cc, cb]`` (scale and shift ``[C/b, b]``)."""
    shape = get_const_tuple(data.shape)
    _check("scale_shift_nchwc", data, scale, shift, 5, (shape[1], shape[4]) if len(shape) == 5 else ())
    return te.compute(data.shape, lambda b, cc, i, j, cb: data[b, cc, i, j, cb] * scale[cc, cb] + shift[cc, cb],
                      name="ScaleShift", tag=tag.BROADCAST)
