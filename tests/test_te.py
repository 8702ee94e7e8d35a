"""Expression building: nodes, dtypes, validation and the shapes of compute/reduce."""

import math

import numpy as np
import pytest

import te
from te import expr as E
from helpers import check_build


@pytest.fixture
def A():
    return te.placeholder((4, 5), name="A")


# operators build nodes, never bools ------------------------------------------
@pytest.mark.parametrize(
    "op, cls",
    [
        (lambda a, b: a + b, "Add"), (lambda a, b: a - b, "Sub"), (lambda a, b: a * b, "Mul"),
        (lambda a, b: a // b, "FloorDiv"), (lambda a, b: a % b, "FloorMod"),
        (lambda a, b: a == b, "EQ"), (lambda a, b: a != b, "NE"), (lambda a, b: a < b, "LT"),
        (lambda a, b: a <= b, "LE"), (lambda a, b: a > b, "GT"), (lambda a, b: a >= b, "GE"),
    ],
)
def test_operators_build_nodes(op, cls):
    i, j = te.var("i"), te.var("j")
    e = op(i, j)
    assert isinstance(e, E.Expr)
    assert type(e).__name__ == cls


def test_reflected_operators_with_python_numbers():
    i = te.var("i")
    for e in (1 + i, 1 - i, 2 * i, 7 // i, 7 % i, -i):
        assert isinstance(e, E.Expr) and e.dtype == "int32"


def test_float_division_builds_div():
    x = te.placeholder((3,), name="X")[0]
    e = x / 2.0
    assert isinstance(e, E.Expr) and type(e).__name__ == "Div" and e.dtype == "float32"


def test_comparisons_are_bool_dtype():
    i = te.var("i")
    assert (i < 3).dtype == "bool"
    assert (i == 3).dtype == "bool"


@pytest.mark.parametrize("make", [lambda i: i == 1, lambda i: i < 2, lambda i: i + 1,
                                  lambda i: te.all(i < 2, i > 0)])
def test_bool_of_expr_raises_with_advice(make):
    e = make(te.var("i"))
    with pytest.raises(TypeError, match=r"te\.all.*te\.any|te\.if_then_else"):
        bool(e)
    with pytest.raises(TypeError, match="te.if_then_else"):
        if e:  # noqa: SIM108
            pass


def test_exprs_are_hashable_and_identity_equal():
    i, j = te.var("i"), te.var("i")
    assert len({i, j}) == 2  # two loops named i are different loops
    d = {i: 1}
    assert d[i] == 1 and j not in d


def test_compute_inside_lambda_keeps_equality_deferred(A):
    B = te.compute((4, 5), lambda i, j: te.if_then_else(i == j, A[i, j], 0.0), name="B")
    s = te.create_schedule(B.op)
    a = np.random.default_rng(0).random((4, 5)).astype("float32")
    check_build(s, [A, B], lambda a: np.where(np.eye(4, 5, dtype=bool), a, 0), inputs=[a])


# dtypes -------------------------------------------------------------------------
def test_dtype_promotion():
    i = te.var("i")
    x = te.placeholder((3,), name="X")[0]
    assert (x + 1).dtype == "float32"
    assert (x + 1.5).dtype == "float32"
    assert (i + 1.5).dtype == "float32"
    assert (i + x).dtype == "float32"
    assert (x.astype("float64") + x).dtype == "float64"
    assert (i.astype("int8") + i).dtype == "int32"
    assert (i.astype("int64") + i).dtype == "int64"
    assert (te.var("n", "int8") + 1).dtype == "int8"  # Python numbers adopt the other side's dtype


def test_astype():
    x = te.placeholder((3,), name="X")[0]
    for d in ("float16", "float64", "int8", "int32", "uint8", "bool"):
        assert x.astype(d).dtype == d
    assert x.astype("float32") is x


def test_astype_unknown_dtype_raises():
    x = te.placeholder((3,), name="X")[0]
    with pytest.raises(ValueError, match="unknown dtype"):
        x.astype("float31")


def test_const():
    assert te.const(3).dtype == "int32"
    assert te.const(2.0).dtype == "float32"
    assert te.const(1, "int8").dtype == "int8"
    assert te.const(1.5, "float64").dtype == "float64"
    assert te.const(True).dtype == "bool"
    assert int(te.const(7)) == 7
    assert float(te.const(2.5)) == 2.5


def test_const_rejects_non_numbers():
    with pytest.raises(TypeError, match="constant"):
        te.const("three")


def test_max_min_value():
    assert te.min_value("int8").value == -128
    assert te.max_value("uint8").value == 255
    assert te.max_value("int32").value == 2**31 - 1
    # classic TVM (and Halide's Float(32).max()) give the largest finite float
    assert float(te.max_value("float32")) == float(np.finfo(np.float32).max)
    assert float(te.min_value("float32")) == float(np.finfo(np.float32).min)


# conditionals -----------------------------------------------------------------
def test_if_then_else_all_any_build():
    i = te.var("i")
    sel = te.if_then_else(i < 2, 1.0, 2.0)
    assert sel.dtype == "float32"
    assert te.all(i < 2, i > 0).dtype == "bool"
    assert te.any(i < 2, i > 0, i == 7).dtype == "bool"


def test_if_then_else_all_any_numeric():
    A = te.placeholder((6, 7), name="A")
    B = te.compute(
        (6, 7),
        lambda i, j: te.if_then_else(te.all(i > 1, j < 5), A[i, j],
                                     te.if_then_else(te.any(i == 0, j == 6), 1.0, -1.0)),
        name="B",
    )
    s = te.create_schedule(B.op)

    def ref(a):
        ii, jj = np.meshgrid(np.arange(6), np.arange(7), indexing="ij")
        return np.where((ii > 1) & (jj < 5), a, np.where((ii == 0) | (jj == 6), 1.0, -1.0))

    check_build(s, [A, B], ref)


# intrinsics ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "erf", "floor",
                                  "ceil", "abs", "power", "if_then_else", "all", "any",
                                  "max_value", "min_value", "exp2", "log2", "rsqrt", "round",
                                  "isnan", "fmod"])
def test_intrinsics_exist(name):
    assert callable(getattr(te, name))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "tanh", "sigmoid", "erf", "floor", "ceil"])
def test_unary_intrinsic_keeps_float_dtype(name):
    x = te.placeholder((3,), name="X", dtype="float64")[0]
    assert getattr(te, name)(x).dtype == "float64"


def test_power_and_abs_dtype():
    x = te.placeholder((3,), name="X")[0]
    assert te.power(x, 2.0).dtype == "float32"
    assert te.abs(x).dtype == "float32"
    assert te.abs(te.var("i")).dtype == "int32"


# validation -----------------------------------------------------------------------
def test_wrong_lambda_arity_says_so(A):
    with pytest.raises(ValueError, match=r"compute 'B'.*1 index arguments.*2 dimensions"):
        te.compute((4, 5), lambda i: A[i, i], name="B")
    with pytest.raises(ValueError, match=r"compute 'B'.*3 index arguments.*2 dimensions"):
        te.compute((4, 5), lambda i, j, k: A[i, j], name="B")


def test_wrong_index_count_says_so(A):
    with pytest.raises(IndexError, match=r"tensor 'A' has 2 dimensions.*1 indices"):
        A(1)
    with pytest.raises(TypeError, match=r"A\[1\] gives 1 of tensor 'A''s 2 indices; index it fully"):
        te.compute((4,), lambda i: A[1] + 1.0, name="B")
    with pytest.raises(IndexError, match=r"tensor 'A' has 2 dimensions.*3 indices"):
        te.compute((4, 5), lambda i, j: A[i, j, 0], name="B")


def test_chained_indexing_is_one_read(A):
    """Classic TVM's ``A[i][j]`` reads the same element as ``A[i, j]``."""
    B = te.compute((4, 5), lambda i, j: A[i][j] * 2.0, name="B")
    C = te.compute((4, 5), lambda i, j: A[i, j] * 2.0, name="C")
    assert str(B.op.body[0]).replace("i", "x") == str(C.op.body[0]).replace("i", "x")
    assert [int(x) for x in A[1][2].indices] == [int(x) for x in A[1, 2].indices] == [1, 2]


def test_float_index_rejected(A):
    with pytest.raises(TypeError, match=r"index 1 of tensor 'A'.*integer"):
        A[0, 1.5]


def test_shape_entries_validated():
    with pytest.raises(TypeError, match="shape entry 1"):
        te.placeholder((3, 2.5), name="A")
    with pytest.raises(ValueError, match="shape entry 0"):
        te.placeholder((-1, 2), name="A")


def test_reduction_must_be_whole_body(A):
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(ValueError, match="reduction must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1, name="B")


def test_reduce_needs_reduce_axis(A):
    with pytest.raises(TypeError, match="axis"):
        te.compute((4,), lambda i: te.sum(A[i, 0]), name="B")


# tensors and compute --------------------------------------------------------------
def test_tensor_introspection(A):
    assert [int(d) for d in A.shape] == [4, 5]
    assert A.dtype == "float32" and A.name == "A" and A.ndim == 2
    B = te.compute((4, 5), lambda x, y: A[x, y] * 2, name="B")
    assert [iv.var.name for iv in B.op.axis] == ["x", "y"]  # axes named after the lambda
    assert int(B.op.axis[1].dom.extent) == 5 and int(B.op.axis[1].dom.min) == 0
    assert B.op.reduce_axis == () or list(B.op.reduce_axis) == []
    k = te.reduce_axis((1, 5), name="k")
    assert int(k.dom.min) == 1 and int(k.dom.extent) == 4


def test_multi_output_compute(A):
    D, F = te.compute((4, 5), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="D")
    assert D.op is F.op and D.value_index == 0 and F.value_index == 1
    s = te.create_schedule(D.op)
    check_build(s, [A, D, F], lambda a: (a + 1, a * 2))


def test_multi_output_compute_scheduled(A):
    D, F = te.compute((4, 5), lambda i, j: (A[i, j] + 1, A[i, j] * 2), name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(s[D].op.axis[1], factor=3)
    s[D].reorder(xo, s[D].op.axis[0], xi)
    check_build(s, [A, D, F], lambda a: (a + 1, a * 2))


def test_zero_dim_compute(A):
    C = te.compute((), lambda: A[1, 2] + 1, name="C")
    assert tuple(C.shape) == ()
    D = te.compute((), lambda: C() * 2, name="D")
    s = te.create_schedule(D.op)
    check_build(s, [A, D], lambda a: np.asarray(a[1, 2] * 2 + 2, dtype="float32"))


def test_zero_dim_reduction(A):
    i = te.reduce_axis((0, 4), name="i")
    j = te.reduce_axis((0, 5), name="j")
    T = te.compute((), lambda: te.sum(A[i, j], axis=[i, j]), name="T")
    s = te.create_schedule(T.op)
    check_build(s, [A, T], lambda a: np.asarray(a.sum(), dtype="float32"), rtol=1e-5)


def test_argmax_comm_reducer():
    def fcombine(x, y):
        lhs = te.if_then_else(x[1] >= y[1], x[0], y[0])
        rhs = te.if_then_else(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return te.const(-1, t0), te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = 7, 13
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="float32")
    k = te.reduce_axis((0, n), name="k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    rng = np.random.default_rng(1)
    v = rng.random((m, n)).astype("float32")
    ix = np.tile(np.arange(n, dtype="int32"), (m, 1))

    def ref(ix, v):
        am = v.argmax(axis=1)
        return ix[np.arange(m), am], v.max(axis=1)

    check_build(s, [idx, val, T0, T1], ref, inputs=[ix, v])


def test_sum_where():
    n = 17
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, where=k > i), name="B")
    s = te.create_schedule(B.op)
    check_build(s, [A, B], lambda a: np.triu(a, 1).sum(axis=1), rtol=1e-5, atol=1e-5)


def test_max_min_reducers_and_direct_combine():
    i = te.var("i")
    e = te.max(i, 3)
    assert isinstance(e, E.Expr) and e.dtype == "int32"
    A = te.placeholder((5, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    M = te.compute((5,), lambda r: te.max(A[r, k], axis=k), name="M")
    s = te.create_schedule(M.op)
    check_build(s, [A, M], lambda a: a.max(axis=1))


def test_erf_reference_sanity():
    # the references used elsewhere: math.erf vectorised
    verf = np.vectorize(math.erf)
    assert abs(verf(np.array([0.5]))[0] - math.erf(0.5)) < 1e-12
