"""Pooling over integer types (issue 10: "avg pool over uint8 wrong values").

Integer window sums run in a wider accumulator and the mean is truncated
toward zero, as ONNX's reference (``np.average`` stored into the integer
output) and ``topi.testing``; before, a uint8 average wrapped around even
for small values (the simplifier distributed the running sum over the tap's
clamp to 255).  Full-range inputs, non-dividing shapes, both schedules.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from topi.generic import nn as generic
from topi.nn.pooling import adaptive_pool, global_pool, pool1d, pool2d
from topi.testing import nn_ref as ref
from topi.x86.pooling import schedule_pool

INT_TYPES = ["uint8", "int8", "int16", "uint16", "int32", "uint32"]


def _full_range(shape, dtype, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _exact(sched, out, X, x, want):
    got = check_build(sched(out), [X, out], lambda *_: want, inputs=[x], rtol=0, atol=0)[0]
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("cip", [True, False])
@pytest.mark.parametrize("case", [
    {"kernel": 3, "stride": 2, "padding": (1, 1, 1, 1), "shape": (1, 3, 9, 8)},
    {"kernel": (2, 3), "stride": (1, 2), "padding": (0, 1, 1, 2), "shape": (2, 2, 7, 13)},
    {"kernel": 3, "stride": 1, "padding": 0, "shape": (1, 5, 11, 67)},  # 67: not a multiple of any lane count
])
def test_avg_pool2d_integer_full_range(dtype, cip, case):
    x = _full_range(case["shape"], dtype)
    X = te.placeholder(x.shape, dtype, "X")
    kw = {"kernel": case["kernel"], "stride": case["stride"], "padding": case["padding"], "pool_type": "avg",
          "count_include_pad": cip}
    want = ref.pool2d_python(x, dilation=1, **kw)
    P = pool2d(X, dilation=1, **kw)
    assert P.dtype == dtype
    _exact(schedule_pool, P, X, x, want)


def test_avg_pool2d_uint8_bright_image():
    # the case of the issue: an all-255 image (every window sum > 255) averages to 255
    x = np.full((1, 3, 10, 10), 255, np.uint8)
    X = te.placeholder(x.shape, "uint8", "X")
    P = pool2d(X, 3, 3, 1, 0, "avg")
    _exact(schedule_pool, P, X, x, np.full((1, 3, 3, 3), 255, np.uint8))
    _exact(generic.schedule_pool, P, X, x, np.full((1, 3, 3, 3), 255, np.uint8))


def test_avg_pool2d_truncates_toward_zero():
    x = np.array([[[[-3, -4], [0, 0]], [[3, 4], [0, 0]]]], np.int8)  # means -7/4 and 7/4
    X = te.placeholder(x.shape, "int8", "X")
    P = pool2d(X, 2, 2, 1, 0, "avg")
    _exact(schedule_pool, P, X, x, np.array([[[[-1]], [[1]]]], np.int8))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32"])
def test_avg_pool_integer_matches_onnx_reference(dtype):
    from onnx import TensorProto, helper
    from onnx.helper import np_dtype_to_tensor_dtype
    from onnx.reference import ReferenceEvaluator

    x = _full_range((1, 2, 9, 11), dtype, seed=3)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 2], strides=[2, 3],
                            pads=[1, 0, 1, 1], count_include_pad=1)
    t = np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", t, x.shape)],
                              [helper.make_tensor_value_info("y", t, None)])
    want = ReferenceEvaluator(helper.make_model(graph)).run(None, {"x": x})[0]
    assert TensorProto.FLOAT != t
    X = te.placeholder(x.shape, dtype, "X")
    P = pool2d(X, (3, 2), (2, 3), 1, (1, 0, 1, 1), "avg", count_include_pad=True)
    _exact(schedule_pool, P, X, x, want)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int32"])
def test_avg_pool1d_global_adaptive_integer(dtype):
    x = _full_range((2, 3, 13, 29), dtype, seed=1)
    X = te.placeholder(x.shape, dtype, "X")
    _exact(schedule_pool, global_pool(X, "avg"), X, x, ref.global_pool_python(x, "avg"))
    _exact(schedule_pool, adaptive_pool(X, (4, 6), "avg"), X, x, ref.adaptive_pool_python(x, (4, 6), "avg"))
    x1 = x[0]
    X1 = te.placeholder(x1.shape, dtype, "X1")
    P = pool1d(X1, 4, 3, 1, (2, 1), "avg", count_include_pad=False)
    _exact(schedule_pool, P, X1, x1, ref.pool1d_python(x1, 4, 3, 1, (2, 1), "avg", False, "NCW", False))


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
def test_max_pool_integer_unchanged(dtype):
    x = _full_range((1, 3, 9, 8), dtype, seed=2)
    X = te.placeholder(x.shape, dtype, "X")
    P = pool2d(X, 3, 2, 1, 1, "max")
    _exact(schedule_pool, P, X, x, ref.pool2d_python(x, 3, 2, 1, 1, "max"))


# ------------------------------------------------- max pool with indices ---
MPI_CASES = [  # kernel, stride, dilation, padding, ceil_mode, shape
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False, (1, 3, 13, 17)),
    ((3, 2), (2, 3), (1, 2), (1, 1, 2, 0), True, (2, 3, 9, 11)),
    ((2, 2), (1, 1), (1, 1), (0, 0, 0, 0), False, (1, 2, 5, 37)),
    ((5, 5), (3, 3), (1, 1), (2, 2, 2, 2), True, (1, 1, 7, 7)),
]


def _mpi_check(sched, x, case, order):
    from topi.nn.max_pool_indices import max_pool2d_with_indices

    kernel, stride, dilation, padding, ceil_mode, _ = case
    X = te.placeholder(x.shape, str(x.dtype), "X")
    V, ind = max_pool2d_with_indices(X, kernel, stride, dilation, padding, ceil_mode, order)
    want = ref.max_pool2d_with_indices_python(x, kernel, stride, dilation, padding, ceil_mode, order)
    got = check_build(sched([V, ind]), [X, V, ind], lambda *_: want, inputs=[x], rtol=0, atol=0)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert got[1].dtype == np.int64
    return got


def _default_sched(outs):
    return te.create_schedule([t.op for t in outs])


@pytest.mark.parametrize("case", MPI_CASES)
@pytest.mark.parametrize("order", [0, 1])
@pytest.mark.parametrize("sched", ["x86", "default"])
def test_max_pool_with_indices(case, order, sched):
    from topi.x86.pooling import schedule_max_pool_with_indices

    # few distinct values: many ties, which the first maximum in scan order wins
    x = np.random.default_rng(5).integers(-3, 3, case[-1]).astype("float32")
    _mpi_check(schedule_max_pool_with_indices if sched == "x86" else _default_sched, x, case, order)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int32", "float64"])
def test_max_pool_with_indices_dtypes_and_pad_ties(dtype):
    from topi.x86.pooling import schedule_max_pool_with_indices

    # zeros in uint8 and the type's lowest value elsewhere equal the pad value: a real tap wins the tie
    lo = np.iinfo(dtype).min if dtype != "float64" else -np.inf
    x = np.full((1, 2, 6, 19), lo, dtype)
    x[0, 1] = np.random.default_rng(6).integers(0, 4, (6, 19))
    for order in (0, 1):
        _, i = _mpi_check(schedule_max_pool_with_indices, x, MPI_CASES[0], order)
        assert (i >= 0).all()


def test_max_pool_with_indices_numpy_reference_matches_onnx():
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    x = np.random.default_rng(7).integers(0, 4, (2, 3, 9, 11)).astype("float32")
    for order in (0, 1):
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2], strides=[2, 3],
                                pads=[1, 1, 2, 0], dilations=[1, 2], ceil_mode=1, storage_order=order)
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", 1, x.shape)],
                              [helper.make_tensor_value_info("y", 1, None), helper.make_tensor_value_info("i", 7, None)])
        want = ReferenceEvaluator(helper.make_model(g)).run(None, {"x": x})
        got = ref.max_pool2d_with_indices_python(x, (3, 2), (2, 3), (1, 2), (1, 1, 2, 0), "inside", order)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_max_pool_with_indices_bad_storage_order():
    from topi.nn.max_pool_indices import max_pool2d_with_indices

    with pytest.raises(ValueError, match="max_pool2d_with_indices: argument 'storage_order' must be 0 or 1, got 2"):
        max_pool2d_with_indices(te.placeholder((1, 1, 4, 4)), 2, 2, storage_order=2)
