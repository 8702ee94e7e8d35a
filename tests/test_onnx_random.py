"""The random generators (RandomNormal, RandomUniform, their Like forms, Bernoulli, Multinomial).

No two runtimes draw the same stream, so each operator is checked by property
against onnx's reference sampler (``onnx_node_cases.check_random``: shape,
dtype, support, per-element means and the variance over many runs), on shapes
that divide no block size; Multinomial, which onnx's reference lacks, against
its softmax probabilities.  Seeds give the same stream in two builds; draws
change from run to run and two identical nodes never share a draw.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper

import graph

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from onnx_node_cases import _reference_draws, check_random  # noqa: E402

RUNS = 150


def model(nodes, inputs, outputs, opset=22):
    g = helper.make_graph(nodes, "random", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def executor(m):
    g, params = graph.from_onnx(m)
    return graph.build(g, params=params).create_executor()


def draws(m, feeds: dict, runs: int = RUNS) -> list:
    ex = executor(m)
    out = []
    for _ in range(runs):
        ex.run(**feeds)
        out.append([ex.get_output(i) for i in range(ex.num_outputs)])
    return out


def check_against_reference(m, feeds: dict) -> None:
    got = draws(m, feeds)
    ref = _reference_draws(m, feeds, RUNS)
    problem = check_random(got, ref, ref[0])
    assert not problem, problem


F, D, H = TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16


@pytest.mark.parametrize("dtype, attrs", [
    (F, {}),
    (D, {"mean": 2.5, "scale": 0.25}),
    (H, {"mean": -1.0, "scale": 3.0, "seed": 4.0}),
])
def test_random_normal(dtype, attrs):
    node = helper.make_node("RandomNormal", [], ["y"], shape=[3, 37], dtype=dtype, **attrs)
    check_against_reference(model([node], [], [helper.make_tensor_value_info("y", dtype, [3, 37])]), {})


@pytest.mark.parametrize("dtype, attrs", [(F, {}), (D, {"low": -2.0, "high": 5.0, "seed": 1.5})])
def test_random_uniform(dtype, attrs):
    node = helper.make_node("RandomUniform", [], ["y"], shape=[5, 7, 11], dtype=dtype, **attrs)
    m = model([node], [], [helper.make_tensor_value_info("y", dtype, [5, 7, 11])])
    check_against_reference(m, {})
    y = np.stack([r[0] for r in draws(m, {}, 20)])
    assert y.min() >= attrs.get("low", 0.0) and y.max() < attrs.get("high", 1.0)


@pytest.mark.parametrize("op, attrs", [
    ("RandomNormalLike", {"mean": 1.0, "scale": 2.0}),
    ("RandomUniformLike", {"low": 3.0, "high": 4.0, "dtype": D}),
])
def test_like_forms_take_the_input_shape_and_type(op, attrs):
    x = np.zeros((6, 13), np.float32)
    node = helper.make_node(op, ["x"], ["y"], **attrs)
    out_type = attrs.get("dtype", F)
    m = model([node], [helper.make_tensor_value_info("x", F, x.shape)],
              [helper.make_tensor_value_info("y", out_type, x.shape)])
    check_against_reference(m, {"x": x})


@pytest.mark.parametrize("dtype", [None, TensorProto.INT32, TensorProto.BOOL])
def test_bernoulli(dtype):
    p = np.linspace(0, 1, 41).astype(np.float32).reshape(1, 41)
    attrs = {} if dtype is None else {"dtype": dtype}
    node = helper.make_node("Bernoulli", ["p"], ["y"], **attrs)
    m = model([node], [helper.make_tensor_value_info("p", F, p.shape)],
              [helper.make_tensor_value_info("y", dtype or F, p.shape)])
    check_against_reference(m, {"p": p})
    y = np.stack([r[0] for r in draws(m, {"p": p}, 40)])
    assert (y[..., 0] == 0).all() and (y[..., -1] == 1).all()  # p = 0 and p = 1 are certain


def test_random_values_flow_into_compiled_operators():
    """RandomUniformLike -> Greater -> Cast (Bernoulli's body) with a compiled segment after the draw."""
    p = np.full((3, 29), 0.25, np.float32)
    nodes = [helper.make_node("RandomUniformLike", ["p"], ["u"], dtype=F),
             helper.make_node("Greater", ["p", "u"], ["b"]),
             helper.make_node("Cast", ["b"], ["y"], to=F)]
    m = model(nodes, [helper.make_tensor_value_info("p", F, p.shape)], [helper.make_tensor_value_info("y", F, p.shape)])
    check_against_reference(m, {"p": p})


def test_multinomial_follows_softmax():
    with np.errstate(divide="ignore"):  # log(0) = -inf: a class never drawn
        logits = np.log(np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 1.0]], np.float32))
    samples = 2003
    node = helper.make_node("Multinomial", ["x"], ["y"], sample_size=samples, dtype=TensorProto.INT64, seed=3.0)
    m = model([node], [helper.make_tensor_value_info("x", F, logits.shape)],
              [helper.make_tensor_value_info("y", TensorProto.INT64, [3, samples])])
    ex = executor(m)
    ex.run(x=logits)
    y = ex.get_output(0)
    assert y.shape == (3, samples) and y.dtype == np.int64
    p = np.exp(logits.astype(np.float64))
    for row in range(3):
        counts = np.bincount(y[row], minlength=4)
        expected = p[row] * samples
        assert (counts[expected == 0] == 0).all(), "a class of probability 0 was drawn"
        tol = 6 * np.sqrt(expected * (1 - p[row])) + 1
        assert (np.abs(counts - expected) <= tol).all(), (counts, expected)


def test_seed_gives_the_same_stream_in_two_builds_and_advances_per_run():
    node = helper.make_node("RandomNormal", [], ["y"], shape=[2, 9], seed=7.0)
    m = model([node], [], [helper.make_tensor_value_info("y", F, [2, 9])])
    a, b = draws(m, {}, 3), draws(m, {}, 3)
    for ra, rb in zip(a, b):
        np.testing.assert_array_equal(ra[0], rb[0])
    assert not np.array_equal(a[0][0], a[1][0])
    unseeded = model([helper.make_node("RandomNormal", [], ["y"], shape=[2, 9])], [],
                     [helper.make_tensor_value_info("y", F, [2, 9])])
    assert not np.array_equal(draws(unseeded, {}, 1)[0][0], draws(unseeded, {}, 1)[0][0])


def test_two_identical_nodes_draw_apart():
    """Two unseeded nodes with the same attributes are not merged into one draw (nor folded)."""
    nodes = [helper.make_node("RandomUniform", [], [n], shape=[4, 5]) for n in ("a", "b")]
    nodes.append(helper.make_node("Sub", ["a", "b"], ["d"]))
    m = model(nodes, [], [helper.make_tensor_value_info("d", F, [4, 5])])
    assert np.abs(draws(m, {}, 1)[0][0]).max() > 0


def test_check_random_catches_a_biased_or_folded_sampler():
    p = np.array([[0.2, 0.5, 0.9]], np.float32)
    node = helper.make_node("Bernoulli", ["p"], ["y"])
    m = model([node], [helper.make_tensor_value_info("p", F, p.shape)], [helper.make_tensor_value_info("y", F, p.shape)])
    ref = _reference_draws(m, {"p": p}, RUNS)
    rng = np.random.default_rng(0)
    biased = [[(rng.random(p.shape) < p**4).astype(np.float32)] for _ in range(RUNS)]
    assert "mean" in check_random(biased, ref, ref[0])
    folded = [[np.array([[0.0, 1.0, 1.0]], np.float32)] for _ in range(RUNS)]
    assert check_random(folded, ref, ref[0])
    off_support = [[np.full(p.shape, 0.5, np.float32)] for _ in range(RUNS)]
    assert "never drawn" in check_random(off_support, ref, ref[0])


def test_bad_attributes_name_the_node():
    no_shape = model([helper.make_node("RandomNormal", [], ["y"], name="noise")], [],
                     [helper.make_tensor_value_info("y", F, [2])])
    with pytest.raises(ValueError, match=r"node 'noise' \(RandomNormal\): attribute shape is required"):
        draws(no_shape, {}, 1)
    p = np.array([0.5, 1.5], np.float32)
    bad_p = model([helper.make_node("Bernoulli", ["p"], ["y"], name="coin")], [helper.make_tensor_value_info("p", F, [2])],
                  [helper.make_tensor_value_info("y", F, [2])])
    with pytest.raises(ValueError, match=r"node 'coin' \(Bernoulli\): probability 1.5 is outside \[0, 1\]"):
        draws(bad_p, {"p": p}, 1)
