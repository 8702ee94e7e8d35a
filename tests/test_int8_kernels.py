"""int8 kernels on the integer dot-product instructions (topi.x86.int8_dot, topi.x86.conv2d_int8)
and the graph passes that lower to them (graph.passes.lower_int8), against numpy references.

Shapes do not divide the blocks (output channels, columns, input channels), and the
instructions are checked in the assembly: ``vpdpbusd`` is compiled (not run) for a VNNI target
whatever the host, since the target's feature string decides.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import codegen
import graph
from graph.interpreter import interpret
import te
from codegen.target import Target
from topi.utils import get_const_tuple as get_shape
from topi.nn import qnn
from topi.testing.qnn import dequantize_python, qnn_conv2d_python, requantize_python
from topi.x86.conv2d_int8 import group as conv_group
from topi.x86.conv2d_int8 import (blocks, conv2d_int8, float_is_faster, pack_kernel, pack_winograd_kernel,
                                  schedule_conv2d_int8, unpack_kernel, winograd_exact, winograd_kernel, winograd_rows)
from topi.x86.int8_dot import (choose_mode, dot_intrin, pairs_fit_int16, products_per_cycle, reduce_block,
                               vector_lanes)

RNG = np.random.default_rng(50)
HOST = Target("llvm")
needs_avx2 = pytest.mark.skipif(not HOST.has("avx2"), reason="the host cannot run AVX2 code")
AVX2 = "llvm -mcpu=znver3 -mattr=-avxvnni,-avx512vnni"
AVX_VNNI = "llvm -mcpu=znver3 -mattr=+avxvnni"
AVX512_VNNI = "llvm -mcpu=skylake-avx512 -mattr=+avx512vnni"


def _dense(mode: str, target: Target, m: int, k: int, n: int, lanes: int):
    """``C[m, n] = A[m, :] . W[n, :]`` with W packed ``[n/lanes, k/kb, lanes, kb]``, tensorized."""
    kb = reduce_block(mode)
    adt, bdt = ("int16", "int16") if mode == "i16" else ("uint8", "int8")
    a = te.placeholder((m, k), adt, name="a")
    w = te.placeholder((n // lanes, k // kb, lanes, kb), bdt, name="w")
    ko, ki = te.reduce_axis((0, k // kb), name="ko"), te.reduce_axis((0, kb), name="ki")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, ko * kb + ki].astype("int32")
                                               * w[j // lanes, ko, j % lanes, ki].astype("int32"), axis=[ko, ki]),
                   name="c")
    s = te.create_schedule(c.op)
    i, j = s[c].op.axis
    jo, ji = s[c].split(j, factor=lanes)
    s[c].reorder(jo, i, ko, ji, ki)
    s[c].tensorize(ji, dot_intrin(mode, lanes, target))
    return codegen.build(s, [a, w, c], target=target)


@needs_avx2
@pytest.mark.parametrize("mode,lanes", [("u8s8", 8), ("u8s8", 16), ("i16", 8)])
def test_dot_intrinsic_matches_numpy(mode, lanes):
    m, k, n = 7, 4 * reduce_block(mode) * 3, 2 * lanes
    f = _dense(mode, HOST, m, k, n, lanes)
    kb = reduce_block(mode)
    if mode == "i16":
        a = RNG.integers(-255, 256, (m, k)).astype("int16")
        w = RNG.integers(-255, 256, (n, k)).astype("int16")
    else:  # u8s8: 7-bit weights, so no pair saturates vpmaddubsw's int16
        a = RNG.integers(0, 256, (m, k)).astype("uint8")
        w = RNG.integers(-64, 65, (n, k)).astype("int8")
        a[0], w[0, :2] = 255, 64  # the extremes that still fit
    wp = np.ascontiguousarray(w.reshape(n // lanes, lanes, k // kb, kb).transpose(0, 2, 1, 3))
    c = np.zeros((m, n), "int32")
    f(a, wp, c)
    np.testing.assert_array_equal(c, a.astype("int64") @ w.astype("int64").T)


@pytest.mark.parametrize("spec,mode,lanes,instructions", [
    (AVX2, "u8s8", 8, ("vpmaddubsw", "vpmaddwd")),
    (AVX2, "i16", 8, ("vpmaddwd",)),
    (AVX_VNNI, "vnni", 8, ("vpdpbusd",)),
    (AVX512_VNNI, "vnni", 16, ("vpdpbusd", "zmm")),
])
def test_dot_intrinsic_emits_the_targets_instruction(spec, mode, lanes, instructions):
    target = Target(spec)
    assert vector_lanes(mode, target) == lanes
    asm = _dense(mode, target, 3, 8, lanes, lanes).get_source("asm")  # compiled, not run
    for name in instructions:
        assert name in asm, f"{name} missing for {spec}"
    if mode != "vnni":
        assert "vpdpbusd" not in asm


def test_mode_follows_the_target_features_and_the_weights():
    w7 = RNG.integers(-64, 65, (4, 6, 3, 3))
    w8 = w7.copy()
    w8[1, 2, 0, 0], w8[1, 3, 0, 0] = -128, 1  # one pair of 129: vpmaddubsw could saturate
    assert pairs_fit_int16(w7, 1) and not pairs_fit_int16(w8, 1)
    assert not pairs_fit_int16(np.full((1, 3), 100), 1)  # an odd extent's last element pairs with 0
    assert pairs_fit_int16(np.array([[100, 28, 120]]), 1)
    assert choose_mode(Target(AVX2), True, True) == "u8s8"
    assert choose_mode(Target(AVX2), True, False) == "i16"
    assert choose_mode(Target(AVX2), False, False) == "i16"  # centered uint8 weights beyond int8
    assert choose_mode(Target(AVX_VNNI), True, False) == "vnni"
    assert choose_mode(Target(AVX_VNNI), False, False) == "i16"
    assert choose_mode(Target("llvm -mcpu=x86-64-v2"), True, True) is None  # no AVX2: stay float
    with pytest.raises(ValueError, match="not whole vectors"):
        dot_intrin("u8s8", 12, Target(AVX2))


def _conv_case(mode, n, ic, h, w, oc, k, stride, pad, dtype="uint8", relu=True, in_block=0, out_block=False,
               dequantize=None, group=1):
    """(got, want) of one conv2d_int8 against numpy; ``in_block``: the data NCHW[in_block]c,
    ``out_block``: the output NCHW[oc_bn]c (both compared in NCHW); ``dequantize``: a scale, the
    output dequantized in the same kernel (with the output's zero point, as a constant);
    ``group``: words per vpmaddwd (u8s8: the weights then small enough)."""
    target = HOST
    x = RNG.integers(0, 256, (n, ic, h, w)).astype("uint8")
    lo_w = -64 // group if mode == "u8s8" else -128
    wt = RNG.integers(lo_w, -lo_w + (0 if mode != "u8s8" else 1), (oc, ic, k, k)).astype("int64")
    zx, zy = 5, (3 if dtype == "uint8" else -2)
    bias = RNG.integers(-3000, 3000, oc).astype("int64")
    mult = (RNG.uniform(0.5, 2.0, oc) / (ic * k * k * 40)).astype("float32")
    ic_bn, oc_bn, ow_bn = blocks(oc, ic, mode, target)
    assert group == 1 or conv_group(wt, mode, ic_bn) >= group
    packed = pack_kernel(wt, mode, ic_bn, oc_bn, group)
    np.testing.assert_array_equal(unpack_kernel(packed, ic, oc), wt)
    ocp = packed.shape[0] * oc_bn
    offset = np.zeros(ocp, "int32")
    center = 128 if group > 1 else 0
    offset[:oc] = bias - (0 if mode == "i16" else (zx - center) * wt.reshape(oc, -1).sum(1))
    mp = np.zeros(ocp, "float32")
    mp[:oc] = mult
    xb = x.reshape(n, ic // in_block, in_block, h, w).transpose(0, 1, 3, 4, 2).copy() if in_block else x
    args = [te.placeholder(xb.shape, "uint8", name="x"), te.placeholder(packed.shape, str(packed.dtype), name="k"),
            te.placeholder((ocp,), "int32", name="off"), te.placeholder((ocp,), "float32", name="mul")]
    out = conv2d_int8(*args, oc, (stride, stride), (pad,) * 4, (1, 1), zx, zy, mode, dtype,
                      lo=zy if relu else None, ow_bn=ow_bn, out_block=oc_bn if out_block else 0)
    if dequantize is not None:
        const = lambda v, dt: te.compute((), lambda: te.const(v, dt), name="c")  # noqa: E731
        out = qnn.dequantize(out, const(dequantize, "float32"), const(zy, dtype))
    sch = schedule_conv2d_int8(out, target)
    if dequantize is not None:  # read as floats from the rounding: no integer stage
        assert "requantize" not in [st.op.name for st in sch.stages]
    f = codegen.build(sch, args + [out], target=target)
    got = np.zeros(tuple(int(d) for d in out.shape), out.dtype)
    f(xb, packed, offset, mp, got)
    if out_block:
        got = got.transpose(0, 1, 4, 2, 3).reshape(n, oc, *got.shape[2:4])
    acc = qnn_conv2d_python(x, wt, np.int64(zx), np.int64(0), (stride, stride), (pad,) * 4).astype("int64")
    want = requantize_python(acc + bias.reshape(-1, 1, 1), mult, np.int64(zy), 1, dtype)
    if relu:
        want = np.maximum(want, zy).astype(dtype)
    if dequantize is not None:
        want = dequantize_python(want, np.float32(dequantize), np.array(zy, dtype))
    return got, want


@needs_avx2
@pytest.mark.parametrize("mode", ["u8s8", "i16"])
@pytest.mark.parametrize("shape", [
    (1, 13, 9, 11, 20, 3, 1, 1),   # channels and columns that divide no block, 3x3 padded
    (2, 6, 10, 9, 9, 3, 2, 1),     # batch 2, stride 2
    (1, 12, 10, 9, 17, 1, 2, 0),   # strided 1x1: only the points it reads are packed
    (1, 3, 15, 15, 8, 7, 2, 3),    # the ResNet stem: 3 input channels
    (1, 13, 9, 11, 32, 3, 1, 1),   # two channel vectors per tile, 11 columns by 4
])
def test_conv2d_int8_matches_the_integer_reference(mode, shape):
    got, want = _conv_case(mode, *shape)
    np.testing.assert_array_equal(got, want)


@needs_avx2
@pytest.mark.parametrize("mode", ["u8s8", "i16"])
@pytest.mark.parametrize("shape,in_block", [
    ((1, 16, 9, 11, 24, 3, 1, 1), 8),    # blocked in and out, 3x3 padded: columns divide no tile
    ((1, 24, 7, 13, 16, 1, 1, 0), 8),    # 1x1 read in place (the input's block is the kernel's ic_bn)
    ((2, 16, 10, 9, 8, 1, 2, 0), 8),     # strided 1x1 from a blocked input
    ((1, 32, 6, 5, 16, 3, 2, 1), 16),    # an input block of two vectors, 3x3 strided
    ((1, 32, 5, 7, 32, 1, 1, 0), 16),    # 1x1 read in place, two vectors in and out
    ((1, 3, 15, 15, 8, 7, 2, 3), 0),     # the stem: NCHW in, blocked out
])
def test_conv2d_int8_blocked_layouts_match_the_integer_reference(mode, shape, in_block):
    got, want = _conv_case(mode, *shape, in_block=in_block, out_block=True)
    np.testing.assert_array_equal(got, want)


@needs_avx2
@pytest.mark.parametrize("group,shape,in_block,out_block", [
    (2, (1, 13, 9, 11, 20, 3, 1, 1), 0, False),   # channels and columns that divide no block, 3x3 padded
    (4, (1, 13, 9, 11, 20, 3, 1, 1), 0, False),
    (2, (2, 6, 10, 9, 9, 3, 2, 1), 0, False),     # batch 2, stride 2, 6 channels padded to a block of 8
    (2, (1, 16, 10, 9, 17, 1, 2, 0), 0, False),   # strided 1x1: only the points it reads are packed
    (2, (1, 16, 9, 11, 24, 3, 1, 1), 8, True),    # blocked in and out, padded
    (4, (1, 16, 9, 11, 24, 3, 1, 1), 8, True),
    (2, (1, 32, 5, 7, 32, 1, 1, 0), 16, True),    # 1x1 read in place, two vectors in and out
    (4, (1, 32, 5, 7, 32, 1, 1, 0), 16, True),
])
def test_grouped_conv2d_int8_matches_the_integer_reference(group, shape, in_block, out_block):
    """Groups of words along the input channels (data centered, the zero-point padding in the
    offset): exact."""
    got, want = _conv_case("u8s8", *shape, in_block=in_block, out_block=out_block, group=group)
    np.testing.assert_array_equal(got, want)


def test_conv_group_needs_whole_groups_in_the_channel_block():
    w = np.ones((8, 24, 3, 3), "int64")  # lanes of 8 ones: every group fits
    assert [conv_group(w, "u8s8", ic_bn) for ic_bn in (16, 8, 4)] == [4, 2, 1]
    assert conv_group(np.full((8, 16, 1, 1), 64), "u8s8", 16) == 1  # 4 x 64 > 255
    assert conv_group(w, "i16", 16) == 1


def _winograd_case(n, ic, h, w, oc, pad, in_block=0, out_block=False, extreme=False):
    """(got, want) of a conv2d_int8 on a Winograd kernel against the integer reference."""
    x = RNG.integers(0, 256, (n, ic, h, w)).astype("uint8")
    wt = RNG.integers(-255, 256, (oc, ic, 3, 3)).astype("int64")
    zx, zy = 7, 3
    if extreme:  # the largest |Y| of these channels: every product 255 * 255 with one sign
        x[:], wt[:], zx = 255, -255, 0
    assert winograd_exact(wt)
    packed = pack_winograd_kernel(wt, 8)
    np.testing.assert_array_equal(unpack_kernel(packed, ic, oc), wt)
    ocp = packed.shape[2] * 8
    bias = np.zeros(ocp, "int64")
    bias[:oc] = RNG.integers(-3000, 3000, oc)
    mult = np.zeros(ocp, "float32")
    mult[:oc] = RNG.uniform(0.5, 2.0, oc) * 60 / (np.sqrt(ic * 9) * 255 * 147)
    if extreme:
        mult[:oc] = 100 / (9 * ic * 255 * 255)
    xb = x.reshape(n, ic // in_block, in_block, h, w).transpose(0, 1, 3, 4, 2).copy() if in_block else x
    args = [te.placeholder(xb.shape, "uint8", name="x"), te.placeholder(packed.shape, "int16", name="k"),
            te.placeholder((ocp,), "int32", name="off"), te.placeholder((ocp,), "float32", name="mul")]
    out = conv2d_int8(*args, oc, (1, 1), pad, (1, 1), zx, zy, "i16", "int8", ow_bn=8, out_block=8 if out_block else 0)
    f = codegen.build(schedule_conv2d_int8(out, HOST), args + [out], target=HOST)
    got = np.zeros(get_shape(out.shape), "int8")
    f(xb, packed, bias.astype("int32"), mult, got)
    if out_block:
        got = got.transpose(0, 1, 4, 2, 3).reshape(n, oc, *got.shape[2:4])
    acc = qnn_conv2d_python(x, wt, np.int64(zx), np.int64(0), (1, 1), pad).astype("int64")
    return got, requantize_python(acc + bias[:oc].reshape(-1, 1, 1), mult[:oc], np.int64(zy), 1, "int8")


@needs_avx2
@pytest.mark.parametrize("shape,in_block,out_block", [
    ((1, 13, 7, 9, 11, (1, 1, 1, 1)), 0, False),   # odd sizes: tiles past the edge; channels divide no block
    ((2, 6, 6, 5, 9, (0, 0, 0, 0)), 0, False),     # batch 2, no padding
    ((1, 16, 9, 11, 16, (1, 0, 2, 1)), 8, True),    # blocked in and out, asymmetric padding
    ((1, 32, 5, 5, 8, (1, 1, 1, 1)), 16, True),     # an input block of 16
    ((1, 8, 55, 56, 8, (1, 1, 1, 1)), 8, True),     # fused blocks of one tile row (28 tiles, mr 7)
    ((1, 16, 47, 45, 16, (1, 1, 1, 1)), 8, True),   # fused blocks of 46 tiles: mr 8 divides no block
])
def test_conv2d_int8_winograd_matches_the_integer_reference(shape, in_block, out_block):
    oh, ow = (shape[2] + shape[5][0] + shape[5][2] - 2, shape[3] + shape[5][1] + shape[5][3] - 2)
    assert winograd_rows(oh, ow, out_block)[0] == (1 if shape[2] == 55 else 2 if shape[2] == 47 else 0)
    got, want = _winograd_case(*shape, in_block=in_block, out_block=out_block)
    np.testing.assert_array_equal(got, want)
    assert int(want.max()) - int(want.min()) > 60  # the outputs span the range, not a constant


@needs_avx2
def test_conv2d_int8_winograd_is_exact_at_the_extremes():
    """255 x -255 in every product of 64 channels is exact; past the bound (4 * 9 * IC * 255 *
    max|w| >= 2**31) Winograd is refused, and so are a strided conv and a VNNI target."""
    got, want = _winograd_case(1, 64, 6, 6, 8, (1, 1, 1, 1), extreme=True)
    np.testing.assert_array_equal(got, want)
    assert not winograd_exact(np.full((8, 1024, 3, 3), 255))
    assert winograd_kernel(np.full((8, 64, 3, 3), 255), (2, 2), (1, 1), "i16", 8) is None  # stride 2: direct
    assert winograd_kernel(np.full((8, 64, 3, 3), 5), (1, 1), (1, 1), "vnni", 8) is None  # VNNI: direct


@needs_avx2
@pytest.mark.parametrize("dtype,relu,out_block", [("uint8", True, True), ("int8", False, False)])
def test_conv2d_int8_dequantized_in_the_same_kernel(dtype, relu, out_block):
    got, want = _conv_case("i16", 1, 8, 7, 6, 16, 3, 1, 1, dtype=dtype, relu=relu, out_block=out_block,
                           dequantize=0.37)
    np.testing.assert_array_equal(got, want)


@needs_avx2
def test_conv2d_int8_int8_output_without_relu():
    got, want = _conv_case("u8s8", 1, 8, 7, 6, 11, 3, 1, 1, dtype="int8", relu=False)
    np.testing.assert_array_equal(got, want)
    assert got.min() < 0


# ------------------------------------------------------- the graph pass ---
def _qdq_conv_model(w_q: np.ndarray, w_scale: np.ndarray, bias_q: np.ndarray | None, relu: bool,
                    x_shape=(1, 5, 9, 7), pads=(1, 1, 1, 1), strides=(1, 1)) -> onnx.ModelProto:
    """x -> Q -> DQ -> Conv(DQ(w_q), DQ(bias_q)) [-> Relu] -> Q -> DQ: onnxruntime's QDQ form."""
    x_scale, x_zp, y_scale, y_zp = np.float32(0.02), np.uint8(120), np.float32(0.05), np.uint8(100)
    inits = [numpy_helper.from_array(np.asarray(v), name) for name, v in [
        ("xs", x_scale), ("xz", x_zp), ("ys", y_scale), ("yz", y_zp), ("wq", w_q),
        ("ws", w_scale.astype("float32")), ("wz", np.zeros(w_scale.shape, "int8"))]]
    conv_in = ["xdq", "w"]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xdq"]),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0)]
    if bias_q is not None:
        bs = (x_scale * w_scale.astype("float32")).astype("float32")
        inits += [numpy_helper.from_array(bias_q.astype("int32"), "bq"), numpy_helper.from_array(bs, "bs"),
                  numpy_helper.from_array(np.zeros(bs.shape, "int32"), "bz")]
        nodes.append(helper.make_node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0))
        conv_in.append("b")
    nodes.append(helper.make_node("Conv", conv_in, ["c"], pads=list(pads), strides=list(strides)))
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes += [helper.make_node("QuantizeLinear", [last, "ys", "yz"], ["yq"]),
              helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    return _float_io_model(nodes, "qdq_conv", x_shape, inits)


def _float_io_model(nodes: list, name: str, x_shape: tuple, inits: list):
    """An opset-19 model of ``nodes`` from float input ``x`` (``x_shape``) to float output ``y``."""
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])


def _kernels(lib, prefix: str) -> list:
    """The nodes of the built graph (inside fused bodies too) whose op starts with ``prefix``."""
    return [k for k in lib.kernel_nodes() if k.op.startswith(prefix)]


def _conv_kernels(lib) -> list:
    return _kernels(lib, "conv2d")


def _assert_onnxruntime_int8(model, x, got):
    """``got`` equals onnxruntime's int8 session on ``x``, whose output is not mostly zero."""
    ort = pytest.importorskip("onnxruntime")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    assert np.count_nonzero(want) > want.size // 4


def _run(model, x):
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    m = lib.create_executor()
    m.run(x=x)
    return lib, m.get_output(0)


@needs_avx2
@pytest.mark.parametrize("per_channel,ic", [(True, 20), (False, 12)])  # channels the blocks do not pad
def test_qdq_conv_becomes_one_int8_kernel_matching_onnxruntime(per_channel, ic):
    ort = pytest.importorskip("onnxruntime")
    oc = 11
    w_q = RNG.integers(-64, 64, (oc, ic, 3, 3)).astype("int8")  # 7-bit: onnxruntime's AVX2 kernel is exact
    w_scale = RNG.uniform(0.005, 0.02, oc if per_channel else ()).astype("float32")
    bias_q = RNG.integers(-500, 500, oc)
    model = _qdq_conv_model(w_q, w_scale, bias_q, relu=True, x_shape=(1, ic, 9, 7))
    x = RNG.standard_normal((1, ic, 9, 7)).astype("float32") * 1.5
    lib, got = _run(model, x)
    kernels = _conv_kernels(lib)
    assert [k.op for k in kernels] == ["conv2d_int8"] and kernels[0].attrs["mode"] in ("u8s8", "vnni")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


def test_float_is_faster_where_the_int8_blocks_pad_the_channels():
    avx2, vnni = Target(AVX2), Target(AVX_VNNI)
    assert products_per_cycle(None, avx2) == products_per_cycle("i16", avx2) == products_per_cycle("u8s8", avx2) == 16
    assert float_is_faster(3, 7, 7, "i16", avx2) and float_is_faster(5, 3, 3, "u8s8", avx2)
    assert not float_is_faster(64, 1, 1, "i16", avx2) and not float_is_faster(12, 3, 3, "u8s8", avx2)
    assert not float_is_faster(3, 7, 7, "vnni", vnni)  # 4 products a lane: twice the float rate


@needs_avx2
def test_qdq_stem_conv_runs_as_an_exact_float_conv_matching_onnxruntime():
    """A 3-channel 7x7 stride-2 stem, per-tensor: the int8 kernel would pad 3 channels to 4, so it
    runs as the float32 conv of the centered integers (exact: every partial sum is an integer
    below 2**24), requantized as onnxruntime does: the same output as its int8 session."""
    oc, ic = 19, 3
    w_q = RNG.integers(-64, 64, (oc, ic, 7, 7)).astype("int8")
    model = _qdq_conv_model(w_q, np.float32(0.004), RNG.integers(-900, 900, oc), relu=True,
                            x_shape=(1, ic, 23, 21), pads=(3, 3, 3, 3), strides=(2, 2))
    x = RNG.standard_normal((1, ic, 23, 21)).astype("float32") * 1.5
    lib, got = _run(model, x)
    assert [k.op for k in _conv_kernels(lib)] in (["conv2d"], ["conv2d_NCHWc"])  # the float templates
    assert _kernels(lib, "requantize")
    _assert_onnxruntime_int8(model, x, got)


@needs_avx2
def test_qdq_per_channel_stem_conv_runs_as_an_exact_float_conv_requantized_in_blocks():
    """The same with per-channel weight scales (onnxruntime's quantizer's default, ResNet-50's
    stem) and a max pooling after (the stem's), which reads blocks: the float conv writes
    NCHW[b]c and its per-channel requantization runs on the blocks in the conv's kernel, the
    multipliers re-laid out ``(1, C/b, 1, 1, b)``; onnxruntime's output."""
    oc, ic = 32, 3
    w_q = RNG.integers(-64, 64, (oc, ic, 7, 7)).astype("int8")
    model = _qdq_conv_model(w_q, RNG.uniform(0.002, 0.006, oc).astype("float32"), RNG.integers(-900, 900, oc),
                            relu=True, x_shape=(1, ic, 23, 21), pads=(3, 3, 3, 3), strides=(2, 2))
    model.graph.node[-1].output[0] = "yd"
    model.graph.node.append(helper.make_node("MaxPool", ["yd"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                                             pads=[1, 1, 1, 1]))
    x = RNG.standard_normal((1, ic, 23, 21)).astype("float32") * 1.5
    lib, got = _run(model, x)
    assert [k.op for k in _conv_kernels(lib)] == ["conv2d_NCHWc"]
    rq = [k for n in lib.graph.nodes if n.op == "fused" for k in n.attrs["body"].nodes if k.op == "requantize"]
    assert [len(k.inputs[0].shape) for k in rq] == [5]
    block = rq[0].inputs[0].shape[4]
    assert rq[0].inputs[1].shape == (1, oc // block, 1, 1, block)
    _assert_onnxruntime_int8(model, x, got)
    np.testing.assert_array_equal(got, interpret(lib.graph, {"x": x})[0])


@needs_avx2
def test_qdq_stem_conv_keeps_the_int8_kernel_when_float_could_round():
    """Weights of -128 over 5 x 15 x 15 taps of data centered by up to 135 reach 135 * 128 * 1125
    > 2**24: a float sum could round, so the conv keeps its (exact) int8 kernel."""
    oc, ic = 8, 5
    model = _qdq_conv_model(np.full((oc, ic, 15, 15), -128, "int8"), np.float32(0.001), None, relu=False,
                            x_shape=(1, ic, 16, 16), pads=(7, 7, 7, 7))
    g, params = graph.from_onnx(model)
    lib = graph.build(g, params=params)
    assert [k.op for k in _conv_kernels(lib)] == ["conv2d_int8"]


@needs_avx2
def test_qdq_3x3_conv_of_64_channels_runs_winograd_matching_onnxruntime():
    oc, ic = 24, 64
    w_q = RNG.integers(-64, 64, (oc, ic, 3, 3)).astype("int8")
    model = _qdq_conv_model(w_q, RNG.uniform(0.002, 0.01, oc).astype("float32"), RNG.integers(-500, 500, oc),
                            relu=True, x_shape=(1, ic, 9, 7))
    x = RNG.standard_normal((1, ic, 9, 7)).astype("float32") * 1.5
    lib, got = _run(model, x)
    kernels = _conv_kernels(lib)
    assert [k.op for k in kernels] == ["conv2d_int8"]
    if kernels[0].attrs["mode"] != "vnni":
        assert len(kernels[0].inputs[1].shape) == 6  # the Winograd kernel
    _assert_onnxruntime_int8(model, x, got)


@needs_avx2
def test_qdq_conv_with_8bit_weights_runs_exact_on_int16():
    """Weights whose pairs could saturate vpmaddubsw take the exact int16 path; the result is the
    integer arithmetic of ONNX plus onnxruntime's output stage (its QLinearConv), computed in numpy."""
    oc, ic = 10, 6  # channels that fill int16 pairs (5 would run as an exact float conv)
    w_q = RNG.integers(-128, 128, (oc, ic, 3, 3)).astype("int8")
    w_q[0, 0, 0, 0], w_q[0, 1, 0, 0] = -128, -128
    w_scale = np.full((oc,), 0.004, "float32")
    model = _qdq_conv_model(w_q, w_scale, None, relu=False, strides=(2, 2), x_shape=(1, ic, 9, 7))
    x = RNG.standard_normal((1, ic, 9, 7)).astype("float32")
    lib, got = _run(model, x)
    kernels = _conv_kernels(lib)
    assert [k.op for k in kernels] == ["conv2d_int8"] and kernels[0].attrs["mode"] in ("i16", "vnni")
    xq = np.clip(np.rint(x / np.float32(0.02)) + 120, 0, 255).astype("uint8")
    acc = qnn_conv2d_python(xq, w_q, np.uint8(120), np.int8(0), (2, 2), (1, 1, 1, 1)).astype("int64")
    mult = (np.float32(0.02) * w_scale) / np.float32(0.05)
    yq = requantize_python(acc, mult, np.uint8(100), 1, "uint8")
    np.testing.assert_array_equal(got, (yq.astype("float32") - 100) * np.float32(0.05))


@needs_avx2
def test_qdq_conv_chain_stays_blocked_int8_through_a_max_pool_matching_onnxruntime():
    """conv -> max pool -> conv -> relu in QDQ form: the first conv writes blocked uint8 (NCHW16c), the pool
    runs on those integers (the maximum commutes with dequantizing), the second conv reads them
    in place; the output equals onnxruntime's int8 session's."""
    ort = pytest.importorskip("onnxruntime")
    q = [("xs", np.float32(0.02)), ("xz", np.uint8(120)), ("as", np.float32(0.05)), ("az", np.uint8(100)),
         ("ys", np.float32(0.04)), ("yz", np.uint8(90)), ("w1", RNG.integers(-64, 64, (16, 8, 3, 3)).astype("int8")),
         ("w1s", RNG.uniform(0.005, 0.02, 16).astype("float32")), ("w1z", np.zeros(16, "int8")),
         ("w2", RNG.integers(-64, 64, (24, 16, 1, 1)).astype("int8")),
         ("w2s", RNG.uniform(0.005, 0.02, 24).astype("float32")),  # onnxruntime's 1x1 rounds exact ties up
         ("w2z", np.zeros(24, "int8"))]
    dq = lambda i, s, z, o, **k: helper.make_node("DequantizeLinear", [i, s, z], [o], **k)  # noqa: E731
    qn = lambda i, s, z, o: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [qn("x", "xs", "xz", "xq"), dq("xq", "xs", "xz", "xd"), dq("w1", "w1s", "w1z", "w1d", axis=0),
             dq("w2", "w2s", "w2z", "w2d", axis=0),
             helper.make_node("Conv", ["xd", "w1d"], ["c1"], pads=[1, 1, 1, 1]), qn("c1", "as", "az", "c1q"),
             dq("c1q", "as", "az", "c1d"),
             helper.make_node("MaxPool", ["c1d"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
             qn("p", "as", "az", "pq"), dq("pq", "as", "az", "pd"),
             helper.make_node("Conv", ["pd", "w2d"], ["c2"]), helper.make_node("Relu", ["c2"], ["r"]),
             qn("r", "ys", "yz", "yq"), dq("yq", "ys", "yz", "y")]
    model = _float_io_model(nodes, "qdq_chain", (1, 8, 11, 13), [numpy_helper.from_array(np.asarray(v), k) for k, v in q])
    x = RNG.standard_normal((1, 8, 11, 13)).astype("float32") * 1.5
    lib, got = _run(model, x)
    convs = _kernels(lib, "conv2d_int8")
    assert len(convs) == 2 and convs[0].attrs["out_block"] == convs[0].attrs["oc_bn"] > 0
    pool = _kernels(lib, "pool2d")[0]
    assert pool.inputs[0].dtype == "uint8" and pool.attrs["layout"] == "NCHWc"
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


@needs_avx2
def test_qdq_residual_branches_pass_integers_between_kernels_matching_onnxruntime():
    """Two QDQ convs of one input added (ResNet's downsampling branch): the branch that ends in
    a dequantize hands it to the kernel of the add, so no float32 tensor lies between kernels.
    The output equals the numpy evaluation of the built graph, and is within one output step of
    onnxruntime's int8 session (its fused QLinearAdd rounds on its own)."""
    ort = pytest.importorskip("onnxruntime")
    q = [("xs", np.float32(0.02)), ("xz", np.uint8(120)), ("as", np.float32(0.05)), ("az", np.uint8(100)),
         ("bs", np.float32(0.04)), ("bz", np.uint8(110)), ("ys", np.float32(0.06)), ("yz", np.uint8(0)),
         ("w1", RNG.integers(-64, 64, (16, 8, 1, 1)).astype("int8")), ("w1s", np.float32(0.01)),
         ("w1z", np.int8(0)), ("w2", RNG.integers(-64, 64, (16, 8, 1, 1)).astype("int8")),
         ("w2s", np.float32(0.015)), ("w2z", np.int8(0))]
    dq = lambda i, s, z, o: helper.make_node("DequantizeLinear", [i, s, z], [o])  # noqa: E731
    qn = lambda i, s, z, o: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [qn("x", "xs", "xz", "xq"), dq("xq", "xs", "xz", "xd"), dq("w1", "w1s", "w1z", "w1d"),
             dq("w2", "w2s", "w2z", "w2d"), helper.make_node("Conv", ["xd", "w1d"], ["c1"]),
             helper.make_node("Conv", ["xd", "w2d"], ["c2"]), qn("c1", "as", "az", "c1q"), dq("c1q", "as", "az", "a"),
             qn("c2", "bs", "bz", "c2q"), dq("c2q", "bs", "bz", "b"), helper.make_node("Add", ["a", "b"], ["s"]),
             helper.make_node("Relu", ["s"], ["r"]), qn("r", "ys", "yz", "yq"), dq("yq", "ys", "yz", "y")]
    model = _float_io_model(nodes, "qdq_residual", (1, 8, 5, 11), [numpy_helper.from_array(np.asarray(v), k) for k, v in q])
    x = RNG.standard_normal((1, 8, 5, 11)).astype("float32") * 1.5
    lib, got = _run(model, x)
    assert len(_kernels(lib, "conv2d_int8")) == 2
    outputs = {id(v) for v in lib.graph.outputs}
    between = [v.dtype for n in lib.graph.nodes if n.op == "fused" for v in n.outputs if id(v) not in outputs]
    assert between and "float32" not in between
    np.testing.assert_array_equal(got, interpret(lib.graph, {"x": x})[0])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.abs(got - sess.run(None, {"x": x})[0]).max() <= 0.06 * 1.0001


@needs_avx2
def test_qdq_conv_left_in_float_when_the_bias_is_not_int32_at_the_product_scale():
    oc, ic = 9, 5
    w_q = RNG.integers(-64, 64, (oc, ic, 3, 3)).astype("int8")
    model = _qdq_conv_model(w_q, np.full((oc,), 0.01, "float32"), None, relu=False)
    # a float bias that is no int32 multiple of x_scale * w_scale: no exact integer form
    b = numpy_helper.from_array(np.array([0.0013, -0.2, 0.5, 1e-7, 0, 0, 0, 0, 0.3], "float32"), "fb")
    model.graph.initializer.append(b)
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    conv.input.append("fb")
    x = RNG.standard_normal((1, 5, 9, 7)).astype("float32")
    lib, got = _run(model, x)
    assert "conv2d_int8" not in [k.op for k in _conv_kernels(lib)]
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, atol=0.05 + 1e-6)  # one output step where float rounding differs


def test_pool_schedule_keeps_its_chain_under_an_epilogue_reading_constants():
    """A fused max pool -> dequantize -> quantize whose scale and zero point are constant stages (as
    a graph's fused body makes them) is scheduled as the pooling chain: rows pooled once per
    output row, vectorized (it fell back to the default schedule, 2 ms on ResNet-50's pool)."""
    import tessera
    from topi.nn import qnn
    from topi.nn.pooling import pool2d
    from topi.x86.pooling import schedule_pool

    x = RNG.integers(0, 256, (1, 2, 9, 11, 8)).astype("uint8")
    X = te.placeholder(x.shape, "uint8", name="X")
    scale = te.compute((), lambda: te.const(0.05, "float32"), name="scale", tag="elemwise")
    zp = te.compute((), lambda: te.const(7, "uint8"), name="zp", tag="elemwise")
    P = pool2d(X, (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), "max", False, "NCHWc")
    out = qnn.quantize(qnn.dequantize(P, scale, zp), scale, zp, 1, "uint8")
    with HOST:
        s = schedule_pool(out)
    text = str(tessera.lower(s, [X, out], simple_mode=True))
    assert "produce pool_h" in text and "ramp" in text
    got = np.zeros(get_shape(out.shape), "uint8")
    codegen.build(s, [X, out], target=HOST)(x, got)
    pad = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.stack([pad[:, :, i:i + 9:2, j:j + 11:2] for i in range(3) for j in range(3)]).max(0)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------ int8 dense ---
@needs_avx2
@pytest.mark.parametrize("mode", ["u8s8", "i16"])
@pytest.mark.parametrize("m,k,n", [(7, 20, 40), (9, 21, 33), (1, 6, 16)])
def test_dense_int8_matches_the_integer_reference(mode, m, k, n):
    from topi.x86.dense_int8 import blocks as dense_blocks, dense_int8, pack_weight, schedule_dense_int8, unpack_weight

    x = RNG.integers(0, 256, (m, k)).astype("uint8")
    w = RNG.integers(-64 if mode == "u8s8" else -128, 64, (n, k))
    nb, mr = dense_blocks(mode, HOST)
    packed = pack_weight(w, mode, nb)
    np.testing.assert_array_equal(unpack_weight(packed, k, n), w)
    wsum = np.zeros(packed.shape[0] * nb, "int32")
    wsum[:n] = w.sum(1)
    args = [te.placeholder((m, k), "uint8", name="x"), te.placeholder(packed.shape, str(packed.dtype), name="w"),
            te.placeholder(wsum.shape, "int32", name="wsum"), te.placeholder((), "uint8", name="zx")]
    acc = dense_int8(*args, n, mode, mr)
    out = te.compute(acc.shape, lambda i, j: acc[i, j].astype("float32") * te.const(0.25, "float32"), name="scaled")
    f = codegen.build(schedule_dense_int8(out, HOST), args + [out], target=HOST)
    got = np.zeros((m, n), "float32")
    f(x, packed, wsum, np.array(131, "uint8"), got)
    np.testing.assert_array_equal(got, ((x.astype("int64") - 131) @ w.T).astype("float32") * np.float32(0.25))


def _grouped_dense(x: np.ndarray, w: np.ndarray, zx: int, group: int) -> np.ndarray:
    """``dense_int8`` (mode u8s8) of ``x`` by ``w`` packed in groups of ``group`` words, run."""
    from topi.x86.dense_int8 import blocks as dense_blocks, dense_int8, pack_weight, schedule_dense_int8
    from topi.x86.dense_int8 import unpack_weight

    (m, k), n = x.shape, w.shape[0]
    nb, mr = dense_blocks("u8s8", HOST)
    packed = pack_weight(w, "u8s8", nb, group)
    assert packed.shape[2] == group + 1 and packed.shape[1] * group * 4 >= k
    np.testing.assert_array_equal(unpack_weight(packed, k, n), w)
    wsum = np.zeros(packed.shape[0] * nb, "int32")
    wsum[:n] = w.sum(1)
    args = [te.placeholder((m, k), "uint8", name="x"), te.placeholder(packed.shape, "int8", name="w"),
            te.placeholder(wsum.shape, "int32", name="wsum"), te.placeholder((), "uint8", name="zx")]
    out = dense_int8(*args, n, "u8s8", mr)
    f = codegen.build(schedule_dense_int8(out, HOST), args + [out], target=HOST)
    got = np.zeros((m, n), "int32")
    f(x, packed, wsum, np.array(zx, "uint8"), got)
    return got


@needs_avx2
@pytest.mark.parametrize("group", [2, 4])
@pytest.mark.parametrize("m,k,n", [(7, 20, 40), (9, 21, 33), (1, 6, 16)])
def test_grouped_dense_int8_matches_the_integer_reference(group, m, k, n):
    """Groups of words summed in int16 before one vpmaddwd, on K that no group divides: exact."""
    from topi.x86.dense_int8 import group as choose_group

    bound = 255 // (2 * group)  # every lane's sum |w| within 255
    x = RNG.integers(0, 256, (m, k)).astype("uint8")
    w = RNG.integers(-bound, bound + 1, (n, k))
    x[0], w[0] = 0, bound  # the extremes: data 0 (-128 centered) against the largest lanes
    assert choose_group(w, "u8s8") >= group and choose_group(w, "i16") == 1
    np.testing.assert_array_equal(_grouped_dense(x, w, 3, group), (x.astype("int64") - 3) @ w.T)


@needs_avx2
def test_grouped_dense_int8_is_exact_at_the_int16_bound():
    """A lane of weights with sum |w| = 255 (the most ``group_fits`` takes) against the data that
    drives its centered int16 sum furthest each way: exact; 256 is refused."""
    from topi.x86.int8_dot import group_fits

    w = np.zeros((16, 8), "int64")
    w[0, [0, 1, 4, 5]] = [64, 64, 64, 63]  # lane (column 0, half 0) of a group of two words
    w[1, [2, 3, 6, 7]] = [-64, -64, -64, -63]
    w[2, [0, 1, 4, 5]] = [64, -64, 64, -63]
    assert group_fits(w, 2)
    w3 = w.copy()
    w3[0, 5] = 64
    assert not group_fits(w3, 2)
    x = np.array([[255] * 8, [0] * 8, [255, 0] * 4, [0, 255] * 4], "uint8")
    np.testing.assert_array_equal(_grouped_dense(x, w, 0, 2), x.astype("int64") @ w.T)


def test_grouped_dense_int8_widens_once_per_group():
    """Groups of four words: four vpmaddubsw per vpmaddwd in the AVX2 assembly (compiled, not run)."""
    from topi.x86.dense_int8 import dense_int8, pack_weight, schedule_dense_int8

    target = Target(AVX2)
    packed = pack_weight(np.ones((16, 32), "int64"), "u8s8", 16, 4)
    args = [te.placeholder((3, 32), "uint8", name="x"), te.placeholder(packed.shape, "int8", name="w"),
            te.placeholder((16,), "int32", name="wsum"), te.placeholder((), "uint8", name="zx")]
    out = dense_int8(*args, 16, "u8s8", 3)
    asm = codegen.build(schedule_dense_int8(out, target), args + [out], target=target).get_source("asm")
    assert asm.count("vpmaddwd") > 0 and asm.count("vpmaddubsw") == 4 * asm.count("vpmaddwd")


def test_group_follows_the_weights():
    from topi.x86.dense_int8 import group

    assert group(np.full((16, 32), 31), "u8s8") == 4  # 8 x 31 <= 255
    assert group(np.full((16, 32), 32), "u8s8") == 2  # 8 x 32 > 255 >= 4 x 32
    assert group(np.full((16, 32), 64), "u8s8") == 1
    assert group(np.full((16, 32), 1), "vnni") == 1


def _matmul_integer_model(w: np.ndarray, w_zp, m: int = 6) -> onnx.ModelProto:
    """x float -> DynamicQuantizeLinear -> MatMulInteger(xq, W, x_zp, w_zp) -> Cast: the core of a
    dynamically quantized dense layer."""
    k, n = w.shape
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["xq", "w", "xz"]
    if w_zp is not None:
        inits.append(numpy_helper.from_array(np.asarray(w_zp, w.dtype), "wz"))
        ins.append("wz")
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("MatMulInteger", ins, ["acc"]),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
    g = helper.make_graph(nodes, "mmi", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (m, k))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _dense_kernels(lib) -> list:
    return [k.attrs["mode"] for k in _kernels(lib, "dense_int8")]


@needs_avx2
def test_matmul_integer_becomes_dense_int8_matching_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    w = RNG.integers(-64, 64, (19, 24)).astype("int8")  # 7-bit: onnxruntime's AVX2 kernel is exact
    model = _matmul_integer_model(w, None)
    x = RNG.standard_normal((6, 19)).astype("float32")
    lib, got = _run(model, x)
    assert _dense_kernels(lib) in (["u8s8"], ["vnni"])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


@needs_avx2
def test_small_weights_take_the_grouped_dense_int8_matching_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    w = RNG.integers(-20, 21, (37, 24)).astype("int8")  # lanes of 8 weights within 255: groups of 4
    model = _matmul_integer_model(w, None)
    x = RNG.standard_normal((6, 37)).astype("float32")
    lib, got = _run(model, x)
    if _dense_kernels(lib) == ["u8s8"]:
        (node,) = _kernels(lib, "dense_int8")
        assert node.inputs[1].shape[2] == 5  # four words and the biases
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


@needs_avx2
def test_matmul_integer_with_uint8_weights_and_zero_point_is_exact():
    w = RNG.integers(0, 256, (21, 17)).astype("uint8")
    model = _matmul_integer_model(w, 200)  # w - 200 spans [-200, 55]: int16 operands
    x = RNG.standard_normal((6, 21)).astype("float32")
    lib, got = _run(model, x)
    assert _dense_kernels(lib) == ["i16"]
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


@needs_avx2
def test_qlinear_conv_with_bias_becomes_conv2d_int8_matching_onnxruntime():
    ort = pytest.importorskip("onnxruntime")
    oc, ic = 12, 8  # channels the blocks do not pad (7 would run as the exact float conv)
    inits = {"xs": np.float32(0.03), "xz": np.uint8(128), "w": RNG.integers(-64, 64, (oc, ic, 3, 3)).astype("int8"),
             "ws": RNG.uniform(0.005, 0.02, oc).astype("float32"), "wz": np.zeros(oc, "int8"),
             "ys": np.float32(0.07), "yz": np.uint8(90), "b": RNG.integers(-2000, 2000, oc).astype("int32")}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                            pads=[1, 0, 1, 2], strides=[1, 2])
    g = helper.make_graph([node], "qlc", [helper.make_tensor_value_info("x", TensorProto.UINT8, (1, ic, 10, 9))],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    x = RNG.integers(0, 256, (1, ic, 10, 9)).astype("uint8")
    lib, got = _run(model, x)
    assert [k.op for k in _conv_kernels(lib)] == ["conv2d_int8"]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])


# ------------------------------------------------------------ AutoTVM ---
def _tuned_template(tmp_path, wl: tuple, knobs: dict, wide: dict, trials: int):
    """The task of template workload ``wl`` (its knobs' candidate counts ``knobs``; the config
    ``wide``, a tile wider than the registers, refused naming them), tuned for ``trials`` random
    trials: ``(best config, (schedule, args) built under the log's best record)``."""
    import topi.x86.templates  # noqa: F401  (registers the templates)
    from tune import autotvm, record

    task = autotvm.task.create(wl[0], wl[1:], target="llvm")
    assert {k: len(v) for k, v in task.config_space.space_map.items()} == knobs
    config = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                  if all(c[k].val == v for k, v in wide.items()))
    with pytest.raises(Exception, match="vector registers"):
        task.instantiate(config)
    log = str(tmp_path / "int8.log")
    builder, runner = autotvm.LocalBuilder(n_parallel=2), autotvm.LocalRunner(number=2, repeat=1)
    try:
        tuner = autotvm.tuner.RandomTuner(task, seed=0)
        tuner.tune(trials, autotvm.measure_option(builder, runner),
                   callbacks=[autotvm.callback.log_to_file(log)])
    finally:
        builder.close()
        runner.close()
    recs = [r for r in record.load_from_file(log) if r[1].error_no == 0]
    assert recs
    best = min(recs, key=lambda r: np.mean(r[1].costs))[0].config
    with autotvm.apply_history_best(log):
        return best, autotvm.task.lookup(wl[0]).func(*wl[1:])


INT8_TUNE = [  # columns and channels that divide no tile: OW 11 and 5, OC 24 (NCHW out), 1x1 stride 2
    ("i16", (1, 13, 9, 11), (24, 13, 3, 3), (1, 1), (1, 1, 1, 1), 1),
    ("u8s8", (1, 16, 10, 9), (32, 16, 1, 1), (2, 2), (0, 0, 0, 0), 1),
    ("u8s8", (1, 16, 10, 9), (32, 16, 1, 1), (2, 2), (0, 0, 0, 0), 2),  # groups of two words
]


@needs_avx2
@pytest.mark.parametrize("mode,dshape,kshape,strides,pads,group", INT8_TUNE)
def test_conv2d_int8_template_tuned_then_applied_matches_numpy(tmp_path, mode, dshape, kshape, strides, pads,
                                                               group):
    """``conv2d_NCHWc_int8.x86``: a few trials of a tuner, then the best record's config rebuilds
    the kernel, checked against the integer reference; a tile wider than the registers is refused."""
    from topi.x86.conv2d_int8 import int8_workload

    wl = int8_workload(dshape, kshape, strides, pads, mode, group)
    best, (s, args) = _tuned_template(tmp_path, wl, {"oc_bn": 2, "ow_bn": 8}, {"oc_bn": 16, "ow_bn": 8}, 3)
    f = codegen.build(s, args)
    oc, ic, kh, kw = kshape
    oc_bn = best["oc_bn"].val
    wt = RNG.integers(-64 // group, 65 // group if mode == "u8s8" else 64, kshape).astype("int64")
    x = RNG.integers(0, 256, dshape).astype("uint8")
    packed = pack_kernel(wt, mode, blocks(oc, ic, mode, HOST)[0], oc_bn, group)
    assert packed.shape == get_shape(args[1].shape)
    ocp = packed.shape[0] * oc_bn
    offset, mult = np.zeros(ocp, "int32"), np.zeros(ocp, "float32")
    offset[:oc] = RNG.integers(-3000, 3000, oc)
    mult[:oc] = RNG.uniform(0.5, 2.0, oc) / (ic * kh * kw * 40)
    got = np.zeros(get_shape(args[-1].shape), "uint8")
    f(x, packed, offset, mult, got)
    if got.ndim == 5:
        got = got.transpose(0, 1, 4, 2, 3).reshape(got.shape[0], oc, *got.shape[2:4])
    acc = qnn_conv2d_python(x, wt, np.int64(0), np.int64(0), strides, pads).astype("int64")
    acc -= (128 if group > 1 else 0) * wt.reshape(oc, -1).sum(1).reshape(-1, 1, 1)  # the data centered
    want = requantize_python(acc + offset[:oc].reshape(-1, 1, 1), mult[:oc], np.int64(0), 1, "uint8")
    np.testing.assert_array_equal(got, want)


@needs_avx2
def test_qdq_conv_built_with_records_takes_the_tuned_register_tile():
    """A graph built with a ``conv2d_NCHWc_int8.x86`` record of its conv's workload runs that
    record's tile (3 columns here, the rule says 8), still exact."""
    import time

    import topi.x86.templates  # noqa: F401  (registers the templates)
    from topi.x86.conv2d_int8 import int8_workload
    from tune import autotvm

    oc, ic = 16, 12
    w_q = RNG.integers(-64, 64, (oc, ic, 3, 3)).astype("int8")
    w_scale = RNG.uniform(0.005, 0.02, oc).astype("float32")
    model = _qdq_conv_model(w_q, w_scale, None, relu=True, x_shape=(1, ic, 9, 7))
    g, params = graph.from_onnx(model)
    x = RNG.standard_normal((1, ic, 9, 7)).astype("float32") * 1.5
    default = graph.build(g, params=params)
    mode = _kernels(default, "conv2d_int8")[0].attrs["mode"]
    wl = int8_workload((1, ic, 9, 7), (oc, ic, 3, 3), (1, 1), (1, 1, 1, 1), mode)
    task = autotvm.task.create(wl[0], wl[1:], target="llvm")
    cfg = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
               if c["oc_bn"].val == 8 and c["ow_bn"].val == 3)
    rec = (autotvm.MeasureInput(task.target, task, cfg), autotvm.MeasureResult((1e-4,), 0, 0.1, time.time()))
    lib = graph.build(g, params=params, records=[rec])
    conv = _kernels(lib, "conv2d_int8")[0]
    assert (conv.attrs["ow_bn"], conv.attrs["oc_bn"]) == (3, 8) != (_kernels(default, "conv2d_int8")[0].attrs["ow_bn"],
                                                                     _kernels(default, "conv2d_int8")[0].attrs["oc_bn"])
    m, m0 = lib.create_executor(), default.create_executor()
    m.run(x=x)
    m0.run(x=x)
    np.testing.assert_array_equal(m.get_output(0), m0.get_output(0))


# rows, reduction, columns that divide no tile; the group of words
INT8_DENSE_TUNE = [("u8s8", 7, 21, 40, 1), ("i16", 5, 13, 24, 1), ("u8s8", 7, 21, 40, 2)]


@needs_avx2
@pytest.mark.parametrize("mode,m,k,n,group", INT8_DENSE_TUNE)
def test_dense_int8_template_tuned_then_applied_matches_numpy(tmp_path, mode, m, k, n, group):
    """``dense_int8.x86``: a few trials of a tuner, then the best record's config rebuilds the
    kernel, checked against the integer reference; a tile wider than the registers is refused."""
    from topi.x86.dense_int8 import int8_workload, pack_weight

    wl = int8_workload((m, k), (n, k), mode, group)
    assert len(wl) == (5 if group > 1 else 4)  # a group of one leaves the workloads of earlier records
    best, (s, args) = _tuned_template(tmp_path, wl, {"nb": 2, "mr": 8}, {"nb": 16, "mr": 8}, 4)
    f = codegen.build(s, args)
    nb = best["nb"].val
    assert get_shape(args[1].shape)[-2] == nb
    w = RNG.integers(-64 // group, 65 // group if mode == "u8s8" else 64, (n, k))
    x = RNG.integers(0, 256, (m, k)).astype("uint8")
    packed = pack_weight(w, mode, nb, group)
    wsum = np.zeros(packed.shape[0] * nb, "int32")
    wsum[:n] = w.sum(1)
    got = np.zeros((m, n), "int32")
    f(x, packed, wsum, np.array(77, "uint8"), got)
    np.testing.assert_array_equal(got, (x.astype("int64") - 77) @ w.T)


@needs_avx2
def test_matmul_integer_built_with_records_takes_the_tuned_register_tile():
    """A graph built with a ``dense_int8.x86`` record of its MatMulInteger's workload packs the
    weight for that record's column block and runs its rows (one vector x 2 rows here), exact;
    the node carries the config (``tessera tune`` extracts its task from it)."""
    import time

    import topi.x86.templates  # noqa: F401  (registers the templates)
    from topi.x86.dense_int8 import int8_workload
    from tune import autotvm

    w = RNG.integers(-64, 64, (19, 40)).astype("int8")
    model = _matmul_integer_model(w, None, m=5)
    g, params = graph.from_onnx(model)
    x = RNG.standard_normal((5, 19)).astype("float32")
    default = graph.build(g, params=params)
    (node,) = _kernels(default, "dense_int8")
    group = node.inputs[1].shape[2] - 1 if len(node.inputs[1].shape) == 5 else 1
    assert node.attrs["config"].workload == int8_workload((5, 19), (40, 19), node.attrs["mode"], group)
    task = autotvm.task.create(*(lambda wl: (wl[0], wl[1:]))(node.attrs["config"].workload), target="llvm")
    cfg = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
               if c["nb"].val == 8 and c["mr"].val == 2)
    rec = (autotvm.MeasureInput(task.target, task, cfg), autotvm.MeasureResult((1e-4,), 0, 0.1, time.time()))
    lib = graph.build(g, params=params, records=[rec])
    (tuned,) = _kernels(lib, "dense_int8")
    blocks_of = (lambda k: (k.attrs["mr"], k.inputs[1].shape[-2]))  # rows, the weight's column block
    assert blocks_of(tuned) == (2, 8) != blocks_of(node)
    m, m0 = lib.create_executor(), default.create_executor()
    m.run(x=x)
    m0.run(x=x)
    np.testing.assert_array_equal(m.get_output(0), m0.get_output(0))
    np.testing.assert_array_equal(m.get_output(0), ReferenceEvaluator(model).run(None, {"x": x})[0])


def _qdq_tune_model() -> onnx.ModelProto:
    """QDQ convs (3x3 12 -> 16, 1x1 16 -> 24 on 7 x 9) whose output, flattened, a dynamically
    quantized MatMul (DynamicQuantizeLinear + MatMulInteger) maps to 20 columns."""
    q = [("xs", np.float32(0.02)), ("xz", np.uint8(120)), ("as", np.float32(0.05)), ("az", np.uint8(0)),
         ("bs", np.float32(0.04)), ("bz", np.uint8(110)),
         ("w1", RNG.integers(-64, 64, (16, 12, 3, 3)).astype("int8")), ("w1s", np.float32(0.01)), ("w1z", np.int8(0)),
         ("w2", RNG.integers(-64, 64, (24, 16, 1, 1)).astype("int8")), ("w2s", np.float32(0.015)), ("w2z", np.int8(0)),
         ("fc", RNG.integers(-64, 64, (24 * 7 * 9, 20)).astype("int8")), ("shape", np.array([1, -1], "int64"))]
    dq = lambda i, s, z, o: helper.make_node("DequantizeLinear", [i, s, z], [o])  # noqa: E731
    qn = lambda i, s, z, o: helper.make_node("QuantizeLinear", [i, s, z], [o])  # noqa: E731
    nodes = [qn("x", "xs", "xz", "xq"), dq("xq", "xs", "xz", "xd"), dq("w1", "w1s", "w1z", "w1d"),
             dq("w2", "w2s", "w2z", "w2d"), helper.make_node("Conv", ["xd", "w1d"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]), qn("r1", "as", "az", "r1q"), dq("r1q", "as", "az", "a"),
             helper.make_node("Conv", ["a", "w2d"], ["c2"]), qn("c2", "bs", "bz", "c2q"), dq("c2q", "bs", "bz", "b"),
             helper.make_node("Reshape", ["b", "shape"], ["f"]),
             helper.make_node("DynamicQuantizeLinear", ["f"], ["fq", "fs", "fz"]),
             helper.make_node("MatMulInteger", ["fq", "fc", "fz"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
    return _float_io_model(nodes, "qdq_tune", (1, 12, 7, 9), [numpy_helper.from_array(np.asarray(v), k) for k, v in q])


@needs_avx2
def test_tessera_tune_extracts_and_tunes_the_int8_kernels_of_a_quantized_model(tmp_path, capsys):
    """``tessera tune`` on a QDQ model: its tasks are the int8 kernels' templates (the direct
    convs' ``conv2d_NCHWc_int8.x86``, the dense's ``dense_int8.x86``), a short tune measures
    each, and the model built with the log runs the records' configs, exactly as the default."""
    from graph.cli import main
    from graph.tuning import extract_tasks
    from tune import autotvm
    from tune.network import read_log

    model = _qdq_tune_model()
    path, log = str(tmp_path / "qdq.onnx"), tmp_path / "qdq.jsonl"
    onnx.save(model, path)
    g, params = graph.from_onnx(model)
    tasks = extract_tasks(g, params, "llvm")
    assert sorted(t.name for t in tasks) == ["conv2d_NCHWc_int8.x86", "conv2d_NCHWc_int8.x86", "dense_int8.x86"]
    assert all(len(t.config_space) > 1 for t in tasks)
    assert main(["tune", path, "--trials", "12", "--log", str(log), "--tuner", "random", "-q"]) == 0
    assert "12 trials measured now" in capsys.readouterr().out
    measured = {inp.task.workload for inp, res in read_log(str(log), "llvm") if res.error_no == 0}
    assert measured == {t.workload for t in tasks}
    x = RNG.standard_normal((1, 12, 7, 9)).astype("float32")
    default = graph.build(g, params=params)
    with autotvm.apply_history_best(str(log)):
        lib = graph.build(g, params=params)
    kernels = _kernels(lib, "conv2d_int8") + _kernels(lib, "dense_int8")
    assert sorted(k.attrs["config"].template for k in kernels) == sorted(t.name for t in tasks)
    m, m0 = lib.create_executor(), default.create_executor()
    m.run(x=x)
    m0.run(x=x)
    np.testing.assert_array_equal(m.get_output(0), m0.get_output(0))
    _assert_onnxruntime_int8(model, x, m.get_output(0))
