"""ONNX MaxPool with its Indices output, through ``graph.from_onnx`` and ``graph.build``,
compared with onnxruntime (values and int64 indices exactly)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx.helper import make_node as N
from test_graph_onnx import make_model, run_ort

import graph
from graph.interpreter import interpret

CASES = [  # attrs, shape
    ({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 3, 13, 17)),
    ({"kernel_shape": [3, 2], "strides": [2, 3], "ceil_mode": 1}, (2, 2, 9, 11)),
    ({"kernel_shape": [2, 3], "strides": [2, 1], "auto_pad": "SAME_UPPER"}, (1, 2, 7, 6)),
    ({"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 0, 1, 1]}, (1, 2, 7, 37)),
    ({"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, (2, 3, 19)),
]


def _model(attrs, shape, order, outputs=("Y", "I")):
    node = N("MaxPool", ["X"], ["Y", "I"], storage_order=order, **attrs)
    x = np.random.default_rng(3).integers(-4, 4, shape).astype("float32")  # ties
    return make_model([node], {"X": x}, list(outputs), opset=12), x


@pytest.mark.parametrize("attrs, shape", CASES)
@pytest.mark.parametrize("order", [0, 1])
def test_max_pool_with_indices_matches_onnxruntime(attrs, shape, order):
    model, x = _model(attrs, shape, order)
    want = run_ort(model, {"X": x})
    g, params = graph.from_onnx(model)
    assert any(n.op == "max_pool2d_with_indices" for n in g.nodes)
    for got in (interpret(g, {"X": x}, params),
                _run(graph.build(g, target="llvm", params=params), x)):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
        assert got[1].dtype == np.int64


def _run(lib, x):
    m = lib.create_executor()
    m.run(X=x)
    return [m.get_output(0), m.get_output(1)]


def test_max_pool_unused_indices_is_plain_pooling():
    model, x = _model(*CASES[0], 0, outputs=("Y",))
    g, params = graph.from_onnx(model)
    m = graph.build(g, target="llvm", params=params).create_executor()
    m.run(X=x)
    np.testing.assert_array_equal(m.get_output(0), run_ort(model, {"X": x})[0])


def test_max_pool_indices_3d_refused():
    node = N("MaxPool", ["X"], ["Y", "I"], kernel_shape=[2, 2, 2])
    model = make_model([node], {"X": np.zeros((1, 1, 4, 4, 4), np.float32)}, ["Y", "I"], opset=12)
    with pytest.raises(ValueError, match=r"node 'Y' \(MaxPool, opset 12\): the Indices output is supported "
                                         r"for 1-D and 2-D pooling only, got X \(1, 1, 4, 4, 4\)"):
        graph.from_onnx(model)


def test_max_pool_with_indices_after_conv():
    # the convolution's blocked (NCHWc) output goes back to NCHW for the indices' flat positions
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1, 8, 15, 15)).astype("float32")
    w = rng.standard_normal((32, 8, 3, 3)).astype("float32")
    nodes = [N("Conv", ["X", "W"], ["C"], pads=[1, 1, 1, 1]), N("Relu", ["C"], ["R"]),
             N("MaxPool", ["R"], ["Y", "I"], kernel_shape=[3, 3], strides=[2, 2], storage_order=1)]
    model = make_model(nodes, {"X": x}, ["Y", "I"], {"W": w}, opset=12)
    want = run_ort(model, {"X": x})
    g, params = graph.from_onnx(model)
    got = _run(graph.build(g, target="llvm", params=params), x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[1], want[1])
