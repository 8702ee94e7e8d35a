"""Storage-only element types (bfloat16, float8, float4, int4/int2): ``topi.narrow`` and the graph.

The conversions are built with ``schedule_injective`` (vectorized, split
factors that do not divide the shapes) on guarded buffers and compared bit
for bit with the numpy reference ``topi.testing.narrow_cast_python``, which
is itself checked against onnx's reference ``Cast`` (ml_dtypes) on every
float16 value, float32 edge cases and random float32 bit patterns.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import check_build

import te
from topi import narrow, x86
from topi.testing.narrow import decode_python, narrow_cast_python

ml_dtypes = pytest.importorskip("ml_dtypes")
onnx = pytest.importorskip("onnx")

FLOATS = [n for n, f in narrow.FORMATS.items() if f.is_float]
INTS = [n for n, f in narrow.FORMATS.items() if not f.is_float]
EDGES = [
    0.0,
    -0.0,
    np.inf,
    -np.inf,
    np.nan,
    -np.nan,
    448,
    464,
    480,
    240,
    248,
    256,
    57344,
    61440,
    65536,
    0.25,
    0.75,
    2.5,
    5,
    6,
    7,
    3.39e38,
    3.4e38,
    1e-40,
    -1e-45,
    2.0**-133,
    2.0**-134,
    2.0**-10,
    2.0**-11,
    2.0**-17,
    2.0**-18,
    1e10,
    -3e9,
    2.0**31,
    65535.5,
]


def float32_inputs(n_random: int = 4000) -> np.ndarray:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, n_random, dtype=np.uint64).astype(np.uint32)
    halves = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    return np.concatenate([np.array(EDGES, np.float32), bits.view(np.float32), halves])


def onnx_cast(x: np.ndarray, dst: str, saturate: bool) -> np.ndarray:
    from onnx.reference.ops.op_cast import cast_to

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return cast_to(x, getattr(onnx.TensorProto, narrow.FORMATS[dst].onnx), saturate)


def same_bits_or_nan(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Element-wise: the same bit pattern, or both NaN (payloads may differ)."""
    same = narrow.as_storage(got) == narrow.as_storage(want)
    if want.dtype.name in FLOATS:
        same |= np.isnan(got.astype(np.float32)) & np.isnan(want.astype(np.float32))
    return same


def build_cast(x_shape, src: str, dst: str, saturate: bool, x: np.ndarray) -> np.ndarray:
    """narrow.cast built with the x86 injective schedule, run on guarded buffers against the reference."""
    X = te.placeholder(x_shape, dtype=narrow.storage_dtype(src), name="X")
    Y = narrow.cast(X, src, dst, saturate)
    s = x86.schedule_injective([Y])
    want = narrow.as_storage(narrow_cast_python(x, dst, saturate))
    (got,) = check_build(
        s,
        [X, Y],
        lambda a: want,
        inputs=[narrow.as_storage(x)],
        rtol=0,
        atol=0,
        equal_nan=dst in ("float16", "float32", "float64"),
    )
    return got


# ------------------------------------------------------------ te.reinterpret ---
def test_reinterpret_float_bits_round_trip():
    n = 37
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: te.reinterpret("uint32", A[i]) // te.const(1 << 16, "uint32"), name="B")
    C = te.compute((n,), lambda i: te.reinterpret("float32", B[i] * te.const(1 << 16, "uint32")), name="C")
    s = x86.schedule_injective([B, C])
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)

    def ref(x):
        return x.view(np.uint32) >> 16, (x.view(np.uint32) & 0xFFFF0000).view(np.float32)

    check_build(s, [A, B, C], ref, inputs=[a], rtol=0, atol=0)


def test_reinterpret_needs_equal_widths():
    with pytest.raises(ValueError, match=r"reinterpret: float32 and uint16 must have the same bit width"):
        te.reinterpret("uint16", te.const(1.0, "float32"))


# -------------------------------------------------------- numpy reference ---
@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("fmt", FLOATS + INTS)
def test_reference_matches_onnx_cast(fmt, saturate):
    x = float32_inputs()
    for inputs in (x, x.astype(np.float16), x.astype(np.float64) * 1.0000001):
        ok = same_bits_or_nan(narrow_cast_python(inputs, fmt, saturate), onnx_cast(inputs, fmt, saturate))
        assert ok.all(), f"{fmt} from {inputs.dtype}: first wrong input {inputs[~ok][:3]}"


@pytest.mark.parametrize("fmt", FLOATS)
def test_reference_decodes_as_ml_dtypes(fmt):
    codes = np.arange(1 << min(narrow.FORMATS[fmt].bits, 16), dtype=narrow.storage_dtype(fmt))
    want = codes.view(narrow.numpy_dtype(fmt)).astype(np.float64)
    np.testing.assert_array_equal(decode_python(codes, fmt), want)


# ------------------------------------------------------------------ kernels ---
@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("fmt", FLOATS + INTS)
def test_from_float32(fmt, saturate):
    x = float32_inputs()
    n = x.size // 3 * 3
    build_cast((3, n // 3), "float32", fmt, saturate, x[:n].reshape(3, -1))


@pytest.mark.parametrize("src", ["float16", "float64"])
@pytest.mark.parametrize("fmt", ["bfloat16", "float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "int4"])
def test_from_other_floats(src, fmt):
    """float16 is exact in float32; float64 rounds to float32 first (as onnx's reference)."""
    rng = np.random.default_rng(3)
    x = np.concatenate(
        [
            np.array(EDGES, src),
            (rng.standard_normal(999) * 300).astype(src),
            (1 + rng.integers(-(2**20), 2**20, 500) * 2.0**-40).astype(src) * 8,
        ]
    )
    build_cast(x.shape, src, fmt, True, x)


@pytest.mark.parametrize("fmt", FLOATS + INTS)
def test_to_float32_every_code(fmt):
    f = narrow.FORMATS[fmt]
    # every byte of a 4-/2-bit integer (the high bits are ignored); every canonical float4 code
    codes = np.arange(1 << (max(f.bits, 8) if not f.is_float else f.bits), dtype=narrow.storage_dtype(fmt))
    codes = codes.view(narrow.numpy_dtype(fmt))
    got = build_cast(codes.shape, fmt, "float32", True, codes)
    want = codes.astype(np.float32)
    assert ((got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))).all()


@pytest.mark.parametrize("src", ["int8", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("fmt", INTS)
def test_integers_wrap_into_narrow_ints(src, fmt):
    rng = np.random.default_rng(1)
    info = np.iinfo(src) if src != "bool" else None
    x = rng.integers(0, 2, 203) if info is None else rng.integers(info.min, info.max, 203, endpoint=True)
    x = x.astype(src)
    got = build_cast(x.shape, src, fmt, True, x)
    np.testing.assert_array_equal(got, narrow.as_storage(onnx_cast(x, fmt, True)))


@pytest.mark.parametrize("dst", ["int8", "int32", "float16", "float64", "bool"])
@pytest.mark.parametrize("fmt", INTS + ["float8_e4m3fn", "bfloat16"])
def test_narrow_to_regular_types(fmt, dst):
    f = narrow.FORMATS[fmt]
    codes = np.arange(1 << (f.bits if f.bits <= 8 else 16), dtype=narrow.storage_dtype(fmt))
    codes = codes.view(narrow.numpy_dtype(fmt))
    if f.is_float and dst not in ("float16", "float64", "bool"):  # float -> int of NaN/inf/huge is undefined
        values = codes.astype(np.float32)
        codes = codes[np.isfinite(values) & (np.abs(values) < 100)]
    got = build_cast(codes.shape, fmt, dst, True, codes)
    want = codes.astype(np.float32).astype(dst) if f.is_float else codes.astype(dst)
    np.testing.assert_array_equal(got, want)


def test_between_narrow_types_goes_through_float32():
    x = np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16)
    got = build_cast(x.shape, "bfloat16", "float8_e4m3fn", False, x)
    want = narrow.as_storage(onnx_cast(x.astype(np.float32), "float8_e4m3fn", False))
    assert same_bits_or_nan(got.view(ml_dtypes.float8_e4m3fn), want.view(ml_dtypes.float8_e4m3fn)).all()


@pytest.mark.parametrize("saturate", [True, False])
@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_float8e8m0_round_modes(round_mode, saturate):
    """float8e8m0 (an exponent only): every round_mode, in the reference and the kernel, against
    onnx's ``to_float8e8m0``; float16 and float64 sources too."""
    from onnx.numpy_helper import to_float8e8m0

    x = float32_inputs()
    powers = np.float32(2.0 ** np.arange(-130, 128))
    x = np.concatenate([x, (np.float32([[1], [1.5], [1.25], [1.75]]) * powers).ravel()])
    for inputs in (x, x.astype(np.float16)):
        with np.errstate(all="ignore"):
            want = to_float8e8m0(inputs, saturate, round_mode)
        got = narrow_cast_python(inputs, "float8_e8m0fnu", saturate, round_mode)
        np.testing.assert_array_equal(narrow.as_storage(got), narrow.as_storage(want))
    shape = (7, 3 + x.size // 7)
    X = te.placeholder(shape, dtype="float64", name="X")
    Y = narrow.cast(X, "float64", "float8_e8m0fnu", saturate, round_mode)
    x64 = np.resize(x.astype(np.float64) * 1.0000001, shape)
    with np.errstate(all="ignore"):
        want = narrow.as_storage(to_float8e8m0(x64, saturate, round_mode))
    check_build(x86.schedule_injective([Y]), [X, Y], lambda a: want, inputs=[x64], rtol=0, atol=0)


def test_float8e8m0_rejects_unknown_round_mode():
    X = te.placeholder((4,), dtype="float32", name="X")
    with pytest.raises(ValueError, match=r"round_mode='zero' is not one of up, down, nearest"):
        narrow.cast(X, "float32", "float8_e8m0fnu", True, "zero")


def test_cast_checks_the_storage_type():
    X = te.placeholder((4,), dtype="float32", name="X")
    message = r"narrow.cast: a bfloat16 tensor is stored as uint16, got 'X' of dtype float32"
    with pytest.raises(ValueError, match=message):
        narrow.cast(X, "bfloat16", "float32")


# -------------------------------------------------------------------- graph ---
def cast_model(src: int, dst: int, shape, saturate: int = 1, then=None, opset: int = 21):
    """X (src) -> Cast(dst) [-> ``then`` op] -> Y, as an ONNX model."""
    from onnx import helper

    nodes = [helper.make_node("Cast", ["X"], ["C" if then else "Y"], to=dst, saturate=saturate)]
    if then:
        nodes.append(helper.make_node(then, ["C"], ["Y"]))
    g = helper.make_graph(
        nodes,
        "narrow",
        [helper.make_tensor_value_info("X", src, shape)],
        [helper.make_tensor_value_info("Y", dst, shape)],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def run_graph(model, **inputs):
    import graph

    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    m.run(**inputs)
    return m.get_output(0)


def onnx_reference(model, **inputs):
    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, inputs)[0]


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize("fmt", FLOATS + INTS)
def test_graph_cast_float_to_narrow_and_back(fmt, saturate):
    """float32 -> narrow -> float32 in one graph (the two casts fuse into one kernel); the
    narrow output of the first is checked through the second against onnx's reference."""
    from onnx import TensorProto, helper

    code = getattr(TensorProto, narrow.FORMATS[fmt].onnx)
    x = float32_inputs(600)[:1110].reshape(3, 370)
    nodes = [
        helper.make_node("Cast", ["X"], ["N"], to=code, saturate=saturate),
        helper.make_node("Cast", ["N"], ["Y"], to=TensorProto.FLOAT),
    ]
    g = helper.make_graph(
        nodes,
        "narrow",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, x.shape),
            helper.make_tensor_value_info("N", code, x.shape),
        ],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    import graph

    lib = graph.build(*graph.from_onnx(model)[:1])
    m = lib.create_executor()
    m.run(X=x)
    want = onnx_reference(model, X=x)
    np.testing.assert_array_equal(m.get_output(0), want)  # NaN == NaN for assert_array_equal
    got_n = m.get_output(1)
    assert got_n.dtype == narrow.numpy_dtype(fmt)
    assert same_bits_or_nan(got_n, onnx_cast(x, fmt, bool(saturate))).all()


@pytest.mark.parametrize(
    "fmt, dst",
    [
        ("bfloat16", "FLOAT"),
        ("float8_e5m2", "FLOAT16"),
        ("int4", "INT8"),
        ("uint2", "UINT8"),
        ("float4_e2m1fn", "FLOAT"),
        ("int4", "FLOAT"),
    ],
)
def test_graph_narrow_inputs(fmt, dst):
    """A narrow graph input: the executor takes the ml_dtypes array as it is."""
    from onnx import TensorProto

    f = narrow.FORMATS[fmt]
    codes = np.arange(1 << min(f.bits, 8), dtype=np.uint8 if f.bits <= 8 else np.uint16)
    x = np.resize(codes, (5, 61)).view(narrow.numpy_dtype(fmt))
    model = cast_model(getattr(TensorProto, f.onnx), getattr(TensorProto, dst), x.shape)
    got = run_graph(model, X=x)
    want = onnx_reference(model, X=x)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("round_mode", ["up", "down", "nearest"])
def test_graph_cast_to_float8e8m0(round_mode):
    """Cast-24 to FLOAT8E8M0 with ``round_mode`` and back to float16, against onnx's reference."""
    from onnx import TensorProto, helper

    x = float32_inputs(300)[:777].reshape(7, 111)
    nodes = [
        helper.make_node("Cast", ["X"], ["N"], to=TensorProto.FLOAT8E8M0, saturate=0, round_mode=round_mode),
        helper.make_node("Cast", ["N"], ["Y"], to=TensorProto.FLOAT16),
    ]
    g = helper.make_graph(
        nodes,
        "e8m0",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, x.shape),
         helper.make_tensor_value_info("N", TensorProto.FLOAT8E8M0, x.shape)],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])
    import graph

    m = graph.build(*graph.from_onnx(model)[:1]).create_executor()
    m.run(X=x)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        from onnx.reference import ReferenceEvaluator

        want_y, want_n = ReferenceEvaluator(model).run(None, {"X": x})
    np.testing.assert_array_equal(m.get_output(0), want_y)
    np.testing.assert_array_equal(narrow.as_storage(m.get_output(1)), narrow.as_storage(want_n))


def test_graph_bfloat16_initializer_folds():
    """A bfloat16 initializer cast to float32 folds at build time (the numpy twin)."""
    from onnx import TensorProto, helper, numpy_helper

    w = (np.arange(12, dtype=np.float32).reshape(3, 4) / 7).astype(ml_dtypes.bfloat16)
    nodes = [
        helper.make_node("Cast", ["W"], ["Wf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["X", "Wf"], ["Y"]),
    ]
    g = helper.make_graph(
        nodes,
        "narrow",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, (3, 4))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, (3, 4))],
        [numpy_helper.from_array(w, "W")],
    )
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    x = np.ones((3, 4), np.float32)
    np.testing.assert_array_equal(run_graph(model, X=x), x + w.astype(np.float32))


def test_graph_refuses_other_ops_on_narrow_types():
    from onnx import TensorProto

    import graph

    model = cast_model(TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN, (4,), then="Relu")
    with pytest.raises(
        ValueError,
        match=r"node 'Y' \(Relu, opset 21\): input 'C' is float8_e4m3fn, a storage-only "
        r"type that only Cast, CastLike, Identity take; Cast it to float32 first",
    ):
        graph.from_onnx(model)


def bf16_model(nodes, inputs: dict, outputs: dict):
    from onnx import TensorProto, helper

    types = {"bf16": TensorProto.BFLOAT16, "f32": TensorProto.FLOAT, "bool": TensorProto.BOOL}
    g = helper.make_graph(
        nodes,
        "bf16",
        [helper.make_tensor_value_info(n, types[t], s) for n, (t, s) in inputs.items()],
        [helper.make_tensor_value_info(n, types[t], s) for n, (t, s) in outputs.items()],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])


def test_graph_bfloat16_elementwise_in_float32():
    """Elementwise and data-movement operators on bfloat16: each computed in float32 and rounded
    once, bit for bit as onnx's reference (ml_dtypes rounds each numpy operation)."""
    from onnx import helper

    N = helper.make_node
    nodes = [
        N("Add", ["A", "B"], ["S"]),
        N("Mul", ["S", "A"], ["P"]),
        N("Div", ["P", "B"], ["Q"]),
        N("Relu", ["Q"], ["R"]),
        N("Transpose", ["R"], ["T"], perm=[1, 0]),
        N("Greater", ["A", "B"], ["G"]),
        N("Where", ["G", "A", "B"], ["W"]),
        N("Sqrt", ["W"], ["Z"]),
    ]
    shape = (5, 37)
    model = bf16_model(
        nodes,
        {"A": ("bf16", shape), "B": ("bf16", shape)},
        {"T": ("bf16", shape[::-1]), "Z": ("bf16", shape), "G": ("bool", shape)},
    )
    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal(shape).astype(np.float32).astype(ml_dtypes.bfloat16) for _ in range(2))
    import graph

    g, params = graph.from_onnx(model)
    m = graph.build(g, params=params).create_executor()
    m.run(A=a, B=b)
    from onnx.reference import ReferenceEvaluator

    with np.errstate(all="ignore"):
        want = ReferenceEvaluator(model).run(None, {"A": a, "B": b})
    for k, w in enumerate(want):
        got = m.get_output(k)
        assert got.dtype == w.dtype
        assert same_bits_or_nan(got, w).all(), f"output {k}"


def test_graph_bfloat16_reductions_refused():
    from onnx import helper

    import graph

    model = bf16_model(  # onnx's reference rounds every multiplication of a bfloat16 product
        [helper.make_node("ReduceProd", ["A"], ["Y"], keepdims=1)],
        {"A": ("bf16", (2, 3))},
        {"Y": ("bf16", (1, 1))},
    )
    with pytest.raises(
        ValueError,
        match=r"node 'Y' \(ReduceProd, opset 21\): input 'A' is bfloat16, computed in float32 "
        r"only by elementwise and data-movement operators \(this one makes \w+\)",
    ):
        graph.from_onnx(model)


def test_executor_checks_narrow_dtypes():
    from onnx import TensorProto

    model = cast_model(TensorProto.BFLOAT16, TensorProto.FLOAT, (4,))
    with pytest.raises(TypeError, match=r"input 'X' expects dtype bfloat16, got float32"):
        run_graph(model, X=np.zeros(4, np.float32))


def test_executor_takes_narrow_inputs_as_their_bits():
    """A bfloat16 input may be given as its uint16 bits (viewed, not converted)."""
    from onnx import TensorProto

    x = np.array([1.0, -2.5, np.inf, 3.0e38], ml_dtypes.bfloat16)
    model = cast_model(TensorProto.BFLOAT16, TensorProto.FLOAT, x.shape)
    np.testing.assert_array_equal(run_graph(model, X=x.view(np.uint16)), x.astype(np.float32))


def test_exported_library_keeps_narrow_types(tmp_path):
    import shutil

    from onnx import TensorProto

    import graph

    if shutil.which("cc") is None:
        pytest.skip("export_library needs a C linker (cc)")
    model = cast_model(TensorProto.FLOAT, TensorProto.FLOAT8E4M3FN, (3, 7))
    g, params = graph.from_onnx(model)
    path = str(tmp_path / "narrow.so")
    graph.build(g, params=params).export_library(path)
    m = graph.load_library(path).create_executor()
    x = np.linspace(-500, 500, 21, dtype=np.float32).reshape(3, 7)
    m.run(X=x)
    got = m.get_output(0)
    assert got.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(
        narrow.as_storage(got), narrow.as_storage(onnx_cast(x, "float8_e4m3fn", True))
    )


# ------------------------------------------------------- bfloat16 operators ---
@pytest.mark.parametrize("shape", [(3, 37), (2, 5, 129)])
def test_rounded_sum_is_numpy_sum_on_bfloat16(shape):
    """narrow.rounded_sum (one rounding per addition, in order) against numpy's own sum of an
    ml_dtypes bfloat16 array, which the reference's Softmax calls, and the python twin."""
    from topi.testing.narrow import rounded_sum_python

    rng = np.random.default_rng(5)
    x = (rng.standard_normal(shape) * 3).astype(ml_dtypes.bfloat16).astype(np.float32)
    want = np.sum(x.astype(ml_dtypes.bfloat16), axis=-1, keepdims=True).astype(np.float32)
    np.testing.assert_array_equal(rounded_sum_python(x, "bfloat16"), want)
    assert not np.array_equal(want, x.sum(axis=-1, keepdims=True).astype(ml_dtypes.bfloat16).astype(np.float32))
    import topi

    X = te.placeholder(shape, name="X")
    Y = narrow.rounded_sum(X, "bfloat16")
    check_build(topi.generic.default_schedule([Y]), [X, Y], lambda a: want, inputs=[x], rtol=0, atol=0)


@pytest.mark.parametrize("op, shapes, attrs, opset", [
    ("Softmax", [(3, 5, 37)], {"axis": -1}, 17),
    ("Softmax", [(3, 5, 37)], {"axis": 1}, 17),
    ("MatMul", [(3, 17), (17, 29)], {}, 17),
    ("ReduceMax", [(4, 7, 9)], {"keepdims": 0, "axes": [1]}, 17),  # axes an attribute until opset 18
    ("Einsum", [(5, 3, 17), (5, 17, 9)], {"equation": "bij,bjk->bik"}, 28),
    ("Einsum", [(3, 37)], {"equation": "ij->i"}, 28),
])
def test_graph_bfloat16_operators_round_as_the_reference(op, shapes, attrs, opset):
    """Softmax (every numpy step rounded), MatMul and Einsum (float32 accumulation, one rounding)
    and ReduceMax on bfloat16, bit for bit against onnx's reference."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(2)
    names = [f"x{k}" for k in range(len(shapes))]
    xs = {n: (rng.standard_normal(s) * 2).astype(ml_dtypes.bfloat16) for n, s in zip(names, shapes)}
    node = helper.make_node(op, names, ["y"], **attrs)
    g = helper.make_graph([node], "bf16", [helper.make_tensor_value_info(n, TensorProto.BFLOAT16, s)
                                            for n, s in zip(names, shapes)],
                          [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, None)])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    got = run_graph(model, **xs)
    want = onnx_reference(model, **xs)
    assert got.dtype == want.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))
