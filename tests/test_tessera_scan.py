"""``te.scan``: recurrences over the time axis, lowered to a loop over ``scan.idx``."""

import numpy as np
import pytest

import tessera as tvm
from schedule import ScheduleError
from tessera import te


def _cumsum(m=None, n=None):
    m = te.var("m") if m is None else m
    n = te.var("n") if n is None else n
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    return X, s_init, s_update, te.scan(s_init, s_update, s_state, inputs=[X])


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (17, 33), (64, 100)])
def test_cumulative_sum_matches_numpy(shape):
    X, _, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    _, xi = s[s_update].split(s_update.op.axis[1], factor=8)
    s[s_update].vectorize(xi)
    f = tvm.build(s, [X, s_scan], "llvm", name="myscan")
    x = np.random.default_rng(0).uniform(size=shape).astype("float32")
    out = tvm.nd.array(np.zeros(shape, "float32"))
    f(tvm.nd.array(x), out)
    tvm.testing.assert_allclose(out.numpy(), np.cumsum(x, axis=0), rtol=1e-5)


def test_cumulative_sum_lowers_to_a_loop_over_the_scan_axis():
    X, _, _, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    text = str(tvm.lower(s, [X, s_scan], simple_mode=True))
    assert text == (
        "produce scan {\n"
        "  produce compute {\n"
        "    for (i, 0, n) {\n"
        "      scan[i] = X[i]\n"
        "    }\n"
        "  }\n"
        "  for (scan.idx, 0, (m - 1)) {\n"
        "    produce compute {\n"
        "      for (i, 0, n) {\n"
        "        scan[(((scan.idx + 1) * n) + i)] = (scan[((scan.idx * n) + i)] + X[(((scan.idx + 1) * n) + i)])\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n"
    )


@pytest.mark.parametrize("shape", [(5, 31), (9, 64), (3, 1)])
def test_multi_stage_scan_with_compute_at(shape):
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    s_scan = te.scan(s_init, s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, _ = s[s2].split(s2.op.axis[1], factor=32)
    s[s1].compute_at(s[s2], xo)
    text = str(tvm.lower(s, [X, s_scan]))
    assert "allocate s1[float32 * 32]" in text
    f = tvm.build(s, [X, s_scan])
    x = np.random.default_rng(1).uniform(size=shape).astype("float32")
    out = np.zeros(shape, "float32")
    f(x, out)
    want = x.copy()
    for t in range(1, shape[0]):
        want[t] = want[t - 1] * 2 + x[t]
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_intermediate_step_stage_at_the_scan_axis():
    m, n = 6, 10
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    s1 = te.compute((m, n), lambda t, i: state[t - 1, (i + 1) % n] * 0.5, name="s1")
    upd = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="upd")
    res = te.scan(init, upd, state, inputs=[X])
    s = te.create_schedule(res.op)
    f = tvm.build(s, [X, res])
    x = np.random.default_rng(2).uniform(size=(m, n)).astype("float32")
    out = np.zeros((m, n), "float32")
    f(x, out)
    want = x.copy()
    for t in range(1, m):
        want[t] = np.roll(want[t - 1], -1) * 0.5 + x[t]
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_two_states_advance_together():
    m, n, l = te.var("m"), te.var("n"), te.var("l")
    X = te.placeholder((m, n), name="X")
    st1, st2 = te.placeholder((m, n)), te.placeholder((m, l))
    init1 = te.compute((1, n), lambda _, i: X[0, i])
    init2 = te.compute((1, l), lambda _, i: 0.0)
    up1 = te.compute((m, n), lambda t, i: st1[t - 1, i] + X[t, i])
    up2 = te.compute((m, l), lambda t, i: st2[t - 1, i] + st1[t - 1, 0])
    r1, r2 = te.scan([init1, init2], [up1, up2], [st1, st2], inputs=[X])
    s = te.create_schedule(r1.op)
    f = tvm.build(s, [X, r1, r2])
    x = np.random.default_rng(3).uniform(size=(7, 4)).astype("float32")
    o1, o2 = np.zeros((7, 4), "float32"), np.zeros((7, 3), "float32")
    f(x, o1, o2)
    want1 = np.cumsum(x, axis=0)
    want2 = np.zeros((7, 3), "float32")
    for t in range(1, 7):
        want2[t] = want2[t - 1] + want1[t - 1, 0]
    np.testing.assert_allclose(o1, want1, rtol=1e-5)
    np.testing.assert_allclose(o2, want2, rtol=1e-5)


def test_longer_init_and_a_consumer_after_the_scan():
    m, n = 9, 5
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((2, n), lambda t, i: X[t, i])
    upd = te.compute((m, n), lambda t, i: state[t - 1, i] + state[t - 2, i])
    fib = te.scan(init, upd, state, inputs=[X], name="fib")
    total = te.compute((n,), lambda i: fib[m - 1, i] * 1.0, name="total")
    s = te.create_schedule(total.op)
    f = tvm.build(s, [X, total])
    x = np.random.default_rng(4).uniform(size=(m, n)).astype("float32")
    out = np.zeros(n, "float32")
    f(x, out)
    seq = [x[0], x[1]]
    for _ in range(2, m):
        seq.append(seq[-1] + seq[-2])
    np.testing.assert_allclose(out, seq[-1], rtol=1e-5)


def test_scan_errors():
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n + 1), lambda _, i: 0.0)
    upd = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])
    with pytest.raises(ValueError, match="dimension 1 differs"):
        te.scan(init, upd, state, inputs=[X])
    with pytest.raises(ValueError, match="as many init"):
        te.scan([init, init], [upd], [state])
    good = te.compute((1, n), lambda _, i: X[0, i])
    res = te.scan(good, upd, state, inputs=[X])
    s = te.create_schedule(res.op)
    with pytest.raises(ScheduleError, match="cannot compute_root it, it is the update of a te.scan"):
        s[upd].compute_root()
    with pytest.raises(ScheduleError, match="cannot compute_inline it, it is the init of a te.scan"):
        s[good].compute_inline()
    with pytest.raises(ScheduleError, match="cannot compute_inline a ScanOp stage"):
        s[res].compute_inline()


def test_step_stage_inlined_into_the_update():
    m, n = 5, 6
    X = te.placeholder((m, n), name="X")
    st = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    s1 = te.compute((m, n), lambda t, i: st[t - 1, i] * 2, name="s1")
    up = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="up")
    r = te.scan(init, up, st, inputs=[X])
    s = te.create_schedule(r.op)
    with pytest.raises(ScheduleError, match="it is the step of a te.scan"):
        s[s1].compute_root()
    s[s1].compute_inline()
    assert "s1" not in str(tvm.lower(s, [X, r]))
    f = tvm.build(s, [X, r])
    x = np.random.default_rng(5).uniform(size=(m, n)).astype("float32")
    out = np.zeros((m, n), "float32")
    f(x, out)
    want = x.copy()
    for t in range(1, m):
        want[t] = want[t - 1] * 2 + x[t]
    np.testing.assert_allclose(out, want, rtol=1e-5)
