"""Quantized models (issue 50): topi's quantization computes against their numpy twins, the
ONNX quantization converters against onnx's reference, the refusals of bad quantization
parameters, and small quantized models against onnxruntime's int8 session.

ONNX rounds half to even and saturates; the shapes divide no block size.  QDQ models run
dequantized in float32 where nothing fuses and match onnxruntime's int8 session exactly when the
weights are 7-bit (``reduce_range``); with 8-bit weights onnxruntime's fused AVX2 kernels
saturate int16 pair sums (vpmaddubsw) and drift from ONNX's arithmetic, so those models are
compared with its unfused session.  QOperator models compute onnxruntime's integer convs and
output stage; its com.microsoft add and pool run dequantized here (one step apart at most).
onnxruntime's fused QLinearAdd rounds on its own (``mlas_qlinear_add``): ONNX's add is what Tessera computes.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest
from helpers import check_build
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import graph
import te
from codegen.target import Target
from topi import generic
from topi.nn import qnn
from topi.testing import qnn as ref

N = helper.make_node
RNG = np.random.default_rng(50)


# ------------------------------------------------------------------ topi ---
def test_quantize_rounds_half_to_even_before_the_zero_point():
    x = te.placeholder((3, 7), "float32", name="x")
    s = te.placeholder((7,), "float32", name="s")
    z = te.placeholder((7,), "int8", name="z")
    y = qnn.quantize(x, s, z, axis=1, dtype="int8")
    # ties (k + 0.5) with odd and even zero points, saturation both ways, a non-tie
    xs = np.array([[0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0]] * 3, "float32") * np.float32(0.25)
    xs[2] += np.float32(0.01)
    inputs = [xs, np.full(7, 0.25, "float32"), np.array([1, 2, 3, -1, 0, 5, -5], "int8")]
    out = check_build(generic.schedule_injective(y), [x, s, z, y],
                      lambda a, b, c: ref.quantize_python(a, b, c, 1, "int8"), inputs=inputs, rtol=0, atol=0)[-1]
    assert out[0].tolist() == [1, 4, 5, -1, -2, 127, -128]  # round(2.5) + 3 = 5, not round(5.5) = 6


def test_quantize_blocked_and_dequantize_per_axis():
    x = te.placeholder((5, 9), "float32", name="x")
    s = te.placeholder((5, 3), "float32", name="s")
    z = te.placeholder((5, 3), "uint8", name="z")
    y = qnn.quantize(x, s, z, axis=1, dtype="uint8", block_size=4)
    inputs = [RNG.standard_normal((5, 9)).astype("float32") * 3, RNG.uniform(0.01, 0.1, (5, 3)).astype("float32"),
              RNG.integers(0, 255, (5, 3)).astype("uint8")]
    check_build(generic.schedule_injective(y), [x, s, z, y],
                lambda a, b, c: ref.quantize_python(a, b, c, 1, "uint8", 4), inputs=inputs, rtol=0, atol=0)
    q = te.placeholder((4, 6, 3), "int8", name="q")
    sd = te.placeholder((6,), "float32", name="sd")
    zd = te.placeholder((6,), "int8", name="zd")
    d = qnn.dequantize(q, sd, zd, axis=1)
    check_build(generic.schedule_injective(d), [q, sd, zd, d],
                lambda a, b, c: ref.dequantize_python(a, b, c, 1), rtol=0, atol=0,
                inputs=[RNG.integers(-128, 128, (4, 6, 3)).astype("int8"), RNG.uniform(0.01, 1, 6).astype("float32"),
                        RNG.integers(-128, 128, 6).astype("int8")])


def test_quantization_parameters_broadcast_against_blocked_data():
    """A per-channel scale or zero point of NCHW[4]c data, laid out ``(1, C/4, 1, 1, 4)`` (as the
    layout pass re-lays them out), against the numpy twins: 3 x 4 = 12 channels, 5 x 7 points."""
    shape, pshape = (2, 3, 5, 7, 4), (1, 3, 1, 1, 4)
    x = te.placeholder(shape, "float32", name="x")
    acc = te.placeholder(shape, "int32", name="acc")
    s = te.placeholder(pshape, "float32", name="s")
    z = te.placeholder(pshape, "uint8", name="z")
    xs = [(RNG.standard_normal(shape) * 30).astype("float32"), RNG.uniform(0.05, 0.5, pshape).astype("float32"),
          RNG.integers(0, 256, pshape).astype("uint8")]
    qx = qnn.quantize(x, s, z, 1, "uint8")
    check_build(generic.schedule_injective(qx), [x, s, z, qx], lambda a, b, c: ref.quantize_python(a, b, c, 1, "uint8"),
                inputs=xs, rtol=0, atol=0)
    q = te.placeholder(shape, "uint8", name="q")
    d = qnn.dequantize(q, s, z, axis=1)
    check_build(generic.schedule_injective(d), [q, s, z, d], lambda a, b, c: ref.dequantize_python(a, b, c, 1),
                inputs=[RNG.integers(0, 256, shape).astype("uint8"), xs[1], xs[2]], rtol=0, atol=0)
    y = qnn.requantize(acc, s, z, axis=1, dtype="uint8")
    check_build(generic.schedule_injective(y), [acc, s, z, y], lambda a, b, c: ref.requantize_python(a, b, c, 1, "uint8"),
                inputs=[RNG.integers(-3000, 3000, shape).astype("int32"), xs[1], xs[2]], rtol=0, atol=0)
    with pytest.raises(ValueError, match="broadcast against the data"):
        qnn.requantize(acc, te.placeholder((1, 3, 1, 1, 2), "float32", name="m"), z, axis=1)


def test_requantize_per_channel_saturates():
    acc = te.placeholder((2, 5, 3), "int32", name="acc")
    m = te.placeholder((5,), "float32", name="m")
    z = te.placeholder((), "uint8", name="z")
    y = qnn.requantize(acc, m, z, axis=1, dtype="uint8")
    inputs = [RNG.integers(-40000, 40000, (2, 5, 3)).astype("int32"), RNG.uniform(1e-4, 1e-2, 5).astype("float32"),
              np.array(128, "uint8")]
    out = check_build(generic.schedule_injective(y), [acc, m, z, y],
                      lambda a, b, c: ref.requantize_python(a, b, c, 1, "uint8"), inputs=inputs, rtol=0, atol=0)[-1]
    assert out.min() == 0 or out.max() == 255


def _scalar(value, dtype):
    """A one-element constant tensor as a fused kernel inlines it."""
    return te.compute((), lambda: te.const(value, dtype), name="c")


@pytest.mark.parametrize("zq,zd,dtype", [(3, 3, "uint8"), (-2, -2, "int8"), (3, 4, "uint8")])
def test_dequantize_of_a_quantize_in_one_kernel_stays_in_float(zq, zd, dtype):
    """With equal constant zero points the pair computes clamp(round(x / s), lo - z, hi - z) * s2
    (no integer stage); otherwise the integers.  Ties, saturation both ways, a fused ReLU's clamp."""
    x = te.placeholder((4, 9), "float32", name="x")
    q = qnn.quantize(x, _scalar(0.25, "float32"), _scalar(zq, dtype), dtype=dtype)
    d = qnn.dequantize(q, _scalar(0.5, "float32"), _scalar(zd, dtype))
    sch = generic.schedule_injective(d)
    assert ("quantize" in [st.op.name for st in sch.stages]) == (zq != zd)
    xs = (np.array([0.5, 1.5, 2.5, -0.5, -1.5, 1000.0, -1000.0, 1e30, -3.3], "float32") * np.float32(0.25))
    xs = np.stack([xs, -xs, xs + np.float32(0.01), RNG.standard_normal(9).astype("float32") * 40])

    def want(a):
        qq = ref.quantize_python(a, np.float32(0.25), np.array(zq, dtype), 1, dtype)
        return ref.dequantize_python(qq, np.float32(0.5), np.array(zd, dtype))

    check_build(sch, [x, d], want, inputs=[xs], rtol=0, atol=0)


@pytest.mark.parametrize("groups,stride,pad", [(1, 1, (1, 1, 1, 1)), (3, 2, (0, 1, 2, 1))])
def test_qnn_conv2d_matches_the_integer_reference(groups, stride, pad):
    x = te.placeholder((1, 6, 9, 7), "uint8", name="x")
    w = te.placeholder((9, 6 // groups, 3, 3), "int8", name="w")
    xz = te.placeholder((), "uint8", name="xz")
    wz = te.placeholder((9,), "int8", name="wz")
    y = qnn.qnn_conv2d(x, w, xz, wz, (stride, stride), pad, (1, 1), groups)
    inputs = [RNG.integers(0, 256, (1, 6, 9, 7)).astype("uint8"), RNG.integers(-128, 128, (9, 6 // groups, 3, 3)).astype("int8"),
              np.array(131, "uint8"), RNG.integers(-3, 4, 9).astype("int8")]
    s = te.create_schedule(y.op)
    check_build(s, [x, w, xz, wz, y], lambda *a: ref.qnn_conv2d_python(*a, (stride, stride), pad, (1, 1), groups),
                inputs=inputs, rtol=0, atol=0)


def test_qnn_dense_matches_the_integer_reference():
    x = te.placeholder((7, 13), "int8", name="x")
    w = te.placeholder((5, 13), "uint8", name="w")
    xz = te.placeholder((7,), "int8", name="xz")
    wz = te.placeholder((5,), "uint8", name="wz")
    y = qnn.qnn_dense(x, w, xz, wz)
    s = te.create_schedule(y.op)
    check_build(s, [x, w, xz, wz, y], ref.qnn_dense_python, rtol=0, atol=0,
                inputs=[RNG.integers(-128, 128, (7, 13)).astype("int8"), RNG.integers(0, 256, (5, 13)).astype("uint8"),
                        RNG.integers(-128, 128, 7).astype("int8"), RNG.integers(0, 256, 5).astype("uint8")])


@pytest.mark.parametrize("m,n,k", [(7, 13, 19), (1, 33, 64), (30, 5, 3)])
def test_x86_qnn_dense_with_fused_requantize(m, n, k):
    from topi.x86.qnn import schedule_qnn_dense

    x = te.placeholder((m, k), "uint8", name="x")
    w = te.placeholder((n, k), "int8", name="w")
    xz = te.placeholder((), "uint8", name="xz")
    wz = te.placeholder((n,), "int8", name="wz")
    mult = te.placeholder((n,), "float32", name="mult")
    yz = te.placeholder((), "int8", name="yz")
    y = qnn.requantize(qnn.qnn_dense(x, w, xz, wz), mult, yz, axis=1, dtype="int8")
    inputs = [RNG.integers(0, 256, (m, k)).astype("uint8"), RNG.integers(-128, 128, (n, k)).astype("int8"),
              np.array(121, "uint8"), RNG.integers(-2, 3, n).astype("int8"),
              RNG.uniform(1e-4, 1e-3, n).astype("float32"), np.array(-3, "int8")]
    check_build(schedule_qnn_dense(y), [x, w, xz, wz, mult, yz, y],
                lambda a, b, c, d, e, f: ref.requantize_python(ref.qnn_dense_python(a, b, c, d), e, f, 1, "int8"),
                inputs=inputs, rtol=0, atol=0)


# ------------------------------------------------------------ converters ---
def model_of(nodes, feeds: dict, outputs, inits=None, opset: int = 21) -> onnx.ModelProto:
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in feeds.items()]
    outs = [helper.make_empty_tensor_value_info(name) for name in outputs]
    init = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    return helper.make_model(helper.make_graph(nodes, "issue50", inputs, outs, init),
                             opset_imports=[helper.make_opsetid("", opset)])


def run(model, feeds: dict) -> list:
    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    m.run(**feeds)
    return [m.get_output(k) for k in range(len(model.graph.output))]


def reference(model, feeds: dict) -> list:
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)


def test_qdq_per_axis_int16_and_output_dtype_against_onnx_reference():
    x = (RNG.standard_normal((2, 5, 3)) * 40).astype("float32")
    inits = {"s": RNG.uniform(0.01, 0.2, 5).astype("float32"), "z": RNG.integers(-50, 50, 5).astype("int16"),
             "s1": np.array([0.07], "float32")}
    model = model_of([N("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
                      N("DequantizeLinear", ["q", "s", "z"], ["d"], axis=-2),
                      N("QuantizeLinear", ["x", "s1"], ["u"], axis=7)],  # axis ignored for per-tensor
                     {"x": x}, ["q", "d", "u"], inits)
    for got, want in zip(run(model, {"x": x}), reference(model, {"x": x})):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def _qparams(node, **inits):
    return model_of([node], {"x": np.zeros((2, 3), "float32")}, ["y"], inits)


@pytest.mark.parametrize("inits,match", [
    ({"s": np.array(0.0, "float32")}, "y_scale holds \\[0.0\\]"),
    ({"s": np.array([np.inf], "float32")}, "finite and non-zero"),
    ({"s": np.array(0.1, "float32"), "z": np.array(300, "int32")}, "quantizing to int32 is not supported"),
    ({"s": np.array([0.1, 0.2], "float32")}, "y_scale has shape \\(2,\\)"),
])
def test_bad_quantization_parameters_are_refused_naming_the_node(inits, match):
    node = N("QuantizeLinear", ["x", *inits], ["y"], name="quant7", axis=1)
    with pytest.raises(ValueError, match=match) as e:
        graph.from_onnx(_qparams(node, **inits))
    assert "quant7" in str(e.value)


def test_bad_zero_point_and_axis_are_refused_naming_the_node():
    q = np.zeros((2, 3), "int8")
    model = model_of([N("DequantizeLinear", ["q", "s", "z"], ["y"], name="deq3", axis=5)], {"q": q}, ["y"],
                     {"s": np.full(3, 0.1, "float32"), "z": np.zeros(3, "int8")})
    with pytest.raises(ValueError, match="deq3.*axis=5 is not supported"):
        graph.from_onnx(model)
    model = model_of([N("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"], name="qmm")],
                     {"a": q}, ["y"], {"sa": np.float32(0.1), "za": np.int8(0), "b": np.zeros((3, 4), "int8"),
                                       "sb": np.float32(0.0), "zb": np.int8(0), "sy": np.float32(0.1), "zy": np.int8(0)})
    with pytest.raises(ValueError, match="qmm.*b_scale holds \\[0.0\\]"):
        graph.from_onnx(model)


# ----------------------------------------------------- against onnxruntime ---
def _float_convnet() -> onnx.ModelProto:
    """conv -> relu -> conv (+ residual) -> relu -> global pool -> gemm: the shapes of a ResNet block."""
    w1 = (RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype("float32")
    w2 = (RNG.standard_normal((8, 8, 3, 3)) * 0.2).astype("float32")
    fc = (RNG.standard_normal((5, 8)) * 0.3).astype("float32")
    inits = {"w1": w1, "b1": RNG.standard_normal(8).astype("float32") * 0.1, "w2": w2,
             "b2": RNG.standard_normal(8).astype("float32") * 0.1, "fc": fc, "fb": np.zeros(5, "float32")}
    nodes = [N("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]), N("Relu", ["c1"], ["r1"]),
             N("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]), N("Add", ["c2", "r1"], ["a"]),
             N("Relu", ["a"], ["r2"]), N("GlobalAveragePool", ["r2"], ["p"]), N("Flatten", ["p"], ["f"]),
             N("Gemm", ["f", "fc", "fb"], ["y"], transB=1)]
    return model_of(nodes, {"x": np.zeros((1, 3, 11, 9), "float32")}, ["y"], inits, opset=13)


def _quantized(tmp_path, fmt: str, per_channel: bool, reduce_range: bool, fused: bool = True) -> tuple:
    """The float convnet quantized by onnxruntime (uint8 activations, int8 weights: 7-bit with
    ``reduce_range``) and an onnxruntime session on it (with its int8 fusions, or none)."""
    ort = pytest.importorskip("onnxruntime")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": RNG.standard_normal((1, 3, 11, 9)).astype("float32")} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(_float_convnet(), src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(str(src), str(dst), Reader(), quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, reduce_range=reduce_range)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    if not fused:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnx.load(dst), ort.InferenceSession(str(dst), opts, providers=["CPUExecutionProvider"])


# (format, per channel, 7-bit weights, onnxruntime's int8 fusions, the bound in output steps).
# With 8-bit weights onnxruntime's fused AVX2 kernels (vpmaddubsw: u8 x s8 pairs summed into a
# saturating int16) drift from ONNX's arithmetic by tens of steps on this net, so 8-bit models are
# compared with its unfused session, which computes what the operators define.
ORT_CASES = [("QDQ", True, True, True, 0.0), ("QDQ", False, True, True, 0.0), ("QDQ", True, False, False, 0.0),
             ("QOperator", True, True, True, 1.0)]


@pytest.mark.parametrize("fmt,per_channel,reduce_range,fused,bound", ORT_CASES)
def test_quantized_convnet_matches_onnxruntime_int8(tmp_path, fmt, per_channel, reduce_range, fused, bound):
    model, sess = _quantized(tmp_path, fmt, per_channel, reduce_range, fused)
    ops = {n.op_type for n in model.graph.node}
    assert ("QLinearConv" in ops) == (fmt == "QOperator") and ("DequantizeLinear" in ops)
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    m = lib.create_executor()
    groups = [[n.op for n in (node.attrs["body"].nodes if node.attrs.get("body") else [node])] for node in lib.graph.nodes]
    convs = [ops for ops in groups if ops[0].startswith("conv2d")]
    # on an AVX2 target each DequantizeLinear -> Conv -> QuantizeLinear (QDQ) or QLinearConv
    # (QOperator) is one int8 kernel, or (per tensor, the 3-channel conv: an int8 kernel would pad
    # its channels) one float conv of the same integers, requantized (exact)
    if Target.current().has("avx2"):
        assert len(convs) == 2 and convs[1][0] == "conv2d_int8", groups
        assert convs[0][0] == "conv2d_int8" or "requantize" in convs[0], groups
    # the output's quantization step: the DequantizeLinear that ends the graph
    last = [n for n in model.graph.node if n.op_type == "DequantizeLinear"][-1]
    step = float(numpy_helper.to_array([i for i in model.graph.initializer if i.name == last.input[1]][0]))
    worst = 0.0
    for _ in range(3):
        x = RNG.standard_normal((1, 3, 11, 9)).astype("float32")
        m.run(x=x)
        got, want = m.get_output(0), sess.run(None, {"x": x})[0]
        assert got.shape == want.shape and got.dtype == want.dtype
        worst = max(worst, float(np.abs(got - want).max()) / step)
    # QDQ: exactly onnxruntime's results.  QOperator: the integer convs are onnxruntime's, the
    # com.microsoft add and pool run dequantized in float32 and may round one step apart.
    assert worst <= bound + 1e-3, worst


# ResNet-50's first residual add whose rounding differs (layer1.1's, benchmarks/quantized.py):
# a = conv3's output (scale, zero point), b = the block's input, y = the sum's quantization.
RESIDUAL_ADD = {"as": np.float32(0.028345162), "az": np.uint8(120), "bs": np.float32(0.012152244),
                "bz": np.uint8(0), "ys": np.float32(0.017073875), "yz": np.uint8(0)}


def mlas_qlinear_add(a, sa, za, b, sb, zb, sc, zc):
    """onnxruntime's QLinearAdd on AVX2 (MLAS ``MlasQLinearAddKernelAvx2Helper``), in numpy: the
    scale ratios ``sa / sc`` and ``sb / sc`` in float32, a float32 constant ``zc - (ra * za + rb * zb)``,
    two fused multiply-adds ``fma(a, ra, fma(b, rb, fixed))`` (each rounded once: computed in
    float64, exact for these operands, then rounded to float32), round half to even, saturate.
    ONNX's ``QuantizeLinear(DequantizeLinear(a) + DequantizeLinear(b))`` instead rounds
    ``sa * (a - za) + sb * (b - zb)`` to float32 and divides by ``sc``."""
    f32 = np.float32
    ra, rb = f32(f32(sa) / f32(sc)), f32(f32(sb) / f32(sc))
    fixed = f32(zc) - f32(f32(ra * f32(za)) + f32(rb * f32(zb)))
    t = (np.asarray(b, "float64") * np.float64(rb) + np.float64(fixed)).astype(f32)
    u = (np.asarray(a, "float64") * np.float64(ra) + t.astype("float64")).astype(f32)
    return ref.saturate(np.rint(u), "uint8")


def test_qdq_add_rounds_as_onnx_where_onnxruntimes_qlinear_add_does_not():
    """Every pair of uint8 inputs through ``DequantizeLinear -> Add -> QuantizeLinear`` with the
    quantization of ResNet-50's layer1.1 residual add: Tessera computes ONNX's arithmetic exactly,
    onnxruntime fuses the three into QLinearAdd, whose AVX2 kernel (:func:`mlas_qlinear_add`)
    rounds one of the 65536 sums (a = 91, b = 140: 51.4999959 exactly) up to 52, ONNX's and the
    exact rounding 51.  That one value, amplified by the layers after it, is the whole
    difference between Tessera's and onnxruntime's int8 ResNet-50 (benchmarks/quantized.py)."""
    q = RESIDUAL_ADD
    a, b = (v.astype("uint8") for v in np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
    nodes = [N("DequantizeLinear", ["a", "as", "az"], ["ad"]),
             N("DequantizeLinear", ["b", "bs", "bz"], ["bd"]),
             N("Add", ["ad", "bd"], ["s"]), N("QuantizeLinear", ["s", "ys", "yz"], ["y"])]
    model = model_of(nodes, {"a": a, "b": b}, ["y"], q)
    got = run(model, {"a": a, "b": b})[0]
    summed = ref.dequantize_python(a, q["as"], q["az"]) + ref.dequantize_python(b, q["bs"], q["bz"])
    onnx_says = ref.quantize_python(summed, q["ys"], q["yz"])
    np.testing.assert_array_equal(got, onnx_says)
    np.testing.assert_array_equal(got, reference(model, {"a": a, "b": b})[0])
    mlas = mlas_qlinear_add(a, q["as"], q["az"], b, q["bs"], q["bz"], q["ys"], q["yz"])
    assert np.argwhere(mlas != onnx_says).tolist() == [[91, 140]]
    assert (onnx_says[91, 140], mlas[91, 140]) == (51, 52)
    ort = pytest.importorskip("onnxruntime")
    if not (Target.current().has("avx2") and Target.current().has("fma")):
        pytest.skip("onnxruntime's QLinearAdd kernel modelled here is its AVX2 one")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": b})[0], mlas)
