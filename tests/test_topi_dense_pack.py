"""topi.x86.dense_pack: the block-packed dense against numpy, on guarded buffers.

Shapes are chosen so that nothing divides: ``N`` not a multiple of the block
``bn`` (the last weight block is zero-padded), ``K`` not a multiple of the
reduction unroll ``ku``, ``M`` not a multiple of the register tile ``mr``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from tune.autotvm.config import with_values
from topi.x86.dense import (
    default_dense_pack_config, dense_pack, pack_dense_weight_numpy, schedule_dense_pack,
)

TOL = dict(rtol=1e-4, atol=1e-4)


def _data(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


def _check_packed(M, N, K, knobs=None, bias=False, relu=False):
    """dense_pack over a numpy-packed weight (+ bias, relu), compared with ``x @ w.T``."""
    cfg = default_dense_pack_config(M, N, K)
    cfg = with_values(cfg, **knobs) if knobs else cfg
    bn = cfg["bn"].val
    x, w, b = _data(M, K, seed=1), _data(N, K, seed=2), _data(N, seed=3)
    wp = pack_dense_weight_numpy(w, bn)
    X = te.placeholder((M, K), name="X")
    W = te.placeholder(wp.shape, name="W")
    B = te.placeholder((N,), name="B")
    out = dense_pack(X, W, bias=B if bias else None, units=N)
    if relu:
        out = te.compute(out.shape, lambda i, j: te.max(out[i, j], te.const(0.0, "float32")),
                         name="relu", tag="elemwise")
    args, inputs = ([X, W, B], [x, wp, b]) if bias else ([X, W], [x, wp])

    def want(*_):
        y = x.astype("float64") @ w.T.astype("float64") + (b if bias else 0)
        return np.maximum(y, 0) if relu else y

    check_build(schedule_dense_pack(out, cfg), args + [out], want, inputs=inputs, **TOL)


@pytest.mark.parametrize("M", [1, 3, 64])
@pytest.mark.parametrize("N,K", [(1000, 2048), (1001, 2047), (7, 5)])
def test_dense_pack(M, N, K):
    _check_packed(M, N, K)


@pytest.mark.parametrize("bn,mr,ku", [(16, 1, 1), (16, 4, 3), (32, 6, 4), (32, 2, 8), (64, 1, 4), (128, 3, 2)])
def test_dense_pack_configs(bn, mr, ku):
    knobs = {"bn": bn, "mr": mr, "ku": ku}
    _check_packed(5, 37, 13, knobs)
    _check_packed(17, 130, 19, knobs)


@pytest.mark.parametrize("M,N,K", [(101, 40, 17), (61, 100, 9), (13, 37, 5)])
def test_dense_pack_few_blocks_many_rows(M, N, K):
    """Fewer weight blocks than FEW_BLOCKS: row tiles are the parallel tasks (each running every
    block) once there are enough of them, (block, row tile) tasks otherwise; a row tail either way."""
    from topi.x86.dense import FEW_BLOCKS

    cfg = default_dense_pack_config(M, N, K)
    assert -(-N // cfg["bn"].val) < FEW_BLOCKS and M % cfg["mr"].val
    _check_packed(M, N, K, bias=True, relu=True)


@pytest.mark.parametrize("M,N,K,knobs", [
    (29, 37, 13, {"bn": 16, "mr": 6, "ku": 4}),   # rows padded 29 -> 30, a 5-lane column tail
    (23, 130, 19, {"bn": 24, "mr": 4, "ku": 2}),  # 6 blocks (< FEW_BLOCKS): row tiles parallel
    (17, 200, 8, {"bn": 32, "mr": 1, "ku": 8}),
    (151, 130, 11, {"bn": 16, "mr": 6, "ku": 2}),  # 9 blocks, M > N, the data within L2: blocks parallel
    (1367, 130, 50, {"bn": 16, "mr": 6, "ku": 2}),  # data beyond L2, the weight within: row tiles parallel
    (4, 40, 9, {"bn": 8, "mr": 5, "ku": 3}),      # one tile, fewer rows than mr: not padded
])
def test_dense_pack_fused_epilogue(M, N, K, knobs):
    """``fuse``: the product runs in the epilogue's tiles (no packed product at root), its rows
    padded to whole tiles reading the last data row; bias, relu and a residual add applied in
    the tile, against numpy on shapes no tile divides."""
    from topi.x86.dense import PACK_TEMPLATE, dense_workload, fused_rows
    from tune.autotvm.config import make_config

    cfg = make_config(dense_workload(M, N, K, "float32", PACK_TEMPLATE), {**knobs, "fuse": True})
    x, w, b, r = _data(M, K, seed=1), _data(N, K, seed=2), _data(N, seed=3), _data(M, N, seed=4)
    wp = pack_dense_weight_numpy(w, knobs["bn"])
    X, W = te.placeholder((M, K), name="X"), te.placeholder(wp.shape, name="W")
    B, R = te.placeholder((N,), name="B"), te.placeholder((M, N), name="R")
    y = dense_pack(X, W, bias=B, units=N, cfg=cfg)
    product = y.op.input_tensors[0].op.input_tensors[0].op
    assert int(product.axis[0].dom.extent) == fused_rows(M, cfg) == (M if M <= knobs["mr"] else
                                                                     -(-M // knobs["mr"]) * knobs["mr"])
    out = te.compute(y.shape, lambda i, j: te.max(y[i, j], te.const(0.0, "float32")) + R[i, j], name="res",
                     tag="elemwise")
    s = schedule_dense_pack(out, cfg)
    assert s[product].attach_type != "root"
    want = np.maximum(x.astype("float64") @ w.T.astype("float64") + b, 0) + r
    check_build(s, [X, W, B, R, out], lambda *_: want, inputs=[x, wp, b, r], **TOL)


@pytest.mark.parametrize("M", [1, 9])
def test_dense_pack_epilogue(M):
    _check_packed(M, 1001, 67, bias=True, relu=True)


@pytest.mark.parametrize("M,N,K", [(1, 1000, 2048), (3, 7, 5), (10, 50, 33)])
def test_dense_pack_plain_weight(M, N, K):
    """A plain ``[N, K]`` weight is packed in a stage with the config's ``bn``."""
    X = te.placeholder((M, K), name="X")
    W = te.placeholder((N, K), name="W")
    out = dense_pack(X, W)
    assert tuple(int(d) for d in out.shape) == (M, N)
    check_build(schedule_dense_pack(out), [X, W, out], lambda x, w: x @ w.T, **TOL)


def test_pack_dense_weight_numpy_layout():
    w = _data(37, 5)
    wp = pack_dense_weight_numpy(w, 16)
    assert wp.shape == (3, 5, 16) and wp.flags.c_contiguous
    for n in range(48):
        want = w[n] if n < 37 else np.zeros(5, np.float32)
        np.testing.assert_array_equal(wp[n // 16, :, n % 16], want)


def test_dense_pack_units_default_is_packed_width():
    X = te.placeholder((2, 8), name="X")
    W = te.placeholder((3, 8, 16), name="W")
    assert tuple(int(d) for d in dense_pack(X, W).shape) == (2, 48)


def test_dense_pack_errors():
    X = te.placeholder((2, 8), name="X")
    with pytest.raises(ValueError, match=r"dense_pack: data has K=8 but the packed weight \(3, 9, 16\) has K=9"):
        dense_pack(X, te.placeholder((3, 9, 16), name="W"))
    with pytest.raises(ValueError, match=r"dense_pack: units=49 must be in \[1, 48\]"):
        dense_pack(X, te.placeholder((3, 8, 16), name="W"), units=49)
    with pytest.raises(ValueError, match="dense_pack: argument 'weight' must have rank 3"):
        dense_pack(X, te.placeholder((3, 8, 16, 1), name="W"))


def test_dense_pack_rule_rows_and_unroll():
    """AVX2's tiles: 6 rows of two vectors, five where the tail tile would be thin (13 rows as
    5 + 5 + 3), three vectors by four for a few rows; ``ku`` divides K (4, 2 or 1)."""
    from codegen.target import Target

    with Target("llvm -mcpu=x86-64-v3"):
        tile = {M: (default_dense_pack_config(M, 1536, 384)["bn"].val, default_dense_pack_config(M, 1536, 384)["mr"].val)
                for M in (3, 7, 12, 13, 50, 197)}
        assert tile == {3: (24, 4), 7: (24, 4), 12: (16, 6), 13: (16, 5), 50: (16, 6), 197: (16, 6)}
        assert [default_dense_pack_config(197, 64, K)["ku"].val for K in (384, 198, 197)] == [4, 2, 1]
        assert default_dense_pack_config(1, 1000, 1001)["ku"].val == 1


def test_fused_order_rule():
    """Row tiles outermost with few blocks, or M > N where the weight stays in L2 and the data does
    not, or neither the data nor the output does over a short K; weight blocks outermost otherwise."""
    from topi.x86.dense import rows_outer

    assert rows_outer(3136, 96, 384, 6, 16)  # ConvNeXt-T's 384 -> 96: 6 blocks
    assert rows_outer(3136, 384, 96, 24, 16)  # Swin-T's 96 -> 384: a 147 KB weight
    assert rows_outer(784, 768, 192, 48, 16)  # 192 -> 768: 600 KB of data, weight and output
    assert not rows_outer(197, 192, 768, 12, 16)  # DeiT-tiny's 768 -> 192: a 150 KB output
    assert not rows_outer(197, 192, 192, 12, 16)  # 192 -> 192: 150 KB of data
    assert not rows_outer(784, 192, 768, 12, 16)  # K = 768
    assert not rows_outer(197, 1536, 384, 96, 16)  # M <= N
