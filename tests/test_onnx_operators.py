"""The ONNX operators of issue 48 against onnx's reference implementation (``onnx.reference``).

Each model is one operator (or a few) on shapes that divide no block size
(7, 13, 5...), imported, built, run and compared with ``ReferenceEvaluator``;
models whose shapes are decided at run time (symbolic dimensions, shape
operands fed as inputs, data-dependent sizes, control flow) run at two input
signatures from one build.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import graph

RNG = np.random.default_rng(48)
N = helper.make_node


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def model_of(nodes, feeds: dict, outputs, inits=None, opset: int = 21, dims=None) -> onnx.ModelProto:
    """A model over ``nodes``; input ``k`` declares ``dims[k]`` (symbolic names allowed) or its
    feed's shape."""
    dims = dims or {}
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), dims.get(k, v.shape))
              for k, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(name) for name in outputs]
    init = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    g = helper.make_graph(nodes, "issue48", inputs, outs, init)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def reference(model, feeds: dict) -> list:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)


def check(model, *feed_sets, rtol=1e-5, atol=1e-5):
    """Build once; every feed set's outputs equal onnx's reference (shape, dtype, values)."""
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    for feeds in feed_sets:
        m.run(**feeds)
        for k, want in enumerate(reference(model, feeds)):
            got = m.get_output(k)
            want = np.asarray(want)
            assert got.shape == want.shape and got.dtype == want.dtype, (k, got.shape, want.shape, got.dtype)
            if want.dtype.kind == "f":
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
            else:
                np.testing.assert_array_equal(got, want)
    return g


# ------------------------------------------------------------------ elementwise
@pytest.mark.parametrize("op", ["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Atanh"])
def test_trigonometric(op):
    x = (RNG.uniform(-0.9, 0.9, (7, 13))).astype(np.float32)
    check(model_of([N(op, ["x"], ["y"])], {"x": x}, ["y"]), {"x": x})


def test_acosh_isnan_isinf():
    x = RNG.uniform(1.0, 5.0, (5, 13)).astype(np.float32)
    x[0, :3] = [np.nan, np.inf, -np.inf]
    nodes = [N("Acosh", ["x"], ["a"]), N("IsNaN", ["x"], ["n"]), N("IsInf", ["x"], ["i"], detect_negative=0)]
    check(model_of(nodes, {"x": x}, ["a", "n", "i"]), {"x": x})


@pytest.mark.parametrize("dtype", ["int8", "uint16", "int32", "uint64"])
def test_bitwise_and_shifts(dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (3, 7), dtype=dtype, endpoint=True)
    b = RNG.integers(info.min, info.max, (7,), dtype=dtype, endpoint=True)
    s = RNG.integers(0, info.bits - 1, (3, 7)).astype(dtype)
    nodes = [N("BitwiseAnd", ["a", "b"], ["x"]), N("BitwiseOr", ["a", "b"], ["o"]), N("BitwiseXor", ["a", "b"], ["r"]),
             N("BitwiseNot", ["a"], ["n"])]
    check(model_of(nodes, {"a": a, "b": b}, ["x", "o", "r", "n"]), {"a": a, "b": b})
    if dtype.startswith("uint"):
        shifts = [N("BitShift", ["a", "s"], ["l"], direction="LEFT"), N("BitShift", ["a", "s"], ["h"], direction="RIGHT")]
        check(model_of(shifts, {"a": a, "s": s}, ["l", "h"]), {"a": a, "s": s})


def test_swish_shrink_mod():
    x, y = rand(5, 7), rand(5, 7) + 3.0
    nodes = [N("Swish", ["x"], ["s"], alpha=0.7), N("Shrink", ["x"], ["k"], lambd=0.6, bias=0.2),
             N("Mod", ["x", "y"], ["m"], fmod=1), N("Mod", ["x", "y"], ["f"])]
    check(model_of(nodes, {"x": x, "y": y}, ["s", "k", "m", "f"], opset=24), {"x": x, "y": y})


# ------------------------------------------------------------------ indexing
def test_gather_nd_batch_dims():
    data = rand(3, 5, 7, 2)
    idx = np.array([[[1, -2], [4, 0]], [[0, 6], [2, 3]], [[3, 1], [-1, -7]]], np.int64)
    check(model_of([N("GatherND", ["d", "i"], ["y"], batch_dims=1)], {"d": data, "i": idx}, ["y"]),
          {"d": data, "i": idx})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_and_elements(reduction):
    data = rand(7, 5, 3)
    idx = np.array([[1], [6], [-3]], np.int64)
    upd = rand(3, 5, 3)
    eidx = RNG.integers(-5, 5, (6, 4, 3)).astype(np.int64)
    eupd = rand(6, 4, 3)
    if reduction == "none":  # distinct targets: the last-writer order is then irrelevant
        eidx = np.broadcast_to(np.array([0, 2, 4, 1])[None, :, None], (6, 4, 3)).astype(np.int64).copy()
    nodes = [N("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction),
             N("ScatterElements", ["d", "e", "v"], ["z"], axis=1, reduction=reduction)]
    feeds = {"d": data, "i": idx, "u": upd, "e": eidx, "v": eupd}
    check(model_of(nodes, feeds, ["y", "z"], opset=18), feeds)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_cumprod(exclusive, reverse):
    x = rand(5, 13) * 0.5 + 1.0
    axis = np.array(-1, np.int64)
    nodes = [N("CumSum", ["x", "a"], ["s"], exclusive=exclusive, reverse=reverse),
             N("CumProd", ["x", "a"], ["p"], exclusive=exclusive, reverse=reverse)]
    check(model_of(nodes, {"x": x}, ["s", "p"], {"a": axis}, opset=26), {"x": x}, rtol=1e-4)


def test_one_hot_eye_like_reverse_sequence_crop():
    idx = np.array([[1, -1, 6], [0, 3, -7]], np.int64)
    x = rand(7, 5, 3)
    lens = np.array([7, 1, 4, 0, 6], np.int64)
    nodes = [N("OneHot", ["i", "depth", "vals"], ["o"], axis=1), N("EyeLike", ["m"], ["e"], k=2),
             N("ReverseSequence", ["x", "lens"], ["r"], batch_axis=1, time_axis=0),
             N("CenterCropPad", ["x", "shape"], ["c"])]
    inits = {"depth": np.array(7, np.int64), "vals": np.array([-2.0, 3.0], np.float32),
             "shape": np.array([4, 9, 3], np.int64)}
    m = rand(5, 9)
    check(model_of(nodes, {"i": idx, "m": m, "x": x, "lens": lens}, ["o", "e", "r", "c"], inits),
          {"i": idx, "m": m, "x": x, "lens": lens})


# ------------------------------------------------------------------ normalisation, losses, einsum
def test_norms_and_pools():
    x = rand(2, 6, 5, 7)
    nodes = [N("GroupNormalization", ["x", "s", "b"], ["g"], num_groups=3, epsilon=1e-3),
             N("LpNormalization", ["x"], ["l"], axis=2, p=2), N("MeanVarianceNormalization", ["x"], ["v"]),
             N("LpPool", ["x"], ["p"], kernel_shape=[3, 2], strides=[2, 2], pads=[1, 0, 1, 1], p=3),
             N("Hardmax", ["x"], ["h"], axis=1)]
    inits = {"s": rand(6), "b": rand(6)}
    check(model_of(nodes, {"x": x}, ["g", "l", "v", "p", "h"], inits), {"x": x}, rtol=1e-4, atol=1e-5)
    positive = np.abs(x)  # onnx's reference sums x, not |x|, for p=1
    positive[0, 0, :, 0] = 0.0
    check(model_of([N("LpNormalization", ["x"], ["l"], axis=2, p=1)], {"x": positive}, ["l"]), {"x": positive})


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_losses(reduction):
    scores = rand(3, 5, 7)
    labels = RNG.integers(0, 5, (3, 7)).astype(np.int64)
    labels[0, 2] = -3
    weights = np.abs(rand(5)) + 0.1
    nodes = [N("SoftmaxCrossEntropyLoss", ["x", "t", "w"], ["l", "lp"], reduction=reduction, ignore_index=-3),
             N("NegativeLogLikelihoodLoss", ["x", "t"], ["n"], reduction=reduction, ignore_index=-3)]
    check(model_of(nodes, {"x": scores, "t": labels}, ["l", "lp", "n"], {"w": weights}), {"x": scores, "t": labels},
          rtol=1e-4)


@pytest.mark.parametrize("equation,shapes,op", [
    ("bhqd,bhkd->bhqk", [(2, 3, 7, 5), (2, 3, 9, 5)], "batch_matmul"),   # MaxViT-style attention scores
    ("ij,jk", [(7, 5), (5, 3)], "batch_matmul"),
    ("...ii->...i", [(3, 5, 5)], "einsum"),                            # a diagonal
    ("ij,ij,j->i", [(7, 5), (7, 5), (5,)], "einsum"),
])
def test_einsum(equation, shapes, op):
    feeds = {f"x{k}": rand(*s) for k, s in enumerate(shapes)}
    g = check(model_of([N("Einsum", list(feeds), ["y"], equation=equation)], feeds, ["y"]), feeds, rtol=1e-4)
    assert op in {n.op for n in g.nodes}


def test_nan_guard_after_softmax_stays_fused():
    """torch's ``Softmax -> IsNaN -> Where`` guard of scaled dot-product attention fuses into one
    attention kernel, which zeroes a fully masked row as the guard does."""
    b, s, d = 3, 7, 5
    mask = np.triu(np.full((s, s), -np.inf, np.float32), 1)
    mask[2, :] = -np.inf
    nodes = [N("MatMul", ["q", "kt"], ["s"]), N("Add", ["s", "mask"], ["m"]), N("Softmax", ["m"], ["p"], axis=-1),
             N("IsNaN", ["p"], ["nan"]), N("Where", ["nan", "zero", "p"], ["p2"]), N("MatMul", ["p2", "v"], ["y"])]
    feeds = {"q": rand(b, s, d), "kt": rand(b, d, s), "v": rand(b, s, d)}
    model = model_of(nodes, feeds, ["y"], {"mask": mask, "zero": np.float32(0)})
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    kernels = [[n.op for n in f.attrs["body"].nodes if not n.is_constant] for f in lib.graph.nodes if f.op == "fused"]
    assert kernels == [["attention"]]
    check(model, feeds)


# ------------------------------------------------------------------ run-time shapes
def test_symbolic_batch_runs_any_value_from_one_build():
    x = rand(1, 3, 7, 7)
    nodes = [N("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), N("Relu", ["c"], ["r"]),
             N("Shape", ["r"], ["s"]), N("Gather", ["s", "zero"], ["n"]), N("Unsqueeze", ["n", "axes"], ["n1"]),
             N("Concat", ["n1", "minus"], ["target"], axis=0), N("Reshape", ["r", "target"], ["y"])]
    inits = {"w": rand(4, 3, 3, 3), "zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
             "minus": np.array([-1], np.int64)}
    model = model_of(nodes, {"x": x}, ["y"], inits, dims={"x": ["N", 3, 7, 7]})
    check(model, {"x": x}, {"x": rand(4, 3, 7, 7)}, {"x": x}, rtol=1e-4, atol=1e-4)


def test_shape_operands_as_run_time_inputs():
    x = rand(2, 3, 5)
    nodes = [N("Slice", ["x", "starts", "ends", "axes", "steps"], ["s"]),
             N("Tile", ["x", "reps"], ["t"]), N("Expand", ["x", "shape"], ["e"]),
             N("Pad", ["x", "pads"], ["p"]), N("TopK", ["x", "k"], ["tv", "ti"]),
             N("ReduceSum", ["x", "raxes"], ["r"]), N("ConstantOfShape", ["shape"], ["c"]),
             N("Split", ["x", "split"], ["a", "b"], axis=2)]
    feeds = {"x": x, "starts": np.array([0, -1], np.int64), "ends": np.array([2, -6], np.int64),
             "axes": np.array([0, 2], np.int64), "steps": np.array([1, -2], np.int64),
             "reps": np.array([1, 2, 1], np.int64), "shape": np.array([4, 2, 3, 5], np.int64),
             "pads": np.array([0, 1, 0, 1, 0, 2], np.int64), "k": np.array([3], np.int64),
             "raxes": np.array([1], np.int64), "split": np.array([2, 3], np.int64)}
    model = model_of(nodes, feeds, ["s", "t", "e", "p", "tv", "ti", "r", "c", "a", "b"], opset=18)
    other = dict(feeds, x=rand(2, 3, 5), k=np.array([2], np.int64), raxes=np.array([2], np.int64),
                 split=np.array([4, 1], np.int64), pads=np.array([1, 0, 0, 0, 2, 1], np.int64))
    check(model, feeds, other)


def test_resize_scales_at_run_time():
    x = rand(1, 2, 5, 7)
    model = model_of([N("Resize", ["x", "", "scales"], ["y"], mode="linear")],
                     {"x": x, "scales": np.array([1, 1, 2.0, 1.5], np.float32)}, ["y"])
    check(model, {"x": x, "scales": np.array([1, 1, 2.0, 1.5], np.float32)},
          {"x": x, "scales": np.array([1, 1, 0.6, 3.0], np.float32)})


def test_contradicting_shape_input_names_the_node():
    x = rand(2, 3, 5)
    model = model_of([N("Pad", ["x", "pads"], ["y"])], {"x": x, "pads": np.zeros(6, np.int64)}, ["y"])
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    with pytest.raises(ValueError, match=r"node 'y' \(Pad, opset 21\)"):
        m.run(x=x, pads=np.array([0, 0, -7, 0, 0, 0], np.int64))


_I = lambda *v: np.array(v, np.int64)  # noqa: E731 - a shape operand


@pytest.mark.parametrize("node, operands, message", [
    (N("Expand", ["x", "s"], ["y"]), {"s": _I(2, 4, 5)}, r"shape \[2, 4, 5\] does not broadcast with the input shape"),
    (N("Tile", ["x", "s"], ["y"]), {"s": _I(1, -1, 1)}, r"repeats \[1, -1, 1\]"),
    (N("Split", ["x", "s"], ["y", "z"], axis=2), {"s": _I(4, 4)}, r"split sizes \[4, 4\] do not cut axis 2"),
    (N("TopK", ["x", "s"], ["y", "z"]), {"s": _I(9)}, r"k=9 is not in \[0, 5\]"),
    (N("ConstantOfShape", ["s"], ["y"]), {"s": _I(2, -3)}, r"shape \[2, -3\] has a negative extent"),
    (N("Reshape", ["x", "s"], ["y"]), {"s": _I(-1, -1)}, r"shape \[-1, -1\] has more than one -1"),
    (N("ReduceSum", ["x", "s"], ["y"]), {"s": _I(5)}, r"axes=5 is out of range"),
    (N("Slice", ["x", "a", "b", "s", "t"], ["y"]), {"a": _I(0), "b": _I(1), "s": _I(1), "t": _I(0)}, r"step 0"),
    (N("Resize", ["x", "", "", "s"], ["y"]), {"s": _I(2, 3, -4)}, r"cannot resize \(2, 3, 5\) to \(2, 3, -4\)"),
], ids=lambda p: p.op_type if hasattr(p, "op_type") else "")
def test_contradicting_shape_operands_refused_at_run_time(node, operands, message):
    """Shape operands fed at run time that the data contradicts: a ValueError naming the node
    when the model runs (before any kernel is built or writes), never an out-of-bounds write."""
    x = rand(2, 3, 5)
    model = model_of([node], {"x": x, **operands}, list(node.output), opset=18)
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    with pytest.raises(ValueError, match=rf"node 'y' \({node.op_type}, opset 18\): {message}"):
        m.run(x=x, **operands)


# ------------------------------------------------------------------ data-dependent sizes, control flow
def test_data_dependent_sizes():
    x = RNG.integers(-2, 3, (5, 7)).astype(np.float32)
    cond = np.array([1, 0, 1, 1, 0], bool)
    nodes = [N("NonZero", ["x"], ["nz"]), N("Unique", ["x"], ["u", "i", "inv", "cnt"], sorted=0, axis=0),
             N("Unique", ["x"], ["u1", "i1", "inv1", "cnt1"], axis=1),
             N("Compress", ["x", "cond"], ["c"], axis=0), N("Relu", ["c"], ["r"])]
    check(model_of(nodes, {"x": x, "cond": cond}, ["nz", "u", "i", "inv", "cnt", "u1", "i1", "inv1", "cnt1", "r"]),
          {"x": x, "cond": cond}, {"x": RNG.integers(0, 2, (5, 7)).astype(np.float32), "cond": ~cond})


def test_non_max_suppression():
    boxes = RNG.uniform(0, 10, (2, 13, 4)).astype(np.float32)
    scores = RNG.uniform(0, 1, (2, 3, 13)).astype(np.float32)
    inits = {"m": np.array([4], np.int64), "iou": np.array([0.3], np.float32), "st": np.array([0.2], np.float32)}
    nodes = [N("NonMaxSuppression", ["b", "s", "m", "iou", "st"], ["y"])]
    check(model_of(nodes, {"b": boxes, "s": scores}, ["y"], inits), {"b": boxes, "s": scores})


def _body(nodes, inputs, outputs):
    return helper.make_graph(nodes, "body", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                             [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs])


def test_if_loop_scan():
    f = TensorProto.FLOAT
    then = _body([N("Mul", ["x", "two"], ["t"])], [], [("t", f, None)])
    other = _body([N("Neg", ["x"], ["e"])], [], [("e", f, None)])
    loop = _body([N("Add", ["acc", "init"], ["acc2"]), N("Identity", ["c"], ["c2"]), N("Mul", ["acc2", "two"], ["sc"])],
                 [("i", TensorProto.INT64, []), ("c", TensorProto.BOOL, []), ("acc", f, None)],
                 [("c2", TensorProto.BOOL, []), ("acc2", f, None), ("sc", f, None)])
    scan = _body([N("Add", ["s", "row"], ["s2"]), N("Identity", ["s2"], ["o"])],
                 [("s", f, [7]), ("row", f, [7])], [("s2", f, [7]), ("o", f, [7])])
    nodes = [N("If", ["cond"], ["y"], then_branch=then, else_branch=other),
             N("If", ["yes"], ["k"], then_branch=then, else_branch=other),
             N("Loop", ["trips", "yes2", "init"], ["acc", "scans"], body=loop),
             N("Scan", ["init", "x"], ["last", "all"], body=scan, num_scan_inputs=1)]
    feeds = {"cond": np.array(True), "x": rand(5, 7), "trips": np.array(3, np.int64), "init": rand(7)}
    inits = {"two": np.float32(2.0), "yes": np.array(False), "yes2": np.array(True)}
    model = model_of(nodes, feeds, ["y", "k", "acc", "scans", "last", "all"], inits)
    check(model, feeds, dict(feeds, cond=np.array(False), trips=np.array(5, np.int64)))


# ------------------------------------------------------------------ recurrent
def _ort(model, feeds):
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.mark.parametrize("op,gates,attrs", [
    ("LSTM", 4, {"clip": 2.5}),
    ("LSTM", 4, {"activations": ["HardSigmoid", "Tanh", "Softsign"] * 2, "activation_alpha": [0.3, 0.25],
                 "activation_beta": [0.4, 0.5]}),
    ("GRU", 3, {"linear_before_reset": 1}),
    ("GRU", 3, {}),
    ("RNN", 1, {"activations": ["Relu", "Tanh"]}),
])
def test_recurrent_bidirectional_with_lengths(op, gates, attrs):
    """Both directions, sequence lengths, initial states (and LSTM peepholes) against onnxruntime."""
    seq, batch, inp, hidden = 5, 3, 7, 6
    feeds = {"x": rand(seq, batch, inp), "lens": np.array([5, 2, 4], np.int32), "h0": rand(2, batch, hidden)}
    inits = {"w": rand(2, gates * hidden, inp) * 0.5, "r": rand(2, gates * hidden, hidden) * 0.5,
             "b": rand(2, 2 * gates * hidden) * 0.5}
    inputs, outputs = ["x", "w", "r", "b", "lens", "h0"], ["y", "yh"]
    if op == "LSTM":
        feeds["c0"] = rand(2, batch, hidden)
        inits["p"] = rand(2, 3 * hidden) * 0.5
        inputs += ["c0", "p"]
        outputs.append("yc")
    node = N(op, inputs, outputs, hidden_size=hidden, direction="bidirectional", **attrs)
    model = model_of([node], feeds, outputs, inits, opset=14)
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    m.run(**feeds)
    for k, want in enumerate(_ort(model, feeds)):
        np.testing.assert_allclose(m.get_output(k), want, rtol=1e-4, atol=1e-5)


def test_lstm_batch_first_reverse():
    seq, batch, inp, hidden = 4, 2, 3, 5
    x = rand(batch, seq, inp)
    inits = {"w": rand(1, 4 * hidden, inp), "r": rand(1, 4 * hidden, hidden)}
    node = N("LSTM", ["x", "w", "r"], ["y", "yh", "yc"], hidden_size=hidden, direction="reverse", layout=1)
    check(model_of([node], {"x": x}, ["y", "yh", "yc"], inits, opset=14), {"x": x}, rtol=1e-4)


# ------------------------------------------------------------------ signal, image, vision, language models
@pytest.mark.parametrize("inverse,onesided", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_dft(inverse, onesided):
    x = rand(2, 7, 3, 2) if not onesided or inverse else rand(2, 7, 3, 1)
    if inverse and onesided:
        x = rand(2, 4, 3, 2)
    length = np.array(7 if not (inverse and onesided) else 7, np.int64)
    nodes = [N("DFT", ["x", "n", "axis"], ["y"], inverse=inverse, onesided=onesided)]
    model = model_of(nodes, {"x": x}, ["y"], {"n": length, "axis": np.array(1, np.int64)}, opset=20)
    check(model, {"x": x}, rtol=1e-4, atol=1e-4)


def test_stft_and_windows():
    signal = rand(2, 37, 1)
    nodes = [N("HannWindow", ["size"], ["w"]), N("STFT", ["x", "step", "w", "size"], ["y"]),
             N("HammingWindow", ["size"], ["h"], periodic=0), N("BlackmanWindow", ["size"], ["b"]),
             N("MelWeightMatrix", ["bins", "dft", "rate", "lo", "hi"], ["m"])]
    inits = {"size": np.array(9, np.int64), "step": np.array(4, np.int64), "bins": np.array(5, np.int64),
             "dft": np.array(16, np.int64), "rate": np.array(8000, np.int64), "lo": np.array(50.0, np.float32),
             "hi": np.array(3000.0, np.float32)}
    check(model_of(nodes, {"x": signal}, ["y", "h", "b", "m"], inits, opset=17), {"x": signal}, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode, padding, align):
    x = rand(2, 3, 5, 7)
    grid = RNG.uniform(-1.3, 1.3, (2, 4, 6, 2)).astype(np.float32)
    nodes = [N("GridSample", ["x", "g"], ["y"], mode=mode, padding_mode=padding, align_corners=align)]
    check(model_of(nodes, {"x": x, "g": grid}, ["y"], opset=22), {"x": x, "g": grid}, rtol=1e-4, atol=1e-5)


def test_affine_grid_and_volumetric_sampling():
    theta = rand(2, 3, 4) * 0.5
    x = rand(2, 1, 3, 5, 4)
    nodes = [N("AffineGrid", ["t", "size"], ["g"], align_corners=0), N("GridSample", ["x", "g"], ["y"])]
    inits = {"size": np.array([2, 1, 3, 5, 7], np.int64)}
    check(model_of(nodes, {"t": theta, "x": x}, ["g", "y"], inits, opset=22), {"t": theta, "x": x}, rtol=1e-4,
          atol=1e-5)


def test_col2im_maxunpool_deform_conv_roi_align():
    cols = rand(1, 2 * 6, 15)  # C=2, block 2x3 over a 5x7 image with pads (1, 0, 0, 1), strides (1, 2): 5 x 3 blocks
    x = rand(1, 1, 4, 6)
    pooled, idx = rand(1, 1, 2, 3), np.array([[[[1, 8, 10], [13, 19, 22]]]], np.int64)
    img, w = rand(1, 4, 5, 6), rand(2, 2, 2, 3)
    offset = rand(1, 2 * 2 * 6, 5, 5) * 1.5
    mask = RNG.uniform(0, 1, (1, 2 * 6, 5, 5)).astype(np.float32)
    rois = np.array([[0.5, 1.0, 4.5, 3.7], [1.2, 0.3, 5.9, 4.8], [-2.0, 2.0, 3.0, 9.0]], np.float32)
    nodes = [N("Col2Im", ["cols", "image", "block"], ["c"], pads=[1, 0, 0, 1], strides=[1, 2]),
             N("MaxUnpool", ["p", "i", "oshape"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
             N("DeformConv", ["img", "w", "off", "b", "mask"], ["d"], group=2, offset_group=2, pads=[1, 0, 0, 1]),
             N("RoiAlign", ["img", "rois", "bi"], ["r"], output_height=3, output_width=2, sampling_ratio=2,
               spatial_scale=0.9, mode="max"),
             N("RoiAlign", ["img", "rois", "bi"], ["r2"], output_height=2, output_width=3, sampling_ratio=3)]
    inits = {"image": np.array([5, 7], np.int64), "block": np.array([2, 3], np.int64),
             "oshape": np.array([1, 1, 5, 7], np.int64), "b": rand(2), "bi": np.array([0, 0, 0], np.int64)}
    feeds = {"cols": cols, "p": pooled, "i": idx, "img": img, "w": w, "off": offset, "mask": mask, "rois": rois}
    del x
    check(model_of(nodes, feeds, ["c", "u", "d", "r", "r2"], inits, opset=22), feeds, rtol=1e-4, atol=1e-5)


def test_language_model_operators():
    x = rand(2, 4, 3, 8)
    cos, sin = rand(9, 4), rand(9, 4)
    pos = np.array([[0, 3, 8], [1, 1, 2]], np.int64)
    past, upd = rand(2, 3, 7, 5), rand(2, 3, 3, 5)
    nodes = [N("RotaryEmbedding", ["x", "cos", "sin", "pos"], ["r"], interleaved=1),
             N("TensorScatter", ["past", "upd", "wi"], ["t"], mode="circular"),
             N("SwiGLU", ["a", "b"], ["s"], alpha=1.5)]
    feeds = {"x": x, "cos": cos, "sin": sin, "pos": pos, "past": past, "upd": upd,
             "wi": np.array([5, 1], np.int64), "a": rand(3, 5), "b": rand(3, 5)}
    check(model_of(nodes, feeds, ["r", "t", "s"], opset=28), feeds, rtol=1e-5)


def test_function_bodies_inline_and_host_det():
    """CausalConvWithState has no converter: its ONNX function body is inlined; Det runs on the host."""
    x, w = rand(2, 3, 9), rand(3, 1, 4)
    m = rand(3, 5, 5)
    nodes = [N("CausalConvWithState", ["x", "w"], ["y", "state"], activation="silu"), N("Det", ["m"], ["d"]),
             N("BitCast", ["x"], ["bits"], to=TensorProto.INT32)]
    check(model_of(nodes, {"x": x, "w": w, "m": m}, ["y", "state", "d", "bits"], opset=27),
          {"x": x, "w": w, "m": m}, rtol=1e-4)


def test_global_lp_pool():  # not in onnx's reference: numpy
    x = rand(2, 3, 5, 7)
    g, params = graph.from_onnx(model_of([N("GlobalLpPool", ["x"], ["g"], p=3)], {"x": x}, ["g"]))
    m = graph.build(g, params=params).create_executor()
    m.run(x=x)
    want = (np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3)
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-5)
