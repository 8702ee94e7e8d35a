"""Converters of convolutions and matrix products: Conv, ConvTranspose, Gemm, MatMul.

1-D convolutions run as 2-D ones over an extent-1 H axis (reshapes around a
``conv2d``); a convolution whose groups equal its input channels becomes a
``depthwise_conv2d``; 3-D ones use ``conv3d`` (``graph.ops.extra``).  The
bias is a broadcast ``add`` of the bias reshaped to ``(OC, 1, ...)``.
"""

from __future__ import annotations

import math

from graph.ir import Value
from graph.onnx.common import kernel_shape, spatial_ints, window_pads
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


def _add_bias(ctx: Context, node: OnnxNode, y: Value, k: int = 2) -> Value:
    if not node.has_input(k):
        return y
    bias = node.input(k, "B")
    if bias.shape != (y.shape[1],):
        raise node.error(f"bias of shape {bias.shape} does not match the {y.shape[1]} output channels")
    return ctx.op("add", [y, ctx.reshape(bias, (y.shape[1],) + (1,) * (len(y.shape) - 2))])


def _conv2d(ctx: Context, x: Value, w: Value, strides, dilations, padding, group: int) -> Value:
    attrs = {"strides": tuple(strides), "padding": tuple(padding), "dilation": tuple(dilations)}
    channels = x.shape[1]
    if group > 1 and group == channels and w.shape[1] == 1:
        oc = w.shape[0]
        w = ctx.reshape(w, (channels, oc // channels) + tuple(w.shape[2:]))
        return ctx.op("depthwise_conv2d", [x, w], attrs)
    return ctx.op("conv2d", [x, w], {**attrs, "groups": group})


def _as_2d(ctx: Context, v: Value) -> Value:
    """``[N, C, W]`` -> ``[N, C, 1, W]``."""
    return ctx.reshape(v, v.shape[:2] + (1,) + v.shape[2:])


@converter("Conv")
def convert_conv(ctx: Context, node: OnnxNode) -> list:
    """1-D, 2-D and 3-D convolution with groups, dilations, pads or auto_pad, and bias."""
    x, w = node.input(0, "X"), node.input(1, "W")
    nd = len(x.shape) - 2
    if nd not in (1, 2, 3) or len(w.shape) != nd + 2:
        raise node.error(f"only 1-D, 2-D and 3-D convolutions are supported, got X {x.shape} and W {w.shape}")
    kernel = kernel_shape(node, nd, w.shape)
    strides, dilations = spatial_ints(node, "strides", nd), spatial_ints(node, "dilations", nd)
    before, after = window_pads(node, x.shape[2:], kernel, strides, dilations)
    group = int(node.attr("group", 1))
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise node.error(f"X {x.shape} and W {w.shape} do not fit group={group}")
    if nd == 3:
        y = ctx.op("conv3d", [x, w], {"strides": strides, "padding": before + after, "dilation": dilations,
                                      "groups": group})
    elif nd == 2:
        y = _conv2d(ctx, x, w, strides, dilations, (before[0], before[1], after[0], after[1]), group)
    else:
        y = _conv2d(ctx, _as_2d(ctx, x), _as_2d(ctx, w), (1, strides[0]), (1, dilations[0]),
                    (0, before[0], 0, after[0]), group)
        y = ctx.reshape(y, y.shape[:2] + y.shape[3:])
    return [_add_bias(ctx, node, y)]


def _transpose_pads(node: OnnxNode, sizes, kernel, strides, dilations, out_pad) -> tuple:
    """(before, after) of a ConvTranspose from ``output_shape``/``auto_pad`` or ``pads`` (negative
    when ``output_shape`` asks for more than the full output)."""
    nd = len(sizes)
    auto_pad = node.attr("auto_pad", "NOTSET")
    target = node.attr("output_shape")
    if target is None and auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        if auto_pad not in ("NOTSET", "VALID", ""):
            raise node.error(f"auto_pad={auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        pads = [0] * (2 * nd) if auto_pad == "VALID" else [int(p) for p in node.attr("pads", [0] * (2 * nd))]
        if len(pads) != 2 * nd:
            raise node.error(f"pads={pads} must have {2 * nd} entries (begins, then ends)")
        return tuple(pads[:nd]), tuple(pads[nd:])
    target = [int(t) for t in target][-nd:] if target is not None else [n * s for n, s in zip(sizes, strides)]
    if len(target) != nd or min(target) < 1:
        raise node.error(f"output_shape {node.attr('output_shape')} does not give {nd} positive spatial extents")
    before, after = [], []
    for n, k, s, d, op, t in zip(sizes, kernel, strides, dilations, out_pad, target):
        total = s * (n - 1) + op + (k - 1) * d + 1 - t
        small, big = total // 2, total - total // 2
        before.append(small if auto_pad == "SAME_UPPER" else big)
        after.append(big if auto_pad == "SAME_UPPER" else small)
    return tuple(before), tuple(after)


def _dilate(ctx: Context, x: Value, strides) -> Value:
    """Insert ``s - 1`` zeros after every element of each spatial axis (trailing zeros kept)::

        [a, b] (s=3) -> [a, 0, 0, b, 0, 0]
    """
    for k, s in enumerate(strides):
        if s == 1:
            continue
        a = 2 + k
        y = ctx.reshape(x, x.shape[:a + 1] + (1,) + x.shape[a + 1:])
        pad_after = [0] * len(y.shape)
        pad_after[a + 1] = s - 1
        y = ctx.op("pad", [y], {"pad_before": (0,) * len(y.shape), "pad_after": tuple(pad_after), "pad_value": 0.0})
        x = ctx.reshape(y, x.shape[:a] + (x.shape[a] * s,) + x.shape[a + 1:])
    return x


def _pad_or_crop(ctx: Context, x: Value, before, after) -> Value:
    """Pad the spatial axes by (before, after); a negative amount crops."""
    rank = len(x.shape)
    if any(p < 0 for p in (*before, *after)):
        begin = [0, 0] + [max(-b, 0) for b in before]
        end = list(x.shape[:2]) + [n - max(-e, 0) for n, e in zip(x.shape[2:], after)]
        x = ctx.op("strided_slice", [x], {"begin": tuple(begin), "end": tuple(end), "strides": (1,) * rank,
                                          "axes": tuple(range(rank))})
    pb, pa = (0, 0) + tuple(max(b, 0) for b in before), (0, 0) + tuple(max(e, 0) for e in after)
    if not any(pb) and not any(pa):
        return x
    return ctx.op("pad", [x], {"pad_before": pb, "pad_after": pa, "pad_value": 0.0})


def _transpose_as_conv(ctx: Context, node: OnnxNode, x: Value, w: Value, group: int, strides, dilations,
                       before, after, out_pad) -> Value:
    """A transposed convolution as a direct one: dilate X by the strides, pad by
    ``d * (k - 1) - pad`` (crop when negative), convolve (stride 1, dilation d) with W flipped
    and regrouped from ``[C, OC / g, k...]`` to ``[OC, C / g, k...]``."""
    nd = len(x.shape) - 2
    c, ocg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    z = _dilate(ctx, x, strides)
    lead = tuple(d * (k - 1) - b for d, k, b in zip(dilations, kernel, before))
    trail = tuple(d * (k - 1) - e + op - (s - 1) for d, k, e, op, s in zip(dilations, kernel, after, out_pad, strides))
    z = _pad_or_crop(ctx, z, lead, trail)
    wt = ctx.reshape(w, (group, c // group, ocg) + kernel)
    wt = ctx.transpose(wt, (0, 2, 1) + tuple(range(3, 3 + nd)))
    wt = ctx.reshape(wt, (group * ocg, c // group) + kernel)
    for a in range(2, 2 + nd):
        wt = ctx.reverse(wt, a)
    ones = (1,) * nd
    if nd == 3:
        return ctx.op("conv3d", [z, wt], {"strides": ones, "padding": (0,) * 6, "dilation": tuple(dilations),
                                          "groups": group})
    if nd == 2:
        return _conv2d(ctx, z, wt, ones, dilations, (0, 0, 0, 0), group)
    y = _conv2d(ctx, _as_2d(ctx, z), _as_2d(ctx, wt), (1, 1), (1, dilations[0]), (0, 0, 0, 0), group)
    return ctx.reshape(y, y.shape[:2] + y.shape[3:])


@converter("ConvTranspose")
def convert_conv_transpose(ctx: Context, node: OnnxNode) -> list:
    """1-D, 2-D and 3-D transposed convolution.  Group 1, no dilation and non-negative pads in
    1-D/2-D -> ``conv2d_transpose``; anything else (groups, dilations, 3-D, an ``output_shape``
    beyond the full output) -> :func:`_transpose_as_conv`."""
    x, w = node.input(0, "X"), node.input(1, "W")
    nd = len(x.shape) - 2
    if nd not in (1, 2, 3) or len(w.shape) != nd + 2:
        raise node.error(f"only 1-D, 2-D and 3-D transposed convolutions are supported, got X {x.shape}, W {w.shape}")
    group = int(node.attr("group", 1))
    if group < 1 or x.shape[1] != w.shape[0] or w.shape[0] % group:
        raise node.error(f"X {x.shape} and W {w.shape} do not fit group={group}")
    kernel = kernel_shape(node, nd, w.shape)
    strides, dilations = spatial_ints(node, "strides", nd), spatial_ints(node, "dilations", nd)
    out_pad = spatial_ints(node, "output_padding", nd, default=0)
    before, after = _transpose_pads(node, x.shape[2:], kernel, strides, dilations, out_pad)
    if any(p >= max(s, d) for p, s, d in zip(out_pad, strides, dilations)):
        raise node.error(f"output_padding {list(out_pad)} must be smaller than strides {list(strides)} or "
                         f"dilations {list(dilations)}")
    direct = group == 1 and nd < 3 and all(d == 1 for d in dilations) and min((*before, *after)) >= 0
    if not direct:
        return [_add_bias(ctx, node, _transpose_as_conv(ctx, node, x, w, group, strides, dilations, before, after,
                                                        out_pad))]
    if nd == 1:
        x, w = _as_2d(ctx, x), _as_2d(ctx, w)
        strides, out_pad, before, after = (1,) + strides, (0,) + out_pad, (0,) + before, (0,) + after
    attrs = {"strides": strides, "padding": (before[0], before[1], after[0], after[1]), "output_padding": out_pad}
    y = ctx.op("conv2d_transpose", [x, w], attrs)
    if nd == 1:
        y = ctx.reshape(y, y.shape[:2] + y.shape[3:])
    return [_add_bias(ctx, node, y)]


# ------------------------------------------------------------ matrix products
def _scale(ctx: Context, v: Value, factor: float) -> Value:
    return v if factor == 1.0 else ctx.op("multiply", [v, ctx.scalar(factor, v.dtype)])


@converter("Gemm")
def convert_gemm(ctx: Context, node: OnnxNode) -> list:
    """``alpha * A' @ B' + beta * C`` -> ``dense`` with weight ``[N, K]`` (B transposed by a
    ``transpose`` node unless ``transB``), a scale and a broadcast bias ``add``."""
    a, b = node.input(0, "A"), node.input(1, "B")
    if len(a.shape) > 2:  # old exporters feed N-D data and mean its flattening
        a = ctx.reshape(a, (a.shape[0], math.prod(a.shape[1:])))
    if len(a.shape) != 2 or len(b.shape) != 2:
        raise node.error(f"A {a.shape} and B {b.shape} must be 2-D")
    if node.attr("transA", 0):
        a = ctx.transpose(a, (1, 0))
    weight = b if node.attr("transB", 0) else ctx.transpose(b, (1, 0))
    y = _scale(ctx, ctx.op("dense", [a, weight]), float(node.attr("alpha", 1.0)))
    beta = float(node.attr("beta", 1.0))
    if node.has_input(2) and beta != 0.0:
        y = ctx.op("add", [y, _scale(ctx, node.input(2, "C"), beta)])
    return [y]


def _matmul_2d(ctx: Context, a: Value, b: Value) -> Value:
    """``[..., K] @ [K, N]``: flatten the leading axes of A, ``dense`` with B transposed."""
    lead = a.shape[:-1]
    y = ctx.op("dense", [ctx.reshape(a, (math.prod(lead), a.shape[-1])), ctx.transpose(b, (1, 0))])
    return ctx.reshape(y, lead + (b.shape[1],))


def _batch_shape(node: OnnxNode, x: tuple, y: tuple) -> tuple:
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + x, (1,) * (n - len(y)) + y
    out = []
    for p, q in zip(x, y):
        if p != q and 1 not in (p, q):
            raise node.error(f"batch dimensions {x} and {y} do not broadcast")
        out.append(max(p, q) if 0 not in (p, q) else 0)
    return tuple(out)


def _matmul_nd(ctx: Context, node: OnnxNode, a: Value, b: Value) -> Value:
    """Broadcast the batch axes, flatten them, ``batch_matmul``, restore them."""
    batch = _batch_shape(node, a.shape[:-2], b.shape[:-2])
    (m, k), n = a.shape[-2:], b.shape[-1]
    flat = math.prod(batch)
    xs = []
    for v, tail in ((a, (m, k)), (b, (k, n))):
        if v.shape != batch + tail:
            v = ctx.op("broadcast_to", [ctx.reshape(v, (1,) * (len(batch) + 2 - len(v.shape)) + v.shape)],
                       {"shape": batch + tail})
        xs.append(ctx.reshape(v, (flat,) + tail))
    y = ctx.op("batch_matmul", xs)
    return ctx.reshape(y, batch + (m, n))


@converter("MatMul")
def convert_matmul(ctx: Context, node: OnnxNode) -> list:
    """numpy ``matmul``: ``dense`` when B is 2-D, else ``batch_matmul``; 1-D operands
    gain and then lose a unit axis."""
    a, b = node.input(0, "A"), node.input(1, "B")
    if not a.shape or not b.shape:
        raise node.error("MatMul operands must have at least one axis")
    a2 = ctx.reshape(a, (1,) + a.shape) if len(a.shape) == 1 else a
    b2 = ctx.reshape(b, b.shape + (1,)) if len(b.shape) == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise node.error(f"A {a.shape} and B {b.shape} disagree on the contracted axis")
    y = _matmul_2d(ctx, a2, b2) if len(b2.shape) == 2 else _matmul_nd(ctx, node, a2, b2)
    shape = y.shape
    if len(a.shape) == 1:
        shape = shape[:-2] + shape[-1:]
    if len(b.shape) == 1:
        shape = shape[:-1]
    return [ctx.reshape(y, shape)]
