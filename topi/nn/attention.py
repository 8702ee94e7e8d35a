"""Scaled dot-product attention as one operator (the compute of the fused kernel).

For each of ``BH`` (batch x heads) slices, with ``q [Sq, D]``, ``k [Sk, D]``,
``v [Sk, Dv]`` and an optional additive ``mask``::

    kt[d, j]    = k[min(j, Sk - 1), d]                         # K^T, a layout stage
    dot[i, j]   = sum_d q[i, d] * kt[d, j]
    cap[i, j]   = softcap * tanh(dot[i, j] * scale / softcap)  # only with softcap > 0
    score[i, j] = dot[i, j] * scale (or cap[i, j]) + mask[i, j]
    rmax[i]     = max_j score[i, j]
    p[i, j]     = exp(score[i, j] - rmax[i])                 # 0 below exp(-86.5)
    psum[i]     = sum_j p[i, j]
    acc[i, e]   = sum_j p[i, j] * v[j, e]
    out[i, e]   = acc[i, e] * (psum[i] == 0 ? 0 : 1 / psum[i])

A fully masked row (every score ``-inf``) has ``rmax`` at the max reduction's
identity (the lowest finite value), so every ``p`` is 0 and ``psum`` is 0: the
select on the scale factor makes that row 0, as ONNX's reference does, where
``0 / 0`` would give NaN.  ``psum`` is at least 1 in any other row.

The score stages (``kt``, ``dot``, ``cap``, ``score``, ``p``) run over the keys
padded to the schedule's vector chunk (:func:`padded_keys`, the config's
``vec``): a padded column repeats the last key (and its mask entry), so its
score leaves ``rmax`` as it is; its ``p`` is 0 (``colbias[j]``, 0 or ``-inf``, is added to the
exponent), and ``acc`` reads the ``Sk`` real keys only.  A ``Dv`` that is not whole vectors (MobileViT's 30, 36) is padded: ``v``'s
rows are copied once per slice into whole vectors (``vp``, zeros past ``Dv``) and ``acc``
runs over them, so its register tile carries no tail; the output reads the first ``Dv``.

``k`` may be given already transposed (``k_transposed=True``: ``[BH, D, Sk]``,
as ``MatMul(Q, K^T)`` graphs produce it); the ``kt`` stage then reads it in place.
The mask is ``[MB, MQ, Sk]`` with ``MB`` in (1, BH) and ``MQ`` in (1, Sq)
(broadcast), added after the scaling and the softcap (``-inf`` entries mask a
key out; ONNX Attention's order, so a masked key stays masked).

float16 operands are computed in float32 from ``dot`` on (the products, the
softmax and both accumulations) and rounded to float16 once, at the output:
float16 accumulators lose several units in the last place over a row, and ONNX's
reference (float32-accumulating matmuls) agrees with the exact result rounded once.
"""

from __future__ import annotations

import te
from topi.utils import get_const_tuple, shape_str
from tune.autotvm.config import choose_config
from tune.autotvm.space import ConfigEntity

ATTENTION = "attention"
EXP_NORMAL_LO = -86.5  # codegen.vecmath.EXP_NORMAL_LO: exp(x) and 2**round(x / ln 2) normal from here up


def attention_shapes(q: tuple, k: tuple, v: tuple, mask: tuple | None, k_transposed: bool) -> tuple:
    """(BH, Sq, Sk, D, Dv) of the operands, or ValueError saying which do not line up."""
    if len(q) != 3 or len(k) != 3 or len(v) != 3:
        raise ValueError(f"attention: q, k, v must be 3-D [BH, S, D], got q {q}, k {k}, v {v}")
    bh, sq, d = q
    kd, sk = (k[1], k[2]) if k_transposed else (k[2], k[1])
    if k[0] != bh or v[0] != bh:
        raise ValueError(f"attention: batch x heads differ: q {q}, k {k}, v {v}")
    if kd != d:
        raise ValueError(f"attention: q {q} and k {k} (transposed={k_transposed}) disagree on the head size")
    if v[1] != sk:
        raise ValueError(f"attention: k {k} has {sk} keys but v {v} has {v[1]} rows")
    if mask is not None and (
        len(mask) != 3 or mask[0] not in (1, bh) or mask[1] not in (1, sq) or mask[2] != sk
    ):
        raise ValueError(f"attention: mask {mask} must be [1 or {bh}, 1 or {sq}, {sk}] for q {q} and k {k}")
    return bh, sq, sk, d, v[2]


def attention(
    q: te.Tensor,
    k: te.Tensor,
    v: te.Tensor,
    mask: te.Tensor | None = None,
    scale: float = 1.0,
    k_transposed: bool = False,
    cfg=None,
    heads: int = 0,
    softcap: float = 0.0,
) -> te.Tensor:
    """``softmax(q @ k^T * scale + mask) @ v`` per slice (see the module docstring).

    Parameters
    ----------
    q : te.Tensor
        ``[BH, Sq, D]``.
    k : te.Tensor
        ``[BH, Sk, D]``, or ``[BH, D, Sk]`` with ``k_transposed``.
    v : te.Tensor
        ``[BH, Sk, Dv]``.
    mask : te.Tensor, optional
        Additive ``[1 or BH, 1 or Sq, Sk]``.
    scale : float
    cfg : ConfigEntity, optional
        Stored on the output stage (``attrs["config"]``) for the schedule.
    heads : int
        0, or ``H`` (dividing BH): write the heads merged, ``[BH/H, Sq, H, Dv]``
        (``out[b, i, h, e]`` of slice ``b*H + h``), the layout the output
        projection reads, so no transpose follows.
    softcap : float
        0, or ``c > 0``: the scaled scores become ``c * tanh(s / c)`` before the mask
        (ONNX Attention's softcap; a stage of its own, tagged ``attention_cap``).

    Returns
    -------
    te.Tensor
        ``[BH, Sq, Dv]`` (or ``[BH/H, Sq, H, Dv]``), tagged ``attention``.
    """
    shapes = [get_const_tuple(t.shape) for t in (q, k, v)]
    for name, t, sh in zip("qkv", (q, k, v), shapes):
        if not all(isinstance(x, int) for x in sh):
            raise ValueError(f"attention: '{name}' needs a static shape, got {shape_str(t)}")
    mshape = get_const_tuple(mask.shape) if mask is not None else None
    bh, sq, sk, d, dv = attention_shapes(*shapes, mshape, k_transposed)
    dtype = q.dtype
    cdt = "float32" if dtype == "float16" else dtype  # the dtype of the arithmetic

    def up(x):
        return x.astype(cdt) if cdt != dtype else x

    cfg = cfg if cfg is not None else choose_config(attention_workload(bh, sq, sk, d, dv, dtype))
    skp = padded_keys(sk, cfg["vec"].val)

    def key(j):  # a padded key column repeats the last key: finite scores that nothing reads
        return j if skp == sk else te.min(j, sk - 1)

    if k_transposed:
        kt = te.compute((bh, d, skp), lambda b, c, j: k[b, c, key(j)], name="T_attn_kt", tag="attention_kt")
    else:
        kt = te.compute((bh, d, skp), lambda b, c, j: k[b, key(j), c], name="T_attn_kt", tag="attention_kt")
    rd = te.reduce_axis((0, d), name="d")
    dot = te.compute(
        (bh, sq, skp),
        lambda b, i, j: te.sum(up(q[b, i, rd]) * up(kt[b, rd, j]), axis=rd),
        name="T_attn_dot",
        tag="attention_dot",
    )
    sc = te.const(scale, cdt)
    if softcap < 0:
        raise ValueError(f"attention: softcap={softcap} must be 0 (off) or positive")
    if softcap > 0:
        cap_c = te.const(softcap, cdt)
        cap = te.compute(
            (bh, sq, skp),
            lambda b, i, j: te.tanh(dot[b, i, j] * sc / cap_c) * cap_c,
            name="T_attn_cap",
            tag="attention_cap",
        )

    def score(b, i, j):
        s = cap[b, i, j] if softcap > 0 else dot[b, i, j] * sc
        if mask is not None:
            s = s + up(mask[b if mshape[0] > 1 else 0, i if mshape[1] > 1 else 0, key(j)])
        return s

    scores = te.compute((bh, sq, skp), score, name="T_attn_score", tag="attention_score")
    rj = te.reduce_axis((0, skp), name="j")  # a padded column repeats the last key's score
    rmax = te.compute(
        (bh, sq), lambda b, i: te.max(scores[b, i, rj], axis=rj), name="T_attn_max", tag="attention_max"
    )
    zero = te.const(0.0, cdt)

    if skp != sk:  # -inf past the keys: one vector load and add per exp vector, where a select on the
        # column index costs five integer operations (ViT's 197 keys: the kernel in 0.95x the time)
        colbias = te.compute((skp,), lambda j: te.if_then_else(j < sk, zero, te.const(float("-inf"), cdt)),
                             name="T_attn_colbias", tag="attention_colbias")

    lo = te.const(EXP_NORMAL_LO, cdt)

    def prob(b, i, j):  # 0 in a padded column
        x = scores[b, i, j] - rmax[b, i]
        if skp != sk:
            x = x + colbias[j]
        # x <= 0, and below EXP_NORMAL_LO p (under 2**-125 of the row's largest, 1) is taken as 0: the
        # exp of x clamped to [EXP_NORMAL_LO, 0] skips its overflow clamp and its two-step scaling,
        # and no masked score makes a denormal (a microcode assist: twice an exp's time); a NaN stays
        p = te.if_then_else(x < lo, zero, te.exp(te.max(te.min(x, zero), lo)))
        return te.if_then_else(te.isnan(x), x, p)

    p = te.compute((bh, sq, skp), prob, name="T_attn_exp", tag="attention_exp")
    rs = te.reduce_axis((0, skp), name="j")  # the padded columns too: the exp stage fills whole vectors
    psum = te.compute(
        (bh, sq), lambda b, i: te.sum(p[b, i, rs], axis=rs), name="T_attn_sum", tag="attention_sum"
    )
    ra = te.reduce_axis((0, sk), name="j")
    dvp = -(-dv // cfg["vec"].val) * cfg["vec"].val
    if dvp != dv:  # v's rows copied once per slice into whole vectors (zero columns past Dv)
        v = te.compute((bh, sk, dvp), lambda b, j, e: te.if_then_else(
            e < dv, v[b, j, te.min(e, dv - 1)], te.const(0.0, v.dtype)), name="T_attn_vp", tag="attention_vp")
    acc = te.compute(
        (bh, sq, dvp),
        lambda b, i, e: te.sum(p[b, i, ra] * up(v[b, ra, e]), axis=ra),
        name="T_attn_acc",
        tag="attention_acc",
    )
    one = te.const(1.0, cdt)

    def inv(b, i):  # 1 / psum, and 0 for a fully masked row (psum == 0)
        return te.if_then_else(psum[b, i] == zero, zero, one / psum[b, i])

    def down(x):
        return x.astype(dtype) if cdt != dtype else x

    attrs = {"scale": float(scale), "workload": attention_workload(bh, sq, sk, d, dv, dtype)}
    if softcap > 0:
        attrs["softcap"] = float(softcap)
    attrs["config"] = cfg
    if heads:
        if bh % heads:
            raise ValueError(f"attention: heads={heads} does not divide the {bh} slices of q {shape_str(q)}")
        attrs["heads"] = int(heads)
        return te.compute(
            (bh // heads, sq, heads, dv),
            lambda b, i, h, e: down(acc[b * heads + h, i, e] * inv(b * heads + h, i)),
            name="T_attention",
            tag=ATTENTION,
            attrs=attrs,
        )
    return te.compute(
        (bh, sq, dv),
        lambda b, i, e: down(acc[b, i, e] * inv(b, i)),
        name="T_attention",
        tag=ATTENTION,
        attrs=attrs,
    )


def padded_keys(sk: int, vec: int) -> int:
    """The key extent of the score stages: ``sk`` rounded up to ``vec`` lanes (to two vectors
    beyond four), so the scores' vector loops and register tiles carry no tail, and the row
    loop can be cut into full row blocks and one partial block.  The max, the sum and ``p @ v``
    read only the first ``sk``."""
    unit = vec if sk < 4 * vec else 2 * vec
    return -(-sk // unit) * unit


def attention_workload(bh: int, sq: int, sk: int, d: int, dv: int, dtype: str = "float32") -> tuple:
    """The workload key of one attention kernel (template ``attention.x86``)."""
    return ("attention.x86", int(bh), int(sq), int(sk), int(d), int(dv), str(dtype))
