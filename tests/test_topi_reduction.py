"""topi reductions (sum mean max min prod argmax argmin all any) against numpy.

Each is built with both the generic and the x86 ``schedule_reduce`` over
shapes with odd extents, every axis form (None, int, negative, tuple) and
keepdims, on guarded buffers (``helpers.check_build``).
"""

import numpy as np
import pytest
from helpers import check_build

import schedule
import te
import topi
from topi import generic, x86

SCHEDULES = {"generic": generic, "x86": x86}


@pytest.fixture(params=sorted(SCHEDULES))
def sched(request):
    return SCHEDULES[request.param]


def run(sched, out, ins, ref, inputs=None, **tol):
    s = sched.schedule_reduce(out)
    return check_build(s, [*ins, out], ref, inputs=inputs, **tol)


def rand(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


SHAPE = (6, 7, 9)
AXES = [None, 0, -1, 1, (0, 2), (-1, -2), (0, 1, 2)]
VALUE_OPS = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("name", sorted(VALUE_OPS))
def test_value_reduction(sched, name, axis, keepdims):
    X = te.placeholder(SHAPE, name="X")
    Y = getattr(topi, name)(X, axis, keepdims)
    x = rand(SHAPE) * (0.5 if name != "prod" else 1.9)  # keep products within float range
    want = VALUE_OPS[name](x.astype(np.float64), axis=axis, keepdims=keepdims)
    assert tuple(int(d) for d in Y.shape) == np.shape(want)
    run(sched, Y, [X], lambda a: want, [x], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axis", [None, 0, -1, 1])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reduction(sched, name, axis, keepdims):
    X = te.placeholder(SHAPE, name="X")
    Y = getattr(topi, name)(X, axis, keepdims)
    assert Y.dtype == "int32" and Y.op.tag == "comm_reduce_idx"
    x = np.round(rand(SHAPE) * 3)  # many ties: the first occurrence wins, as numpy
    run(sched, Y, [X], lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdims), [x])


def test_arg_reduction_infinities_and_ints(sched):
    X = te.placeholder((3, 5), name="X")
    x = np.full((3, 5), -np.inf, "float32")
    x[1, 3] = 0
    run(sched, topi.argmax(X, 1), [X], lambda a: np.argmax(a, 1), [x])
    run(sched, topi.argmin(X, 1), [X], lambda a: np.argmin(a, 1), [-x])
    Xi = te.placeholder((4, 11), "int32", name="Xi")
    run(sched, topi.argmax(Xi, -1), [Xi], lambda a: np.argmax(a, -1))


def test_max_min_of_infinite_rows(sched):
    """A row of -inf has max -inf (numpy, ONNX ReduceMax), not the lowest finite value; likewise min of +inf;
    17 columns: the x86 schedule's vector split does not divide them; int32 keeps its finite limits."""
    X = te.placeholder((5, 17), name="X")
    x = rand((5, 17))
    x[1], x[3, :16] = -np.inf, -np.inf
    run(sched, topi.max(X, 1, True), [X], lambda a: np.max(a, 1, keepdims=True), [x])
    run(sched, topi.min(X, -1), [X], lambda a: np.min(a, -1), [-x])
    Xi = te.placeholder((3, 9), "int32", name="Xi")
    xi = np.full((3, 9), np.iinfo("int32").min, "int32")
    run(sched, topi.max(Xi, 1), [Xi], lambda a: np.max(a, 1), [xi])


def test_arg_reduction_tuple_axis(sched):
    X = te.placeholder((4, 5, 3), name="X")
    x = rand((4, 5, 3))
    ref = np.argmax(x.transpose(1, 0, 2).reshape(5, 12), axis=1)  # row-major over (0, 2)
    run(sched, topi.argmax(X, (0, 2)), [X], lambda a: ref, [x])


@pytest.mark.parametrize("axis", [None, 1, (0, -1)], ids=str)
@pytest.mark.parametrize("name", ["all", "any"])
def test_logical_reduction(sched, name, axis):
    X = te.placeholder(SHAPE, "bool", name="X")
    x = np.random.default_rng(3).random(SHAPE) < (0.9 if name == "all" else 0.03)
    run(sched, getattr(topi, name)(X, axis), [X], lambda a: getattr(np, name)(a, axis=axis), [x])
    Xf = te.placeholder((5, 3), name="Xf")  # non-bool values count as true when non-zero
    run(sched, getattr(topi, name)(Xf, 0, True), [Xf],
        lambda a: getattr(np, name)(a, axis=0, keepdims=True), [np.eye(5, 3, dtype="float32")])


def test_int_sum_and_mean(sched):
    X = te.placeholder((5, 13), "int32", name="X")
    run(sched, topi.sum(X, 1), [X], lambda a: a.sum(1).astype("int32"))
    M = topi.mean(X, 0)
    assert M.dtype == "float32"
    run(sched, M, [X], lambda a: a.mean(0), rtol=1e-6)


def test_reduce_of_injective_input(sched):
    """sum(exp(x)): the exp stage is inlined into the reduction."""
    X = te.placeholder((33, 70), name="X")
    Y = topi.sum(topi.exp(X), axis=-1)
    s = sched.schedule_reduce(Y)
    assert [st.name for st in s.stages if st.attach_type != "inline" and st.op.input_tensors] == [Y.op.name]
    check_build(s, [X, Y], lambda a: np.exp(a).sum(-1), rtol=1e-5)


@pytest.mark.parametrize("shape, axis", [((1000, 129), -1), ((130, 257), 0), ((64, 31, 33), (0, 2)),
                                         ((300, 211), None), ((5, 7000), None)], ids=str)
def test_large_reductions(sched, shape, axis):
    """Shapes big enough for the x86 parallel, column-vector and rfactor paths."""
    X = te.placeholder(shape, name="X")
    for name in ("sum", "max"):
        run(sched, getattr(topi, name)(X, axis), [X],
            lambda a, n=name: VALUE_OPS[n](a.astype(np.float64), axis=axis), [rand(shape)], rtol=1e-4, atol=1e-4)


def test_x86_reduce_schedules():
    X = te.placeholder((4096, 1000), name="X")
    R, C = topi.sum(X, -1), topi.sum(X, 0)
    rows = str(schedule.lower(x86.schedule_reduce(R), [X, R]))
    assert "parallel" in rows
    cols = str(schedule.lower(x86.schedule_reduce(C), [X, C]))
    assert "parallel" in cols and "ramp(" in cols
    full = x86.schedule_reduce(topi.sum(X))
    assert any(st.name.endswith(".rf") for st in full.stages)
    small = topi.sum(te.placeholder((4, 5)), 1).op
    assert x86.reduction.default_reduce_config(small)["parallel"].val is False


def test_torch_reductions():
    torch = pytest.importorskip("torch")
    X = te.placeholder((31, 45), name="X")
    x = rand((31, 45))
    t = torch.from_numpy(x)
    for out, want in [(topi.sum(X, 1), t.sum(1)), (topi.mean(X, 0, True), t.mean(0, keepdim=True)),
                      (topi.argmax(X, 1), t.argmax(1).int()), (topi.prod(X, -1), t.prod(-1))]:
        w = want.numpy()
        run(x86, out, [X], lambda a, w=w: w, [x], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "argmax", "argmin", "all", "any"])
def test_axis_errors(name):
    X = te.placeholder((3, 4), name="X")
    op = getattr(topi, name)
    with pytest.raises(ValueError, match=rf"{name}: axis 2 is out of range for a tensor of shape \(3, 4\)"):
        op(X, 2)
    with pytest.raises(ValueError, match=rf"{name}: axis -3 is out of range"):
        op(X, (0, -3))
    with pytest.raises(ValueError, match=rf"{name}: axis -1 is repeated"):
        op(X, (1, -1))
    with pytest.raises(TypeError, match=rf"{name}: x must be a te.Tensor"):
        op(np.zeros(3), 0)
