"""Classic TVM behaviours a user hit (issue 10), each written as the user's code.

Truth values of ``==`` on axes, compute_at across cache stages, InferBound of
short splits, ``fuse()`` of no axes, and shape expressions solved at call time.
"""

import numpy as np
import pytest

import codegen
import schedule
import te
from helpers import check_build


# 1. truth value of ==: identity on axes and variables ------------------------
def test_leaf_iter_vars_compare_as_classic_tvm():
    A = te.placeholder((64, 64), name="A")
    C = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], x_factor=8, y_factor=8)
    assert tuple(s[C].leaf_iter_vars) == (xo, yo, xi, yi)
    assert tuple(s[C].leaf_iter_vars) != (xo, yo, yi, xi)
    assert yi in s[C].leaf_iter_vars
    assert C.op.axis[0] not in s[C].leaf_iter_vars
    assert s[C].leaf_iter_vars.index(xi) == 2
    assert s[C].op.axis[0] == C.op.axis[0]
    assert not (xo == yo) and xo != yo
    assert xo.same_as(xo) and not xo.same_as(yo)
    assert (xo == None) is False  # noqa: E711 (a list may hold anything)


def test_vars_compare_by_identity_other_exprs_still_raise():
    n, m = te.var("n"), te.var("n")
    assert n == n and n != m and [m, n].index(n) == 1
    for e in (n == 1, n + 1 == n, n < m):
        with pytest.raises(TypeError, match="te.all / te.any"):
            bool(e)


# 3. InferBound of short splits ----------------------------------------------
@pytest.mark.parametrize("kw", [{"factor": 32}, {"nparts": 32}])
def test_short_split_reports_tight_extent(kw):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], **kw)
    bounds = schedule.InferBound(s)
    short = xi if "factor" in kw else xo
    other = xo if "factor" in kw else xi
    assert int(bounds[short].extent) == 8 and int(bounds[other].extent) == 1
    assert int(short.dom.extent) == 8
    text = str(schedule.lower(s, [A, B]))
    assert "32" not in text and "likely" not in text
    check_build(s, [A, B], lambda a: a + 1)


# 4. fuse() of no axes ---------------------------------------------------------
def test_fuse_of_no_axes_on_0d_stage_is_a_singleton():
    A = te.placeholder((4,), name="A")
    T = te.compute((), lambda: A[1] + A[2], name="T")
    s = te.create_schedule(T.op)
    x = s[T].fuse()
    assert x.var.name == "singleton" and int(x.dom.extent) == 1
    assert list(s[T].leaf_iter_vars) == [x]
    s[T].parallel(x)
    a = np.arange(4, dtype="float32")
    check_build(s, [A, T], lambda a: np.array(a[1] + a[2], dtype="float32"), inputs=[a])


# 2. compute_at across cache stages ------------------------------------------------
def _cached_rowsum(n):
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n, n), lambda i, j: te.sum(A[i, k] * A[j, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    BB = s.cache_write(B, "local")
    return A, B, AA, BB, s


@pytest.mark.parametrize("n", [64, 50])
@pytest.mark.parametrize("deeper", [False, True])
def test_cache_read_computed_at_the_cache_writes_consumer(n, deeper):
    A, B, AA, BB, s = _cached_rowsum(n)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[BB].compute_at(s[B], xi if deeper else xo)
    s[AA].compute_at(s[B], xo)  # B reads B.local, which reads A.local
    text = str(schedule.lower(s, [A, B]))
    assert "allocate A.local" in text
    check_build(s, [A, B], lambda a: a @ a.T, rtol=1e-4, atol=1e-4)


def test_cache_read_outside_its_consumers_loop_is_refused():
    A, B, AA, BB, s = _cached_rowsum(16)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[AA].compute_at(s[B], xo)  # but B.local stays at root, before B's loops
    with pytest.raises(schedule.ScheduleError,
                       match=r"'A.local'.*consumer 'B.local' is computed outside that loop \(at root\)"):
        schedule.lower(s, [A, B])


# 5. symbolic extents inside shape expressions ------------------------------------
def test_shape_expression_var_is_solved_from_the_array():
    m, l = te.var("m"), te.var("l")
    A = te.placeholder((8 * m, l), name="A")
    B = te.compute((8 * m, l), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=3)
    f = codegen.build(s, [A, B])  # m is in no argument list
    for rows, cols in [(16, 3), (8, 5), (0, 2)]:
        check_build(s, [A, B], lambda a: a * 2 + 1, var_values={"m": rows // 8, "l": cols}, module=f)
    with pytest.raises(ValueError, match=r"argument 0 'A' of shape \(17, 3\).*integer m.*\(8 \* m\)"):
        f(np.zeros((17, 3), "float32"), np.zeros((17, 3), "float32"))
    with pytest.raises(ValueError, match=r"argument 1 'B'.*\(8 \* m\) is 16 with l = 3, m = 2, got 24"):
        f(np.zeros((16, 3), "float32"), np.zeros((24, 3), "float32"))


def test_shape_solver_binds_several_entries():
    from te.shape import bind_shape, shape_text

    m, n = te.var("m"), te.var("n")
    bound: dict = {}
    bind_shape([(shape_text(m * n + 1), 7, "A"), (shape_text(n), 3, "B")], bound)
    assert bound == {"n": 3, "m": 2}
    with pytest.raises(ValueError, match="cannot determine m, n"):
        bind_shape([(shape_text(m * n), 6, "A")], {})


def test_shape_expression_survives_export(tmp_path):
    import shutil

    if shutil.which("cc") is None:
        pytest.skip("exporting a library needs a C linker (cc)")
    m = te.var("m")
    A = te.placeholder((8 * m,), name="A")
    B = te.compute((8 * m,), lambda i: A[i] + 1.0, name="B")
    f = codegen.build(te.create_schedule(B.op), [A, B])
    f.export_library(str(tmp_path / "f.so"))
    g = codegen.load_module(str(tmp_path / "f.so"))
    a = np.arange(24, dtype="float32")
    b = np.zeros_like(a)
    g(a, b)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(ValueError, match=r"integer m gives \(8 \* m\) = 25"):
        g(np.zeros(25, "float32"), np.zeros(25, "float32"))


@pytest.mark.parametrize("shape", ["m // 2", "m * n"])
def test_shape_expression_no_array_determines_is_refused_at_build(shape):
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m // 2 if shape == "m // 2" else m * n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match=r"symbolic extent '[mn]'.*does not determine.*argument list"):
        codegen.build(te.create_schedule(B.op), [A, B])
    f = codegen.build(te.create_schedule(B.op), [A, B, m] + ([n] if shape == "m * n" else []))
    assert f is not None
