"""Attribute helpers shared by converters: spatial windows, auto_pad, axes."""

from __future__ import annotations

import math

from graph.onnx.context import OnnxNode


def spatial_ints(node: OnnxNode, key: str, nd: int, default: int = 1) -> tuple:
    """A per-spatial-axis attribute (strides, dilations), checked to have ``nd`` entries."""
    value = node.attr(key)
    if value is None:
        return (default,) * nd
    value = tuple(int(v) for v in value)
    if len(value) != nd:
        raise node.error(f"attribute {key}={list(value)} must have {nd} entries (one per spatial axis)")
    return value


def kernel_shape(node: OnnxNode, nd: int, weight_shape=None) -> tuple:
    """``kernel_shape``, or the weight's spatial extents when the attribute is absent."""
    k = node.attr("kernel_shape")
    if k is None:
        if weight_shape is None:
            raise node.error("attribute kernel_shape is required")
        return tuple(int(d) for d in weight_shape[2:])
    k = tuple(int(d) for d in k)
    if len(k) != nd or (weight_shape is not None and k != tuple(weight_shape[2:])):
        raise node.error(f"kernel_shape {list(k)} does not fit {nd} spatial axes"
                         + (f" and weight {tuple(weight_shape)}" if weight_shape is not None else ""))
    return k


def window_pads(node: OnnxNode, sizes, kernel, strides, dilations) -> tuple:
    """(before, after) padding per spatial axis from ``auto_pad`` or ``pads``.

    ``SAME_UPPER``/``SAME_LOWER`` pad so that ``out = ceil(in / stride)``; the
    odd element goes after (UPPER) or before (LOWER) the input.
    """
    nd = len(sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        before, after = [], []
        for n, k, s, d in zip(sizes, kernel, strides, dilations):
            total = max(0, (math.ceil(n / s) - 1) * s + (k - 1) * d + 1 - n)
            small, big = total // 2, total - total // 2
            before.append(small if auto_pad == "SAME_UPPER" else big)
            after.append(big if auto_pad == "SAME_UPPER" else small)
        return tuple(before), tuple(after)
    if auto_pad == "VALID":
        return (0,) * nd, (0,) * nd
    if auto_pad not in ("NOTSET", ""):
        raise node.error(f"auto_pad={auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    pads = tuple(int(p) for p in node.attr("pads", (0,) * (2 * nd)))
    if len(pads) != 2 * nd or any(p < 0 for p in pads):
        raise node.error(f"pads={list(pads)} must be {2 * nd} non-negative ints (begins, then ends)")
    return pads[:nd], pads[nd:]


def norm_axis(node: OnnxNode, axis: int, rank: int, what: str = "axis") -> int:
    """``axis`` in ``[0, rank)`` (negative counts from the end)."""
    if not -rank <= int(axis) < rank:
        raise node.error(f"{what}={axis} is out of range for a rank-{rank} input")
    return int(axis) % rank


def norm_axes(node: OnnxNode, axes, rank: int, what: str = "axes") -> tuple:
    out = tuple(norm_axis(node, a, rank, what) for a in axes)
    if len(set(out)) != len(out):
        raise node.error(f"{what}={list(axes)} repeats an axis")
    return out
