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


def test_extra_outputs_refused_when_used():
    pool = N("MaxPool", ["X"], ["Y", "I"], kernel_shape=[2, 2])
    model = make_model([pool], {"X": rand(1, 1, 4, 4)}, ["Y", "I"], opset=12)
    with pytest.raises(ValueError, match=r"node 'Y' \(MaxPool, opset 12\): output 1 \('I'\) is used"):
        graph.from_onnx(model)
    drop = N("Dropout", ["X"], ["Y", "mask"])
    with pytest.raises(ValueError, match=r"Dropout.*output 1 \('mask'\) is used"):
        graph.from_onnx(make_model([drop, N("Not", ["mask"], ["Z"])], {"X": rand(2, 2)}, ["Y", "Z"]))
    g = check([drop], {"X": rand(2, 3)}, ["Y"], opset=12)  # an unused mask is fine
    assert ops_of(g) == {"identity"}


# ------------------------------------------------------------------ elementwise
UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Abs", "Neg", "Floor", "Ceil", "Reciprocal", "Softplus", "Erf",
         "Sign", "Sin", "Cos", "Round", "Elu", "Selu", "HardSigmoid", "HardSwish", "LeakyRelu"]


@pytest.mark.parametrize("op", UNARY)
def test_unary(op):
    check([N(op, ["X"], ["Y"])], {"X": rand(3, 4) * 3}, ["Y"], opset=14, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, attrs", [("Log", {}), ("Sqrt", {}), ("LeakyRelu", {"alpha": 0.3}),
                                       ("Elu", {"alpha": 0.5}), ("Selu", {"alpha": 1.5, "gamma": 2.0}),
                                       ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
                                       ("Gelu", {}), ("Gelu", {"approximate": "tanh"})])
def test_unary_attrs(op, attrs):
    check([N(op, ["X"], ["Y"], **attrs)], {"X": np.abs(rand(3, 4)) + 0.1}, ["Y"], opset=20, atol=1e-5)


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


def test_gather():
    nodes = [N("Gather", ["X", "idx"], ["Y"], axis=1), N("Gather", ["X", "k"], ["Z"], axis=-1)]
    check(nodes, {"X": rand(2, 5, 3)}, ["Y", "Z"], {"idx": np.array([[0, -1], [4, 2]], np.int64),
                                                    "k": np.array(-2, np.int64)})


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


@pytest.mark.parametrize("opset, mode", [(9, "nearest"), (9, "linear"), (7, "nearest")])
def test_upsample(opset, mode):
    scales = [1.0, 1.0, 2.0, 3.0]
    if opset == 7:
        node, inits = N("Upsample", ["X"], ["Y"], mode=mode, scales=scales), {}
    else:
        node, inits = N("Upsample", ["X", "s"], ["Y"], mode=mode), {"s": np.array(scales, np.float32)}
    check([node], {"X": rand(1, 2, 3, 4)}, ["Y"], inits, opset=opset)


@pytest.mark.parametrize("attrs, scales, match", [
    ({"mode": "cubic"}, [1, 1, 2, 2], "mode='cubic' is not supported"),
    ({"coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     "coordinate_transformation_mode='tf_crop_and_resize' is not supported"),
    ({"coordinate_transformation_mode": "asymmetric"}, [1, 1, 2, 2], "exact halves"),
    ({}, [1, 1, 1.5, 1.5], r"scale 1.5 on an axis of 3 gives 4.5"),
    ({}, [1, 2, 2, 2], "only the H, W axes"),
])
def test_resize_refusals(attrs, scales, match):
    node, inits = _resize(13, attrs, scales)
    with pytest.raises(ValueError, match=r"node 'Y' \(Resize, opset 13\): .*" + match):
        graph.from_onnx(make_model([node], {"X": rand(1, 2, 3, 3)}, ["Y"], inits))
