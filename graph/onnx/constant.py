"""Converters of constants and pass-throughs: Constant, ConstantOfShape, Range, Shape, Size,
Identity, Dropout.

``ConstantOfShape`` stays a ``full`` node and ``Shape`` a ``shape_of`` node:
the constant-folding pass folds them; converters that need their values
fold them on demand (``ctx.value``).
"""

from __future__ import annotations

import numpy as np

from graph.onnx.context import Context, OnnxNode
from te.dtype import SCALARS
from graph.onnx.table import converter

_SCALAR_ATTRS = {"value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                 "value_ints": np.int64}


@converter("Constant")
def convert_constant(ctx: Context, node: OnnxNode) -> list:
    """A ``constant`` node from ``value`` or ``value_float(s)``/``value_int(s)``."""
    if "value" in node.attrs:
        array = np.asarray(node.attrs["value"])
    else:
        found = [k for k in _SCALAR_ATTRS if k in node.attrs]
        if not found:
            others = sorted(node.attrs) or ["none"]
            raise node.error(f"only value, value_float(s) and value_int(s) are supported, got {others}")
        array = np.array(node.attrs[found[0]], dtype=_SCALAR_ATTRS[found[0]])
    if str(array.dtype) not in SCALARS:
        raise node.error(f"attribute value holds {array.dtype}, a type the compiler cannot represent; "
                         f"supported: {', '.join(SCALARS)}")
    return [ctx.const(np.array(array, order="C"), "value")]


@converter("ConstantOfShape", since=9)
def convert_constant_of_shape(ctx: Context, node: OnnxNode) -> list:
    """``full`` of the folded ``shape`` input, filled with ``value`` (default float32 0)."""
    shape = tuple(ctx.ints(node, 0, "shape"))
    if any(d < 0 for d in shape):
        raise node.error(f"shape {list(shape)} has a negative extent")
    value = np.asarray(node.attr("value", np.zeros(1, np.float32)))
    if value.size != 1:
        raise node.error(f"value must hold one element, got shape {value.shape}")
    if str(value.dtype) not in SCALARS:
        raise node.error(f"attribute value holds {value.dtype}, a type the compiler cannot represent; "
                         f"supported: {', '.join(SCALARS)}")
    attrs = {"shape": shape, "value": value.reshape(-1)[0].item(), "dtype": str(value.dtype)}
    return [ctx.op("full", [], attrs)]


@converter("Range", since=11)
def convert_range(ctx: Context, node: OnnxNode) -> list:
    """A constant: ``start``, ``limit`` and ``delta`` must be known at import time."""
    start, limit, delta = (ctx.value(node, k, what).reshape(-1)[0] for k, what in
                           enumerate(("start", "limit", "delta")))
    if delta == 0:
        raise node.error("delta is 0")
    count = max(int(np.ceil((limit - start) / delta)), 0)
    return [ctx.const((start + np.arange(count) * delta).astype(start.dtype), "range")]


@converter("Shape")
def convert_shape(ctx: Context, node: OnnxNode) -> list:
    """``shape_of`` (its input's static shape); ``start``/``end`` (version 15) slice it."""
    x = node.input(0)
    shape = ctx.op("shape_of", [x])
    rank = len(x.shape)
    start, end = int(node.attr("start", 0)), node.attr("end")
    lo, hi, _ = slice(start, None if end is None else int(end)).indices(rank)
    if (lo, hi) == (0, rank):
        return [shape]
    attrs = {"begin": (lo,), "end": (max(hi, lo),), "strides": (1,), "axes": (0,)}
    return [ctx.op("strided_slice", [shape], attrs)]


@converter("Size")
def convert_size(ctx: Context, node: OnnxNode) -> list:
    """The (static) element count, as an int64 constant."""
    return [ctx.const(np.array(node.input(0).size, dtype=np.int64), "size")]


@converter("Identity")
def convert_identity(ctx: Context, node: OnnxNode) -> list:
    return [node.input(0)]


@converter("Dropout")
def convert_dropout(ctx: Context, node: OnnxNode) -> list:
    """Inference (or training with ratio 0): the identity, and a ``mask`` of all True.  Training
    mode with a ratio above 0 and a ``seed`` attribute: onnx's reference mask,
    ``RandomState(seed).uniform(0, 1, shape) >= ratio`` (numpy's MT19937), which the reference
    draws afresh on every call and so is the same for every call: it is computed here once, and
    ``y = x * (mask / (1 - ratio))``.  Without a seed the mask is random per call: refused."""
    x = node.input(0, "data")
    if node.has_input(2) and bool(np.asarray(ctx.value(node, 2, "training_mode")).reshape(-1)[0]):
        ratio = ctx.value(node, 1, "ratio").reshape(-1)[0].item() if node.has_input(1) else 0.5
        if ratio != 0.0:
            return _seeded_dropout(ctx, node, x, ratio)
    mask = ctx.op("full", [], {"shape": x.shape, "value": True, "dtype": "bool"}) if len(node.outputs) > 1 else None
    return [x, mask]


def _seeded_dropout(ctx: Context, node: OnnxNode, x, ratio: float) -> list:
    seed = node.attr("seed")
    if seed is None or not 0 <= int(seed) < 2**32:
        raise node.error(f"input 2 (training_mode) is True with ratio={ratio}: random dropout is not supported "
                         f"without a seed attribute in [0, 2**32) (got {seed}; with one: onnx's reference mask), "
                         f"use inference or ratio 0")
    if not 0.0 < ratio < 1.0 or not x.dtype.startswith("float"):
        raise node.error(f"training dropout needs 0 <= ratio < 1 and floating data, got ratio={ratio}, "
                         f"data {x.dtype}")
    keep = np.random.RandomState(int(seed)).uniform(0.0, 1.0, x.shape) >= ratio
    r = np.asarray(ctx.value(node, 1, "ratio")).reshape(-1)[0] if node.has_input(1) else 0.5
    scale = np.asarray(1.0 / (1.0 - r)).astype(x.dtype)  # as the reference: in the ratio's type
    y = ctx.op("multiply", [x, ctx.const(keep.astype(x.dtype) * scale, "dropout_scale")])
    return [y, ctx.const(keep, "dropout_mask") if len(node.outputs) > 1 else None]
