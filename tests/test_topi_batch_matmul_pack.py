"""topi.x86.batch_matmul: y block-packed per call (or read in place), the dense_pack kernel per
slice, against numpy on guarded buffers; shapes where nothing divides (N by the block, M by the
register tile, K by the unroll or the vector), both operand layouts, a broadcast batch and a fused
epilogue."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi.x86.batch_matmul import (
    BATCH_MATMUL_PACK, PACK_MIN_ROWS, PACK_TEMPLATE, PACK_Y, TEMPLATE, batch_matmul, batch_matmul_pack_rule,
    batch_matmul_template, schedule_batch_matmul, y_in_place,
)
from tune.autotvm.config import make_config
from topi.x86.dense import dense_workload

TOL = dict(rtol=1e-4, atol=1e-4)


def _ref(x, y, ta=False, tb=True):
    x = x.transpose(0, 2, 1) if ta else x
    y = y.transpose(0, 2, 1) if tb else y
    return np.matmul(x.astype("float64"), y.astype("float64"))


def _placeholders(B, M, N, K, ta=False, tb=True, by=None):
    X = te.placeholder((B, K, M) if ta else (B, M, K), name="X")
    Y = te.placeholder(((by or B), N, K) if tb else ((by or B), K, N), name="Y")
    return X, Y


@pytest.mark.parametrize("B,M,N,K", [(3, 13, 37, 19), (2, 197, 20, 17), (1, 9, 5, 3), (4, 8, 64, 197)])
@pytest.mark.parametrize("tb", [True, False])
def test_packed_batch_matmul(B, M, N, K, tb):
    X, Y = _placeholders(B, M, N, K, tb=tb)
    out = batch_matmul(X, Y, transpose_b=tb)
    assert out.op.input_tensors[0].op.tag == BATCH_MATMUL_PACK
    check_build(schedule_batch_matmul(out), [X, Y, out], lambda x, y: _ref(x, y, tb=tb), **TOL)


def test_packed_batch_matmul_transpose_a_broadcast_and_epilogue():
    X, Y = _placeholders(3, 11, 21, 10, ta=True, by=1)
    mm = batch_matmul(X, Y, transpose_a=True)
    out = te.compute(mm.shape, lambda b, i, j: te.max(mm[b, i, j], te.const(0.0, "float32")), name="relu",
                     tag="elemwise")
    check_build(schedule_batch_matmul(out), [X, Y, out], lambda x, y: np.maximum(_ref(x, y, ta=True), 0), **TOL)


@pytest.mark.parametrize("bn,mr,ku", [(8, 1, 1), (16, 5, 3), (24, 4, 8)])
def test_packed_batch_matmul_configs(bn, mr, ku):
    B, M, N, K = 2, 17, 30, 13
    X, Y = _placeholders(B, M, N, K)
    cfg = make_config(dense_workload(M, N, K, "float32", PACK_TEMPLATE), {"bn": bn, "mr": mr, "ku": ku})
    out = batch_matmul(X, Y, cfg=cfg)
    check_build(schedule_batch_matmul(out, cfg), [X, Y, out], _ref, **TOL)


def test_few_rows_take_the_plain_operands():
    assert batch_matmul_template(PACK_MIN_ROWS - 1, 64, "float32") == TEMPLATE
    assert batch_matmul_template(PACK_MIN_ROWS - 1, 63, "float32") == PACK_TEMPLATE  # K not in vectors
    assert batch_matmul_template(PACK_MIN_ROWS, 64, "float32") == PACK_TEMPLATE
    X, Y = _placeholders(2, 3, 10, 16)
    out = batch_matmul(X, Y)
    assert out.op.tag == topi.tag.BATCH_MATMUL
    check_build(schedule_batch_matmul(out), [X, Y, out], _ref, **TOL)


def test_packed_batch_matmul_float16_accumulates_in_float32():
    X = te.placeholder((2, 9, 300), name="X", dtype="float16")
    Y = te.placeholder((2, 12, 300), name="Y", dtype="float16")
    out = batch_matmul(X, Y)
    assert out.dtype == "float16"
    rng = np.random.default_rng(0)
    x, y = (rng.uniform(0, 1, t.shape).astype("float16") for t in (X, Y))
    check_build(schedule_batch_matmul(out), [X, Y, out], lambda x, y: _ref(x, y).astype("float16"),
                inputs=[x, y], rtol=2e-3, atol=2e-2)


def _stage_tags(out) -> set:
    seen, stack = set(), [out]
    while stack:
        t = stack.pop()
        seen.add(getattr(t.op, "tag", None))
        stack.extend(t.op.input_tensors)
    return seen


@pytest.mark.parametrize("B,M,N,K,by", [(3, 3, 64, 197, None), (2, 7, 32, 13, None), (4, 1, 16, 5, 1),
                                        (2, 50, 64, 33, None), (2, 4, 64, 9, None)])
def test_y_read_in_place(B, M, N, K, by):
    """transpose_b=False, bn dividing N, few row tiles: y's rows are the blocks' rows, no packing
    stage; a broadcast y and a fused epilogue."""
    X, Y = _placeholders(B, M, N, K, tb=False, by=by)
    mm = batch_matmul(X, Y, transpose_b=False)
    cfg = mm.op.input_tensors[0].op.attrs["config"]
    assert y_in_place(M, N, K, cfg["bn"].val, cfg["mr"].val, False)
    assert PACK_Y not in _stage_tags(mm)
    out = te.compute(mm.shape, lambda b, i, j: te.max(mm[b, i, j], te.const(0.0, "float32")), name="relu",
                     tag="elemwise")
    check_build(schedule_batch_matmul(out), [X, Y, out], lambda x, y: np.maximum(_ref(x, y, tb=False), 0),
                **TOL)


def test_y_packed_where_not_in_place():
    assert not y_in_place(3, 64, 197, 16, 6, True)  # transpose_b: y's rows run along K
    assert not y_in_place(3, 60, 197, 16, 6, False)  # a partial block
    assert not y_in_place(197, 64, 197, 16, 6, False)  # 33 row tiles over a 50 KB slice
    assert y_in_place(128, 64, 128, 16, 6, False)  # a 32 KB slice stays in L1
    X, Y = _placeholders(2, 197, 64, 197, tb=False)
    out = batch_matmul(X, Y, transpose_b=False)
    assert PACK_Y in _stage_tags(out)
    check_build(schedule_batch_matmul(out), [X, Y, out], lambda x, y: _ref(x, y, tb=False), **TOL)


@pytest.mark.parametrize("M,bn", [(1, 32), (3, 32), (4, 32), (197, 16)])
def test_pack_rule_takes_a_bn_dividing_n(M, bn):
    """AVX2: 24 x 4 (three vectors) for a few rows would pad N = 64 to 72; 32 x 3 or 32 x 2 do not."""
    from codegen.target import create

    workload = dense_workload(M, 64, 197, "float32", PACK_TEMPLATE)
    knobs = batch_matmul_pack_rule(workload, create("llvm -mcpu=x86-64-v3"))
    assert knobs["bn"] == bn


def test_few_rows_without_transpose_b_take_the_packed_product():
    assert batch_matmul_template(PACK_MIN_ROWS - 1, 64, "float32", transpose_b=False) == PACK_TEMPLATE
