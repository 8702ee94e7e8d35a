"""Transformer operators: Attention (opset 23), RMSNormalization (opset 23), Trilu.

``Attention`` converts to the fused ``attention`` graph operator over
``[B*H, S, D]`` slices (reshapes around it); ``RMSNormalization`` to
``rms_norm``; ``Trilu`` to a ``where`` with a constant triangle (folded when
its input is constant, as a causal mask built with ``torch.tril`` is).
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Value
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter


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
    "q_num_heads",
    "scale",
    "softcap",
    "qk_matmul_output_mode",
    "softmax_precision",
}


def _heads(ctx: Context, node: OnnxNode, v: Value, heads: int | None, what: str) -> Value:
    """``[B, H, S, D]`` from a 4-D input, or from a 3-D ``[B, S, H*D]`` one with ``heads``."""
    if len(v.shape) == 4:
        return v
    if len(v.shape) != 3:
        raise node.error(f"{what} {v.shape} must be 4-D [B, H, S, D] or 3-D [B, S, H*D]")
    if not heads or v.shape[2] % heads:
        raise node.error(
            f"{what} {v.shape} is 3-D: q_num_heads/kv_num_heads must be given and divide "
            f"{v.shape[2]} (got {heads})"
        )
    b, s, hd = v.shape
    return ctx.transpose(ctx.reshape(v, (b, s, heads, hd // heads)), (0, 2, 1, 3))


def _check_attention_attrs(node: OnnxNode, outputs: int) -> None:
    unknown = sorted(set(node.attrs) - SUPPORTED_ATTENTION)
    if unknown:
        raise node.error(f"attributes {unknown} are not supported (supported: {sorted(SUPPORTED_ATTENTION)})")
    if float(node.attr("softcap", 0.0)) != 0.0:
        raise node.error(f"softcap={node.attr('softcap')} is not supported (only 0)")
    if int(node.attr("qk_matmul_output_mode", 0)) != 0 or outputs > 1:
        raise node.error("only the output Y is supported (no present_key/present_value/qk_matmul_output)")
    for k, what in ((4, "past_key"), (5, "past_value"), (6, "nonpad_kv_seqlen")):
        if node.has_input(k):
            raise node.error(f"input {k} ({what}) is not supported (no KV cache)")


def _attention_mask(
    ctx: Context, node: OnnxNode, b: int, h: int, sq: int, sk: int, dtype: str
) -> Value | None:
    """The additive mask as ``[1 or B*H, 1 or Sq, Sk]`` (boolean masks: False -> -inf), causal folded in."""
    mask = node.inputs[3] if node.has_input(3) else None
    if mask is not None:
        if not 2 <= len(mask.shape) <= 4:
            raise node.error(
                f"attn_mask {mask.shape} must have rank 2, 3 or 4 (broadcast to [{b}, {h}, {sq}, {sk}])"
            )
        full = (1,) * (4 - len(mask.shape)) + tuple(mask.shape)
        if any(d not in (1, want) for d, want in zip(full, (b, h, sq, sk))) or full[3] != sk:
            raise node.error(
                f"attn_mask {mask.shape} does not broadcast to [{b}, {h}, {sq}, {sk}] "
                f"(Q and K give batch {b}, heads {h}, {sq} queries, {sk} keys)"
            )
        if mask.dtype == "bool":
            mask = ctx.op("where", [mask, ctx.scalar(0.0, dtype), ctx.scalar(-np.inf, dtype)])
        mask = ctx.reshape(mask, full)
    if int(node.attr("is_causal", 0)):
        causal = np.where(np.tril(np.ones((sq, sk), bool)), 0.0, -np.inf).astype(dtype)
        c = ctx.const(causal.reshape(1, 1, sq, sk), "causal_mask")
        mask = c if mask is None else ctx.op("add", [mask, c])
    if mask is None:
        return None
    lead = mask.shape[:2]
    if lead == (1, 1):
        return ctx.reshape(mask, (1,) + mask.shape[2:])
    if lead != (b, h):
        mask = ctx.op("broadcast_to", [mask], {"shape": (b, h) + mask.shape[2:]})
    return ctx.reshape(mask, (b * h,) + mask.shape[2:])


@converter("Attention", since=23)
def convert_attention(ctx: Context, node: OnnxNode) -> list:
    """``softmax(Q K^T * scale + mask) V`` as one ``attention`` node (no KV cache, no softcap)."""
    _check_attention_attrs(node, len([o for o in node.outputs if o]))
    q_in, k_in, v_in = node.input(0, "Q"), node.input(1, "K"), node.input(2, "V")
    q = _heads(ctx, node, q_in, node.attr("q_num_heads"), "Q")
    k = _heads(ctx, node, k_in, node.attr("kv_num_heads"), "K")
    v = _heads(ctx, node, v_in, node.attr("kv_num_heads"), "V")
    (b, h, sq, d), (bk, hk, sk, dk), (bv, hv, skv, dv) = q.shape, k.shape, v.shape
    if (bk, hk, dk) != (b, h, d) or (bv, hv, skv) != (b, h, sk):
        raise node.error(
            f"Q {q_in.shape}, K {k_in.shape} and V {v_in.shape} do not line up (as [B, H, S, D]: "
            f"{q.shape}, {k.shape}, {v.shape}; grouped-query heads are not supported)"
        )
    scale = node.attr("scale")
    scale = 1.0 / math.sqrt(d) if scale is None else float(scale)
    inputs = [ctx.reshape(q, (b * h, sq, d)), ctx.reshape(k, (b * h, sk, d)), ctx.reshape(v, (b * h, sk, dv))]
    mask = _attention_mask(ctx, node, b, h, sq, sk, q.dtype)
    if mask is not None:
        inputs.append(mask)
    y = ctx.reshape(ctx.op("attention", inputs, {"scale": scale, "k_transposed": False}), (b, h, sq, dv))
    if len(q_in.shape) == 3:
        y = ctx.reshape(ctx.transpose(y, (0, 2, 1, 3)), (b, sq, h * dv))
    return [y]
