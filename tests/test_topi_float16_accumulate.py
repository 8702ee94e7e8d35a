"""float16 reductions accumulate in float32 and round once (``topi.accumulate``).

Each changed compute (dense, matmul, batch_matmul, dense_pack, softmax,
log_softmax, sum, mean, prod) runs over long rows of float16 values whose
float16 running sum is several units in the last place away from the float32
sum, and is compared with numpy computed in float32 and rounded to float16
once (for softmax: onnx's reference, numpy's float16 ``exp(x - max) / sum``).
Extents do not divide the schedules' split factors.  Sums of values on a coarse
grid are exact in float32 whatever the order, so those results must match bit
for bit; the softmax exponentials may differ by one unit in the last place.
"""

import numpy as np
import pytest
from helpers import check_build

import schedule
import te
import topi
from codegen.target import Target
from topi import x86
from topi.accumulate import accumulate_dtype, round_once

F16 = np.float16


def grid(shape, seed=0, lo=0.5, hi=1.5, step=1 / 64):
    """float16 values on a grid of ``step`` in ``[lo, hi]``: their float32 sums are exact."""
    rng = np.random.default_rng(seed)
    n = round((hi - lo) / step)
    return (lo + rng.integers(0, n + 1, shape) * step).astype(F16)


def running_f16(terms: np.ndarray) -> np.ndarray:
    """The sum over the last axis accumulated in float16, rounding every step."""
    return np.add.accumulate(terms.astype(F16), axis=-1, dtype=F16)[..., -1]


def ulps(a, b) -> int:
    """The largest distance between two float16 arrays in units in the last place."""
    ia = np.asarray(a, F16).view(np.int16).astype(np.int64)
    ib = np.asarray(b, F16).view(np.int16).astype(np.int64)
    return int(np.max(np.abs(ia - ib)))


def build_run(s, args, inputs, want, exact=True, atol=1e-7):
    tol = {"rtol": 0, "atol": 0} if exact else {"rtol": 1e-3, "atol": atol}
    (got,) = check_build(s, args, lambda *a: want, inputs=inputs, **tol)
    assert got.dtype == F16
    return got


# ----------------------------------------------------------------- products ---
M, N, K = 5, 7, 3001  # K past 2048, where float16 steps by 2


def test_dense_float16_accumulates_in_float32():
    a, w, b = grid((M, K), 1, step=1 / 16), grid((N, K), 2, step=1 / 16), grid((N,), 3)
    want = ((a.astype(np.float32) @ w.astype(np.float32).T).astype(F16) + b).astype(F16)
    naive = running_f16(a[:, None, :].astype(np.float32) * w[None].astype(np.float32)) + b
    assert ulps(naive, want) >= 4  # the test can tell the two apart
    A, W, B = te.placeholder((M, K), "float16", "A"), te.placeholder((N, K), "float16", "W"), \
        te.placeholder((N,), "float16", "B")
    D = topi.nn.dense(A, W, B)
    assert D.dtype == "float16"
    with Target("llvm"):
        s = x86.schedule_dense(D)
    build_run(s, [A, W, B, D], [a, w, b], want)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_matmul_float16_accumulates_in_float32(ta, tb):
    a, b = grid((M, K), 4, step=1 / 16), grid((K, N), 5, step=1 / 16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(F16)
    A = te.placeholder((K, M) if ta else (M, K), "float16", "A")
    B = te.placeholder((N, K) if tb else (K, N), "float16", "B")
    C = topi.nn.matmul(A, B, transpose_a=ta, transpose_b=tb)
    with Target("llvm"):
        s = x86.schedule_matmul(C)
    build_run(s, [A, B, C], [a.T.copy() if ta else a, b.T.copy() if tb else b], want)


@pytest.mark.parametrize("tb", [True, False])
def test_batch_matmul_float16_accumulates_in_float32(tb):
    x, y = grid((3, M, K), 6, step=1 / 16), grid((1, N, K), 7, step=1 / 16)
    want = np.matmul(x.astype(np.float32), y.astype(np.float32).transpose(0, 2, 1)).astype(F16)
    naive = running_f16(x[:, :, None, :].astype(np.float32) * y[:, None].astype(np.float32))
    assert ulps(naive, want) >= 4
    X = te.placeholder((3, M, K), "float16", "X")
    Y = te.placeholder((1, N, K) if tb else (1, K, N), "float16", "Y")
    C = topi.nn.batch_matmul(X, Y, transpose_b=tb)
    with Target("llvm"):
        s = x86.schedule_batch_matmul(C)
    build_run(s, [X, Y, C], [x, y if tb else y.transpose(0, 2, 1).copy()], want)


def lowered(dtype, make, sched, cfg=None):
    X, Y = te.placeholder((2, M, 67), dtype, "X"), te.placeholder((2, N, 67), dtype, "Y")
    C = make(X, Y)
    with Target("llvm"):
        s = sched(C) if cfg is None else sched(C, cfg(dtype))
        return str(schedule.lower(s, [X, Y, C]))


def test_float16_config_of_the_graph_key_schedules():
    """The graph keys a float16 product by float16 (its inputs' dtype); the schedule agrees,
    and the float16 kernel is as vectorized as the float32 one, rounded once per output."""
    cfg = lambda dt: x86.default_batch_matmul_config(2, M, N, 67, dt)
    texts = {dt: lowered(dt, topi.nn.batch_matmul, x86.schedule_batch_matmul, cfg)
             for dt in ("float32", "float16")}
    assert texts["float16"].count("ramp(") == texts["float32"].count("ramp(") > 0
    assert "allocate T_batch_matmul.rf[float32" in texts["float16"]
    assert "= float16(T_batch_matmul[" in texts["float16"]  # rounded in the copy-out


def test_dense_pack_float16_rounds_in_the_unpacking():
    a, w = grid((3, K), 8, step=1 / 16), grid((N, K), 9, step=1 / 16)
    want = (a.astype(np.float32) @ w.astype(np.float32).T).astype(F16)
    A, W = te.placeholder((3, K), "float16", "A"), te.placeholder((N, K), "float16", "W")
    with Target("llvm"):
        D = x86.dense_pack(A, W)
        s = x86.schedule_dense_pack(D)
    build_run(s, [A, W, D], [a, w], want)


# ----------------------------------------------------------------- softmax ---
def softmax_ref(x: np.ndarray, log: bool = False) -> np.ndarray:
    """onnx's reference in float16: numpy rounds each op, sums in float32 and rounds once."""
    tmp = x - x.max(axis=-1, keepdims=True)
    e = np.exp(tmp)
    s = e.sum(axis=-1, keepdims=True)
    assert s.dtype == F16
    return tmp - np.log(s) if log else e / s


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_float16_sums_in_float32(log):
    x = np.random.default_rng(10).uniform(-1, 0, (3, 4099)).astype(F16)
    want = softmax_ref(x, log)
    tmp = x - x.max(axis=-1, keepdims=True)
    e = np.exp(tmp)
    s_naive = running_f16(e)[:, None]
    naive = tmp - np.log(s_naive) if log else e / s_naive
    assert ulps(naive, want) >= 3
    X = te.placeholder(x.shape, "float16", "X")
    Y = (topi.nn.log_softmax if log else topi.nn.softmax)(X)
    with Target("llvm"):
        s = x86.schedule_softmax(Y)
        lanes = Target.current().lanes("float16")  # 32 with AVX-512, 16 with AVX2
        assert f"float16x{lanes}(exp2" in str(schedule.lower(s, [X, Y]))  # the rows stay vectorized
    got = build_run(s, [X, Y], [x], want, exact=False)
    assert ulps(got, want) <= 1


# -------------------------------------------------------------- reductions ---
@pytest.mark.parametrize("axis", [-1, 0, None], ids=str)
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_sum_mean_float16_accumulate_in_float32(name, axis):
    x = grid((5, 3001), 11) if axis != 0 else grid((3001, 5), 11)
    x32 = x.astype(np.float32)
    want = (np.sum(x32, axis=axis) if name == "sum" else np.sum(x32, axis=axis) / np.float32(3001 * (5 if axis is None else 1))).astype(F16)
    if name == "mean":
        assert np.array_equal(want, np.mean(x, axis=axis))  # numpy's own float16 mean
    if axis == -1:
        assert ulps(running_f16(x) / (1 if name == "sum" else F16(3001)), want) >= 4
    X = te.placeholder(x.shape, "float16", "X")
    Y = getattr(topi, name)(X, axis)
    assert Y.dtype == "float16"
    with Target("llvm"):
        s = x86.schedule_reduce(Y)
    build_run(s, [X, Y], [x], want)


def test_prod_float16_accumulates_in_float32():
    x = np.ones((4, 41), F16)
    x[:, ::2] = F16(1.0009765625)  # 1 + 2**-10: float16 products round at every step
    x[:, 1::2] = F16(0.99951171875)  # 1 - 2**-11
    want = np.prod(x.astype(np.float32), axis=-1).astype(F16)
    naive = np.multiply.accumulate(x, axis=-1, dtype=F16)[:, -1]
    assert ulps(naive, want) >= 4
    X = te.placeholder(x.shape, "float16", "X")
    Y = topi.prod(X, -1)
    with Target("llvm"):
        s = x86.schedule_reduce(Y)
    build_run(s, [X, Y], [x], want)


# --------------------------------------------------------- float32 unchanged ---
def test_float32_computes_have_no_rounding_stage():
    A, W = te.placeholder((4, 9), name="A"), te.placeholder((5, 9), name="W")
    for out in (topi.nn.dense(A, W), topi.nn.batch_matmul(te.placeholder((1, 4, 9), name="X"),
                                                          te.placeholder((1, 5, 9), name="Y")),
                topi.sum(A, 1)):
        assert out.op.reduce_axis and not out.op.attrs and out.dtype == "float32"
    sm = topi.nn.softmax(A).op.input_tensors
    assert all(t.dtype == "float32" for t in sm)
    assert accumulate_dtype("float32") == "float32" and accumulate_dtype("float16") == "float32"
    assert round_once(A, "float32") is A
    with pytest.raises(ValueError, match="cannot round"):
        round_once(te.placeholder((3,), "int32", "I"), "float16")


# -------------------------------------------------------------- layer norm ---
def norm_ref(x, g, b, rms: bool, mean=None):
    """The normalisation in float32 from float16 data, rounded once (``mean``: a given row mean)."""
    x32, eps = x.astype(np.float32), np.float32(1e-5)
    if rms:
        y = x32 / np.sqrt(np.mean(x32 * x32, axis=-1, keepdims=True) + eps) * g.astype(np.float32)
        return y.astype(F16)
    m = x32.mean(axis=-1, keepdims=True) if mean is None else mean
    c = x32 - m
    y = c / np.sqrt(np.mean(c * c, axis=-1, keepdims=True) + eps) * g.astype(np.float32) + b.astype(np.float32)
    return y.astype(F16)


@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
def test_layer_norm_float16_normalises_in_float32(rms):
    from topi.nn.layer_norm import layer_norm, rms_norm
    from topi.x86.layer_norm import schedule_layer_norm

    x, g, b = grid((5, 3001), 12), grid((3001,), 13), grid((3001,), 14)
    want = norm_ref(x, g, b, rms)
    if not rms:  # a float16 running sum puts the row mean several units off
        mean16 = (running_f16(x) / F16(3001)).astype(np.float32)[:, None]
        assert ulps(norm_ref(x, g, b, rms, mean16), want) >= 3
    X, G, B = (te.placeholder(a.shape, "float16", n) for a, n in ((x, "X"), (g, "G"), (b, "B")))
    Y = rms_norm(X, G, 1e-5) if rms else layer_norm(X, G, B, 1e-5)
    args, inputs = ([X, G, Y], [x, g]) if rms else ([X, G, B, Y], [x, g, b])
    with Target("llvm"):
        s = schedule_layer_norm(Y)
        lanes = Target.current().lanes("float16")  # 32 with AVX-512, 16 with AVX2
        assert f"float16x{lanes}(" in str(schedule.lower(s, args))  # the output rows stay vectorized
    # outputs near 0 (where + beta cancels) carry float32 rounding of the statistics
    got = build_run(s, args, inputs, want, exact=False, atol=1e-5)
    big = np.abs(want) > 1e-2
    assert ulps(got[big], want[big]) <= 1
