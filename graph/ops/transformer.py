"""Transformer graph operators: attention, layer_norm, rms_norm, gelu_tanh, silu.

``attention(q, k, v[, mask], scale=, k_transposed=)`` is the fused
scaled-dot-product attention (``topi.nn.attention``): its pattern is
COMM_REDUCE, so the injective head reshapes and transposes that produce q, k
and v fuse into its kernel as reads.  ``layer_norm`` / ``rms_norm`` normalise
over one axis (the last unless ``axis`` says) in one kernel (OPAQUE).  ``gelu_tanh`` and ``silu`` are
elementwise and fuse into the producing dense as its epilogue.
"""

from __future__ import annotations

import numpy as np

import topi.testing.transformer as ref
from graph.ops.registry import COMM_REDUCE, ELEMWISE, OPAQUE, default_schedule, injective_schedule, register
from topi.nn.activation import gelu_tanh, silu
from topi.nn.attention import attention, attention_shapes
from topi.nn.layer_norm import layer_norm, rms_norm


def _norm_types(values, a):
    x = values[0]
    axis = a.get("axis", -1)
    if not -len(x.shape) <= axis < len(x.shape):
        raise ValueError(f"axis={axis} is out of range for data of shape {x.shape}")
    n = x.shape[axis]
    for v in values[1:]:
        if v.shape != (n,):
            raise ValueError(f"scale/shift must have shape ({n},) (axis {axis} of {x.shape}), got {v.shape}")
    return [(x.shape, x.dtype)]


def _layer_norm_compute(xs, a):
    gamma = xs[1] if len(xs) > 1 else None
    beta = xs[2] if len(xs) > 2 else None
    return [layer_norm(xs[0], gamma, beta, a.get("epsilon", 1e-5), a.get("axis", -1))]


def _np_layer_norm(xs, a):
    return [ref.layer_norm_python(xs[0], *(xs[1:] + [None, None])[:2], a.get("epsilon", 1e-5), a.get("axis", -1))]


register(
    "layer_norm",
    _layer_norm_compute,
    OPAQUE,
    default_schedule,
    _norm_types,
    _np_layer_norm,
    doc="data [..., N, ...], optional gamma [N], beta [N] (attrs: epsilon, axis: the normalised one, default -1)",
)
register(
    "rms_norm",
    lambda xs, a: [rms_norm(xs[0], xs[1] if len(xs) > 1 else None, a.get("epsilon", 1e-5))],
    OPAQUE,
    default_schedule,
    _norm_types,
    lambda xs, a: [ref.rms_norm_python(xs[0], xs[1] if len(xs) > 1 else None, a.get("epsilon", 1e-5))],
    doc="data [..., N], optional gamma [N] (attrs: epsilon); over the last axis",
)


def _unary(name, fn, np_fn):
    register(
        name,
        lambda xs, a: [fn(xs[0])],
        ELEMWISE,
        injective_schedule,
        lambda v, a: [(v[0].shape, v[0].dtype)],
        lambda xs, a: [np_fn(xs[0])],
    )


_unary("gelu_tanh", gelu_tanh, ref.gelu_tanh_python)
_unary("silu", silu, ref.silu_python)


def _attention_types(values, a):
    q, k, v = values[:3]
    mask = values[3].shape if len(values) > 3 else None
    attention_shapes(q.shape, k.shape, v.shape, mask, a.get("k_transposed", False))
    heads = a.get("heads", 0)
    if heads:
        if q.shape[0] % heads:
            raise ValueError(f"heads={heads} does not divide the {q.shape[0]} slices of q {q.shape}")
        return [((q.shape[0] // heads, q.shape[1], heads, v.shape[2]), q.dtype)]
    return [((q.shape[0], q.shape[1], v.shape[2]), q.dtype)]


def _attention_compute(xs, a):
    mask = xs[3] if len(xs) > 3 else None
    return [
        attention(
            xs[0],
            xs[1],
            xs[2],
            mask,
            a.get("scale", 1.0),
            a.get("k_transposed", False),
            heads=a.get("heads", 0),
            softcap=a.get("softcap", 0.0),
        )
    ]


def _np_attention(xs, a):
    mask = xs[3] if len(xs) > 3 else None
    out = ref.attention_python(
        xs[0], xs[1], xs[2], mask, a.get("scale", 1.0), a.get("k_transposed", False), a.get("softcap", 0.0)
    )
    heads = a.get("heads", 0)
    if heads:
        bh, sq, dv = out.shape
        out = np.ascontiguousarray(out.reshape(bh // heads, heads, sq, dv).transpose(0, 2, 1, 3))
    return [out]


register(
    "attention",
    _attention_compute,
    COMM_REDUCE,
    default_schedule,
    _attention_types,
    _np_attention,
    doc="q [BH, Sq, D], k [BH, Sk, D] (or [BH, D, Sk] with k_transposed), v [BH, Sk, Dv], "
    "optional additive mask [1|BH, 1|Sq, Sk] (attrs: scale, k_transposed, heads: "
    "0, or H to write [BH/H, Sq, H, Dv]; softcap: 0, or c to cap scores to c*tanh(s/c) before the mask)",
)
