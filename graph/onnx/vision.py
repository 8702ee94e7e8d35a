"""Converters of the detection and vision operators: Col2Im, MaxUnpool, DeformConv, RoiAlign,
GlobalLpPool."""

from __future__ import annotations

import math

import numpy as np

from graph.onnx.common import spatial_ints
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


@converter("Col2Im", since=18)
def convert_col2im(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0, "input")
    image, block = ctx.ints(node, 1, "image_shape"), ctx.ints(node, 2, "block_shape")
    k = len(image)
    if len(block) != k or len(x.shape) != 3:
        raise node.error(f"image_shape {image} and block_shape {block} must have one entry per spatial axis "
                         f"of a [N, C * prod(block), L] input, got {x.shape}")
    attrs = {"image_shape": tuple(image), "block_shape": tuple(block),
             "dilations": spatial_ints(node, "dilations", k), "strides": spatial_ints(node, "strides", k),
             "pads": tuple(int(p) for p in node.attr("pads", (0,) * (2 * k)))}
    blocks = [(image[d] + attrs["pads"][d] + attrs["pads"][d + k] - attrs["dilations"][d] * (block[d] - 1) - 1)
              // attrs["strides"][d] + 1 for d in range(k)]
    if x.shape[1] % math.prod(block) or x.shape[2] != math.prod(blocks):
        raise node.error(f"input {x.shape} does not hold blocks {block} at {blocks} positions")
    return [ctx.op("col2im", [x], attrs)]


@converter("MaxUnpool", since=9)
def convert_max_unpool(ctx: Context, node: OnnxNode) -> list:
    """Zeros with ``X`` scattered to the flat positions ``I`` (MaxPool's indices)."""
    x, idx = node.input(0, "X"), node.input(1, "I")
    nd = len(x.shape) - 2
    kernel = tuple(int(k) for k in node.required("kernel_shape"))
    strides = spatial_ints(node, "strides", nd)
    pads = tuple(int(p) for p in node.attr("pads", (0,) * (2 * nd)))
    shape = x.shape[:2] + tuple((x.shape[2 + d] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + nd]
                                for d in range(nd))
    out = tuple(ctx.ints(node, 2, "output_shape")) if node.has_input(2) else shape
    if len(out) != len(x.shape) or out[:2] != x.shape[:2] or idx.shape != x.shape or \
            any(o < s for o, s in zip(out, shape)):
        raise node.error(f"output_shape {out} / indices {idx.shape} do not fit X {x.shape} (unpooled {shape})")
    zeros = ctx.op("full", [], {"shape": (math.prod(shape),), "value": 0.0, "dtype": x.dtype})
    flat_idx = ctx.reshape(ctx.cast(idx, "int64"), (x.size, 1))
    y = ctx.reshape(ctx.op("scatter_nd", [zeros, flat_idx, ctx.reshape(x, (x.size,))], {"reduction": "none"}), shape)
    if out != shape:  # the indices address the unpooled shape; a larger output_shape pads after it
        y = ctx.op("pad", [y], {"pad_before": (0,) * len(out), "pad_after": tuple(o - s for o, s in zip(out, shape)),
                                "pad_value": 0.0})
    return [y]


@converter("DeformConv", since=19)
def convert_deform_conv(ctx: Context, node: OnnxNode) -> list:
    x, w, offset = node.input(0, "X"), node.input(1, "W"), node.input(2, "offset")
    if len(x.shape) != 4:
        raise node.error(f"only 2-D deformable convolution is supported, got X {x.shape}")
    groups, offset_groups = int(node.attr("group", 1)), int(node.attr("offset_group", 1))
    kh, kw = w.shape[2:]
    if x.shape[1] != w.shape[1] * groups or x.shape[1] % offset_groups or \
            offset.shape[1] != offset_groups * 2 * kh * kw:
        raise node.error(f"X {x.shape}, W {w.shape}, offset {offset.shape} disagree with group={groups}, "
                         f"offset_group={offset_groups}")
    pads = tuple(int(p) for p in node.attr("pads", (0, 0, 0, 0)))
    attrs = {"strides": spatial_ints(node, "strides", 2), "pads": pads[:2], "dilations": spatial_ints(node, "dilations", 2),
             "groups": groups, "offset_groups": offset_groups}
    inputs = [x, w, offset] + ([node.inputs[4]] if node.has_input(4) else [])
    y = ctx.op("deform_conv2d", inputs, attrs)
    if node.has_input(3):
        y = ctx.op("add", [y, ctx.reshape(node.inputs[3], (w.shape[0], 1, 1))])
    return [y]


@converter("RoiAlign", since=10)
def convert_roi_align(ctx: Context, node: OnnxNode) -> list:
    """``roi_align`` with a fixed sampling ratio; version 16's default transformation is
    ``half_pixel`` (earlier versions: ``output_half_pixel``)."""
    x, rois, batch = node.input(0, "X"), node.input(1, "rois"), node.input(2, "batch_indices")
    ratio = int(node.attr("sampling_ratio", 0))
    if ratio <= 0:
        raise node.error("sampling_ratio=0 (as many samples as the roi's size, known only when it runs) is not "
                         "supported; export with a fixed sampling_ratio")
    mode = node.attr("mode", "avg")
    ctm = node.attr("coordinate_transformation_mode", "half_pixel" if node.opset >= 16 else "output_half_pixel")
    if mode not in ("avg", "max") or ctm not in ("half_pixel", "output_half_pixel"):
        raise node.error(f"mode={mode!r} / coordinate_transformation_mode={ctm!r} is not supported")
    attrs = {"pooled": (int(node.attr("output_height", 1)), int(node.attr("output_width", 1))),
             "spatial_scale": float(node.attr("spatial_scale", 1.0)), "sampling_ratio": ratio, "mode": mode,
             "half_pixel": ctm == "half_pixel"}
    return [ctx.op("roi_align", [x, rois, batch], attrs)]


@converter("GlobalLpPool", since=2)
def convert_global_lp_pool(ctx: Context, node: OnnxNode) -> list:
    """``(sum over the spatial axes of |x|^p)^(1/p)``, keeping them as extent 1."""
    x = node.input(0, "X")
    p = float(node.attr("p", 2))
    axes = {"axis": tuple(range(2, len(x.shape))), "keepdims": True}
    powered = ctx.op("power", [ctx.op("abs", [x]), ctx.scalar(p, x.dtype)])
    total = ctx.op("sum", [powered], axes)
    return [ctx.op("power", [total, ctx.scalar(1.0 / p, x.dtype)])]
