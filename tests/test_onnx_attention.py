"""ONNX Attention (opsets 23-25): onnx's own node cases, and odd-shaped models against onnx's reference.

The node cases are onnx's backend tests for Attention (:mod:`onnx_node_cases`
imports, builds and compares each at its rtol/atol, in forked children).  The
models below combine the features on shapes that divide no split factor
(grouped-query heads, a KV cache, masks shorter than the keys, a run-time
``nonpad_kv_seqlen``, sliding windows, softcap, every ``qk_matmul_output_mode``,
float16) and are compared with ``onnx.reference.ReferenceEvaluator``; each also
checks which path it took (the fused ``attention`` node or the decomposition).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import graph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import onnx_node_cases as cases

CASES = {
    c.name: c
    for c in cases.eligible_cases()
    if c.name.startswith("test_attention") and not c.name.endswith("_expanded")
}


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict:
    return cases.run_in_fresh_cache(CASES.values(), tmp_path_factory.mktemp("attention-cache"))


def test_every_attention_feature_has_cases():
    names = " ".join(CASES)
    for feature in ("gqa", "past_and_present", "softcap", "qk_matmul", "nonpad", "window", "fp16"):
        assert feature in names, feature
    assert len(CASES) >= 90


@pytest.mark.parametrize("name", sorted(CASES))
def test_node_case(name, results):
    out = results[name]
    assert out.kind == "pass", f"{out.kind}: {out.detail}"


# ------------------------------------------------------------------ odd shapes against onnx's reference
RNG = np.random.default_rng(7)


def _vi(name, array):
    elem = helper.np_dtype_to_tensor_dtype(array.dtype)
    return helper.make_tensor_value_info(name, elem, array.shape)


def _attention_model(feeds: dict, outputs: list, opset: int, **attrs):
    order = ["Q", "K", "V", "M", "PK", "PV", "L"]
    ins = [n if n in feeds else "" for n in order]
    while ins and not ins[-1]:
        ins.pop()
    node = helper.make_node("Attention", ins, outputs, name="attn", **attrs)
    g = helper.make_graph(
        [node],
        "attention",
        [_vi(n, feeds[n]) for n in ins if n],
        [helper.make_tensor_value_info(o, 0, None) for o in outputs if o],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _qkv(b, hq, hk, sq, sk, d, dv, dtype="float32", layout="4d"):
    q, k, v = (
        RNG.standard_normal(s).astype(dtype) for s in ((b, hq, sq, d), (b, hk, sk, d), (b, hk, sk, dv))
    )
    if layout == "3d":
        q, k, v = (t.transpose(0, 2, 1, 3).reshape(t.shape[0], t.shape[2], -1) for t in (q, k, v))
    return {"Q": q, "K": k, "V": v}


def _check(model, feeds: dict, fused: bool, rtol=1e-4, atol=1e-5):
    g, params = graph.from_onnx(model)
    ops = [n.op for n in g.nodes]
    assert ("attention" in ops) == fused and ("softmax" in ops) != fused, ops
    m = graph.build(g, params=params).create_executor()
    m.run(**feeds)
    want = ReferenceEvaluator(model).run(None, feeds)
    for k, w in enumerate(want):
        got = m.get_output(k)
        assert got.shape == w.shape and got.dtype == w.dtype, (k, got.shape, got.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(
            got.astype("float64"), w.astype("float64"), rtol=rtol, atol=atol, err_msg=f"output {k}"
        )


@pytest.mark.parametrize("layout", ["4d", "3d"])
@pytest.mark.parametrize("causal", [0, 1])
@pytest.mark.parametrize("softcap", [0.0, 1.5])
def test_gqa_fused(layout, causal, softcap):
    """Query heads 6 over kv heads 2 (groups of 3), 5 queries, 7 keys, head sizes 3 and 5."""
    feeds = _qkv(2, 6, 2, 5, 7, 3, 5, layout=layout)
    attrs = {"q_num_heads": 6, "kv_num_heads": 2} if layout == "3d" else {}
    if softcap:
        attrs["softcap"] = softcap
    feeds["M"] = RNG.standard_normal((5, 7)).astype("float32")
    _check(_attention_model(feeds, ["Y"], 23, is_causal=causal, **attrs), feeds, fused=True)


@pytest.mark.parametrize("mask", ["float", "bool", "short"])
def test_kv_cache_gqa_fused(mask):
    """past_key/past_value (4 entries) before 3 new keys; present_key/present_value are outputs."""
    b, hq, hk, sq, past, sk, d, dv = 1, 4, 2, 3, 4, 3, 5, 6
    feeds = _qkv(b, hq, hk, sq, sk, d, dv)
    feeds["PK"] = RNG.standard_normal((b, hk, past, d)).astype("float32")
    feeds["PV"] = RNG.standard_normal((b, hk, past, dv)).astype("float32")
    if mask == "bool":
        feeds["M"] = RNG.random((b, 1, sq, past + sk)) > 0.3
    elif mask == "short":  # covers the first 5 keys; the rest are padded with -inf
        feeds["M"] = RNG.standard_normal((hq, sq, 5)).astype("float32")
    else:
        feeds["M"] = RNG.standard_normal((sq, past + sk)).astype("float32")
    model = _attention_model(feeds, ["Y", "present_key", "present_value"], 23, is_causal=1)
    _check(model, feeds, fused=True)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 1.5])
def test_decomposition_qk_output_softcap(mode, softcap):
    """qk_matmul_output in every mode, with softcap, GQA, a KV cache and a fully masked query row."""
    b, hq, hk, sq, past, sk, d, dv = 2, 3, 1, 5, 2, 3, 7, 3
    feeds = _qkv(b, hq, hk, sq, sk, d, dv, layout="3d")
    feeds["M"] = RNG.standard_normal((b, 1, sq, past + sk)).astype("float32")
    feeds["M"][1, 0, 2, :] = -np.inf  # a fully masked row gives 0 in Y and in the probabilities
    feeds["PK"] = RNG.standard_normal((b, hk, past, d)).astype("float32")
    feeds["PV"] = RNG.standard_normal((b, hk, past, dv)).astype("float32")
    attrs = {"q_num_heads": hq, "kv_num_heads": hk, "qk_matmul_output_mode": mode, "scale": 0.3}
    if softcap:
        attrs["softcap"] = softcap
    outputs = ["Y", "present_key", "present_value", "QK"]
    _check(_attention_model(feeds, outputs, 23, **attrs), feeds, fused=False)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("window", [(2, -1), (1, 2), (-1, 0)])
def test_nonpad_window(fused, window):
    """An external cache: per-batch valid lengths read at run time (one 0, one past the queries),
    causal from each batch's frontier, a sliding window, softcap; the same through both paths."""
    b, hq, hk, sq, sk, d = 3, 4, 2, 3, 9, 5
    feeds = _qkv(b, hq, hk, sq, sk, d, d)
    feeds["L"] = np.array([0, 7, 2], "int64")
    attrs = {"is_causal": 1, "left_window_size": window[0], "right_window_size": window[1], "softcap": 4.0}
    outputs = ["Y"] if fused else ["Y", "", "", "QK"]
    _check(_attention_model(feeds, outputs, 25, qk_matmul_output_mode=2, **attrs), feeds, fused=fused)


@pytest.mark.parametrize("fused", [True, False])
def test_float16_computed_in_float32(fused):
    """float16 operands: float32 arithmetic, one rounding at the outputs."""
    feeds = _qkv(2, 4, 2, 5, 6, 8, 3, dtype="float16")
    feeds["M"] = (RNG.standard_normal((1, 6)) * 0.5).astype("float16")
    outputs = ["Y"] if fused else ["Y", "", "", "QK"]
    model = _attention_model(feeds, outputs, 23, qk_matmul_output_mode=3 if not fused else 0)
    _check(model, feeds, fused=fused, rtol=2e-3, atol=2e-3)


def test_softmax_precision_double():
    feeds = _qkv(1, 2, 2, 3, 5, 4, 4)
    model = _attention_model(feeds, ["Y"], 23, softmax_precision=TensorProto.DOUBLE, is_causal=1)
    _check(model, feeds, fused=False)


@pytest.mark.parametrize("qk_mode", [None, 1, 2, 3])
@pytest.mark.parametrize("softcap", [0.0, 3.0])
def test_bfloat16_every_step_rounded(qk_mode, softcap):
    """bfloat16 Q, K, V, mask and cache (grouped heads, odd extents): onnx's reference on the bfloat16
    arrays, which rounds every numpy step to bfloat16 (after a softcap: float32, p rounded once), bit
    for bit; present_key/present_value too."""
    import ml_dtypes

    bf16 = ml_dtypes.bfloat16
    window = qk_mode in (None, 3)
    b, hq, hk, sq, past, sk, d, dv = 2, 4, 2, 3, 2, 4, 6, 3
    wide = _qkv(b, hq, hk, sq, sk, d, dv)
    wide["M"] = RNG.standard_normal((sq, past + sk)).astype("float32")
    wide["PK"] = RNG.standard_normal((b, hk, past, d)).astype("float32")
    wide["PV"] = RNG.standard_normal((b, hk, past, dv)).astype("float32")
    feeds = {n: a.astype(bf16) for n, a in wide.items()}
    outputs = ["Y", "present_key", "present_value"] + (["QK"] if qk_mode is not None else [])
    attrs = {"is_causal": 1, "softcap": softcap, "qk_matmul_output_mode": qk_mode or 0}
    opset = 23
    if window:
        attrs.update(left_window_size=2, right_window_size=1, scale=0.3)
        opset = 25
    model = _attention_model(feeds, outputs, opset, **attrs)
    g, params = graph.from_onnx(model)
    assert "attention" not in [n.op for n in g.nodes]
    m = graph.build(g, params=params).create_executor()
    m.run(**feeds)
    want = ReferenceEvaluator(model).run(None, feeds)
    for k, w in enumerate(want):
        got = m.get_output(k)
        assert got.dtype == bf16 and got.shape == w.shape
        np.testing.assert_array_equal(got.astype("float32"), w.astype("float32"), err_msg=f"output {k}")


def test_bfloat16_over_many_keys_rounds_once():
    """Over more than MAX_BFLOAT16_KEYS keys a bfloat16 Attention is computed in float32 (the fused
    kernel) and rounded once: within half a bfloat16 ulp of the exact answer on the bfloat16 inputs."""
    import ml_dtypes

    feeds = {n: a.astype(ml_dtypes.bfloat16) for n, a in _qkv(1, 2, 2, 3, 37, 8, 8).items()}
    model = _attention_model(feeds, ["Y"], 23, is_causal=1)
    g, params = graph.from_onnx(model)
    assert "attention" in [n.op for n in g.nodes]
    m = graph.build(g, params=params).create_executor()
    m.run(**feeds)
    got = m.get_output(0)
    q, k, v = (feeds[n].astype(np.float64) for n in "QKV")
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(8.0) + np.triu(np.full((3, 37), -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    exact = (p / p.sum(-1, keepdims=True)) @ v
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=2.0**-8 * 1.01, atol=1e-6)


def test_attention_refuses_float8_query():
    import ml_dtypes

    feeds = {n: a.astype(ml_dtypes.float8_e4m3fn) for n, a in _qkv(1, 2, 2, 3, 4, 8, 8).items()}
    with pytest.raises(
        ValueError, match=r"'attn' \(Attention, opset 23\): Q is float8_e4m3fn; Attention takes"
    ):
        graph.from_onnx(_attention_model(feeds, ["Y"], 23))
