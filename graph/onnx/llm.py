"""Converters of the language-model operators: SwiGLU, RotaryEmbedding, TensorScatter.

All three are graph ops composed at import: SwiGLU is ``a * sigmoid(alpha a) * b``;
RotaryEmbedding gathers the cos/sin rows of each position and rotates the
halves (or the even/odd lanes) of each head; TensorScatter writes the update
into the cache as a gather from the update (``src = s - write_index``, modulo
the cache length in ``circular`` mode), so no store can leave the cache.
"""

from __future__ import annotations

import numpy as np

from graph.ir import Value
from graph.onnx.common import norm_axis
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


def _slice(ctx: Context, v: Value, begin: int, end: int, axis: int, step: int = 1) -> Value:
    return ctx.op("strided_slice", [v], {"begin": (begin,), "end": (end,), "strides": (step,), "axes": (axis,)})


@converter("SwiGLU", since=28)
def convert_swiglu(ctx: Context, node: OnnxNode) -> list:
    a, b = node.input(0, "A"), node.input(1, "B")
    if a.shape != b.shape:
        raise node.error(f"A {a.shape} and B {b.shape} must have one shape")
    alpha = float(node.attr("alpha", 1.0))
    z = a if alpha == 1.0 else ctx.op("multiply", [a, ctx.scalar(alpha, a.dtype)])
    return [ctx.op("multiply", [ctx.op("multiply", [a, ctx.op("sigmoid", [z])]), b])]


@converter("RotaryEmbedding", since=23)
def convert_rotary_embedding(ctx: Context, node: OnnxNode) -> list:
    x, cos, sin = node.input(0, "X"), node.input(1, "cos_cache"), node.input(2, "sin_cache")
    if len(x.shape) == 4:  # [B, H, S, D] -> [B, S, H, D]
        xs = ctx.transpose(x, (0, 2, 1, 3))
    elif len(x.shape) == 3:
        heads = int(node.attr("num_heads", 0))
        if heads < 1 or x.shape[2] % heads:
            raise node.error(f"a 3-D X {x.shape} needs num_heads dividing {x.shape[2]}")
        xs = ctx.reshape(x, (x.shape[0], x.shape[1], heads, x.shape[2] // heads))
    else:
        raise node.error(f"X must be 3-D or 4-D, got {x.shape}")
    b, s, h, d = xs.shape
    dim = int(node.attr("rotary_embedding_dim", 0)) or d
    half = dim // 2
    if node.has_input(3):
        pos = ctx.cast(node.input(3), "int64")
        cos, sin = (ctx.op("take", [c, pos], {"axis": 0}) for c in (cos, sin))
    if cos.shape[-1] != half or tuple(cos.shape[:2]) != (b, s):
        raise node.error(f"cos/sin caches {cos.shape} must be [{b}, {s}, {half}] after the positions")
    cos, sin = (ctx.reshape(c, (b, s, 1, half)) for c in (cos, sin))
    rot = _slice(ctx, xs, 0, dim, 3) if dim < d else xs
    if node.attr("interleaved", 0):
        x1, x2 = _slice(ctx, rot, 0, dim, 3, 2), _slice(ctx, rot, 1, dim, 3, 2)
    else:
        x1, x2 = _slice(ctx, rot, 0, half, 3), _slice(ctx, rot, half, dim, 3)
    real = ctx.op("subtract", [ctx.op("multiply", [cos, x1]), ctx.op("multiply", [sin, x2])])
    imag = ctx.op("add", [ctx.op("multiply", [sin, x1]), ctx.op("multiply", [cos, x2])])
    if node.attr("interleaved", 0):
        pair = [ctx.reshape(v, (b, s, h, half, 1)) for v in (real, imag)]
        rot = ctx.reshape(ctx.op("concatenate", pair, {"axis": 4}), (b, s, h, dim))
    else:
        rot = ctx.op("concatenate", [real, imag], {"axis": 3})
    if dim < d:
        rot = ctx.op("concatenate", [rot, _slice(ctx, xs, dim, d, 3)], {"axis": 3})
    if len(x.shape) == 4:
        return [ctx.transpose(rot, (0, 2, 1, 3))]
    return [ctx.reshape(rot, x.shape)]


@converter("TensorScatter", since=24)
def convert_tensor_scatter(ctx: Context, node: OnnxNode) -> list:
    past, update = node.input(0, "past_cache"), node.input(1, "update")
    rank = len(past.shape)
    axis = norm_axis(node, node.attr("axis", -2), rank)
    if axis == 0 or len(update.shape) != rank or any(u != p for k, (u, p) in enumerate(zip(update.shape, past.shape))
                                                   if k != axis) or update.shape[axis] > past.shape[axis]:
        raise node.error(f"update {update.shape} does not fit past_cache {past.shape} on axis {axis}")
    mode = node.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise node.error(f"mode={mode!r} is not linear or circular")
    length, window = past.shape[axis], update.shape[axis]
    if node.has_input(2):
        write = ctx.reshape(ctx.cast(node.input(2), "int64"), (past.shape[0],) + (1,) * (rank - 1))
    else:
        write = ctx.const(np.zeros((1,) * rank, np.int64), "write")
    shape = [1] * rank
    shape[axis] = length
    s = ctx.const(np.arange(length, dtype=np.int64).reshape(shape), "positions")
    src = ctx.op("subtract", [s, write])
    if mode == "circular":
        src = ctx.op("floor_mod", [src, ctx.scalar(length, "int64")])
    valid = ctx.op("logical_and", [ctx.op("greater_equal", [src, ctx.scalar(0, "int64")]),
                                   ctx.op("less", [src, ctx.scalar(window, "int64")])])
    src = ctx.op("clip", [src], {"a_min": 0, "a_max": max(window - 1, 0)})
    gather_shape = tuple(update.shape[:axis]) + (length,) + tuple(update.shape[axis + 1:])
    src = ctx.op("broadcast_to", [src], {"shape": gather_shape})
    picked = ctx.op("gather_elements", [update, src], {"axis": axis})
    return [ctx.op("where", [valid, picked, past])]
