"""The parts of ONNX ``Attention`` (opsets 23-25) around the product: heads, KV cache, bias, decomposition.

:func:`graph.onnx.transformer.convert_attention` brings Q, K and V to
``[B, H, S, D]`` (:func:`to_heads`), appends the past keys and values
(:func:`append_kv_cache`: the ``present_key`` / ``present_value`` outputs),
and builds one additive bias broadcastable to ``[B, Hq, Sq, Sk]``
(:func:`additive_bias`), as onnx's reference does::

    allowed[b, h, i, j] = attn_mask (bool)  and  j <= i + off        (is_causal)
                          and  off + i - j <= left_window_size       (>= 0: opset 25)
                          and  j - (off + i) <= right_window_size    (>= 0)
                          and  j < nonpad_kv_seqlen[b]               (opset 24)
    bias = where(allowed, 0, -inf) + attn_mask (float)

with ``off`` the number of keys before the query block: ``past_key``'s
length, ``nonpad_kv_seqlen[b] - Sq`` (an external cache: per batch, read at
run time) or 0.  A mask shorter than the keys is padded with -inf (False).

Grouped-query attention (``Hq = g * Hk``) needs no copy of K and V: query
head ``hk * g + r`` reads kv head ``hk``, so Q viewed as
``[B * Hk, g * Sq, D]`` meets K as ``[B * Hk, Sk, D]`` slice for slice, and the
scores come out as ``[B, Hq, Sq, Sk]`` in memory order.

The fused ``attention`` node serves every case without the ``qk_matmul_output``
output (softcap included) and without a float64 softmax
(``softmax_precision=DOUBLE`` on narrower inputs); those go through :func:`decompose_attention`
(batch_matmul, scale, tanh softcap, bias, softmax, the fully-masked-row
guard, batch_matmul), float16 computed in float32 and rounded once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import TensorProto

from graph.ir import Value
from graph.onnx.context import Context, OnnxNode
from graph.onnx.reduce import round_to, stepwise_softmax


@dataclass(frozen=True)
class AttentionDims:
    """The extents of one Attention node, after the KV cache is appended."""

    b: int
    hq: int
    hk: int
    sq: int
    sk: int
    d: int
    dv: int
    past: int  # keys before the new ones (past_key's length; 0 without a cache)

    @property
    def group(self) -> int:
        return self.hq // self.hk


def to_heads(ctx: Context, node: OnnxNode, v: Value, heads: int | None, what: str) -> Value:
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


def append_kv_cache(ctx: Context, node: OnnxNode, k: Value, v: Value) -> tuple:
    """(present_key, present_value, past length): ``past_key``/``past_value`` (inputs 4, 5) before K, V."""
    has_k, has_v = node.has_input(4), node.has_input(5)
    if has_k != has_v:
        raise node.error("past_key (input 4) and past_value (input 5) must be given together")
    if not has_k:
        return k, v, 0
    if node.has_input(6):
        raise node.error("nonpad_kv_seqlen (input 6) cannot be combined with past_key/past_value")
    pk, pv = node.inputs[4], node.inputs[5]
    for past, new, what in ((pk, k, "past_key"), (pv, v, "past_value")):
        if len(past.shape) != 4 or past.shape[:2] != new.shape[:2] or past.shape[3] != new.shape[3]:
            raise node.error(
                f"{what} {past.shape} must be [B, H, P, D] matching the new entries {new.shape} "
                f"(as [B, H, S, D]) on B, H and D"
            )
    if pk.shape[2] != pv.shape[2]:
        raise node.error(f"past_key {pk.shape} and past_value {pv.shape} hold different lengths")
    present_k = ctx.op("concatenate", [pk, k], {"axis": 2})
    present_v = ctx.op("concatenate", [pv, v], {"axis": 2})
    return present_k, present_v, pk.shape[2]


def _window_sizes(node: OnnxNode) -> tuple:
    sizes = []
    for key in ("left_window_size", "right_window_size"):
        size = int(node.attr(key, -1))
        if size < -1:
            raise node.error(f"{key}={size} is invalid: -1 (unbounded) or a size >= 0")
        sizes.append(size)
    return tuple(sizes)


def _static_allowed(dims: AttentionDims, causal: bool, left: int, right: int) -> np.ndarray:
    """``[Sq, Sk]`` bool: causal and window limits with the constant offset ``dims.past``."""
    diff = dims.past + np.arange(dims.sq)[:, None] - np.arange(dims.sk)[None, :]  # query pos - key pos
    allowed = np.ones((dims.sq, dims.sk), bool)
    if causal:
        allowed &= diff >= 0
    if left >= 0:
        allowed &= diff <= left
    if right >= 0:
        allowed &= -diff <= right
    return allowed


def _nonpad_allowed(ctx: Context, node: OnnxNode, dims: AttentionDims, causal: bool, left: int, right: int):
    """``[B, 1, Sq|1, Sk]`` bool read at run time from ``nonpad_kv_seqlen`` (an external KV cache)."""
    lens = node.inputs[6]
    if lens.shape not in ((dims.b,),) or lens.dtype not in ("int64", "int32"):
        raise node.error(
            f"nonpad_kv_seqlen {lens.shape} {lens.dtype} must be [{dims.b}] int64 (one length per batch)"
        )
    lens = ctx.reshape(lens, (dims.b, 1, 1, 1))
    keys = np.arange(dims.sk).reshape(1, 1, 1, dims.sk)
    conds = [ctx.op("less", [ctx.const(keys.astype(lens.dtype), "key_index"), lens])]
    if causal or left >= 0 or right >= 0:
        off = ctx.op("subtract", [lens, ctx.scalar(dims.sq, lens.dtype)])  # keys before the query block
        rel = (np.arange(dims.sk)[None, :] - np.arange(dims.sq)[:, None]).reshape(1, 1, dims.sq, dims.sk)
        # query pos - key pos = off - rel: causal off >= rel, left off <= left + rel, right off >= rel - right
        bounds = [("greater_equal", rel)] if causal else []
        if left >= 0:
            bounds.append(("less_equal", rel + left))
        if right >= 0:
            bounds.append(("greater_equal", rel - right))
        for op, limit in bounds:
            conds.append(ctx.op(op, [off, ctx.const(limit.astype(lens.dtype), "window_limit")]))
    allowed = conds[0]
    for c in conds[1:]:
        allowed = ctx.op("logical_and", [allowed, c])
    return allowed


def _user_mask(ctx: Context, node: OnnxNode, dims: AttentionDims, dtype: str):
    """``attn_mask`` right-aligned to 4-D and padded to ``Sk`` keys; (bool Value or None, float Value or None)."""
    if not node.has_input(3):
        return None, None
    mask = node.inputs[3]
    want = (dims.b, dims.hq, dims.sq, dims.sk)
    if not 1 <= len(mask.shape) <= 4:
        raise node.error(
            f"attn_mask {mask.shape} must have rank 1 to 4 (broadcast to [{', '.join(map(str, want))}])"
        )
    full = (1,) * (4 - len(mask.shape)) + tuple(mask.shape)
    if any(d not in (1, w) for d, w in zip(full[:3], want[:3])) or full[3] > dims.sk:
        raise node.error(
            f"attn_mask {mask.shape} does not broadcast to [{', '.join(map(str, want))}] (Q and K give batch "
            f"{dims.b}, heads {dims.hq}, {dims.sq} queries, {dims.sk} keys; a shorter last axis is padded)"
        )
    mask = ctx.reshape(mask, full)
    is_bool = mask.dtype == "bool"
    if not is_bool:
        mask = ctx.cast(mask, dtype)
    if full[3] < dims.sk:
        fill = np.full(full[:3] + (dims.sk - full[3],), False if is_bool else -np.inf, mask.dtype)
        mask = ctx.op("concatenate", [mask, ctx.const(fill, "mask_pad")], {"axis": 3})
    return (mask, None) if is_bool else (None, mask)


def additive_bias(ctx: Context, node: OnnxNode, dims: AttentionDims, dtype: str) -> Value | None:
    """The bias of the module docstring, ``[B|1, Hq|1, Sq|1, Sk]`` in ``dtype``; None when nothing masks."""
    causal = bool(int(node.attr("is_causal", 0)))
    left, right = _window_sizes(node)
    allowed, additive = _user_mask(ctx, node, dims, dtype)
    if node.has_input(6):
        runtime = _nonpad_allowed(ctx, node, dims, causal, left, right)
        allowed = runtime if allowed is None else ctx.op("logical_and", [allowed, runtime])
    elif causal or left >= 0 or right >= 0:
        static = ctx.const(
            _static_allowed(dims, causal, left, right).reshape(1, 1, dims.sq, dims.sk), "causal_mask"
        )
        allowed = static if allowed is None else ctx.op("logical_and", [allowed, static])
    if allowed is not None:
        gate = ctx.op("where", [allowed, ctx.scalar(0.0, dtype), ctx.scalar(-np.inf, dtype)])
        additive = gate if additive is None else ctx.op("add", [additive, gate])
    return additive


def fused_mask(ctx: Context, bias: Value, dims: AttentionDims) -> Value:
    """``bias`` as the fused kernel's ``[1|B*Hk, 1|g*Sq, Sk]`` mask (q viewed as ``[B*Hk, g*Sq, D]``)."""
    lb, lh, lq, _ = bias.shape
    g = dims.group
    if lb == 1 and lh == 1 and (g == 1 or lq == 1):
        return ctx.reshape(bias, (1, lq, dims.sk))
    rows = dims.sq if g > 1 or lq > 1 else 1
    full = bias
    if bias.shape != (dims.b, dims.hq, rows, dims.sk):
        full = ctx.op("broadcast_to", [bias], {"shape": (dims.b, dims.hq, rows, dims.sk)})
    return ctx.reshape(full, (dims.b * dims.hk, g * rows, dims.sk))


def fused_attention(
    ctx: Context,
    node: OnnxNode,
    q: Value,
    k: Value,
    v: Value,
    bias: Value | None,
    dims: AttentionDims,
    scale: float,
) -> Value:
    """Y ``[B, Hq, Sq, Dv]`` as one ``attention`` node over ``[B*Hk, g*Sq, D]`` slices (softcap included)."""
    bh, rows = dims.b * dims.hk, dims.group * dims.sq
    inputs = [
        ctx.reshape(q, (bh, rows, dims.d)),
        ctx.reshape(k, (bh, dims.sk, dims.d)),
        ctx.reshape(v, (bh, dims.sk, dims.dv)),
    ]
    if bias is not None:
        inputs.append(fused_mask(ctx, bias, dims))
    attrs = {"scale": scale, "k_transposed": False}
    softcap = float(node.attr("softcap", 0.0))
    if softcap > 0:  # (onnx's reference: a softcap <= 0 is off)
        attrs["softcap"] = softcap
    return ctx.reshape(ctx.op("attention", inputs, attrs), (dims.b, dims.hq, dims.sq, dims.dv))


def _fully_masked_rows(ctx: Context, bias: Value) -> Value:
    """``[..., 1]`` bool: rows whose every bias entry is -inf (no key may be attended)."""
    neg = ctx.cast(ctx.op("equal", [bias, ctx.scalar(-np.inf, bias.dtype)]), "float32")
    least = ctx.op("min", [neg], {"axis": (3,), "keepdims": True})
    return ctx.op("equal", [least, ctx.scalar(1.0, "float32")])


def _softcap(ctx: Context, s: Value, softcap: float) -> Value:
    """``softcap * tanh(s / softcap)``; ``s`` itself when ``softcap <= 0`` (off, as onnx's reference)."""
    if softcap <= 0:
        return s
    s = ctx.op("divide", [s, ctx.scalar(softcap, s.dtype)])
    return ctx.op("multiply", [ctx.op("tanh", [s]), ctx.scalar(softcap, s.dtype)])


MAX_BFLOAT16_KEYS = 8  # a bfloat16 Attention rounds every step as onnx's reference over at most this many
# keys (the decomposed product); longer rows run the fused kernel in float32 and round once

_round_to = round_to


def _rounded(value: float, rounding: str) -> float:
    """``value`` rounded to ``rounding`` (a numpy scalar of the input type, as the reference's scale)."""
    from topi.narrow import numpy_dtype

    return float(np.asarray(value, np.float64).astype(numpy_dtype(rounding)).astype(np.float64))


def decompose_attention(
    ctx: Context,
    node: OnnxNode,
    q: Value,
    k: Value,
    v: Value,
    bias: Value | None,
    dims: AttentionDims,
    scale: float,
    qk_mode: int,
    rounding: str | None = None,
) -> tuple:
    """(Y ``[B, Hq, Sq, Dv]``, qk_matmul_output ``[B, Hq, Sq, Sk]``) as graph ops, as onnx's reference::

    s = (q @ k^T) * scale;  s = softcap * tanh(s / softcap)   (softcap > 0)        # mode 0, 1
    s = s + bias                                                                    # mode 2
    p = softmax(s) (in float64 with softmax_precision=DOUBLE); p = 0 on fully masked rows   # mode 3
    y = p @ v

    With ``rounding="bfloat16"`` (float32 inputs holding bfloat16 values) every step
    is rounded to bfloat16 as numpy does on ml_dtypes arrays in the reference:
    ``s = r(r(q * r(sqrt(scale))) @ r(k * r(sqrt(scale)))^T)`` (a matmul accumulates
    in float32 and rounds once), ``s = r(s + bias)``, the softmax of
    :func:`graph.onnx.reduce.stepwise_softmax` (unless softmax_precision=DOUBLE), ``y = r(p @ v)``.
    A softcap divides by a Python float, which numpy answers in float32: from
    there on the reference computes in float32 and rounds ``p`` once.
    """
    out_dtype = q.dtype
    cdt = "float32" if out_dtype == "float16" else out_dtype
    q, k, v = (ctx.cast(t, cdt) for t in (q, k, v))
    bh, gq = dims.b * dims.hk, dims.group * dims.sq
    if rounding is not None:
        root = ctx.scalar(_rounded(float(np.sqrt(scale)), rounding), cdt)
        q, k = (_round_to(ctx, ctx.op("multiply", [t, root]), rounding) for t in (q, k))
    q3, k3 = ctx.reshape(q, (bh, gq, dims.d)), ctx.reshape(k, (bh, dims.sk, dims.d))
    s = ctx.op("batch_matmul", [q3, k3], {"transpose_b": True})
    if rounding is None:
        s = ctx.op("multiply", [s, ctx.scalar(scale, cdt)])
    s = ctx.reshape(_round_to(ctx, s, rounding), (dims.b, dims.hq, dims.sq, dims.sk))
    softcap = float(node.attr("softcap", 0.0))
    s = qk = _softcap(ctx, s, softcap)
    steps = None if softcap > 0 else rounding  # bfloat16 / Python float is float32 in numpy
    if bias is not None:
        s = _round_to(ctx, ctx.op("add", [s, ctx.cast(bias, cdt)]), steps)
    if qk_mode == 2:
        qk = s
    double = node.attr("softmax_precision") == TensorProto.DOUBLE
    if double:
        s = ctx.cast(s, "float64")
    if steps is not None and not double:
        p = stepwise_softmax(ctx, s, steps, masked_rows_zero=True)
    else:
        p = ctx.op("softmax", [s], {"axis": -1})
    if bias is not None:
        p = ctx.op("where", [_fully_masked_rows(ctx, bias), ctx.scalar(0.0, p.dtype), p])
    p = _round_to(ctx, ctx.cast(p, cdt), rounding)
    if qk_mode == 3:
        qk = p
    # p @ v as batch_matmul(p, v^T, transpose_b): the x86 batch_matmul is ~4x faster in that form
    vt = ctx.transpose(ctx.reshape(v, (bh, dims.sk, dims.dv)), (0, 2, 1))
    y = ctx.op("batch_matmul", [ctx.reshape(p, (bh, gq, dims.sk)), vt], {"transpose_b": True})
    y = ctx.reshape(y, (dims.b, dims.hq, dims.sq, dims.dv))
    return ctx.cast(y, out_dtype), ctx.cast(qk, out_dtype)
