"""Hybrid script (classic ``te.hybrid``): parsed to a scheduled stage, built, and run as Python."""

import inspect

import numpy as np
import pytest

import tessera as tvm
from tessera import te
from schedule.hybrid import HybridError

RNG = np.random.default_rng(0)


def run(s, args, inputs, out_shapes):
    f = tvm.build(s, args)
    outs = [tvm.nd.array(np.zeros(shape, dtype)) for shape, dtype in out_shapes]
    f(*[tvm.nd.array(x) for x in inputs], *outs)
    return [o.numpy() for o in outs]


@te.hybrid.script
def outer_product(a, b):
    c = output_tensor((a.shape[0], b.shape[0]), a.dtype)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            c[i, j] = a[i] * b[j]
    return c


def test_axes_schedule_like_a_compute_stage():
    a = te.placeholder((37,), name="a")
    b = te.placeholder((19,), name="b")
    c = outer_product(a, b)
    assert [iv.var.name for iv in c.op.axis] == ["i", "j"]
    s = te.create_schedule(c.op)
    io, ii = s[c].split(c.op.axis[0], 8)  # 37 rows: a guarded tail
    jo, ji = s[c].split(c.op.axis[1], 4)
    s[c].reorder(io, jo, ii, ji)
    s[c].parallel(io)
    s[c].vectorize(ji)
    text = str(tvm.lower(s, [a, b, c], simple_mode=True))
    assert "parallel (i.outer" in text
    an, bn = RNG.random(37, "float32"), RNG.random(19, "float32")
    (got,) = run(s, [a, b, c], [an, bn], [((37, 19), "float32")])
    np.testing.assert_allclose(got, np.outer(an, bn), rtol=1e-6)
    np.testing.assert_allclose(outer_product(an, bn), np.outer(an, bn), rtol=1e-6)


@te.hybrid.script
def kinds(a, n):
    d = output_tensor((16,), "int32")
    e = output_tensor((16,), "int32")
    for i in parallel(16):
        d[i] = a[i] * n
    for j in vectorize(16):
        e[j] = a[j] + 1
    for k in unroll(16):
        if k % 2 == 0:
            e[k] = -1 if k < 8 else e[k]
        else:
            e[k] = e[k] + popcount(a[k])
    return d, e


def test_loop_kinds_conditions_and_two_outputs():
    a = te.placeholder((16,), "int32", name="a")
    d, e = kinds(a, 3)
    kinds_seen = [s.kind for s in d.op.body.stmts[:3]]
    assert kinds_seen == ["parallel", "vectorized", "unrolled"]
    s = te.create_schedule(d.op)
    an = RNG.integers(-50, 50, 16).astype("int32")
    got = run(s, [a, d, e], [an], [((16,), "int32")] * 2)
    want = kinds(an, 3)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@te.hybrid.script
def blur(a):
    b = output_tensor((30, 30), "float32")
    for i in range(2, 32):  # a loop that does not start at 0
        for j in range(2, 32):
            s = 0.0  # a variable: one element realized inside the loop over j
            for di in range(3):
                for dj in const_range(3):
                    s += a[i - di, j - dj]
            b[i - 2, j - 2] = s / 9.0
    return b


@te.hybrid.script
def row_sums(a):
    out = output_tensor((a.shape[0],), a.dtype)
    for i in range(a.shape[0]):
        tmp = allocate((a.shape[1],), a.dtype)
        for j in range(a.shape[1]):
            tmp[j] = sqrt(a[i, j]) + max(a[i, j], 0.5)
        acc = 0.0
        for j in range(a.shape[1]):
            acc += tmp[j]
        out[i] = acc
    return out


@pytest.mark.parametrize("script,shape,out", [(blur, (32, 32), (30, 30)), (row_sums, (7, 9), (7,))])
def test_variables_buffers_and_intrinsics(script, shape, out):
    a = te.placeholder(shape, "float32", name="a")
    b = script(a)
    s = te.create_schedule(b.op)
    an = RNG.random(shape, "float32")
    (got,) = run(s, [a, b], [an], [(out, "float32")])
    np.testing.assert_allclose(got, script(an), rtol=1e-5)


N, M = 3, 8
WEIGHTS = [[1, 2], [3, 4]]


@te.hybrid.script
def weighted(a):
    c = output_tensor((M,), "float32")
    d = outer_product(a, a)  # another script, inlined
    for i in range(M):
        c[i] = d[i, i] * WEIGHTS[1][N - 2]
    return c


def test_captured_constants_and_inlined_script():
    a = te.placeholder((M,), name="a")
    c = weighted(a)
    assert c.op.input_tensors == [a]
    s = te.create_schedule(c.op)
    an = RNG.random(M, "float32")
    (got,) = run(s, [a, c], [an], [((M,), "float32")])
    np.testing.assert_allclose(got, an * an * 4, rtol=1e-6)


def test_stages_before_and_after():
    a = te.placeholder((20,), name="a")
    b = te.placeholder((20,), name="b")
    c = te.compute((20,), lambda x: a[x] + b[x], name="c")

    @te.hybrid.script
    def scale(x):
        y = output_tensor((20,), "float32")
        for i in range(20):
            y[i] = x[i] * i
        return y

    d = scale(c)
    e = te.compute((20,), lambda x: d[x] + 1.0, name="e")
    s = te.create_schedule(e.op)
    an, bn = RNG.random(20, "float32"), RNG.random(20, "float32")
    (got,) = run(s, [a, b, e], [an, bn], [((20,), "float32")])
    np.testing.assert_allclose(got, (an + bn) * np.arange(20) + 1, rtol=1e-6)


def test_build_writes_the_schedule_back_as_a_script(tmp_path):
    a = te.placeholder((10,), name="a")
    b = te.placeholder((6,), name="b")
    c = outer_product(a, b)
    s = te.create_schedule(c.op)
    s[c].split(c.op.axis[0], 4)
    module = te.hybrid.build(s, [a, b], [c])
    assert "for i_outer in range(3):" in module.src
    an, bn = RNG.random(10, "float32"), RNG.random(6, "float32")
    np.testing.assert_allclose(module(an, bn), np.outer(an, bn), rtol=1e-6)
    path = str(tmp_path / "outer.py")
    module.save(path)
    again = te.hybrid.HybridModule()
    again.load(path)
    c2 = again(a, b)  # parsed again: a stage of its own
    (got,) = run(te.create_schedule(c2.op), [a, b, c2], [an, bn], [((10, 6), "float32")])
    np.testing.assert_allclose(got, np.outer(an, bn), rtol=1e-6)


def _line_of(func, text):
    lines, first = inspect.getsourcelines(func)
    return first + next(k for k, line in enumerate(lines) if text in line)


def test_unsupported_construct_names_it_and_its_line():
    def spin(a):
        b = output_tensor((4,), "float32")
        i = 0
        while i < 4:
            b[i] = a[i]
        return b

    a = te.placeholder((4,), name="a")
    line = _line_of(spin, "while")
    with pytest.raises(HybridError, match=rf"'spin' \(.*test_hybrid.py, line {line}\): unsupported construct 'While'"):
        te.hybrid.script(spin)(a)


def test_bad_scripts_are_refused_with_the_reason():
    def unknown(a):
        b = output_tensor((4,), "float32")
        for i in range(4):
            b[i] = helper(a[i])  # noqa: F821
        return b

    def overrun(a):
        b = output_tensor((4,), "float32")
        for i in range(4):
            assert i < 3, "too far"
            b[i] = a[i]
        return b

    def no_return(a):
        b = output_tensor((4,), "float32")
        b[0] = a[0]

    a = te.placeholder((4,), name="a")
    with pytest.raises(HybridError, match="call of 'helper', which is neither an intrinsic"):
        te.hybrid.script(unknown)(a)
    with pytest.raises(HybridError, match="assert 'i < 3' .*does not hold at compile time"):
        te.hybrid.script(overrun)(a)
    with pytest.raises(HybridError, match="must return its output tensors"):
        te.hybrid.script(no_return)(a)


def test_script_runs_as_python_without_touching_its_globals():
    from tessera.te.hybrid.runtime import HYBRID_GLOBALS

    an = np.arange(4, dtype="float32")
    np.testing.assert_allclose(outer_product(an, an), np.outer(an, an))
    assert not set(HYBRID_GLOBALS) & set(outer_product.__globals__)
