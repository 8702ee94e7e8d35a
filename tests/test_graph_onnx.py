"""Tests of ``graph.from_onnx``.

Numerics: small models built with ``onnx.helper`` run through onnxruntime
and through the imported graph on the reference interpreter (one helper,
:func:`check`); onnx's ``pytorch-converted``/``pytorch-operator`` backend
tests against their stored outputs; the nine ``light`` models.  Errors: one
test per message (unsupported operators, malformed files, unknown shapes,
values that must be known at import time).
"""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graph
from graph.interpreter import interpret

ort = pytest.importorskip("onnxruntime")

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
RNG = np.random.default_rng(0)


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def make_model(nodes, feeds: dict, outputs, inits: dict | None = None, opset: int = 13) -> onnx.ModelProto:
    """A model over ``nodes``: inputs typed after the ``feeds`` arrays, untyped outputs."""
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(name) for name in outputs]
    init = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    g = helper.make_graph(nodes, "test", inputs, outs, init)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(g, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets))


def run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def check(nodes, feeds: dict, outputs, inits=None, opset: int = 13, rtol=1e-5, atol=1e-5):
    """Import, interpret and compare every output with onnxruntime; returns the graph."""
    model = make_model(nodes, feeds, outputs, inits, opset)
    g, params = graph.from_onnx(model)
    got = interpret(g, feeds, params)
    want = run_ort(model, feeds)
    assert [v.name for v in g.outputs] == list(outputs)
    for name, a, b in zip(outputs, got, want):
        assert a.shape == b.shape and a.dtype == b.dtype, (name, a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=name)
    return g


def ops_of(g) -> set:
    return {n.op for n in g.nodes}


N = helper.make_node


# ------------------------------------------------------------------ convolutions
@pytest.mark.parametrize("attrs, x, w, bias", [
    ({"pads": [1, 0, 2, 1]}, (1, 3, 7, 6), (4, 3, 3, 3), True),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 3, 7, 8), (4, 3, 3, 2), True),
    ({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, (1, 3, 7, 8), (4, 3, 3, 2), False),
    ({"auto_pad": "VALID", "dilations": [2, 1]}, (2, 3, 9, 6), (2, 3, 3, 3), True),
    ({"group": 2, "pads": [1, 1, 1, 1]}, (1, 4, 6, 6), (6, 2, 3, 3), True),
    ({"pads": [1, 2], "strides": [2]}, (2, 4, 9), (5, 4, 3), True),
    ({"pads": [1, 0, 1, 0, 1, 1], "group": 2}, (1, 4, 4, 5, 3), (4, 2, 2, 3, 2), True),
])
def test_conv(attrs, x, w, bias):
    inits = {"W": rand(*w)} | ({"B": rand(w[0])} if bias else {})
    g = check([N("Conv", ["X", "W"] + (["B"] if bias else []), ["Y"], **attrs)], {"X": rand(*x)}, ["Y"], inits,
              opset=11)
    assert "conv3d" in ops_of(g) if len(x) == 5 else "conv2d" in ops_of(g)


def test_conv_depthwise_reshapes_weight():
    g = check([N("Conv", ["X", "W", "B"], ["Y"], group=3, pads=[1, 1, 1, 1], strides=[2, 2])],
              {"X": rand(1, 3, 8, 8)}, ["Y"], {"W": rand(6, 1, 3, 3), "B": rand(6)})
    dw = next(n for n in g.nodes if n.op == "depthwise_conv2d")
    assert dw.inputs[1].shape == (3, 2, 3, 3) and dw.inputs[1].node.op == "reshape"
    add = g.outputs[0].node
    assert add.op == "add" and add.inputs[1].shape == (6, 1, 1)


@pytest.mark.parametrize("attrs, x, w", [
    ({"strides": [2, 2], "pads": [1, 0, 1, 1], "output_padding": [1, 0]}, (1, 3, 4, 5), (3, 2, 3, 3)),
    ({"strides": [2, 3], "output_shape": [10, 14]}, (1, 3, 5, 5), (3, 4, 3, 2)),
    ({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, (1, 2, 3, 4), (2, 2, 3, 3)),
    ({"strides": [2], "pads": [1, 1]}, (2, 3, 6), (3, 4, 4)),
])
def test_conv_transpose(attrs, x, w):
    check([N("ConvTranspose", ["X", "W", "B"], ["Y"], **attrs)], {"X": rand(*x)}, ["Y"],
          {"W": rand(*w), "B": rand(w[1])}, opset=11, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("attrs, x, w", [
    ({"group": 2, "strides": [2, 1], "pads": [1, 0, 0, 1]}, (1, 4, 3, 5), (4, 3, 3, 2)),
    ({"dilations": [2, 3], "strides": [3, 2], "output_padding": [1, 1]}, (2, 3, 4, 3), (3, 2, 2, 3)),
    ({"group": 3, "dilations": [2], "strides": [3]}, (1, 3, 5), (3, 1, 3)),
    ({"strides": [1, 2, 2], "pads": [0, 1, 0, 1, 0, 1], "group": 2}, (1, 2, 3, 3, 4), (2, 2, 2, 3, 3)),
])
def test_conv_transpose_as_conv(attrs, x, w):
    """Groups, dilations and 3-D: dilate, pad, a flipped regrouped conv (onnx's test_convtranspose_output_shape
    covers an output_shape beyond the full output, which onnxruntime refuses)."""
    oc = w[1] * attrs.get("group", 1)
    g = check([N("ConvTranspose", ["X", "W", "B"], ["Y"], **attrs)], {"X": rand(*x)}, ["Y"],
              {"W": rand(*w), "B": rand(oc)}, opset=11, rtol=1e-4, atol=1e-4)
    assert "conv2d_transpose" not in ops_of(g)


@pytest.mark.parametrize("attrs, a, b, c", [
    ({}, (3, 4), (4, 5), None),
    ({"transB": 1, "alpha": 0.5, "beta": 2.0}, (3, 4), (5, 4), (5,)),
    ({"transA": 1}, (4, 3), (4, 5), (3, 5)),
    ({"transA": 1, "transB": 1, "beta": 0.0}, (4, 3), (5, 4), (1, 5)),
])
def test_gemm(attrs, a, b, c):
    inits = {"B": rand(*b)} | ({"C": rand(*c)} if c else {})
    g = check([N("Gemm", ["A", "B"] + (["C"] if c else []), ["Y"], **attrs)], {"A": rand(*a)}, ["Y"], inits,
              rtol=1e-4)
    dense = next(n for n in g.nodes if n.op == "dense")
    assert (dense.inputs[1].node is None) == bool(attrs.get("transB"))  # a transpose node otherwise


@pytest.mark.parametrize("a, b", [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)),
                                  ((2, 1, 3, 4), (5, 4, 6)), ((4,), (4, 5)), ((2, 3, 4), (4,))])
def test_matmul(a, b):
    g = check([N("MatMul", ["A", "B"], ["Y"])], {"A": rand(*a), "B": rand(*b)}, ["Y"], rtol=1e-4)
    assert ops_of(g) & {"dense", "batch_matmul"}


# ------------------------------------------------------------------ pooling, normalisation
@pytest.mark.parametrize("op, attrs, x, opset", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 7, 7), 9),
    ("MaxPool", {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 8, 7), 12),
    ("MaxPool", {"kernel_shape": [2, 3], "strides": [2, 1], "auto_pad": "SAME_UPPER"}, (1, 2, 7, 6), 12),
    ("MaxPool", {"kernel_shape": [2, 2], "dilations": [2, 1], "pads": [1, 0, 1, 1]}, (1, 2, 7, 6), 12),
    ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}, (2, 3, 9), 12),
    ("AveragePool", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, (1, 2, 6, 6), 11),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, (1, 2, 6, 6), 11),
    ("AveragePool", {"kernel_shape": [2, 3], "strides": [2, 2], "ceil_mode": 1}, (1, 2, 7, 7), 11),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_LOWER"}, (1, 2, 6, 7), 11),
    ("AveragePool", {"kernel_shape": [2, 2, 2], "pads": [1, 0, 0, 0, 1, 1]}, (1, 2, 3, 4, 4), 11),
])
def test_pool(op, attrs, x, opset):
    check([N(op, ["X"], ["Y"], **attrs)], {"X": rand(*x)}, ["Y"], opset=opset)


@pytest.mark.parametrize("op, x", [("GlobalAveragePool", (2, 3, 5, 4)), ("GlobalMaxPool", (2, 3, 5, 4)),
                                   ("GlobalAveragePool", (2, 3, 5)), ("GlobalMaxPool", (1, 2, 3, 4, 2))])
def test_global_pool(op, x):
    check([N(op, ["X"], ["Y"])], {"X": rand(*x)}, ["Y"])


def test_lrn_and_batch_norm_and_instance_norm():
    c = 6
    inits = {"s": rand(c), "b": rand(c), "m": rand(c), "v": np.abs(rand(c)) + 0.5}
    nodes = [N("LRN", ["X"], ["l"], size=3, alpha=1e-3, beta=0.7, bias=2.0),
             N("BatchNormalization", ["l", "s", "b", "m", "v"], ["bn"], epsilon=1e-3),
             N("InstanceNormalization", ["bn", "s", "b"], ["Y"], epsilon=1e-4)]
    g = check(nodes, {"X": rand(2, c, 5, 4)}, ["bn", "Y"], inits, opset=15, rtol=1e-4, atol=1e-4)
    assert {"lrn", "batch_norm", "mean", "sqrt"} <= ops_of(g)


def test_layer_norm():
    nodes = [N("LayerNormalization", ["X", "s", "b"], ["Y"], axis=-2, epsilon=1e-3),
             N("LayerNormalization", ["X", "s1"], ["Z"])]
    check(nodes, {"X": rand(2, 3, 4)}, ["Y", "Z"], {"s": rand(3, 4), "b": rand(4), "s1": rand(4)}, opset=17,
          rtol=1e-4, atol=1e-5)


def test_extra_outputs_refused_when_used():
    z, o = np.zeros(3, np.float32), np.ones(3, np.float32)  # opset 9: training outputs by count
    bn = N("BatchNormalization", ["X", "s", "b", "m", "v"], ["Y", "rm", "rv", "sm", "sv"])
    model = make_model([bn], {"X": rand(2, 3, 4, 4)}, ["Y", "rm"], {"s": o, "b": z, "m": z, "v": o}, opset=9)
    with pytest.raises(ValueError, match=r"node 'Y' \(BatchNormalization, opset 9\): output 1 \('rm'\) is used"):
        graph.from_onnx(model)
    drop = N("Dropout", ["X"], ["Y", "mask"])
    g = check([drop], {"X": rand(2, 3)}, ["Y"], opset=12)  # an unused mask costs nothing
    assert ops_of(g) == {"identity"}


def test_dropout_mask_and_training():
    """Inference keeps everything (mask all True); training mode is accepted only with ratio 0."""
    drop = N("Dropout", ["X"], ["Y", "mask"])
    check([drop, N("Not", ["mask"], ["Z"])], {"X": rand(2, 2)}, ["Y", "Z"])
    train = N("Dropout", ["X", "r", "t"], ["Y", "mask"])
    check([train], {"X": rand(2, 3)}, ["Y", "mask"], {"r": np.array(0.0, np.float32), "t": np.array(True)})
    model = make_model([train], {"X": rand(2, 3)}, ["Y"], {"r": np.array(0.5, np.float32), "t": np.array(True)})
    with pytest.raises(ValueError, match=r"node 'Y' \(Dropout, opset 13\): input 2 \(training_mode\) is True "
                                         r"with ratio=0.5: random dropout is not supported"):
        graph.from_onnx(model)


# ------------------------------------------------------------------ elementwise
UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Floor", "Ceil", "Reciprocal", "Softplus", "Erf",
         "Sign", "Sin", "Cos", "Round", "Elu", "Selu", "HardSigmoid", "HardSwish", "LeakyRelu"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    check([N(op, ["X"], ["Y"])], {"X": rand(3, 4) * 3}, ["Y"], opset=14, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, attrs", [("Log", {}), ("Sqrt", {}), ("LeakyRelu", {"alpha": 0.3}),
                                       ("Softsign", {}), ("ThresholdedRelu", {"alpha": 0.8}),
                                       ("Celu", {"alpha": 2.0}), ("Celu", {}), ("Mish", {}),
                                       ("Elu", {"alpha": 0.5}), ("Selu", {"alpha": 1.5, "gamma": 2.0}),
                                       ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
                                       ("Gelu", {}), ("Gelu", {"approximate": "tanh"})])
def test_unary_attrs(op, attrs):
    check([N(op, ["X"], ["Y"], **attrs)], {"X": np.abs(rand(3, 4)) + 0.1}, ["Y"], opset=20, atol=1e-5)


def test_softplus_large_inputs():
    check([N("Softplus", ["X"], ["Y"])], {"X": np.array([-100, -1, 0, 1, 100, 1000], np.float32)}, ["Y"])


def test_prelu_and_binary_broadcasting():
    feeds = {"A": rand(2, 3, 4), "B": rand(3, 1), "C": np.abs(rand(4)) + 0.5}
    nodes = [N("PRelu", ["A", "slope"], ["p"]), N("Add", ["p", "B"], ["s"]), N("Sub", ["s", "C"], ["d"]),
             N("Mul", ["d", "B"], ["m"]), N("Div", ["m", "C"], ["q"]), N("Pow", ["C", "two"], ["w"])]
    check(nodes, feeds, ["q", "w"], {"slope": rand(3, 1), "two": np.array(2, np.int64)}, opset=13)


def test_variadic_comparison_logic_where():
    feeds = {"A": rand(2, 3), "B": rand(3), "C": rand(2, 1)}
    nodes = [N("Sum", ["A", "B", "C"], ["sum"]), N("Mean", ["A", "B", "C"], ["mean"]),
             N("Max", ["A", "B", "C"], ["max"]), N("Min", ["A"], ["min"]),
             N("Less", ["A", "B"], ["lt"]), N("Greater", ["A", "C"], ["gt"]), N("Equal", ["lt", "gt"], ["eq"]),
             N("And", ["lt", "gt"], ["and"]), N("Or", ["lt", "gt"], ["or"]), N("Not", ["eq"], ["not"]),
             N("Where", ["or", "A", "B"], ["where"])]
    check(nodes, feeds, ["sum", "mean", "max", "min", "and", "not", "where"])


@pytest.mark.parametrize("opset, attrs, bounds", [(6, {"min": -0.5, "max": 0.5}, []), (6, {"max": 0.2}, []),
                                                  (12, {}, ["lo", "hi"]), (12, {}, ["", "hi"]), (12, {}, [])])
def test_clip(opset, attrs, bounds):
    inits = {"lo": np.array(-0.3, np.float32), "hi": np.array(0.4, np.float32)}
    inits = {k: v for k, v in inits.items() if k in bounds}
    g = check([N("Clip", ["X"] + bounds, ["Y"], **attrs)], {"X": rand(3, 4)}, ["Y"], inits, opset=opset)
    assert "clip" in ops_of(g)


def test_clip_bounds_from_data_use_maximum_minimum():
    g = check([N("Clip", ["X", "lo"], ["Y"])], {"X": rand(3, 4), "lo": np.array(-0.1, np.float32)}, ["Y"])
    assert "maximum" in ops_of(g)


def test_cast():
    nodes = [N("Cast", ["X"], ["i"], to=TensorProto.INT32), N("Cast", ["i"], ["Y"], to=TensorProto.FLOAT)]
    check(nodes, {"X": rand(3, 4) * 5}, ["i", "Y"])
    legacy = make_model([N("Cast", ["X"], ["Y"], to="FLOAT16")], {"X": rand(2)}, ["Y"], opset=5)
    assert graph.from_onnx(legacy)[0].outputs[0].dtype == "float16"  # a type name before opset 6


# ------------------------------------------------------------------ tensors and shapes
def test_reshape_flatten_transpose_concat():
    nodes = [N("Reshape", ["X", "s1"], ["r1"]), N("Reshape", ["X", "s2"], ["r2"]),
             N("Flatten", ["X"], ["f0"], axis=0), N("Flatten", ["X"], ["f"], axis=-1),
             N("Transpose", ["X"], ["t"], perm=[2, 0, 1]), N("Transpose", ["X"], ["tr"]),
             N("Concat", ["X", "X"], ["c"], axis=-1)]
    inits = {"s1": np.array([0, -1], np.int64), "s2": np.array([0, 4, -1], np.int64)}
    g = check(nodes, {"X": rand(2, 3, 4)}, ["r1", "r2", "f0", "f", "t", "tr", "c"], inits, opset=13)
    assert {v.name: v.shape for v in g.outputs}["r2"] == (2, 4, 3)


def test_reshape_allowzero():
    check([N("Reshape", ["X", "s"], ["Y"], allowzero=1)], {"X": rand(2, 0, 3)}, ["Y"],
          {"s": np.array([3, 0, 2], np.int64)}, opset=14)


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    if opset < 13:
        nodes = [N("Squeeze", ["X"], ["s"], axes=[-3]), N("Unsqueeze", ["s"], ["u"], axes=[0, -1]),
                 N("Squeeze", ["X"], ["all"])]
    else:
        nodes = [N("Squeeze", ["X", "a"], ["s"]), N("Unsqueeze", ["s", "b"], ["u"]), N("Squeeze", ["X"], ["all"])]
    inits = {"a": np.array([-3], np.int64), "b": np.array([0, -1], np.int64)} if opset >= 13 else {}
    g = check(nodes, {"X": rand(2, 1, 3, 1)}, ["s", "u", "all"], inits, opset=opset)
    assert [v.shape for v in g.outputs] == [(2, 3, 1), (1, 2, 3, 1, 1), (2, 3)]


@pytest.mark.parametrize("opset, axis", [(11, 1), (13, 1), (11, -1), (13, 0)])
@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
def test_softmax(op, opset, axis):
    g = check([N(op, ["X"], ["Y"], axis=axis)], {"X": rand(2, 3, 4)}, ["Y"], opset=opset, rtol=1e-5)
    assert ("reshape" in ops_of(g)) == (opset < 13 and axis != -1)


def test_constants_shape_and_constant_of_shape():
    nodes = [N("Constant", [], ["c"], value=numpy_helper.from_array(rand(3, 4))),
             N("Constant", [], ["f"], value_float=2.5), N("Constant", [], ["i"], value_ints=[1, 2]),
             N("Shape", ["X"], ["shape"]), N("Shape", ["X"], ["tail"], start=1), N("Shape", ["X"], ["mid"], start=-2,
                                                                                   end=-1),
             N("ConstantOfShape", ["shape"], ["full"], value=numpy_helper.from_array(np.array([7], np.int32))),
             N("Add", ["X", "c"], ["a"]), N("Mul", ["a", "f"], ["Y"]), N("Size", ["X"], ["n"])]
    g = check(nodes, {"X": rand(2, 3, 4)}, ["Y", "i", "shape", "tail", "mid", "full", "n"], opset=15)
    assert {"shape_of", "full"} <= ops_of(g)


def test_shape_arithmetic_is_folded_for_reshape():
    """PyTorch's flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    nodes = [N("Shape", ["X"], ["s"]), N("Gather", ["s", "zero"], ["n"], axis=0),
             N("Unsqueeze", ["n", "ax"], ["n1"]), N("Concat", ["n1", "minus1"], ["target"], axis=0),
             N("Reshape", ["X", "target"], ["Y"])]
    inits = {"zero": np.array(0, np.int64), "ax": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    g = check(nodes, {"X": rand(2, 3, 4)}, ["Y"], inits)
    assert g.outputs[0].shape == (2, 12) and g.outputs[0].node.op == "reshape"


def test_gather_and_gather_elements():
    nodes = [N("Gather", ["X", "idx"], ["Y"], axis=1), N("Gather", ["X", "k"], ["Z"], axis=-1),
             N("GatherElements", ["X", "el"], ["E"], axis=1)]
    inits = {"idx": np.array([[0, -1], [4, 2]], np.int64), "k": np.array(-2, np.int64),
             "el": np.array([[[0, -1, 3]], [[4, 2, -5]]], np.int64)}
    check(nodes, {"X": rand(2, 5, 3)}, ["Y", "Z", "E"], inits)


def test_range_is_folded():
    nodes = [N("Range", ["a", "b", "c"], ["r"]), N("Add", ["X", "r"], ["Y"])]
    g = check(nodes, {"X": rand(2, 4)}, ["r", "Y"], {"a": np.array(1.0, np.float32), "b": np.array(-1.0, np.float32),
                                                     "c": np.array(-0.5, np.float32)}, opset=11)
    assert g.outputs[0].node.is_constant


BIG = np.iinfo(np.int64).max


@pytest.mark.parametrize("opset, starts, ends, axes, steps", [
    (9, [1, 0], [BIG, -1], [0, 2], None), (9, [-3], [-1], None, None),
    (13, [4, -1], [-BIG, 0], [1, -1], [-2, -1]), (13, [0, 1], [3, BIG], [0, 1], [2, 3]),
    (13, [1], [100], None, None)])
def test_slice(opset, starts, ends, axes, steps):
    if opset < 10:
        node = N("Slice", ["X"], ["Y"], starts=starts, ends=ends, **({"axes": axes} if axes else {}))
        inits = {}
    else:
        arrays = [starts, ends] + ([axes] if axes else []) + ([steps] if steps else [])
        names = ["st", "en", "ax", "sp"][:len(arrays)]
        node = N("Slice", ["X"] + names, ["Y"])
        inits = {k: np.array(v, np.int64) for k, v in zip(names, arrays)}
    check([node], {"X": rand(5, 6, 4)}, ["Y"], inits, opset=opset)


@pytest.mark.parametrize("opset, pads, value", [(7, [0, 1, 2, 0, 1, 0], 1.5), (13, [1, 0, 0, 2, 1, 1], 0.0),
                                                (13, [0, -1, 1, 1, 1, -1], -2.0)])
def test_pad(opset, pads, value):
    if opset < 11:
        node, inits = N("Pad", ["X"], ["Y"], pads=pads, value=value), {}
    else:
        node = N("Pad", ["X", "p", "v"], ["Y"])
        inits = {"p": np.array(pads, np.int64), "v": np.array(value, np.float32)}
    check([node], {"X": rand(2, 3, 4)}, ["Y"], inits, opset=opset)


def test_split_tile_expand():
    nodes = [N("Split", ["X"], ["a", "b"], axis=1), N("Split", ["X", "sizes"], ["c", "d", "e"], axis=-1),
             N("Tile", ["X", "reps"], ["t"]), N("Expand", ["X", "shape"], ["x"])]
    inits = {"sizes": np.array([1, 2, 1], np.int64), "reps": np.array([2, 1, 3], np.int64),
             "shape": np.array([3, 1, 1, 1], np.int64)}
    check(nodes, {"X": rand(2, 4, 4)}, ["a", "b", "c", "d", "e", "t", "x"], inits, opset=13)
    check([N("Split", ["X"], ["a", "b"], axis=0, split=[1, 3])], {"X": rand(4, 2)}, ["a", "b"], opset=11)
    check([N("Split", ["X"], ["a", "b", "c"], num_outputs=3)], {"X": rand(7, 2)}, ["a", "b", "c"], opset=18)


def test_depth_to_space_and_space_to_depth():
    nodes = [N("DepthToSpace", ["X"], ["d"], blocksize=2, mode="CRD"), N("DepthToSpace", ["X"], ["e"], blocksize=2),
             N("SpaceToDepth", ["d"], ["s"], blocksize=2)]
    check(nodes, {"X": rand(1, 8, 2, 3)}, ["d", "e", "s"])


# ------------------------------------------------------------------ reductions
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                                "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp"])
@pytest.mark.parametrize("opset", [11, 18])
def test_reduce(op, opset):
    x = {"X": np.abs(rand(2, 3, 4)) + 0.5}
    if opset < 13 or (op != "ReduceSum" and opset < 18):
        nodes = [N(op, ["X"], ["Y"], axes=[0, -1], keepdims=0), N(op, ["X"], ["Z"])]
        inits = {}
    else:
        nodes = [N(op, ["X", "ax"], ["Y"], keepdims=0), N(op, ["X"], ["Z"]),
                 N(op, ["X"], ["W"], noop_with_empty_axes=1)]
        inits = {"ax": np.array([0, -1], np.int64)}
    check(nodes, x, [n.output[0] for n in nodes], inits, opset=opset, rtol=1e-5)


@pytest.mark.parametrize("opset, attrs", [(9, {"k": 2}), (11, {"axis": 1, "largest": 0}), (11, {"axis": -1})])
def test_topk(opset, attrs):
    x = rand(2, 5, 4)
    x[0, 1, 0] = x[0, 3, 0]  # a tie: the lower index first
    node = N("TopK", ["X"] + (["k"] if opset >= 10 else []), ["V", "I"], **attrs)
    check([node], {"X": x}, ["V", "I"], {"k": np.array([3], np.int64)} if opset >= 10 else {}, opset=opset)


def test_arg_reduce():
    nodes = [N("ArgMax", ["X"], ["a"], axis=1), N("ArgMin", ["X"], ["b"], axis=-1, keepdims=0)]
    check(nodes, {"X": rand(2, 5, 3)}, ["a", "b"])


# ------------------------------------------------------------------ resize
def _resize(opset, attrs, scales=None, sizes=None):
    if opset >= 13:
        ins = ["X", "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    else:
        ins = ["X", "roi", "scales"] + (["sizes"] if sizes is not None else [])
    inits = {"roi": np.zeros(0, np.float32), "scales": np.asarray(scales if scales is not None else [],
                                                                  np.float32)}
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
    return N("Resize", [i for i in ins], ["Y"], **attrs), {k: v for k, v in inits.items() if k in ins}


@pytest.mark.parametrize("opset, attrs, scales, sizes", [
    (11, {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
     [1, 1, 2, 3], None),
    (13, {"mode": "nearest"}, [1, 1, 2, 2], None),
    (13, {"mode": "nearest", "nearest_mode": "round_prefer_ceil"}, None, [1, 2, 3, 5]),
    (13, {"mode": "linear"}, [1, 1, 2, 2], None),
    (13, {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7, 5]),
    (11, {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, [1, 1, 0.5, 2], None),
])
def test_resize(opset, attrs, scales, sizes):
    node, inits = _resize(opset, attrs, scales, sizes)
    g = check([node], {"X": rand(1, 2, 4, 6)}, ["Y"], inits, opset=opset, rtol=1e-5)
    assert "resize" in ops_of(g)


@pytest.mark.parametrize("attrs, scales, sizes, x, op", [
    ({"coordinate_transformation_mode": "asymmetric"}, [1, 1, 2, 2], None, (1, 2, 3, 3), "resize"),  # ties
    ({}, [1, 1, 1.5, 1.5], None, (1, 2, 3, 3), None),  # out != in * scale
    ({}, [1, 1, 1.4, 0.6], None, (1, 2, 5, 6), None),
    ({}, None, [1, 2, 3, 4], (1, 2, 4, 6), "take"),  # a tie rounded down
    ({"coordinate_transformation_mode": "tf_half_pixel_for_nn", "nearest_mode": "ceil"}, [1, 1, 0.6, 1.7], None,
     (1, 2, 5, 4), "take"),
    ({"coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 1.5, 0.7], None, (1, 2, 3, 5), "take"),
    ({"coordinate_transformation_mode": "align_corners", "nearest_mode": "floor"}, [1, 3, 1, 2], None,
     (1, 2, 3, 3), "take"),
    ({}, [1, 2, 1.5], None, (2, 3, 4), "take"),
])
def test_resize_nearest(attrs, scales, sizes, x, op):
    """Exact ONNX indices: ``resize`` where topi picks the same, else one ``take`` per axis."""
    node, inits = _resize(19, {"mode": "nearest", **attrs}, scales, sizes)
    g = check([node], {"X": rand(*x)}, ["Y"], inits, opset=19)
    assert (op is None or op in ops_of(g)) and ops_of(g) <= {"resize", "take", "constant"}


@pytest.mark.parametrize("attrs, scales", [
    ({"mode": "cubic"}, [1, 1, 2, 2]),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1, 1, 0.8, 1.3]),
    ({"mode": "linear"}, [1, 1, 1.5, 1.5]),  # fractional extents
    ({"mode": "linear"}, [1, 1, 0.7, 1.3]),
    ({"antialias": 1, "mode": "linear"}, [1, 1, 0.5, 0.7]),
    ({"antialias": 1, "mode": "cubic"}, [1, 1, 0.6, 0.5]),
    ({"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}, [1, 1, 0.6, 2.3]),
])
def test_resize_weighted(attrs, scales):
    """Resizes topi.resize cannot express: one ``dense`` per axis with onnx's reference weights."""
    node, inits = _resize(18, attrs, scales)
    g = check([node], {"X": rand(1, 2, 5, 4)}, ["Y"], inits, opset=18, rtol=1e-4, atol=1e-5)
    assert "dense" in ops_of(g)


def test_resize_crop_and_aspect_ratio():
    roi = np.array([0.4, 0.6, 0.6, 0.8], np.float32)
    node = N("Resize", ["X", "roi", "", "sizes"], ["Y"], mode="linear", axes=[2, 3],
             coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=10.0)
    check([node], {"X": rand(1, 1, 4, 4)}, ["Y"], {"roi": roi, "sizes": np.array([3, 3], np.int64)}, opset=18)
    for policy in ("not_larger", "not_smaller"):
        node = N("Resize", ["X", "", "", "sizes"], ["Y"], mode="nearest", keep_aspect_ratio_policy=policy)
        check([node], {"X": rand(1, 1, 4, 4)}, ["Y"], {"sizes": np.array([1, 1, 7, 8], np.int64)}, opset=18)


@pytest.mark.parametrize("attrs, scales, match", [
    ({"mode": "area"}, [1, 1, 2, 2], "mode='area' is not one of nearest, linear, cubic"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     r"coordinate_transformation_mode='tf_crop_and_resize' needs roi of 8 values \(begins, then ends\), got None"),
    ({"keep_aspect_ratio_policy": "fit"}, None, "keep_aspect_ratio_policy='fit' is not one of stretch"),
    ({"antialias": 1}, [1, 1, 0.5, 0.5], "antialias=1 is not defined for mode='nearest'"),
])
def test_resize_refusals(attrs, scales, match):
    node, inits = _resize(18, attrs, scales, None if scales else [1, 1, 5, 5])
    with pytest.raises(ValueError, match=r"node 'Y' \(Resize, opset 18\): .*" + match):
        graph.from_onnx(make_model([node], {"X": rand(1, 2, 3, 3)}, ["Y"], inits, opset=18))


@pytest.mark.parametrize("opset, mode", [(9, "nearest"), (9, "linear"), (7, "nearest")])
def test_upsample(opset, mode):
    scales = [1.0, 1.0, 2.0, 3.0]
    if opset == 7:
        node, inits = N("Upsample", ["X"], ["Y"], mode=mode, scales=scales), {}
    else:
        node, inits = N("Upsample", ["X", "s"], ["Y"], mode=mode), {"s": np.array(scales, np.float32)}
    check([node], {"X": rand(1, 2, 3, 4)}, ["Y"], inits, opset=opset)


# ------------------------------------------------------------------ the graph's interface
def test_inputs_params_and_names():
    nodes = [N("MatMul", ["X", "W"], ["xw"]), N("Add", ["xw", "b"], ["sum"]), N("Relu", ["sum"], ["act"]),
             N("Identity", ["act"], ["out"])]
    inits = {"W": rand(4, 3), "b": rand(3), "unused": rand(2)}
    model = make_model(nodes, {"X": rand(2, 4)}, ["out", "xw"], inits)
    g, params = graph.from_onnx(model)
    assert [v.name for v in g.inputs] == ["X", "W", "b", "unused"]
    assert all(v.node is None for v in g.inputs)
    assert sorted(params) == ["W", "b", "unused"] and params["W"].dtype == np.float32
    assert [v.name for v in g.outputs] == ["out", "xw"]
    assert {"xw", "sum", "act"} <= {v.name for n in g.nodes for v in n.outputs}
    assert not any(n.is_constant for n in g.nodes)  # initializers are inputs, not constants
    g2, _ = graph.from_onnx(model.SerializeToString())
    assert str(g2) == str(g)


def test_shape_override_and_dtype():
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])
    model = make_model([N("Relu", ["X"], ["Y"])], {"X": rand(1, 3)}, ["Y"])
    model.graph.input[0].CopyFrom(x)
    dynamic, params = graph.from_onnx(model)  # symbolic: specialised when it runs
    assert getattr(dynamic, "is_dynamic", False) and params == {}
    g, _ = graph.from_onnx(model, shape={"X": (5, 3)})
    assert g.outputs[0].shape == (5, 3)
    with pytest.raises(ValueError, match=r"shape= names \['Z'\], which are not data inputs"):
        graph.from_onnx(model, shape={"Z": (1,)})
    model.graph.input[0].type.tensor_type.elem_type = 0
    g, _ = graph.from_onnx(model, shape={"X": (2, 3)}, dtype="float64")
    assert g.inputs[0].dtype == "float64"


def test_shape_inputs_read_at_run_time():
    """A Reshape target fed as a graph input is read when the model runs; a target that
    contradicts the data is a ValueError naming the node, at run time."""
    model = make_model([N("Reshape", ["X", "S"], ["Y"])], {"X": rand(2, 6), "S": np.array([3, 4], np.int64)}, ["Y"])
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    x = rand(2, 6)
    for target in ([3, 4], [4, -1], [12, 1]):
        m.run(X=x, S=np.array(target, np.int64))
        np.testing.assert_array_equal(m.get_output(0), x.reshape(target))
    with pytest.raises(ValueError, match=r"node 'Y' \(Reshape, opset 13\): cannot reshape \(2, 6\) "
                                         r"\(12 elements\) to \(5, 2\)"):
        m.run(X=x, S=np.array([5, 2], np.int64))


# ------------------------------------------------------------------ refusals and malformed files
def test_unsupported_operators_listed_at_once():
    nodes = [N("TfIdfVectorizer", ["X"], ["a"]), N("Relu", ["X"], ["b"]), N("Bernoulli", ["X"], ["c"]),
             N("TfIdfVectorizer", ["X"], ["d"]), N("FusedConv", ["X"], ["e"], domain="com.microsoft")]
    model = make_model(nodes, {"X": rand(2)}, ["b"], opset=11)
    msg = ("from_onnx: unsupported operators (4 nodes): TfIdfVectorizer 'a' (opset 11): strings and images are not "
           "tensors the compiler represents, Bernoulli 'c' (opset 11), TfIdfVectorizer 'd' (opset 11): strings and "
           "images are not tensors the compiler represents, com.microsoft.FusedConv 'e' (domain 'com.microsoft', "
           "version ?)")
    with pytest.raises(ValueError, match="^" + msg.replace("(", r"\(").replace(")", r"\)").replace("?", r"\?")):
        graph.from_onnx(model)


def test_unsupported_operators_inside_subgraphs():
    body = helper.make_graph([N("StringNormalizer", ["x"], ["y"])], "then", [],
                             [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    nodes = [N("If", ["C"], ["Y"], then_branch=body, else_branch=body)]
    model = make_model(nodes, {"C": np.array(True)}, ["Y"])
    with pytest.raises(ValueError, match=r"unsupported operators \(2 nodes\): StringNormalizer 'y' in "
                                         r"else_branch of If 'Y' \(opset 13\).*StringNormalizer 'y' in then_branch"):
        graph.from_onnx(model)


def test_operator_version_outside_converters():
    model = make_model([N("Upsample", ["X", "s"], ["Y"])], {"X": rand(1, 1, 2, 2)}, ["Y"],
                       {"s": np.ones(4, np.float32)}, opset=10)
    with pytest.raises(ValueError, match=r"unsupported operators \(1 nodes\): Upsample 'Y' \(opset 10\)"):
        graph.from_onnx(model)


@pytest.mark.parametrize("mode", ["reflect", "edge", "wrap"])
@pytest.mark.parametrize("pads", [[0, 1, 0, 2], [2, 0, 1, 3], [1, 4, 0, 5]])
def test_pad_modes(mode, pads):
    """Gathers along each padded axis; a pad wider than the axis reflects (wraps) again."""
    if mode == "reflect" and max(pads) > 2:
        pads = [min(p, 2) for p in pads]  # onnxruntime refuses reflect pads wider than the axis - 1
    check([N("Pad", ["X", "p"], ["Y"], mode=mode)], {"X": rand(3, 4)}, ["Y"],
          {"p": np.array(pads, np.int64)}, opset=19)


def test_pad_mode_refused():
    model = make_model([N("Pad", ["X", "p"], ["Y"], mode="mirror")], {"X": rand(2, 3)}, ["Y"],
                       {"p": np.array([0, 1, 0, 1], np.int64)})
    with pytest.raises(ValueError, match=r"node 'Y' \(Pad, opset 13\): mode='mirror' is not one of constant, "
                                         r"reflect, edge, wrap"):
        graph.from_onnx(model)


@pytest.fixture
def alexnet_bytes() -> bytes:
    with open(os.path.join(DATA, "light", "light_bvlc_alexnet.onnx"), "rb") as f:
        return f.read()


@pytest.mark.parametrize("cut", [1, 10, 500, 2000, -1])
def test_truncated_file(tmp_path, alexnet_bytes, cut):
    path = tmp_path / "cut.onnx"
    path.write_bytes(alexnet_bytes[:cut])
    with pytest.raises(ValueError, match=r"from_onnx: (cannot parse '.*cut.onnx' as an ONNX model|"
                                         r"'.*cut.onnx' has no graph)"):
        graph.from_onnx(str(path))
    with pytest.raises(ValueError, match=r"from_onnx: (cannot parse the given \d+ bytes|the model bytes)"):
        graph.from_onnx(alexnet_bytes[:cut])


def test_missing_empty_random_and_wrong_type(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"from_onnx: no such file '.*nowhere.onnx'"):
        graph.from_onnx(str(tmp_path / "nowhere.onnx"))
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ValueError, match=r"from_onnx: '.*empty.onnx' is empty \(0 bytes\)"):
        graph.from_onnx(tmp_path / "empty.onnx")
    (tmp_path / "noise.onnx").write_bytes(np.random.default_rng(1).bytes(300))
    with pytest.raises(ValueError, match=r"from_onnx: cannot parse '.*noise.onnx' as an ONNX model"):
        graph.from_onnx(str(tmp_path / "noise.onnx"))
    with pytest.raises(ValueError, match=r"from_onnx: '.*' is a directory"):
        graph.from_onnx(str(tmp_path))
    with pytest.raises(TypeError, match=r"from_onnx: expects an onnx.ModelProto, a file path or the model "
                                        r"bytes, got int"):
        graph.from_onnx(42)


def test_malformed_nodes_named():
    model = make_model([N("DepthToSpace", ["X"], ["Y"])], {"X": rand(1, 4, 2, 2)}, ["Y"])
    with pytest.raises(ValueError, match=r"node 'Y' \(DepthToSpace, opset 13\): attribute blocksize is required"):
        graph.from_onnx(model)
    model = make_model([N("Concat", [], ["Y"], axis=0)], {"X": rand(2)}, ["Y"])
    with pytest.raises(ValueError, match=r"node 'Y' \(Concat, opset 13\): cannot be converted \(IndexError: "):
        graph.from_onnx(model)


def test_dangling_input_named():
    model = make_model([N("Relu", ["missing"], ["Y"])], {"X": rand(2)}, ["Y"])
    with pytest.raises(ValueError, match=r"node 'Y' \(Relu, opset 13\): reads 'missing', which no earlier node, "
                                         r"graph input or initializer of model 'test' defines"):
        graph.from_onnx(model)


# ------------------------------------------------------------------ onnx's backend test data
# Models refused on purpose, each with the reason; anything else in the two folders must pass.
REFUSED: dict = {}
BACKEND = sorted(glob.glob(os.path.join(DATA, "pytorch-converted", "*"))
                 + glob.glob(os.path.join(DATA, "pytorch-operator", "*")))


def _load_case(case: str) -> tuple:
    model = onnx.load(os.path.join(case, "model.onnx"))
    inits = {t.name for t in model.graph.initializer}
    names = [v.name for v in model.graph.input if v.name not in inits]

    def tensors(kind):
        files = sorted(glob.glob(os.path.join(case, "test_data_set_0", f"{kind}_*.pb")),
                       key=lambda f: int(f.rsplit("_", 1)[1][:-3]))
        return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]

    return model, dict(zip(names, tensors("input"))), tensors("output")


def test_backend_cases_found():
    assert len(BACKEND) == 117 and set(REFUSED) <= {os.path.basename(c) for c in BACKEND}


@pytest.mark.parametrize("case", BACKEND, ids=os.path.basename)
def test_backend_pytorch(case):
    model, feeds, want = _load_case(case)
    name = os.path.basename(case)
    if name in REFUSED:
        with pytest.raises(ValueError, match=REFUSED[name]):
            graph.from_onnx(model)
        return
    g, params = graph.from_onnx(model)
    with np.errstate(invalid="ignore"):  # Sqrt and Pow of negative numbers: NaN, as stored
        got = interpret(g, feeds, params)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)


# ------------------------------------------------------------------ the light models
LIGHT = sorted(glob.glob(os.path.join(DATA, "light", "*.onnx")))


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: os.path.basename(p)[6:-5])
def test_light_model_imports(path):
    model = onnx.load(path)
    g, params = graph.from_onnx(path)
    declared = [tuple(d.dim_value for d in o.type.tensor_type.shape.dim) for o in model.graph.output]
    assert [v.shape for v in g.outputs] == declared and declared[0][:2] == (1, 1000)
    assert [v.name for v in g.outputs] == [o.name for o in model.graph.output]
    assert set(params) == {t.name for t in model.graph.initializer}
    assert "full" in ops_of(g)  # the weights: ConstantOfShape over initializer shapes


def _random_weights(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """The light model with each ConstantOfShape weight replaced by a random initializer."""
    rng = np.random.default_rng(seed)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    shapes = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    keep = [n for n in m.graph.node if n.op_type != "ConstantOfShape"]
    for n in m.graph.node:
        if n.op_type == "ConstantOfShape":
            shape = tuple(int(d) for d in shapes[n.input[0]])
            if len(shape) > 1:
                w = rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))
            else:  # biases and batch-norm statistics: positive, so variances are
                w = rng.uniform(0.5, 1.5, shape)
            w = w.astype(np.float32)
            m.graph.initializer.append(numpy_helper.from_array(w, n.output[0]))
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


@pytest.mark.parametrize("name", ["light_bvlc_alexnet", "light_squeezenet"])
def test_light_model_numerics(name):
    model = _random_weights(onnx.load(os.path.join(DATA, "light", name + ".onnx")), seed=1)
    g, params = graph.from_onnx(model)
    data = next(v for v in g.inputs if v.name not in params)
    x = rand(*data.shape)
    got = interpret(g, {data.name: x}, params)[0]
    want = run_ort(model, {data.name: x})[0]
    assert got.std() > 1e-4  # not a uniform softmax
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)


# ------------------------------------------------------------------ element types
@pytest.mark.parametrize("elem, name", [(TensorProto.COMPLEX64, "COMPLEX64"), (TensorProto.COMPLEX128, "COMPLEX128"),
                                        (TensorProto.STRING, "STRING")])  # bfloat16, float8(e8m0), int4: storage
def test_unrepresentable_types_refused_at_import(elem, name):
    """An input, initializer or Cast target of a type the compiler lacks fails in from_onnx, naming it."""
    x = helper.make_tensor_value_info("X", elem, [2])
    model = helper.make_model(helper.make_graph([N("Identity", ["X"], ["Y"])], "t", [x],
                                                [helper.make_empty_tensor_value_info("Y")]))
    with pytest.raises(ValueError, match=rf"input 'X' of model 't' has element type {name}, which the compiler "
                                         r"cannot represent; supported: float16, float32"):
        graph.from_onnx(model)
    cast = make_model([N("Cast", ["X"], ["Y"], to=elem)], {"X": rand(2)}, ["Y"])
    with pytest.raises(ValueError, match=rf"node 'Y' \(Cast, opset 13\): attribute to={elem} \({name}\) is a type "
                                         r"the compiler cannot represent"):
        graph.from_onnx(cast)


def test_pow_integer_base():
    """ONNX Pow keeps an integer base's type (raised in float64, cast back)."""
    x = np.array([1, 2, 3, -4], np.int32)
    for y in (np.array([0, 3, 2, 3], np.int32), np.array([2.0, 3.0, 0.0, 2.0], np.float32)):
        check([N("Pow", ["X", "Y"], ["Z"])], {"X": x, "Y": y}, ["Z"], opset=15)


def test_argmax_select_last_index():
    x = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], np.float32)
    for op in ("ArgMax", "ArgMin"):
        check([N(op, ["X"], ["Y"], axis=1, select_last_index=1, keepdims=0)], {"X": x}, ["Y"])


def test_layer_norm_statistics_outputs():
    nodes = [N("LayerNormalization", ["X", "s", "b"], ["Y", "mean", "inv_std"], axis=1, epsilon=1e-3)]
    check(nodes, {"X": rand(2, 3, 4)}, ["Y", "mean", "inv_std"], {"s": rand(3, 4), "b": rand(3, 4)}, opset=17,
          rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dims, match", [
    ([2**40, 2**10], r"input 'X' of model 't' of shape \(1099511627776, 1024\) float32 takes 4503599627370496 bytes, "
                     r"more than the 140737488355328 bytes \(2\^47\) this machine can address"),
    ([3, -2], r"input 'X' of model 't' has the negative extent in shape \(3, -2\)"),
])
def test_absurd_input_extents_refused(dims, match):
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, dims)
    model = helper.make_model(helper.make_graph([N("Relu", ["X"], ["Y"])], "t", [x],
                                                [helper.make_empty_tensor_value_info("Y")]))
    with pytest.raises(ValueError, match=match):
        graph.from_onnx(model)


def test_absurd_intermediate_extent_refused():
    """A graph op whose output would exceed the address space (a Tile of 2^30 x 2^30) names the node."""
    model = make_model([N("Tile", ["X", "r"], ["Y"])], {"X": rand(2, 2)}, ["Y"],
                       {"r": np.array([2**30, 2**30], np.int64)})
    with pytest.raises(ValueError, match=r"node 'Y' \(Tile, opset 13\): the output 'Y/tile' of graph op 'tile' "
                                         r"of shape \(2147483648, 2147483648\) float32 takes .* bytes, more than"):
        graph.from_onnx(model)


def test_average_pool_of_an_empty_axis():
    """Found by scripts/fuzz_onnx_files.py: windows of padding only average to NaN (onnx's reference)."""
    from onnx.reference import ReferenceEvaluator

    for extra in ({}, {"count_include_pad": 1}):
        model = make_model([N("AveragePool", ["X"], ["Y"], kernel_shape=[3, 3], pads=[2, 2, 2, 2], **extra)],
                           {"X": np.zeros((1, 2, 3, 0), np.float32)}, ["Y"], opset=19)
        g, params = graph.from_onnx(model)
        lib = graph.build(g, params=params)
        m = lib.create_executor()
        m.run(X=np.zeros((1, 2, 3, 0), np.float32))
        with np.errstate(all="ignore"):
            want = ReferenceEvaluator(model).run(None, {"X": np.zeros((1, 2, 3, 0), np.float32)})[0]
        np.testing.assert_array_equal(m.get_output(0), want)


def test_operator_type_not_utf8_refused():
    """Found by scripts/fuzz_onnx_files.py: a flipped byte in an op_type makes protobuf hand back bytes."""
    data = make_model([N("Relu", ["X"], ["Y"])], {"X": rand(2)}, ["Y"]).SerializeToString()
    data = data.replace(b"Relu", b"Re\xfflu"[:4])
    with pytest.raises(ValueError, match=r"has an operator type or domain that is not valid UTF-8"):
        graph.from_onnx(data)


@pytest.mark.parametrize("elem", [TensorProto.BFLOAT16, TensorProto.INT4, TensorProto.FLOAT8E5M2])
def test_unrepresentable_constants_refused_at_import(elem):
    value = helper.make_tensor("v", elem, [2], [1, 0])
    for node in (N("Constant", [], ["Y"], value=value),
                 N("ConstantOfShape", ["s"], ["Y"], value=helper.make_tensor("v", elem, [1], [1]))):
        model = make_model([node], {"X": rand(2)}, ["Y"], {"s": np.array([2], np.int64)})
        with pytest.raises(ValueError, match=r"attribute value holds \w+, a type the compiler cannot represent"):
            graph.from_onnx(model)
