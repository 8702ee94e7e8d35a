"""Padding arguments of the convolutions as per-axis widths (classic ``topi.nn.utils``).

A conv's ``padding`` is an int (every side), one width per spatial axis (both sides), the
widths before then after every axis (``(front, top, left, back, bottom, right)`` in 3-D),
or ``"SAME"`` / ``"VALID"``.  ``"SAME"`` pads ``K - 1`` along an axis of (dilated) kernel
extent ``K``, the odd element before (as classic TVM).
"""

from __future__ import annotations

from topi.nn.conv2d import get_pad_tuple  # noqa: F401  (the 2-D form, (top, left, bottom, right))


def get_pad_tuple_nd(padding, kernel: tuple, op: str = "conv") -> tuple[tuple, tuple]:
    """``(before, after)``: the padding of each of the ``len(kernel)`` spatial axes."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return (0,) * nd, (0,) * nd
        if padding.upper() != "SAME":
            raise ValueError(f"{op}: argument padding={padding!r}: use an int, a tuple, 'SAME' or 'VALID'")
        total = [int(k) - 1 for k in kernel]
        return tuple((t + 1) // 2 for t in total), tuple(t - (t + 1) // 2 for t in total)
    pads = (int(padding),) * nd if isinstance(padding, int) else tuple(int(p) for p in padding)
    if len(pads) == nd:
        pads = pads * 2
    if len(pads) != 2 * nd or min(pads) < 0:
        raise ValueError(f"{op}: argument padding={padding!r} must be a non-negative int or a tuple of "
                         f"{nd} or {2 * nd} of them")
    return pads[:nd], pads[nd:]


def get_pad_tuple1d(padding, kernel) -> tuple[int, int]:
    """``(left, right)`` of a 1-D conv with kernel extent ``kernel`` (an int or a 1-tuple)."""
    k = kernel if isinstance(kernel, int) else kernel[0]
    (left,), (right,) = get_pad_tuple_nd(padding, (k,), "conv1d")
    return left, right


def get_pad_tuple3d(padding, kernel: tuple) -> tuple[int, int, int, int, int, int]:
    """``(front, top, left, back, bottom, right)`` of a 3-D conv with kernel ``(KD, KH, KW)``."""
    before, after = get_pad_tuple_nd(padding, tuple(kernel), "conv3d")
    return (*before, *after)


__all__ = ["get_pad_tuple", "get_pad_tuple1d", "get_pad_tuple3d", "get_pad_tuple_nd"]
