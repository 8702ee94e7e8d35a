"""Converters of shape and data-movement operators: Reshape, Flatten, Transpose, Squeeze,
Unsqueeze, Concat, Split, Slice, Pad, Gather, GatherElements, Tile, Expand, DepthToSpace,
SpaceToDepth.

Every shape-like operand (a Reshape target, Slice bounds, Pad widths...) is
folded at import time (``ctx.value``); the graph keeps static shapes.
"""

from __future__ import annotations

import math

import numpy as np

from graph.onnx.common import norm_axes, norm_axis
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


def reshape_target(node: OnnxNode, shape: tuple, spec, allowzero: bool) -> tuple:
    """ONNX Reshape rules: 0 copies the input extent (unless ``allowzero``), one -1 is inferred."""
    out = []
    for k, d in enumerate(int(d) for d in spec):
        if d == 0 and not allowzero:
            if k >= len(shape):
                raise node.error(f"shape {list(spec)} copies axis {k} (0), which input {shape} lacks")
            d = shape[k]
        elif d < -1:
            raise node.error(f"shape {list(spec)} has the negative extent {d}")
        out.append(d)
    size = math.prod(shape)
    if out.count(-1) > 1:
        raise node.error(f"shape {list(spec)} has more than one -1")
    if -1 in out:
        rest = math.prod(d for d in out if d != -1)
        if rest == 0 or size % rest:
            raise node.error(f"cannot infer the -1 of shape {list(spec)} for an input of shape {shape}")
        out[out.index(-1)] = size // rest
    if math.prod(out) != size:
        raise node.error(f"cannot reshape {shape} ({size} elements) to {tuple(out)}")
    return tuple(out)


@converter("Reshape", since=1, until=4)
def convert_reshape_v1(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0)
    return [ctx.reshape(x, reshape_target(node, x.shape, node.attr("shape", []), False))]


@converter("Reshape", since=5)
def convert_reshape_v5(ctx: Context, node: OnnxNode) -> list:
    """The target shape is an input, folded at import time; ``allowzero`` from version 14."""
    x = node.input(0, "data")
    spec = ctx.ints(node, 1, "shape")
    return [ctx.reshape(x, reshape_target(node, x.shape, spec, bool(node.attr("allowzero", 0))))]


@converter("Flatten")
def convert_flatten(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0)
    rank = len(x.shape)
    axis = int(node.attr("axis", 1))
    if not -rank <= axis <= rank:
        raise node.error(f"axis={axis} is out of range for a rank-{rank} input")
    axis = axis + rank if axis < 0 else axis
    return [ctx.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))]


@converter("Transpose")
def convert_transpose(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0)
    perm = node.attr("perm") or list(reversed(range(len(x.shape))))
    if sorted(int(p) for p in perm) != list(range(len(x.shape))):
        raise node.error(f"perm={list(perm)} is not a permutation of the {len(x.shape)} axes of {x.shape}")
    return [ctx.transpose(x, perm)]


def _squeeze(ctx: Context, node: OnnxNode, axes) -> list:
    x = node.input(0)
    if axes is None or len(axes) == 0:
        axes = [k for k, d in enumerate(x.shape) if d == 1]
    axes = norm_axes(node, axes, len(x.shape))
    if any(x.shape[a] != 1 for a in axes):
        raise node.error(f"cannot squeeze axes {list(axes)} of shape {x.shape}: an extent is not 1")
    return [ctx.reshape(x, tuple(d for k, d in enumerate(x.shape) if k not in axes))]


@converter("Squeeze", since=1, until=12)
def convert_squeeze_v1(ctx: Context, node: OnnxNode) -> list:
    return _squeeze(ctx, node, node.attr("axes"))


@converter("Squeeze", since=13)
def convert_squeeze_v13(ctx: Context, node: OnnxNode) -> list:
    return _squeeze(ctx, node, ctx.ints(node, 1, "axes") if node.has_input(1) else None)


def _unsqueeze(ctx: Context, node: OnnxNode, axes) -> list:
    x = node.input(0)
    rank = len(x.shape) + len(axes)
    axes = norm_axes(node, axes, rank)
    dims = iter(x.shape)
    return [ctx.reshape(x, tuple(1 if k in axes else next(dims) for k in range(rank)))]


@converter("Unsqueeze", since=1, until=12)
def convert_unsqueeze_v1(ctx: Context, node: OnnxNode) -> list:
    return _unsqueeze(ctx, node, list(node.attr("axes", [])))


@converter("Unsqueeze", since=13)
def convert_unsqueeze_v13(ctx: Context, node: OnnxNode) -> list:
    return _unsqueeze(ctx, node, ctx.ints(node, 1, "axes"))


@converter("Concat")
def convert_concat(ctx: Context, node: OnnxNode) -> list:
    values = [node.input(k) for k in range(len(node.inputs))]
    axis = norm_axis(node, node.attr("axis", 1), len(values[0].shape))
    if len(values) == 1:
        return [values[0]]
    return [ctx.op("concatenate", values, {"axis": axis})]


def _split_sizes(ctx: Context, node: OnnxNode, extent: int) -> list:
    if node.attr("split") is not None:
        return [int(s) for s in node.attr("split")]
    if node.has_input(1):
        return ctx.ints(node, 1, "split")
    parts = int(node.attr("num_outputs", len(node.outputs)))
    if node.attr("num_outputs") is not None:  # opset 18: the last chunk may be smaller
        chunk = -(-extent // parts)
        return [min(chunk, extent - k * chunk) for k in range(parts)]
    if extent % parts:
        raise node.error(f"cannot split an axis of extent {extent} into {parts} equal parts")
    return [extent // parts] * parts


@converter("Split")
def convert_split(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0)
    axis = norm_axis(node, node.attr("axis", 0), len(x.shape))
    sizes = _split_sizes(ctx, node, x.shape[axis])
    if len(sizes) != len(node.outputs) or sum(sizes) != x.shape[axis] or min(sizes) < 0:
        raise node.error(f"split sizes {sizes} do not cut axis {axis} of {x.shape} into {len(node.outputs)} parts")
    if len(sizes) == 1:
        return [x]
    return list(ctx.op("split", [x], {"axis": axis, "sizes": tuple(sizes)}, n_out=len(sizes)))


def _slice(ctx: Context, node: OnnxNode, starts, ends, axes, steps) -> list:
    x = node.input(0)
    rank = len(x.shape)
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else list(steps)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error(f"starts {starts}, ends {ends}, axes {axes}, steps {steps} differ in length")
    axes = norm_axes(node, axes, rank)
    begin, end = [], []
    for a, b, e, s in zip(axes, starts, ends, steps):
        if s == 0:
            raise node.error(f"step 0 on axis {a}")
        lo, hi, _ = slice(int(b), int(e), int(s)).indices(x.shape[a])
        begin.append(lo)
        end.append(hi if hi >= 0 else -x.shape[a] - 1)
    if all(b == 0 and e == x.shape[a] and s == 1 for a, b, e, s in zip(axes, begin, end, steps)):
        return [x]
    attrs = {"begin": tuple(begin), "end": tuple(end), "strides": tuple(int(s) for s in steps), "axes": axes}
    return [ctx.op("strided_slice", [x], attrs)]


@converter("Slice", since=1, until=9)
def convert_slice_v1(ctx: Context, node: OnnxNode) -> list:
    """Bounds are attributes ``starts``, ``ends``, ``axes``."""
    return _slice(ctx, node, list(node.attr("starts", [])), list(node.attr("ends", [])), node.attr("axes"), None)


@converter("Slice", since=10)
def convert_slice_v10(ctx: Context, node: OnnxNode) -> list:
    """Bounds are inputs ``starts``, ``ends``, ``axes``, ``steps``, folded at import time
    (negative and huge ends follow numpy slicing, clamped to the axis)."""
    axes = ctx.ints(node, 3, "axes") if node.has_input(3) else None
    steps = ctx.ints(node, 4, "steps") if node.has_input(4) else None
    return _slice(ctx, node, ctx.ints(node, 1, "starts"), ctx.ints(node, 2, "ends"), axes, steps)


def pad_indices(node: OnnxNode, mode: str, n: int, before: int, after: int) -> np.ndarray:
    """The source index of each position of an axis of extent ``n`` padded by (before, after):
    ``edge`` repeats the border, ``reflect`` mirrors without repeating it, ``wrap`` is periodic."""
    k = np.arange(-before, n + after)
    if mode == "edge":
        return np.clip(k, 0, n - 1)
    if mode == "wrap":
        return np.mod(k, n)
    if n == 1:
        return np.zeros_like(k)
    period = 2 * (n - 1)
    k = np.mod(k, period)
    return np.where(k < n, k, period - k)


def _pad_gather(ctx: Context, node: OnnxNode, x, mode: str, before: list, after: list) -> list:
    """``edge``/``reflect``/``wrap`` padding as one ``take`` per padded axis (indices known at import)."""
    for a, (b, e) in enumerate(zip(before, after)):
        if b == 0 and e == 0:
            continue
        n = x.shape[a]
        if n == 0:
            raise node.error(f"mode={mode!r} cannot pad axis {a} of extent {n} by ({b}, {e})")
        idx = pad_indices(node, mode, n, b, e).astype(np.int64)
        x = ctx.op("take", [x, ctx.const(idx, "indices")], {"axis": a})
    return [x]


def _pad(ctx: Context, node: OnnxNode, pads: list, value: float, axes=None) -> list:
    x = node.input(0, "data")
    mode = node.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise node.error(f"mode={mode!r} is not one of constant, reflect, edge, wrap")
    rank = len(x.shape)
    axes = list(range(rank)) if axes is None else list(norm_axes(node, axes, rank))
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads {pads} must have {2 * len(axes)} entries (begins, then ends)")
    before, after = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        before[a], after[a] = int(pads[k]), int(pads[k + len(axes)])
    for a, (b, e) in enumerate(zip(before, after)):
        if x.shape[a] + min(b, 0) + min(e, 0) < 0:
            raise node.error(f"pads {pads} crop axis {a} of extent {x.shape[a]} by {-min(b, 0) - min(e, 0)}")
    if any(p < 0 for p in before + after):  # negative pads crop
        begin = [max(-b, 0) for b in before]
        end = [d - max(-e, 0) for d, e in zip(x.shape, after)]
        x = ctx.op("strided_slice", [x], {"begin": tuple(begin), "end": tuple(end), "strides": (1,) * rank,
                                          "axes": tuple(range(rank))})
        before, after = [max(b, 0) for b in before], [max(e, 0) for e in after]
    if not any(before) and not any(after):
        return [x]
    if mode != "constant":
        return _pad_gather(ctx, node, x, mode, before, after)
    return [ctx.op("pad", [x], {"pad_before": tuple(before), "pad_after": tuple(after), "pad_value": value})]


@converter("Pad", since=1, until=10)
def convert_pad_v1(ctx: Context, node: OnnxNode) -> list:
    """Widths are the attribute ``pads`` (``paddings`` in version 1) and ``value``."""
    pads = node.attr("pads", node.attr("paddings"))
    if pads is None:
        raise node.error("attribute pads is required")
    return _pad(ctx, node, list(pads), float(node.attr("value", 0.0)))


@converter("Pad", since=11)
def convert_pad_v11(ctx: Context, node: OnnxNode) -> list:
    """Widths, the constant and (version 18) the axes are inputs, folded at import time."""
    value = ctx.optional_value(node, 2, "constant_value")
    value = 0.0 if value is None or value.size == 0 else value.reshape(-1)[0].item()
    axes = ctx.ints(node, 3, "axes") if node.has_input(3) else None
    return _pad(ctx, node, ctx.ints(node, 1, "pads"), value, axes)


@converter("Gather")
def convert_gather(ctx: Context, node: OnnxNode) -> list:
    """``take`` along ``axis`` (negative indices count from the end)."""
    data, indices = node.input(0, "data"), node.input(1, "indices")
    if indices.dtype not in ("int32", "int64"):
        raise node.error(f"indices must be int32 or int64, got {indices.dtype}")
    axis = norm_axis(node, node.attr("axis", 0), len(data.shape))
    return [ctx.op("take", [data, indices], {"axis": axis})]


@converter("GatherElements", since=11)
def convert_gather_elements(ctx: Context, node: OnnxNode) -> list:
    """``gather_elements`` (``graph.ops.extra``): ``out[i, j] = data[i, indices[i, j]]`` for axis 1."""
    data, indices = node.input(0, "data"), node.input(1, "indices")
    axis = norm_axis(node, node.attr("axis", 0), len(data.shape))
    return [ctx.op("gather_elements", [data, indices], {"axis": axis})]


@converter("Tile", since=6)
def convert_tile(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0)
    reps = ctx.ints(node, 1, "repeats")
    if len(reps) != len(x.shape) or min(reps, default=1) < 1:
        raise node.error(f"repeats {reps} must be {len(x.shape)} positive ints")
    if all(r == 1 for r in reps):
        return [x]
    return [ctx.op("tile", [x], {"reps": tuple(reps)})]


@converter("Expand", since=8)
def convert_expand(ctx: Context, node: OnnxNode) -> list:
    """``broadcast_to`` the bidirectional broadcast of the input shape and ``shape``."""
    x = node.input(0)
    target = ctx.ints(node, 1, "shape")
    try:
        out = tuple(int(d) for d in np.broadcast_shapes(x.shape, tuple(target)))
    except ValueError:
        raise node.error(f"shape {target} does not broadcast with the input shape {x.shape}") from None
    if out == x.shape:
        return [x]
    x = ctx.reshape(x, (1,) * (len(out) - len(x.shape)) + x.shape)
    return [ctx.op("broadcast_to", [x], {"shape": out})]


def _blocked_input(node: OnnxNode) -> tuple:
    x, b = node.input(0), int(node.required("blocksize"))
    if len(x.shape) != 4 or b < 1:
        raise node.error(f"needs a 4-D NCHW input and a positive blocksize, got {x.shape} and {b}")
    return x, b


@converter("DepthToSpace")
def convert_depth_to_space(ctx: Context, node: OnnxNode) -> list:
    """Reshape, transpose, reshape (DCR or CRD order)."""
    x, b = _blocked_input(node)
    n, c, h, w = x.shape
    if c % (b * b):
        raise node.error(f"channels {c} are not a multiple of blocksize^2 = {b * b}")
    if node.attr("mode", "DCR") == "DCR":
        y = ctx.transpose(ctx.reshape(x, (n, b, b, c // (b * b), h, w)), (0, 3, 4, 1, 5, 2))
    else:
        y = ctx.transpose(ctx.reshape(x, (n, c // (b * b), b, b, h, w)), (0, 1, 4, 2, 5, 3))
    return [ctx.reshape(y, (n, c // (b * b), h * b, w * b))]


@converter("SpaceToDepth")
def convert_space_to_depth(ctx: Context, node: OnnxNode) -> list:
    x, b = _blocked_input(node)
    n, c, h, w = x.shape
    if h % b or w % b:
        raise node.error(f"H, W of {x.shape} are not multiples of blocksize {b}")
    y = ctx.reshape(x, (n, c, h // b, b, w // b, b))
    if node.attr("mode", "DCR") == "CRD":  # version 28: channels outermost
        y = ctx.transpose(y, (0, 1, 3, 5, 2, 4))
    else:
        y = ctx.transpose(y, (0, 3, 5, 1, 2, 4))
    return [ctx.reshape(y, (n, c * b * b, h // b, w // b))]
