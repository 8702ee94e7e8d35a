"""topi.nn operators: numeric checks against the numpy references (and torch),
every x86 and generic schedule on shapes that do not divide their blocks, and
one test per error message.

Operators are imported from their modules (``topi.nn.dense.dense``): the lazy
package attribute ``topi.nn.dense`` is shadowed by the submodule of the same
name once that is imported.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from topi.generic import nn as generic
from topi.nn.batch_matmul import batch_matmul
from topi.nn.batch_norm import batch_norm
from topi.nn.dense import dense, matmul
from topi.nn.lrn import lrn
from topi.nn.pooling import adaptive_pool, global_pool, pool1d, pool2d
from topi.nn.softmax import log_softmax, softmax
from topi.testing import nn_ref as ref
from topi import x86
from topi.x86.batch_matmul import schedule_batch_matmul
from topi.x86.dense import default_dense_config, schedule_dense, schedule_matmul
from topi.x86.pooling import UNROLL_TAPS, schedule_adaptive_pool, schedule_pool
from topi.x86.softmax import default_softmax_config, max_lanes, schedule_softmax
from tune.autotvm.config import with_values

TOL = dict(rtol=1e-4, atol=1e-5)


def check(sched, out, ins, fn, **kw):
    """Schedule ``out`` with ``sched`` and compare with ``fn`` on guarded buffers."""
    return check_build(sched(out), list(ins) + [out], fn, **{**TOL, **kw})


def relu(t):
    return te.compute(t.shape, lambda *i: te.max(t[i], te.const(0, t.dtype)), name="relu", tag="elemwise")


# ------------------------------------------------------------------ dense ---
@pytest.mark.parametrize("M,N,K", [(1, 13, 40), (1, 37, 64), (5, 7, 24), (7, 50, 33), (66, 101, 72)])
@pytest.mark.parametrize("sched", [schedule_dense, generic.schedule_dense])
def test_dense(M, N, K, sched):
    A = te.placeholder((M, K), name="A")
    W = te.placeholder((N, K), name="W")
    b = te.placeholder((N,), name="b")
    check(sched, dense(A, W), [A, W], ref.dense_python)
    check(sched, relu(dense(A, W, b)), [A, W, b], lambda a, w, c: np.maximum(ref.dense_python(a, w, c), 0))


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_matmul_transposes(ta, tb):
    A = te.placeholder((9, 5) if not ta else (5, 9), name="A")
    B = te.placeholder((5, 11) if not tb else (11, 5), name="B")

    def fn(a, b):
        return (a.T if ta else a) @ (b.T if tb else b)

    check(schedule_matmul, matmul(A, B, ta, tb), [A, B], fn)


def test_dense_config_knobs():
    assert default_dense_config(1, 1000, 2048)["mr"].val == 1
    cfg = default_dense_config(6, 10, 16)
    A = te.placeholder((6, 16), name="A")
    W = te.placeholder((10, 16), name="W")
    out = dense(A, W)
    check(lambda o: schedule_dense(o, with_values(cfg, mr=2, nr=3, nb=6)), out, [A, W], ref.dense_python)


@pytest.mark.parametrize("bx,by,tb", [(3, 3, True), (1, 4, True), (4, 1, False), (2, 2, False)])
@pytest.mark.parametrize("sched", [schedule_batch_matmul, generic.schedule_batch_matmul])
def test_batch_matmul(bx, by, tb, sched):
    X = te.placeholder((bx, 5, 12), name="X")
    Y = te.placeholder((by, 7, 12) if tb else (by, 12, 7), name="Y")
    out = batch_matmul(X, Y, transpose_b=tb)
    check(sched, out, [X, Y], lambda x, y: ref.batch_matmul_python(x, y, transpose_b=tb))


def test_dense_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    a, w, b = (rng.standard_normal(s).astype("float32") for s in ((3, 20), (9, 20), (9,)))
    want = torch.nn.functional.linear(*(torch.from_numpy(x) for x in (a, w, b))).numpy()
    np.testing.assert_allclose(ref.dense_python(a, w, b), want, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- pooling ---
POOL_CASES = [
    dict(kernel=3, stride=2, padding=1),
    dict(kernel=(3, 2), stride=(2, 3), dilation=(1, 2), padding=(1, 0, 2, 1)),
    dict(kernel=(2, 3), stride=2, padding=(0, 1), ceil_mode=True),
    dict(kernel=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel=(3, 3), stride=(1, 1), dilation=(2, 2), padding=(2, 2)),
]


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool2d(case, pool_type, layout):
    kw = dict(POOL_CASES[case], pool_type=pool_type, layout=layout)
    X = te.placeholder((2, 3, 13, 11) if layout == "NCHW" else (2, 13, 11, 3), name="X")
    check(schedule_pool, pool2d(X, **kw), [X], lambda x: ref.pool2d_python(x, **kw))


@pytest.mark.parametrize("case", range(len(POOL_CASES)))
@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d_blocked(case, pool_type):
    """The graph's NCHW[8]c layout: the x86 schedule's chain per output row."""
    kw = dict(POOL_CASES[case], pool_type=pool_type)
    X = te.placeholder((2, 3, 13, 11, 8), name="X")

    def want(x):
        n, cb, h, w, c = x.shape
        y = ref.pool2d_python(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * c, h, w), **kw)
        return y.reshape(n, cb, c, *y.shape[2:]).transpose(0, 1, 3, 4, 2)

    check(schedule_pool, pool2d(X, **kw, layout="NCHWc"), [X], want)


@pytest.mark.parametrize("kernel, unrolled", [(3, True), (UNROLL_TAPS + 1, False)])
def test_pool_window_taps_unrolled(kernel, unrolled):
    """A window of at most ``UNROLL_TAPS`` taps per axis is unrolled: each tap's border clamp
    is then fixed for the whole row (ResNet-50's 3x3 stride-2 max pool, NCHW16c 112x112, ran
    0.26 -> 0.09 ms, the tap loop having spent ~14 instructions per vector max); a wider
    window keeps its loops.  Numerics against numpy on a shape that no vector divides."""
    import schedule

    kw = dict(kernel=kernel, stride=2, padding=1, pool_type="max")
    X = te.placeholder((1, 2, 2 * kernel + 3, 11, 8), name="X")
    Y = pool2d(X, **kw, layout="NCHWc")
    text = str(schedule.lower(schedule_pool(Y), [X, Y]))
    assert (("for (rh" not in text and "for (rw" not in text) if unrolled else ("for (rh" in text)), text

    def want(x):
        n, cb, h, w, c = x.shape
        y = ref.pool2d_python(x.transpose(0, 1, 4, 2, 3).reshape(n, cb * c, h, w), **kw)
        return y.reshape(n, cb, c, *y.shape[2:]).transpose(0, 1, 3, 4, 2)

    check(schedule_pool, Y, [X], want)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool2d_generic(pool_type):
    kw = dict(POOL_CASES[3], pool_type=pool_type)
    X = te.placeholder((1, 2, 9, 10), name="X")
    check(generic.schedule_pool, pool2d(X, **kw), [X], lambda x: ref.pool2d_python(x, **kw))


@pytest.mark.parametrize("ceil_mode,cip", [(False, True), (True, True), (True, False)])
def test_pool_vs_torch(ceil_mode, cip):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = np.random.default_rng(3).standard_normal((2, 3, 10, 13)).astype("float32")
    t = torch.from_numpy(x)
    ceil_mode = "inside" if ceil_mode else False  # torch's rounding up (classic TVM's True keeps every window)
    got = ref.pool2d_python(x, 3, 2, 1, 1, "avg", ceil_mode, "NCHW", cip)
    np.testing.assert_allclose(got, F.avg_pool2d(t, 3, 2, 1, bool(ceil_mode), cip).numpy(), rtol=1e-5, atol=1e-6)
    got = ref.pool2d_python(x, 3, 2, 2, 1, "max", ceil_mode)
    np.testing.assert_allclose(got, F.max_pool2d(t, 3, 2, 1, 2, bool(ceil_mode)).numpy())
    got = ref.pool1d_python(x[0], 3, 2, 1, 1, "avg", ceil_mode, "NCW", cip)
    np.testing.assert_allclose(got, F.avg_pool1d(t[0], 3, 2, 1, bool(ceil_mode), cip).numpy(), rtol=1e-5)
    got = ref.adaptive_pool_python(x, (4, 5), "avg")
    np.testing.assert_allclose(got, F.adaptive_avg_pool2d(t, (4, 5)).numpy(), rtol=1e-5, atol=1e-6)
    got = ref.adaptive_pool_python(x, (3, 6), "max")
    np.testing.assert_allclose(got, F.adaptive_max_pool2d(t, (3, 6)).numpy())


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool1d(pool_type):
    kw = dict(kernel=3, stride=2, dilation=2, padding=(2, 1), pool_type=pool_type, ceil_mode=True)
    X = te.placeholder((2, 3, 17), name="X")
    check(schedule_pool, pool1d(X, **kw), [X], lambda x: ref.pool1d_python(x, **kw))


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_global_pool(pool_type, layout):
    X = te.placeholder((2, 19, 7, 5) if layout == "NCHW" else (2, 7, 5, 19), name="X")
    out = global_pool(X, pool_type, layout)
    check(schedule_pool, out, [X], lambda x: ref.global_pool_python(x, pool_type, layout))
    check(generic.schedule_pool, out, [X], lambda x: ref.global_pool_python(x, pool_type, layout))


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("size,layout", [((4, 3), "NCHW"), ((5, 7), "NHWC"), (3, "NCW")])
def test_adaptive_pool(pool_type, size, layout):
    shape = {"NCHW": (2, 3, 11, 9), "NHWC": (2, 11, 9, 3), "NCW": (2, 3, 10)}[layout]
    X = te.placeholder(shape, name="X")
    out = adaptive_pool(X, size, pool_type, layout)
    check(schedule_adaptive_pool, out, [X], lambda x: ref.adaptive_pool_python(x, size, pool_type, layout))


# ------------------------------------------------------- softmax and norms ---
@pytest.mark.parametrize("shape,axis", [((5, 37), -1), ((3, 4, 19), -1), ((40, 1000), 1), ((3, 6, 5), 1),
                                        ((7, 1001), -1), ((65, 40), -1), ((9, 1024), -1)])
@pytest.mark.parametrize("fn,ref_fn", [(softmax, ref.softmax_python), (log_softmax, ref.log_softmax_python)])
def test_softmax(shape, axis, fn, ref_fn):
    X = te.placeholder(shape, name="X")
    out = fn(X, axis)
    check(schedule_softmax, out, [X], lambda x: ref_fn(x, axis), rtol=1e-5, atol=1e-6)
    check(generic.schedule_softmax, out, [X], lambda x: ref_fn(x, axis), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("rb,vec", [(1, 8), (4, 16), (8, 32), (16, 64)])
def test_softmax_configs(rb, vec):
    X = te.placeholder((70, 1000), name="X")
    cfg = with_values(default_softmax_config(70, 1000), rb=rb, vec=vec)
    check(lambda o: schedule_softmax(o, cfg), softmax(X), [X], lambda x: ref.softmax_python(x, 1),
          rtol=1e-5, atol=1e-6)


def test_softmax_max_lanes():
    assert [max_lanes(c) for c in (1000, 1024, 1001, 12, 7)] == [40, 64, None, 4, None]


def test_softmax_vs_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((4, 7, 3)).astype("float32") * 30
    for axis in (0, 1, -1):
        t = torch.from_numpy(x)
        np.testing.assert_allclose(ref.softmax_python(x, axis), torch.softmax(t, axis).numpy(), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ref.log_softmax_python(x, axis), torch.log_softmax(t, axis).numpy(),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis,center,scale", [(1, True, True), (3, False, True), (-1, True, False)])
def test_batch_norm(axis, center, scale):
    shape = (2, 5, 3, 4)
    X = te.placeholder(shape, name="X")
    c = shape[axis]
    g, b, m, v = (te.placeholder((c,), name=n) for n in "gbmv")
    out = batch_norm(X, g, b, m, v, axis, 1e-3, center, scale)[0]
    used = [t for t, keep in ((g, scale), (b, center), (m, True), (v, True)) if keep]
    rng = np.random.default_rng(5)
    params = {t.name: rng.random(c).astype("float32") + 0.5 for t in (g, b, m, v)}
    x = rng.standard_normal(shape).astype("float32")

    def fn(x, *_):
        p = [params[n] for n in "gbmv"]
        return ref.batch_norm_python(x, *p, axis=axis, epsilon=1e-3, center=center, scale=scale)[0]

    check(generic.default_schedule, out, [X] + used, fn, inputs=[x] + [params[t.name] for t in used])


def test_batch_norm_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 4, 3, 3)).astype("float32")
    g, b, m, v = (rng.random(4).astype("float32") + 0.5 for _ in range(4))
    want = torch.nn.functional.batch_norm(*(torch.from_numpy(a) for a in (x, m, v, g, b)), eps=1e-5).numpy()
    np.testing.assert_allclose(ref.batch_norm_python(x, g, b, m, v)[0], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("size", [1, 3, 4])
def test_lrn(size):
    X = te.placeholder((2, 6, 3, 5), name="X")
    out = lrn(X, size, 1, 1e-2, 0.75, 2.0)
    check(generic.schedule_lrn, out, [X], lambda x: ref.lrn_python(x, size, 1, 2.0, 1e-2, 0.75))
    for shape, axis in (((2, 7, 3, 13), 1), ((1, 5, 21), 1), ((3, 4, 11), 2)):  # widths dividing no vector
        X = te.placeholder(shape, name="X")
        out = lrn(X, size, axis, 1e-2, 0.75, 2.0)
        check(x86.schedule_lrn, out, [X], lambda x: ref.lrn_python(x, size, axis, 2.0, 1e-2, 0.75))
    if size % 2 == 0:
        return  # torch centres even windows one channel lower than ONNX/Caffe
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(7).standard_normal((2, 6, 3, 5)).astype("float32")
    want = torch.nn.functional.local_response_norm(torch.from_numpy(x), size, 1e-2, 0.75, 2.0).numpy()
    np.testing.assert_allclose(ref.lrn_python(x, size, 1, 2.0, 1e-2, 0.75), want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------- errors ---
def test_dense_k_mismatch():
    with pytest.raises(ValueError, match=r"dense: .*'data' \(4, 8\).*'weight' \(3, 9\)"):
        dense(te.placeholder((4, 8)), te.placeholder((3, 9)))


def test_dense_bias_shape():
    with pytest.raises(ValueError, match=r"dense: argument 'bias' \(4\)"):
        dense(te.placeholder((4, 8)), te.placeholder((3, 8)), te.placeholder((4,)))


def test_batch_matmul_errors():
    with pytest.raises(ValueError, match=r"batch_matmul: the batch extents .*\(2, 3, 4\).*\(3, 5, 4\)"):
        batch_matmul(te.placeholder((2, 3, 4)), te.placeholder((3, 5, 4)))
    with pytest.raises(ValueError, match=r"batch_matmul: the reduction extents"):
        batch_matmul(te.placeholder((2, 3, 4)), te.placeholder((2, 5, 6)))


def test_pool_kernel_too_large():
    with pytest.raises(ValueError, match=r"pool2d: the kernel \(extent 7.*padded input \(extent 6\).*\(1, 2, 4, 9\)"):
        pool2d(te.placeholder((1, 2, 4, 9)), (7, 3), 1, 1, 1)


def test_pool_bad_arguments():
    X = te.placeholder((1, 2, 8, 8))
    with pytest.raises(ValueError, match="pool2d: argument 'padding'"):
        pool2d(X, 2, 2, 1, (1, 2, 3))
    with pytest.raises(ValueError, match="pool2d: argument 'pool_type'"):
        pool2d(X, 2, 2, 1, 0, "min")
    with pytest.raises(ValueError, match="global_pool: layout 'NCW'"):
        global_pool(X, "max", "NCW")


def test_axis_out_of_range():
    X = te.placeholder((3, 4))
    with pytest.raises(ValueError, match="softmax: axis=2 is out of range for a tensor of rank 2"):
        softmax(X, 2)
    with pytest.raises(ValueError, match="lrn: axis=-3"):
        lrn(X, 3, -3)
    g = te.placeholder((5,))
    with pytest.raises(ValueError, match=r"batch_norm: argument 'gamma' \(5\)"):
        batch_norm(X, g, g, g, g, axis=1)
