"""Transformers: topi attention / layer_norm against numpy, the graph passes that form them,
the ONNX converters (Attention, RMSNormalization, Trilu), and small torch.nn models
(encoder, BERT-style with GELU, GPT-2-style decoder) against onnxruntime."""

from __future__ import annotations

import math

import numpy as np
import pytest
from onnx import TensorProto, helper

import codegen
import graph
import te
import topi.testing.transformer as ref
from graph.interpreter import interpret
from graph.ir import GraphBuilder
from graph.passes.fuse_activation import fuse_activation
from graph.passes.fuse_attention import fuse_attention
from graph.passes.fuse_layer_norm import fold_norm_transposes, fuse_layer_norm
from tune.autotvm.config import make_config
from topi.nn.activation import gelu_tanh, silu
from topi.nn.attention import attention, attention_workload
from topi.nn.layer_norm import layer_norm, rms_norm
from topi.x86.attention import schedule_attention
from topi.x86.layer_norm import layer_norm_workload, schedule_layer_norm

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


# ------------------------------------------------------------------ topi
@pytest.mark.parametrize("shape", [(7, 100), (3, 5, 33), (2, 64), (1, 1, 17), (300, 257)])
@pytest.mark.parametrize("rms", [False, True])
def test_layer_norm_matches_numpy(shape, rms):
    x = te.placeholder(shape, name="x")
    g = te.placeholder((shape[-1],), name="g")
    b = te.placeholder((shape[-1],), name="b")
    out = rms_norm(x, g, 1e-5) if rms else layer_norm(x, g, b, 1e-5)
    args = [x, g, out] if rms else [x, g, b, out]
    f = codegen.build(schedule_layer_norm(out), args)
    xs, gs, bs = rand(*shape) * 3 + 1, rand(shape[-1]), rand(shape[-1])
    y = np.empty(shape, "float32")
    f(*([xs, gs, y] if rms else [xs, gs, bs, y]))
    want = ref.rms_norm_python(xs, gs, 1e-5) if rms else ref.layer_norm_python(xs, gs, bs, 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,axis", [((1, 40, 11, 13), 1), ((2, 5, 3, 7), 1), ((3, 9, 20), 1), ((9, 5), 0),
                                        ((2, 3, 4, 5), 2), ((1, 24, 7, 7), 1)])
def test_layer_norm_over_inner_axis_matches_numpy(shape, axis):
    """A norm over a strided axis (channels-first): statistics vectorized along the last axis,
    whose extent divides no vector (13, 7, 5: tails)."""
    x = te.placeholder(shape, name="x")
    g, b = te.placeholder((shape[axis],), name="g"), te.placeholder((shape[axis],), name="b")
    out = layer_norm(x, g, b, 1e-6, axis=axis)
    f = codegen.build(schedule_layer_norm(out), [x, g, b, out])
    xs, gs, bs = rand(*shape) * 3 + 1, rand(shape[axis]), rand(shape[axis])
    y = np.empty(shape, "float32")
    f(xs, gs, bs, y)
    np.testing.assert_allclose(y, ref.layer_norm_python(xs, gs, bs, 1e-6, axis), rtol=1e-4, atol=1e-5)


def test_layer_norm_bad_axis():
    x = te.placeholder((2, 3), name="x")
    with pytest.raises(ValueError, match="axis=2 is out of range"):
        layer_norm(x, axis=2)
    with pytest.raises(ValueError, match=r"'gamma' must have shape \(2,\)"):
        layer_norm(x, te.placeholder((3,), name="g"), axis=0)


@pytest.mark.parametrize(
    "bh,sq,sk,d,dv", [(4, 16, 16, 8, 8), (3, 13, 21, 10, 7), (2, 40, 33, 16, 24), (1, 5, 70, 3, 17)]
)
@pytest.mark.parametrize("k_transposed", [False, True])
@pytest.mark.parametrize("mask_shape", [None, "shared", "per_slice", "per_key"])
def test_attention_matches_numpy(bh, sq, sk, d, dv, k_transposed, mask_shape):
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, dv)
    kin = np.ascontiguousarray(k.transpose(0, 2, 1)) if k_transposed else k
    mask = None
    if mask_shape == "shared":  # causal-like with -inf, every row keeps its first key
        mask = np.where(np.tril(np.ones((sq, sk), bool)), 0.0, -np.inf).astype("float32")[None]
    elif mask_shape == "per_slice":
        mask = rand(bh, sq, sk)
    elif mask_shape == "per_key":
        mask = rand(1, 1, sk)
    Q, K, V = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (kin, "k"), (v, "v")))
    M = te.placeholder(mask.shape, name="m") if mask is not None else None
    out = attention(Q, K, V, M, 0.3, k_transposed=k_transposed)
    args = [Q, K, V] + ([M] if M is not None else []) + [out]
    f = codegen.build(schedule_attention(out), args)
    y = np.full((bh, sq, dv), np.nan, "float32")
    f(q, kin, v, *([mask] if mask is not None else []), y)
    np.testing.assert_allclose(y, ref.attention_python(q, k, v, mask, 0.3), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "values",
    [
        {"rb": 1, "vec": 4, "fuse_rows": True},
        {"rb": 8, "vec": 16, "fuse_rows": False},
        {"rb": 4, "vec": 32, "fuse_rows": True},
    ],
)
def test_attention_configs(values):
    bh, sq, sk, d, dv = 3, 24, 37, 12, 20
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, dv)
    Q, K, V = te.placeholder(q.shape), te.placeholder(k.shape), te.placeholder(v.shape)
    cfg = make_config(attention_workload(bh, sq, sk, d, dv), values)
    out = attention(Q, K, V, None, 0.5, cfg=cfg)
    f = codegen.build(schedule_attention(out), [Q, K, V, out])
    y = np.empty((bh, sq, dv), "float32")
    f(q, k, v, y)
    np.testing.assert_allclose(y, ref.attention_python(q, k, v, None, 0.5), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("sq,tiles,fuse_rows", [(1, 4, False), (3, 2, True), (7, 2, False), (13, 4, False),
                                                (50, 4, True), (197, 4, False), (197, 2, True)])
def test_attention_row_blocks_of_tiles(sq, tiles, fuse_rows):
    """Row blocks of several register tiles (the ``tiles`` knob) over row counts that divide neither
    the tile nor the block; a mask, keys padded to whole vectors, heads merged in the output."""
    bh, heads, sk, d = 4, 2, 29, 16
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, d)
    mask = np.where(RNG.random((1, sq, sk)) < 0.2, -np.inf, 0.0).astype("float32")
    Q, K, V, M = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (k, "k"), (v, "v"), (mask, "m")))
    cfg = make_config(attention_workload(bh, sq, sk, d, d), {"rb": 6 if sq >= 6 else 1, "vec": 8,
                                                             "fuse_rows": fuse_rows, "tiles": tiles})
    out = attention(Q, K, V, M, 0.4, cfg=cfg, heads=heads)
    f = codegen.build(schedule_attention(out), [Q, K, V, M, out])
    y = np.full((bh // heads, sq, heads, d), np.nan, "float32")
    f(q, k, v, mask, y)
    want = ref.attention_python(q, k, v, np.broadcast_to(mask, (bh, sq, sk)), 0.4)
    want = want.reshape(bh // heads, heads, sq, d).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_attention_rule_tiles():
    """Four register tiles per row block where a slice's K^T does not stay in L1 (ViT's 197 keys
    of 64), one where it does (BERT's 128) or Sq is short."""
    from topi.x86.attention import default_attention_config

    assert default_attention_config(12, 197, 197, 64, 64)["tiles"].val == 4
    assert default_attention_config(12, 128, 128, 64, 64)["tiles"].val == 1
    assert default_attention_config(12, 7, 197, 64, 64)["tiles"].val == 1


@pytest.mark.parametrize("bh,heads,sq,fuse_rows", [(6, 3, 13, False), (4, 4, 16, True), (2, 1, 9, False)])
def test_attention_heads_merged(bh, heads, sq, fuse_rows):
    sk, d = 11, 8
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, d)
    Q, K, V = te.placeholder(q.shape), te.placeholder(k.shape), te.placeholder(v.shape)
    cfg = make_config(attention_workload(bh, sq, sk, d, d), {"rb": 1, "vec": 8, "fuse_rows": fuse_rows})
    out = attention(Q, K, V, None, 0.5, cfg=cfg, heads=heads)
    f = codegen.build(schedule_attention(out), [Q, K, V, out])
    y = np.full((bh // heads, sq, heads, d), np.nan, "float32")
    f(q, k, v, y)
    want = ref.attention_python(q, k, v, None, 0.5).reshape(bh // heads, heads, sq, d).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bh,sq,sk,heads", [(3, 13, 21, 0), (4, 9, 37, 2), (2, 16, 16, 0)])
def test_attention_fully_masked_rows_are_zero(bh, sq, sk, heads):
    """A row whose every key is masked (-inf) gives 0, as ONNX's reference, not NaN (0 / 0)."""
    d = dv = 12
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, dv)
    mask = np.where(RNG.random((bh, sq, sk)) < 0.5, -np.inf, 0.0).astype("float32")
    dead = [(b, i) for b in range(bh) for i in range(sq) if (b + 2 * i) % 3 == 0]
    for b, i in dead:
        mask[b, i] = -np.inf
    want = ref.attention_python(q, k, v, mask, 0.3)
    assert all((want[b, i] == 0).all() for b, i in dead) and np.isfinite(want).all()
    Q, K, V, M = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (k, "k"), (v, "v"), (mask, "m")))
    cfg = make_config(attention_workload(bh, sq, sk, d, dv), {"rb": 4, "vec": 8, "fuse_rows": False})
    out = attention(Q, K, V, M, 0.3, cfg=cfg, heads=heads)
    f = codegen.build(schedule_attention(out), [Q, K, V, M, out])
    y = np.full(tuple(int(x) for x in out.shape), np.nan, "float32")
    f(q, k, v, mask, y)
    if heads:
        want = want.reshape(bh // heads, heads, sq, dv).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("bh,sq,sk", [(2, 7, 21), (2, 13, 16)])
def test_attention_far_scores_and_nan(bh, sq, sk):
    """Scores 80-120 below their row's largest (a -100 mask, Swin's) weigh exp(-80) or 0 (below
    exp(-86.5), where the kernel's exp is clamped); a NaN in a query row makes that row NaN, one
    in a key every row of its slice, as the reference: the clamp keeps NaN out of min / max."""
    d = dv = 16
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, dv)
    mask = np.where(RNG.random((bh, sq, sk)) < 0.4, -100.0, 0.0).astype("float32")
    mask[:, :, 0] = 0.0
    mask[0, 1, 1:] = -80.0 - 40.0 * RNG.random(sk - 1)  # one row: a key at 0, the rest 80-120 below
    Q, K, V, M = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (k, "k"), (v, "v"), (mask, "m")))
    out = attention(Q, K, V, M, 0.25)
    f = codegen.build(schedule_attention(out), [Q, K, V, M, out])
    y = np.full((bh, sq, dv), np.nan, "float32")
    f(q, k, v, mask, y)
    np.testing.assert_allclose(y, ref.attention_python(q, k, v, mask, 0.25), rtol=1e-4, atol=1e-5)
    q[0, 3, 5] = np.nan
    k[1, 4, 2] = np.nan
    f(q, k, v, mask, y)
    assert np.isnan(y[0, 3]).all() and np.isnan(y[1]).all()
    assert np.isfinite(np.delete(y[0], 3, axis=0)).all()


@pytest.mark.parametrize(
    "bh,sq,sk,d,dv,rb,vec,heads",
    [(3, 13, 21, 10, 7, 1, 8, 0), (4, 12, 37, 16, 9, 4, 16, 2), (2, 5, 70, 3, 17, 1, 32, 0)],
)
def test_attention_softcap(bh, sq, sk, d, dv, rb, vec, heads):
    """softcap caps the scaled scores (c * tanh(s / c)) before the mask; a -inf key stays masked,
    a fully masked row stays 0; vec does not divide Sk; large scores so the cap bites."""
    q, k, v = rand(bh, sq, d) * 3, rand(bh, sk, d) * 3, rand(bh, sk, dv)
    mask = np.where(RNG.random((bh, sq, sk)) < 0.3, -np.inf, 0.0).astype("float32")
    mask[:, 1] = -np.inf
    Q, K, V, M = (te.placeholder(a.shape, name=n) for a, n in ((q, "q"), (k, "k"), (v, "v"), (mask, "m")))
    cfg = make_config(attention_workload(bh, sq, sk, d, dv), {"rb": rb, "vec": vec, "fuse_rows": True})
    out = attention(Q, K, V, M, 0.7, cfg=cfg, heads=heads, softcap=2.5)
    f = codegen.build(schedule_attention(out), [Q, K, V, M, out])
    y = np.full(tuple(int(x) for x in out.shape), np.nan, "float32")
    f(q, k, v, mask, y)
    want = ref.attention_python(q, k, v, mask, 0.7, softcap=2.5)
    assert np.abs(want - ref.attention_python(q, k, v, mask, 0.7)).max() > 0.1  # the cap changes the answer
    if heads:
        want = want.reshape(bh // heads, heads, sq, dv).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="softcap=-1.0"):
        attention(Q, K, V, M, 0.7, softcap=-1.0)


@pytest.mark.parametrize("bh,sq,sk,d,dv,masked", [(3, 13, 21, 10, 7, True), (2, 16, 70, 64, 24, False)])
def test_attention_float16_rounds_once(bh, sq, sk, d, dv, masked):
    """float16 attention is within one float16 rounding of the exact result (the arithmetic is
    float32 inside; float16 accumulators over Sk or D keys were several ulps off)."""
    q, k, v = (rand(bh, n, m).astype("float16") for n, m in ((sq, d), (sk, d), (sk, dv)))
    mask = None
    if masked:  # causal, and row 0 of every slice fully masked
        mask = np.where(np.tril(np.ones((sq, sk), bool)), 0.0, -np.inf).astype("float16")[None]
        mask[:, 0] = -np.inf
    Q, K, V = (te.placeholder(a.shape, dtype="float16", name=n) for a, n in ((q, "q"), (k, "k"), (v, "v")))
    M = te.placeholder(mask.shape, dtype="float16", name="m") if masked else None
    out = attention(Q, K, V, M, 1 / math.sqrt(d))
    assert out.dtype == "float16"
    f = codegen.build(schedule_attention(out), [Q, K, V] + ([M] if masked else []) + [out])
    y = np.full((bh, sq, dv), np.nan, "float16")
    f(q, k, v, *([mask] if masked else []), y)
    exact = ref.attention_python(q.astype("float64"), k.astype("float64"), v.astype("float64"),
                                 None if mask is None else mask.astype("float64"), 1 / math.sqrt(d))
    ulp = np.spacing(np.abs(exact).astype("float16")).astype("float64")
    assert np.all(np.abs(y.astype("float64") - exact) <= ulp), np.abs(y - exact).max()
    if masked:
        assert (y[:, 0] == 0).all()


def test_merge_attention_heads_pass():
    from graph.passes.fuse_attention import merge_attention_heads

    b = GraphBuilder()
    q, k, v = b.input("q", (6, 10, 8)), b.input("k", (6, 12, 8)), b.input("v", (6, 12, 8))
    a = b.op("attention", q, k, v, scale=0.3)
    t = b.op("transpose", b.op("reshape", a, newshape=(2, 3, 10, 8)), axes=(0, 2, 1, 3))
    g = b.finish([b.op("reshape", t, newshape=(20, 24))])
    merged = merge_attention_heads(g)
    att = next(n for n in merged.nodes if n.op == "attention")
    assert att.attrs["heads"] == 3 and _ops(merged) == ["attention", "reshape"]
    feed = {"q": rand(6, 10, 8), "k": rand(6, 12, 8), "v": rand(6, 12, 8)}
    np.testing.assert_allclose(interpret(merged, feed)[0], interpret(g, feed)[0], rtol=1e-5, atol=1e-6)
    b2 = GraphBuilder()  # a transpose that does not merge the heads is kept
    q, k, v = b2.input("q", (6, 10, 8)), b2.input("k", (6, 12, 8)), b2.input("v", (6, 12, 8))
    a = b2.op("attention", q, k, v, scale=0.3)
    g2 = b2.finish([b2.op("transpose", a, axes=(0, 2, 1))])
    assert merge_attention_heads(g2) is g2


def test_attention_config_errors():
    with pytest.raises(ValueError, match="rb"):
        make_config(attention_workload(2, 10, 10, 4, 4), {"rb": 3, "vec": 16, "fuse_rows": False})
    with pytest.raises(ValueError, match="vec"):
        make_config(layer_norm_workload(4, 64), {"rb": 1, "vec": 3, "parallel": True})
    with pytest.raises(ValueError, match="head size"):
        attention(te.placeholder((2, 4, 8)), te.placeholder((2, 4, 9)), te.placeholder((2, 4, 8)))
    with pytest.raises(ValueError, match="mask"):
        attention(
            te.placeholder((2, 4, 8)),
            te.placeholder((2, 5, 8)),
            te.placeholder((2, 5, 8)),
            te.placeholder((2, 4, 4)),
        )


@pytest.mark.parametrize("fn,np_fn", [(gelu_tanh, ref.gelu_tanh_python), (silu, ref.silu_python)])
def test_activations(fn, np_fn):
    x = te.placeholder((3, 37), name="x")
    y = fn(x)
    import topi

    f = codegen.build(topi.x86.schedule_injective(y), [x, y])
    xs = rand(3, 37) * 4
    out = np.empty_like(xs)
    f(xs, out)
    np.testing.assert_allclose(out, np_fn(xs), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ passes
def _ops(g) -> list:
    return [n.op for n in g.nodes if not n.is_constant]


def _layer_norm_graph(square: str):
    b = GraphBuilder()
    x = b.input("x", (2, 5, 24))
    m = b.op("mean", x, axis=(2,), keepdims=True)
    c = b.op("subtract", x, m)
    sq = b.op("multiply", c, c) if square == "mul" else b.op("power", c, b.const(np.float32(2.0)))
    var = b.op("mean", sq, axis=(-1,), keepdims=True)
    y = b.op("divide", c, b.op("sqrt", b.op("add", var, b.const(np.float32(1e-5)))))
    y = b.op("add", b.op("multiply", y, b.const(rand(24))), b.const(rand(24)))
    return b.finish([y])


@pytest.mark.parametrize("square", ["mul", "pow"])
def test_fuse_layer_norm(square):
    g = _layer_norm_graph(square)
    fused = fuse_layer_norm(g)
    assert _ops(fused) == ["layer_norm"]
    xs = {"x": rand(2, 5, 24)}
    np.testing.assert_allclose(interpret(fused, xs)[0], interpret(g, xs)[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("inverse", ["rsqrt", "one_over_sqrt"])
def test_fuse_rms_norm(inverse):
    b = GraphBuilder()
    x = b.input("x", (6, 40))
    ms = b.op("mean", b.op("multiply", x, x), axis=(1,), keepdims=True)
    var = b.op("add", ms, b.const(np.float32(1e-6)))
    inv = b.op("rsqrt", var) if inverse == "rsqrt" else b.op("divide", b.const(np.float32(1.0)), b.op("sqrt", var))
    y = b.op("multiply", b.op("multiply", x, inv), b.const(rand(40)))
    g = b.finish([y])
    fused = fuse_layer_norm(g)
    assert _ops(fused) == ["rms_norm"]
    xs = {"x": rand(6, 40)}
    np.testing.assert_allclose(interpret(fused, xs)[0], interpret(g, xs)[0], rtol=1e-4, atol=1e-5)


def test_layer_norm_not_over_other_axis():
    b = GraphBuilder()
    x = b.input("x", (4, 8))
    m = b.op("mean", x, axis=(0,), keepdims=True)
    c = b.op("subtract", x, m)
    var = b.op("mean", b.op("multiply", c, c), axis=(0,), keepdims=True)
    y = b.op("divide", c, b.op("sqrt", b.op("add", var, b.const(np.float32(1e-5)))))
    g = b.finish([y])
    assert fuse_layer_norm(g) is g


def _channels_first_norm_graph(second=(0, 3, 1, 2), shared=False):
    b = GraphBuilder()
    x = b.input("x", (1, 12, 5, 7))
    t = b.op("transpose", x, axes=(0, 2, 3, 1))
    n = b.op("layer_norm", t, b.const(rand(12)), b.const(rand(12)), epsilon=1e-6)
    y = b.op("transpose", n, axes=second)
    return b.finish([y, n] if shared else [y])


def test_fold_norm_transposes():
    """timm's LayerNorm2d (permute, norm over the last axis, permute back) runs as one norm
    over the channels, without the two copies; built and compared with the interpreter."""
    g = _channels_first_norm_graph()
    folded = fold_norm_transposes(g)
    assert _ops(folded) == ["layer_norm"] and folded.outputs[0].node.attrs["axis"] == 1
    xs = {"x": rand(1, 12, 5, 7)}
    want = interpret(g, xs)[0]
    np.testing.assert_allclose(interpret(folded, xs)[0], want, rtol=1e-4, atol=1e-5)
    m = graph.build(g).create_executor()
    m.run(**xs)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-5)
    assert [n.attrs["anchor"] for n in m.lib.graph.nodes if n.op == "fused"] == ["layer_norm"]


@pytest.mark.parametrize("case", ["not_inverse", "norm_shared"])
def test_fold_norm_transposes_leaves_others(case):
    g = _channels_first_norm_graph(second=(0, 3, 2, 1)) if case == "not_inverse" else \
        _channels_first_norm_graph(shared=True)
    assert _ops(fold_norm_transposes(g)).count("transpose") == 2


def _activation_graph(kind: str):
    b = GraphBuilder()
    x = b.input("x", (3, 16))
    f = lambda v: b.const(np.float32(v))
    if kind == "gelu":
        y = b.op(
            "multiply",
            b.op("multiply", x, b.op("add", b.op("erf", b.op("divide", x, f(math.sqrt(2)))), f(1))),
            f(0.5),
        )
    elif kind == "gelu_tanh":
        cube = b.op("power", x, f(3.0))
        inner = b.op(
            "multiply", b.op("add", x, b.op("multiply", cube, f(0.044715))), f(math.sqrt(2 / math.pi))
        )
        y = b.op("multiply", b.op("multiply", x, f(0.5)), b.op("add", b.op("tanh", inner), f(1)))
    elif kind == "silu":
        y = b.op("multiply", x, b.op("sigmoid", x))
    else:  # relu(x) * 2 + x: not an activation we know
        y = b.op("add", b.op("multiply", b.op("relu", x), f(2)), x)
    return b.finish([y])


@pytest.mark.parametrize("kind", ["gelu", "gelu_tanh", "silu", "other"])
def test_fuse_activation(kind):
    g = _activation_graph(kind)
    fused = fuse_activation(g)
    if kind == "other":
        assert fused is g
        return
    assert _ops(fused) == [kind]
    xs = {"x": rand(3, 16) * 3}
    np.testing.assert_allclose(interpret(fused, xs)[0], interpret(g, xs)[0], rtol=1e-4, atol=1e-5)


def _attention_graph(masked: str | None):
    b = GraphBuilder()
    q, kt, v = b.input("q", (6, 10, 8)), b.input("kt", (6, 8, 12)), b.input("v", (6, 12, 8))
    s = b.op("reshape", b.op("batch_matmul", q, kt), newshape=(2, 3, 10, 12))
    s = b.op("multiply", s, b.const(np.float32(0.35)))
    if masked == "where":
        cond = np.triu(np.ones((10, 12), bool), 1)[None, None]
        s = b.op("where", b.const(cond), b.const(np.float32(-np.inf)), s)
    elif masked == "input":
        s = b.op("add", s, b.input("mask", (2, 3, 10, 12)))
    p = b.op("reshape", b.op("softmax", s, axis=-1), newshape=(6, 10, 12))
    return b.finish([b.op("batch_matmul", p, v)])


@pytest.mark.parametrize("masked", [None, "where", "input"])
def test_fuse_attention(masked):
    g = _attention_graph(masked)
    fused = fuse_attention(g)
    assert _ops(fused) == (["reshape", "attention"] if masked == "input" else ["attention"])
    feed = {"q": rand(6, 10, 8), "kt": rand(6, 8, 12), "v": rand(6, 12, 8)}
    if masked == "input":
        feed["mask"] = rand(2, 3, 10, 12)
    want = interpret(g, feed)[0]
    np.testing.assert_allclose(interpret(fused, feed)[0], want, rtol=1e-4, atol=1e-5)
    lib = graph.build(g)
    m = lib.create_executor()
    m.run(**feed)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_fuse_attention_folds_q_and_k_scaling(shared):
    """torch SDPA's export scales q and k^T by sqrt(scale) each: the scalars (under q's transpose
    and reshape) fold into the attention's scale; a scaled q read elsewhere too stays as it is."""
    b = GraphBuilder()
    x, kt, v = b.input("x", (10, 6, 8)), b.input("kt", (6, 8, 12)), b.input("v", (6, 12, 8))
    xs = b.op("multiply", x, b.const(np.float32(0.5)))
    q = b.op("reshape", b.op("transpose", xs, axes=(1, 0, 2)), newshape=(6, 10, 8))
    k = b.op("divide", kt, b.const(np.float32(4.0)))
    p = b.op("softmax", b.op("batch_matmul", q, k), axis=-1)
    out = b.op("batch_matmul", p, v)
    g = b.finish([out, xs] if shared else [out])
    fused = fuse_attention(g)
    att = next(n for n in fused.nodes if n.op == "attention")
    assert att.attrs["scale"] == pytest.approx(0.25 if shared else 0.125)
    assert _ops(fused).count("multiply") == (1 if shared else 0) and "divide" not in _ops(fused)
    feed = {"x": rand(10, 6, 8), "kt": rand(6, 8, 12), "v": rand(6, 12, 8)}
    np.testing.assert_allclose(interpret(fused, feed)[0], interpret(g, feed)[0], rtol=1e-4, atol=1e-5)


def test_shared_head_transpose_fuses_into_attention():
    """q, k, v taken from one shared transpose of a QKV projection: each input gets its own
    copy of the chain, and the whole chain runs inside the attention kernel."""
    b = GraphBuilder()
    qkv = b.input("qkv", (10, 3 * 2 * 8))  # [S, 3 * H * D]
    t = b.op("transpose", b.op("reshape", qkv, newshape=(10, 3, 2, 8)), axes=(1, 2, 0, 3))  # [3, H, S, D]
    q, k, v = (b.op("take", t, b.const(np.int64(i)), axis=0) for i in range(3))
    att = b.op("attention", q, k, v, scale=0.3)
    g = b.finish([b.op("relu", att)])
    lib = graph.build(g)
    groups = [n for n in lib.graph.nodes if n.op == "fused"]
    anchors = [n.attrs["anchor"] for n in groups]
    assert anchors.count("attention") == 1 and not any(
        a is None and "transpose" in n.name for a, n in zip(anchors, groups)
    )
    x = rand(10, 48)
    m = lib.create_executor()
    m.run(qkv=x)
    heads = x.reshape(10, 3, 2, 8).transpose(1, 2, 0, 3)
    want = np.maximum(ref.attention_python(heads[0], heads[1], heads[2], None, 0.3), 0)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-5)


def test_attention_pattern_with_second_reader_is_kept():
    b = GraphBuilder()
    q, kt, v = b.input("q", (2, 4, 8)), b.input("kt", (2, 8, 4)), b.input("v", (2, 4, 8))
    s = b.op("batch_matmul", q, kt)
    p = b.op("softmax", s, axis=-1)
    g = b.finish([b.op("batch_matmul", p, v), p])
    assert fuse_attention(g) is g


# ------------------------------------------------------------------ ONNX converters
def _model(nodes, inputs, outputs, opset=23, initializers=()):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(initializers))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _run(model, feed):
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    m.run(**feed)
    return m.get_output(0)


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


@pytest.mark.parametrize("layout", ["4d", "3d"])
@pytest.mark.parametrize("mask", [None, "bool", "float", "causal"])
def test_onnx_attention(layout, mask):
    b, h, sq, sk, d = 2, 3, 7, 9, 8
    if layout == "4d":
        shapes = [(b, h, sq, d), (b, h, sk, d), (b, h, sk, d)]
        attrs = {}
    else:
        shapes = [(b, sq, h * d), (b, sk, h * d), (b, sk, h * d)]
        attrs = {"q_num_heads": h, "kv_num_heads": h}
    ins = ["Q", "K", "V"]
    feed = {n: rand(*s) for n, s in zip(ins, shapes)}
    inputs = [_vi(n, s) for n, s in zip(ins, shapes)]
    mask_arr = None
    if mask == "bool":
        mask_arr = RNG.random((sq, sk)) > 0.3
        mask_arr[:, 0] = True
        inputs.append(_vi("M", (sq, sk), TensorProto.BOOL))
        ins.append("M")
        feed["M"] = mask_arr
    elif mask == "float":
        mask_arr = rand(b, 1, sq, sk)
        inputs.append(_vi("M", (b, 1, sq, sk)))
        ins.append("M")
        feed["M"] = mask_arr
    elif mask == "causal":
        attrs["is_causal"] = 1
    node = helper.make_node("Attention", ins, ["Y"], scale=0.25, **attrs)
    out_shape = (b, h, sq, d) if layout == "4d" else (b, sq, h * d)
    y = _run(_model([node], inputs, [_vi("Y", out_shape)]), feed)

    def heads(a):
        return a if layout == "4d" else a.reshape(a.shape[0], a.shape[1], h, d).transpose(0, 2, 1, 3)

    q, k, v = (heads(feed[n]).reshape(b * h, -1, d) for n in ("Q", "K", "V"))
    add = None
    if mask == "bool":
        add = np.where(mask_arr, 0.0, -np.inf)[None]
    elif mask == "float":
        add = np.broadcast_to(mask_arr, (b, h, sq, sk)).reshape(b * h, sq, sk)
    elif mask == "causal":
        add = np.where(np.tril(np.ones((sq, sk), bool)), 0.0, -np.inf)[None]
    want = ref.attention_python(q, k, v, add, 0.25).reshape(b, h, sq, d)
    if layout == "3d":
        want = want.transpose(0, 2, 1, 3).reshape(b, sq, h * d)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "attrs,ins,shapes,match",
    [
        ({"qk_matmul_output_mode": 4}, ["Q", "K", "V"], [(1, 2, 4, 8)] * 3, "qk_matmul_output_mode=4"),
        ({"left_window_size": -2}, ["Q", "K", "V"], [(1, 2, 4, 8)] * 3, "left_window_size=-2"),
        ({"foo": 1}, ["Q", "K", "V"], [(1, 2, 4, 8)] * 3, r"attributes \['foo'\]"),
        ({}, ["Q", "K", "V", "M"], [(1, 2, 4, 8)] * 3 + [(1, 1, 1, 4, 4)], "rank 1 to 4"),
        ({}, ["Q", "K", "V", "M"], [(1, 2, 4, 8)] * 3 + [(3, 4)], "does not broadcast"),
        ({}, ["Q", "K", "V", "M"], [(1, 2, 4, 8)] * 3 + [(4, 5)], "does not broadcast"),
        ({}, ["Q", "K", "V"], [(1, 2, 4, 8), (1, 2, 4, 6), (1, 2, 4, 8)], "do not line up"),
        ({}, ["Q", "K", "V"], [(1, 3, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)], "multiple of the kv heads"),
        ({}, ["Q", "K", "V", "", "PK"], [(1, 2, 4, 8)] * 4, "given together"),
        ({}, ["Q", "K", "V", "", "PK", "PV"], [(1, 2, 4, 8)] * 3 + [(1, 2, 3, 8), (1, 2, 5, 8)], "different lengths"),
        ({}, ["Q", "K", "V"], [(1, 4, 16)] * 3, "q_num_heads"),
    ],
)
def test_onnx_attention_errors(attrs, ins, shapes, match):
    node = helper.make_node("Attention", ins, ["Y"], name="attn0", **attrs)
    model = _model([node], [_vi(n, s) for n, s in zip([i for i in ins if i], shapes)], [_vi("Y", None)])
    with pytest.raises(ValueError, match=match) as err:
        graph.from_onnx(model)
    assert "attn0" in str(err.value)


@pytest.mark.parametrize("transposed", [False, True])
def test_onnx_matmul_by_constant_is_one_packed_dense(transposed):
    """``MatMul(x[2, 5, 16], W) + b -> Relu`` (W constant, also given as ``Transpose(W^T)``): one
    kernel, a dense over the packed weight with the bias and relu as its epilogue."""
    w, bias = rand(16, 24), rand(24)
    inits = [helper.make_tensor("B", TensorProto.FLOAT, (24,), bias.ravel())]
    if transposed:
        inits.append(helper.make_tensor("Wt", TensorProto.FLOAT, (24, 16), np.ascontiguousarray(w.T).ravel()))
        nodes = [helper.make_node("Transpose", ["Wt"], ["W"], perm=[1, 0])]
    else:
        inits.append(helper.make_tensor("W", TensorProto.FLOAT, (16, 24), w.ravel()))
        nodes = []
    nodes += [
        helper.make_node("MatMul", ["X", "W"], ["M"]),
        helper.make_node("Add", ["M", "B"], ["A"]),
        helper.make_node("Relu", ["A"], ["Y"]),
    ]
    model = _model(nodes, [_vi("X", (2, 5, 16))], [_vi("Y", (2, 5, 24))], opset=17, initializers=inits)
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    kernels = [n for n in lib.graph.nodes if n.op == "fused" and n.attrs["anchor"] is not None]
    assert len(kernels) == 1 and kernels[0].attrs["anchor"] == "dense"
    body_ops = [n.op for n in kernels[0].attrs["body"].nodes if not n.is_constant]
    assert body_ops == ["dense", "add", "relu"]
    assert any(len(v.shape) == 3 for v in kernels[0].inputs)  # the packed [N/bn, K, bn] weight
    x = rand(2, 5, 16)
    m = lib.create_executor()
    m.run(X=x)
    np.testing.assert_allclose(m.get_output(0), np.maximum(x @ w + bias, 0), rtol=1e-4, atol=1e-5)


def _fused_ops(lib) -> set:
    return {n.op for f in lib.graph.nodes if f.op == "fused" for n in f.attrs["body"].nodes}


def test_onnx_reduce_pattern_layer_norm_and_tanh_gelu():
    """An older exporter's LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add)
    becomes one layer_norm kernel; Gelu(approximate="tanh") after a MatMul fuses into the dense."""
    gamma, beta, w = rand(32), rand(32), rand(32, 48)
    inits = [
        helper.make_tensor(n, TensorProto.FLOAT, a.shape, a.ravel())
        for n, a in (
            ("G", gamma),
            ("Bt", beta),
            ("W", w),
            ("Two", np.array(2.0, "float32")),
            ("Eps", np.array(1e-5, "float32")),
        )
    ]
    nodes = [
        helper.make_node("ReduceMean", ["X", "Axes"], ["M"]),
        helper.make_node("Sub", ["X", "M"], ["C"]),
        helper.make_node("Pow", ["C", "Two"], ["C2"]),
        helper.make_node("ReduceMean", ["C2", "Axes"], ["V"]),
        helper.make_node("Add", ["V", "Eps"], ["VE"]),
        helper.make_node("Sqrt", ["VE"], ["S"]),
        helper.make_node("Div", ["C", "S"], ["N"]),
        helper.make_node("Mul", ["N", "G"], ["NG"]),
        helper.make_node("Add", ["NG", "Bt"], ["LN"]),
        helper.make_node("MatMul", ["LN", "W"], ["H"]),
        helper.make_node("Gelu", ["H"], ["Y"], approximate="tanh"),
    ]
    inits.append(helper.make_tensor("Axes", TensorProto.INT64, (1,), [-1]))
    model = _model(nodes, [_vi("X", (2, 6, 32))], [_vi("Y", (2, 6, 48))], opset=20, initializers=inits)
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    assert {"layer_norm", "gelu_tanh"} <= _fused_ops(lib) and "mean" not in _fused_ops(lib)
    x = rand(2, 6, 32)
    m = lib.create_executor()
    m.run(X=x)
    want = ref.gelu_tanh_python(ref.layer_norm_python(x, gamma, beta, 1e-5) @ w)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4)


def test_onnx_rms_norm_and_trilu():
    x, scale = rand(2, 5, 12), rand(12)
    nodes = [
        helper.make_node("RMSNormalization", ["X", "S"], ["R"], epsilon=1e-6),
        helper.make_node("Trilu", ["R"], ["Y"], upper=0),
    ]
    model = _model(nodes, [_vi("X", (2, 5, 12)), _vi("S", (12,))], [_vi("Y", (2, 5, 12))])
    y = _run(model, {"X": x, "S": scale})
    want = np.tril(ref.rms_norm_python(x, scale, 1e-6))
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ torch models vs onnxruntime
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    pytest.importorskip("torch")
    return str(tmp_path_factory.mktemp("transformers"))


@pytest.mark.parametrize(
    "name,expect",
    [
        ("tiny_encoder", {"attention", "layer_norm"}),
        ("tiny_bert", {"attention", "layer_norm", "gelu"}),
        ("tiny_gpt", {"attention", "layer_norm", "gelu_tanh"}),
    ],
)
def test_torch_models_match_onnxruntime(model_dir, name, expect):
    ort = pytest.importorskip("onnxruntime")
    from graph.onnx import zoo_transformers as M

    spec = M.SPECS[name]
    path = M.model_path(name, model_dir)
    g, params = graph.from_onnx(path, shape={spec.input_name: spec.input_shape()})
    lib = graph.build(g, params=params)
    ops = {n.op for f in lib.graph.nodes if f.op == "fused" for n in f.attrs["body"].nodes}
    assert expect <= ops, f"{name}: expected {expect} among the fused ops {sorted(ops)}"
    assert "batch_matmul" not in ops and "softmax" not in ops
    x = M.sample_input(spec).numpy()
    m = lib.create_executor()
    m.run(**{spec.input_name: x})
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    want = sess.run(None, {spec.input_name: x})[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_attention_head_size_not_whole_vectors():
    """Dv = 30 (MobileViT-XS): v's rows padded to whole vectors per slice (an ``attention_vp``
    stage), the rows in blocks that divide Sq (AVX2: 4, not 6, for Sq = 64), heads merged."""
    from codegen.target import Target

    with Target("llvm -mcpu=x86-64-v3"):
        assert make_config(attention_workload(16, 64, 64, 30, 30), {}).values["rb"] == 4
        assert make_config(attention_workload(16, 64, 64, 32, 32), {}).values["rb"] == 6
    bh, sq, sk, d = 8, 64, 37, 30
    q, k, v = rand(bh, sq, d), rand(bh, sk, d), rand(bh, sk, d)
    Q, K, V = te.placeholder(q.shape), te.placeholder(k.shape), te.placeholder(v.shape)
    out = attention(Q, K, V, None, 0.5, heads=4)
    assert any(t.op.tag == "attention_vp" for t in out.op.input_tensors[0].op.input_tensors)
    f = codegen.build(schedule_attention(out), [Q, K, V, out])
    y = np.full((bh // 4, sq, 4, d), np.nan, "float32")
    f(q, k, v, y)
    want = ref.attention_python(q, k, v, None, 0.5).reshape(bh // 4, 4, sq, d).transpose(0, 2, 1, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
