"""``pad``: constant padding of a tensor (classic ``topi.nn.pad``).

A padded tensor is its own stage: a schedule computes it into a padded
buffer (or inlines it where no guard is needed), so the consumer's inner
loop reads without a bounds check and stays vectorizable.
"""

from __future__ import annotations


import te
from topi import tag
from topi.utils import get_const_tuple


def _check_widths(data, pad_before, pad_after) -> tuple[list[int], list[int]]:
    ndim = len(data.shape)
    before = list(pad_before)
    after = list(pad_before if pad_after is None else pad_after)
    for arg, widths in (("pad_before", before), ("pad_after", after)):
        if len(widths) != ndim:
            raise ValueError(
                f"pad: argument {arg} has {len(widths)} entries {tuple(widths)}, but the input "
                f"of shape {get_const_tuple(data.shape)} has rank {ndim}; give one width per axis"
            )
        if any(int(w) < 0 for w in widths):
            raise ValueError(f"pad: argument {arg}={tuple(widths)} has a negative width")
    return [int(w) for w in before], [int(w) for w in after]


def pad(data: te.Tensor, pad_before, pad_after=None, pad_value=0.0, name: str = "PadInput") -> te.Tensor:
    """Pad ``data`` with ``pad_value``: ``out.shape[i] = before[i] + shape[i] + after[i]``.

    Parameters
    ----------
    data : te.Tensor
        The input, of any rank.
    pad_before : sequence of int
        Elements added before each axis.
    pad_after : sequence of int, optional
        Elements added after each axis (default: ``pad_before``).
    pad_value : float
        The constant written into the border.
    name : str
        The stage name.

    Returns
    -------
    te.Tensor
        The padded tensor (tag ``injective``).  Axes without padding read
        ``data`` directly; the others select ``pad_value`` outside the input.
    """
    before, after = _check_widths(data, pad_before, pad_after)
    shape = get_const_tuple(data.shape)
    out_shape = tuple(b + s + a for b, s, a in zip(before, shape, after))
    value = te.const(pad_value, data.dtype)

    def fcompute(*idx):
        conds, src = [], []
        for i, b, a, s in zip(idx, before, after, shape):
            src.append(i - b if b else i)
            if b:
                conds.append(i >= b)
            if a:
                conds.append(i < b + s)
        if not conds:
            return data(*src)
        return te.if_then_else(te.all(*conds), data(*src), value)

    return te.compute(out_shape, fcompute, name=name, tag=tag.INJECTIVE)


def pad_spatial(data, pads: tuple, layout: str, name: str = "PadInput"):
    """Pad the H and W dimensions of ``data`` by ``(top, left, bottom, right)``.

    ``layout`` is "NCHW", "NHWC", "HWCN" or a blocked "NCHW[x]c" (H, W at 2, 3);
    ``data`` itself comes back when there is nothing to pad.
    """
    t, l, b, r = pads
    if not t + l + b + r:
        return data
    h = {"NHWC": 1, "HWCN": 0}.get(layout, 2)
    before = [0] * len(data.shape)
    after = [0] * len(data.shape)
    before[h], before[h + 1], after[h], after[h + 1] = t, l, b, r
    return pad(data, before, after, name=name)
