"""Converters of pooling and normalisation: MaxPool, AveragePool, global pools, LRN,
BatchNormalization, InstanceNormalization, LayerNormalization.

1-D pooling runs as 2-D pooling over an extent-1 H axis; 3-D pooling uses
``pool3d`` (``graph.ops.extra``).
"""

from __future__ import annotations

from graph.ir import Value
from graph.onnx.common import kernel_shape, norm_axis, spatial_ints, window_pads
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


def _ceil_mode(node: OnnxNode):
    """ONNX rounds up with the last window starting inside the input or its leading padding."""
    return "inside" if node.attr("ceil_mode", 0) else False


def _pool(ctx: Context, node: OnnxNode, pool_type: str) -> Value:
    x = node.input(0, "X")
    nd = len(x.shape) - 2
    if nd not in (1, 2, 3):
        raise node.error(f"only 1-D, 2-D and 3-D pooling is supported, got X {x.shape}")
    kernel = kernel_shape(node, nd)
    strides, dilations = spatial_ints(node, "strides", nd), spatial_ints(node, "dilations", nd)
    before, after = window_pads(node, x.shape[2:], kernel, strides, dilations)
    attrs = {"pool_type": pool_type, "ceil_mode": _ceil_mode(node),
             "count_include_pad": bool(node.attr("count_include_pad", 0))}
    if nd == 3:
        return ctx.op("pool3d", [x], {**attrs, "kernel": kernel, "strides": strides, "dilation": dilations,
                                      "padding": before + after})
    if nd == 2:
        return ctx.op("pool2d", [x], {**attrs, "kernel": kernel, "strides": strides, "dilation": dilations,
                                      "padding": (before[0], before[1], after[0], after[1])})
    x4 = ctx.reshape(x, x.shape[:2] + (1,) + x.shape[2:])
    y = ctx.op("pool2d", [x4], {**attrs, "kernel": (1,) + kernel, "strides": (1,) + strides,
                                "dilation": (1,) + dilations, "padding": (0, before[0], 0, after[0])})
    return ctx.reshape(y, y.shape[:2] + y.shape[3:])


@converter("MaxPool")
def convert_max_pool(ctx: Context, node: OnnxNode) -> list:
    """Max pooling (pads, strides, dilations, ceil_mode, auto_pad); with the Indices output
    (1-D and 2-D) ``max_pool2d_with_indices``: int64 flat input indices in ``storage_order``."""
    if len(node.outputs) > 1 and node.outputs[1]:
        return _max_pool_with_indices(ctx, node)
    return [_pool(ctx, node, "max")]


def _max_pool_with_indices(ctx: Context, node: OnnxNode) -> list:
    x = node.input(0, "X")
    nd = len(x.shape) - 2
    if nd not in (1, 2):
        raise node.error(f"the Indices output is supported for 1-D and 2-D pooling only, got X {x.shape}")
    order = int(node.attr("storage_order", 0))
    if order not in (0, 1):
        raise node.error(f"storage_order={order} is not 0 (row major) or 1 (column major)")
    kernel = kernel_shape(node, nd)
    strides, dilations = spatial_ints(node, "strides", nd), spatial_ints(node, "dilations", nd)
    before, after = window_pads(node, x.shape[2:], kernel, strides, dilations)
    attrs = {"ceil_mode": _ceil_mode(node), "storage_order": order}
    if nd == 2:
        return list(ctx.op("max_pool2d_with_indices", [x], {
            **attrs, "kernel": kernel, "strides": strides, "dilation": dilations,
            "padding": (before[0], before[1], after[0], after[1])}, n_out=2))
    # 1-D as 2-D over an extent-1 H axis: the flat index (n*C + c)*W + w is the same in either order
    x4 = ctx.reshape(x, x.shape[:2] + (1,) + x.shape[2:])
    y, i = ctx.op("max_pool2d_with_indices", [x4], {
        **attrs, "kernel": (1,) + kernel, "strides": (1,) + strides, "dilation": (1,) + dilations,
        "padding": (0, before[0], 0, after[0])}, n_out=2)
    return [ctx.reshape(y, y.shape[:2] + y.shape[3:]), ctx.reshape(i, i.shape[:2] + i.shape[3:])]


@converter("AveragePool")
def convert_average_pool(ctx: Context, node: OnnxNode) -> list:
    """Average pooling; ``count_include_pad`` chooses the divisor at the borders.  Over an input
    with an empty spatial axis every window is padding only: the mean of no element is NaN (0
    when the padding counts), as onnx's reference."""
    y = _pool(ctx, node, "avg")
    x = node.input(0, "X")
    if 0 in x.shape[2:] and y.size and not node.attr("count_include_pad", 0) and x.dtype.startswith("float"):
        return [ctx.op("full", [], {"shape": y.shape, "value": float("nan"), "dtype": y.dtype})]
    return [y]


def _global(ctx: Context, node: OnnxNode, pool_type: str) -> list:
    x = node.input(0, "X")
    if len(x.shape) == 4:
        return [ctx.op("global_pool", [x], {"pool_type": pool_type})]
    if len(x.shape) < 3:
        raise node.error(f"X {x.shape} has no spatial axes")
    axes = tuple(range(2, len(x.shape)))
    return [ctx.op("mean" if pool_type == "avg" else "max", [x], {"axis": axes, "keepdims": True})]


@converter("GlobalAveragePool")
def convert_global_average_pool(ctx: Context, node: OnnxNode) -> list:
    return _global(ctx, node, "avg")


@converter("GlobalMaxPool")
def convert_global_max_pool(ctx: Context, node: OnnxNode) -> list:
    return _global(ctx, node, "max")


@converter("LRN")
def convert_lrn(ctx: Context, node: OnnxNode) -> list:
    """Across-channel LRN: ``x / (bias + alpha / size * sum x^2) ** beta``."""
    attrs = {"size": int(node.required("size")), "alpha": float(node.attr("alpha", 1e-4)),
             "beta": float(node.attr("beta", 0.75)), "bias": float(node.attr("bias", 1.0))}
    return [ctx.op("lrn", [node.input(0)], attrs)]


@converter("BatchNormalization")
def convert_batch_norm(ctx: Context, node: OnnxNode) -> list:
    """Inference batch norm over axis 1; ``training_mode`` normalises with the batch statistics
    and returns the running mean and variance (``momentum`` blends them in)."""
    if node.attr("training_mode", 0):
        return _batch_norm_training(ctx, node)
    if not node.attr("spatial", 1):
        raise node.error("spatial=0 (per-activation statistics) is not supported")
    x = node.input(0, "X")
    if len(x.shape) < 2:
        raise node.error(f"X {x.shape} has no channel axis")
    args = [x] + [node.input(k, what) for k, what in enumerate(("scale", "B", "mean", "var"), 1)]
    return [ctx.op("batch_norm", args, {"axis": 1, "epsilon": float(node.attr("epsilon", 1e-5))})]


def _batch_norm_training(ctx: Context, node: OnnxNode) -> list:
    """``y = (x - m) / sqrt(v + eps) * scale + B`` with m, v the mean and (population) variance
    of each channel over the batch; running_mean = mean * momentum + m * (1 - momentum), alike
    for the variance."""
    x = node.input(0, "X")
    if len(x.shape) < 2:
        raise node.error(f"X {x.shape} has no channel axis")
    c, rank = x.shape[1], len(x.shape)
    axes = (0,) + tuple(range(2, rank))
    per_channel = (c,) + (1,) * (rank - 2)
    mean = ctx.op("mean", [x], {"axis": axes, "keepdims": True})
    centered = ctx.op("subtract", [x, mean])
    var = ctx.op("mean", [ctx.op("multiply", [centered, centered])], {"axis": axes, "keepdims": True})
    eps = ctx.scalar(float(node.attr("epsilon", 1e-5)), x.dtype)
    y = ctx.op("divide", [centered, ctx.op("sqrt", [ctx.op("add", [var, eps])])])
    y = ctx.op("multiply", [y, ctx.reshape(node.input(1, "scale"), per_channel)])
    y = ctx.op("add", [y, ctx.reshape(node.input(2, "B"), per_channel)])
    momentum = float(node.attr("momentum", 0.9))
    running = []
    for k, stat in ((3, mean), (4, var)):
        old = ctx.op("multiply", [node.input(k), ctx.scalar(momentum, x.dtype)])
        new = ctx.op("multiply", [ctx.reshape(stat, (c,)), ctx.scalar(1.0 - momentum, x.dtype)])
        running.append(ctx.op("add", [old, new]))
    return [y, *running]


@converter("InstanceNormalization")
def convert_instance_norm(ctx: Context, node: OnnxNode) -> list:
    """``(x - mean) / sqrt(var + eps) * scale + B`` with statistics over the spatial axes of
    each (n, c), composed from ``mean``/``subtract``/``multiply``/``sqrt``/``divide``."""
    x, scale, bias = node.input(0, "input"), node.input(1, "scale"), node.input(2, "B")
    if len(x.shape) < 3:
        raise node.error(f"input {x.shape} has no spatial axes")
    axes = tuple(range(2, len(x.shape)))
    normed = _normalize(ctx, x, axes, float(node.attr("epsilon", 1e-5)))
    per_channel = (x.shape[1],) + (1,) * len(axes)
    y = ctx.op("multiply", [normed, ctx.reshape(scale, per_channel)])
    return [ctx.op("add", [y, ctx.reshape(bias, per_channel)])]


def _normalize(ctx: Context, x: Value, axes: tuple, epsilon: float) -> Value:
    """``(x - mean) / sqrt(var + epsilon)`` with statistics over ``axes``."""
    centered = ctx.op("subtract", [x, ctx.op("mean", [x], {"axis": axes, "keepdims": True})])
    var = ctx.op("mean", [ctx.op("multiply", [centered, centered])], {"axis": axes, "keepdims": True})
    eps = ctx.scalar(epsilon, x.dtype)
    return ctx.op("divide", [centered, ctx.op("sqrt", [ctx.op("add", [var, eps])])])


@converter("LayerNormalization", since=17)
def convert_layer_norm(ctx: Context, node: OnnxNode) -> list:
    """Normalise over the axes from ``axis`` on, then ``* Scale + B`` (broadcast).  The statistics
    are computed in ``stash_type`` (1: float32, 11: float64) and are the outputs Mean and
    InvStdDev (``1 / sqrt(var + epsilon)``, extent 1 on the normalised axes)."""
    x = node.input(0, "X")
    axis = norm_axis(node, node.attr("axis", -1), len(x.shape))
    stash = {1: "float32", 11: "float64"}.get(int(node.attr("stash_type", 1)))
    if stash is None:
        raise node.error(f"stash_type={node.attr('stash_type')} is not 1 (float32) or 11 (float64)")
    axes = tuple(range(axis, len(x.shape)))
    xs = ctx.cast(x, stash)
    mean = ctx.op("mean", [xs], {"axis": axes, "keepdims": True})
    centered = ctx.op("subtract", [xs, mean])
    var = ctx.op("mean", [ctx.op("multiply", [centered, centered])], {"axis": axes, "keepdims": True})
    eps = ctx.scalar(float(node.attr("epsilon", 1e-5)), stash)
    inv_std = ctx.op("reciprocal", [ctx.op("sqrt", [ctx.op("add", [var, eps])])])
    y = ctx.op("multiply", [ctx.cast(ctx.op("multiply", [centered, inv_std]), x.dtype), node.input(1, "Scale")])
    y = ctx.op("add", [y, node.input(2)]) if node.has_input(2) else y
    return [y, mean, inv_std]
