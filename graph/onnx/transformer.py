"""Transformer operators: Attention (opsets 23-25), RMSNormalization (opset 23), Trilu.

``Attention`` converts to the fused ``attention`` graph operator over
``[B*H, S, D]`` slices (reshapes around it; grouped-query heads, the KV
cache, causal/window/padding masks and softcap included), or to a
decomposition when the ``qk_matmul_output`` output needs the scores
(:mod:`graph.onnx.attention`); ``RMSNormalization`` to
``rms_norm``; ``Trilu`` to a ``where`` with a constant triangle (folded when
its input is constant, as a causal mask built with ``torch.tril`` is).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from onnx import TensorProto

from graph.ir import Value
from graph.onnx.attention import (
    MAX_BFLOAT16_KEYS,
    AttentionDims,
    additive_bias,
    append_kv_cache,
    decompose_attention,
    fused_attention,
    to_heads,
)
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter
from topi import narrow


@converter("Trilu", since=14)
def convert_trilu(ctx: Context, node: OnnxNode) -> list:
    """Keep the upper (``upper=1``) or lower triangle of the last two axes from diagonal ``k``."""
    x = node.input(0, "input")
    if len(x.shape) < 2:
        raise node.error(f"input {x.shape} must have at least 2 axes")
    k = int(ctx.value(node, 1, "k").reshape(-1)[0]) if node.has_input(1) else 0
    n, m = x.shape[-2:]
    rows, cols = np.arange(n)[:, None], np.arange(m)[None, :]
    keep = cols - rows >= k if node.attr("upper", 1) else cols - rows <= k
    return [ctx.op("where", [ctx.const(keep, "triangle"), x, ctx.scalar(0, x.dtype)])]


@converter("RMSNormalization", since=23)
def convert_rms_norm(ctx: Context, node: OnnxNode) -> list:
    """``x / sqrt(mean(x^2 over axes >= axis) + eps) * scale``: the trailing axes are folded into one."""
    x, scale = node.input(0, "X"), node.input(1, "scale")
    rank = len(x.shape)
    axis = int(node.attr("axis", -1))
    if not -rank <= axis < rank:
        raise node.error(f"axis={axis} is out of range for X {x.shape}")
    axis %= rank
    n = math.prod(x.shape[axis:])
    if scale.size not in (1, n) or len(scale.shape) > rank - axis:
        raise node.error(
            f"scale {scale.shape} must broadcast to the normalised axes {x.shape[axis:]} of X {x.shape}"
        )
    flat = ctx.reshape(x, x.shape[:axis] + (n,))
    if scale.size == 1:
        gamma = ctx.op("broadcast_to", [ctx.reshape(scale, (1,))], {"shape": (n,)})
    else:
        gamma = ctx.reshape(scale, (n,))
    y = ctx.op("rms_norm", [flat, gamma], {"epsilon": float(node.attr("epsilon", 1e-5))})
    return [ctx.reshape(y, x.shape)]


# ---------------------------------------------------------------- Attention
SUPPORTED_ATTENTION = {
    "is_causal",
    "kv_num_heads",
    "left_window_size",
    "q_num_heads",
    "qk_matmul_output_mode",
    "right_window_size",
    "scale",
    "softcap",
    "softmax_precision",
}


def _attention_dims(node: OnnxNode, q: Value, k: Value, v: Value, past: int, shapes: str) -> AttentionDims:
    (b, hq, sq, d), (bk, hk, sk, dk), (bv, hv, skv, dv) = q.shape, k.shape, v.shape
    if (bk, dk) != (b, d) or (bv, hv, skv) != (b, hk, sk) or not hk or hq % hk:
        raise node.error(
            f"{shapes} do not line up (as [B, H, S, D]: {q.shape}, {k.shape}, {v.shape}; K and V need Q's "
            f"batch, K Q's head size, and the query heads must be a multiple of the kv heads)"
        )
    return AttentionDims(b, hq, hk, sq, sk, d, dv, past)


@converter("Attention", since=23)
def convert_attention(ctx: Context, node: OnnxNode) -> list:
    """``softmax(Q K^T * scale + bias) V`` (see :mod:`graph.onnx.attention`); outputs Y, present_key,
    present_value, qk_matmul_output.  One fused ``attention`` node (softcap included) unless
    qk_matmul_output, a float64 softmax or a bfloat16 Q over at most ``MAX_BFLOAT16_KEYS`` keys (every
    step rounded, as onnx's reference) asks for the decomposition."""
    qk_mode = _check_attention_attrs(node)
    q_in, k_in, v_in = node.input(0, "Q"), node.input(1, "K"), node.input(2, "V")
    storage = q_in.dtype if narrow.is_narrow(q_in.dtype) else None
    if storage not in (None, "bfloat16"):
        raise node.error(f"Q is {storage}; Attention takes float16, float32, float64 or bfloat16")
    if any(v is not None and narrow.is_narrow(v.dtype) for v in node.inputs):
        # bfloat16: read in float32; computed in float32 and rounded once, or with Q bfloat16 as
        # onnx's reference: every step rounded to bfloat16 (decompose_attention's rounding)
        node = dataclasses.replace(node, inputs=[_widen(ctx, v) for v in node.inputs])
        q_in, k_in, v_in = node.inputs[:3]
    q = to_heads(ctx, node, q_in, node.attr("q_num_heads"), "Q")
    k = to_heads(ctx, node, k_in, node.attr("kv_num_heads"), "K")
    v = to_heads(ctx, node, v_in, node.attr("kv_num_heads"), "V")
    k, v, past = append_kv_cache(ctx, node, k, v)
    dims = _attention_dims(node, q, k, v, past, f"Q {q_in.shape}, K {k_in.shape} and V {v_in.shape}")
    scale = node.attr("scale")
    scale = 1.0 / math.sqrt(dims.d) if scale is None else float(scale)
    want_qk = len(node.outputs) > 3 and bool(node.outputs[3])
    double = node.attr("softmax_precision") == TensorProto.DOUBLE and q.dtype != "float64"
    # bfloat16 as onnx's reference (every step rounded) where its per-key rounded softmax sum stays
    # small; over more keys computed in float32 and rounded once (within half an ulp of exact)
    rounding = storage if storage is not None and dims.sk <= MAX_BFLOAT16_KEYS else None
    if want_qk or double or rounding is not None:
        cdt = "float32" if q.dtype == "float16" else q.dtype
        bias = additive_bias(ctx, node, dims, cdt)
        y, qk = decompose_attention(ctx, node, q, k, v, bias, dims, scale, qk_mode, rounding)
    else:
        bias = additive_bias(ctx, node, dims, q.dtype)
        y, qk = fused_attention(ctx, node, q, k, v, bias, dims, scale), None
    if len(q_in.shape) == 3:
        y = ctx.reshape(ctx.transpose(y, (0, 2, 1, 3)), (dims.b, dims.sq, dims.hq * dims.dv))
    if storage is not None:
        return [None if t is None else ctx.cast(t, storage) for t in (y, k, v, qk)]
    return [y, k, v, qk]


def _check_attention_attrs(node: OnnxNode) -> int:
    """The qk_matmul_output_mode, after refusing unknown attributes and modes."""
    unknown = sorted(set(node.attrs) - SUPPORTED_ATTENTION)
    if unknown:
        raise node.error(f"attributes {unknown} are not supported (supported: {sorted(SUPPORTED_ATTENTION)})")
    qk_mode = int(node.attr("qk_matmul_output_mode", 0))
    if qk_mode not in (0, 1, 2, 3):
        raise node.error(f"qk_matmul_output_mode={qk_mode} is not one of 0, 1, 2, 3")
    return qk_mode


def _widen(ctx: Context, v: Value | None) -> Value | None:
    return ctx.cast(v, "float32") if v is not None and narrow.is_narrow(v.dtype) else v
