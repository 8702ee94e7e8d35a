"""topi broadcast, math and nn activation operators against numpy (and torch).

Every operator is built with both the generic and the x86 schedule and run on
guarded buffers (``helpers.check_build``): no out-of-bounds access, every
output element written, values equal to the numpy reference.
"""

import math

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi import generic, x86

SCHEDULES = {"generic": generic, "x86": x86}


@pytest.fixture(params=sorted(SCHEDULES))
def sched(request):
    return SCHEDULES[request.param]


def run(sched, out, ins, ref, inputs=None, **tol):
    """Schedule ``out`` with ``sched.schedule_injective``, build, compare with ``ref``."""
    s = sched.schedule_injective(out)
    return check_build(s, [*ins, out], ref, inputs=inputs, **tol)


def rand(shape, dtype="float32", lo=-2.0, hi=2.0, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.integers(int(lo), int(hi), shape).astype(dtype)


# ---------------------------------------------------------------- binary ---
BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "floor_divide": np.floor_divide, "mod": np.fmod, "floor_mod": np.mod, "power": np.power,
    "maximum": np.maximum, "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
    "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
    "greater_equal": np.greater_equal,
}
LOGICAL = {"logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor}


def _positive_rhs(name):
    return name in ("divide", "floor_divide", "mod", "floor_mod", "power")


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_broadcast(sched, name):
    A = te.placeholder((3, 1, 7), name="A")
    B = te.placeholder((5, 1), name="B")
    C = getattr(topi, name)(A, B)
    assert C.op.tag == "broadcast" and tuple(int(d) for d in C.shape) == (3, 5, 7)
    a = rand((3, 1, 7), lo=0.1 if name == "power" else -2)
    b = rand((5, 1), lo=0.5, hi=2.0, seed=1) if _positive_rhs(name) else rand((5, 1), seed=1)
    if name in ("equal", "not_equal", "less_equal", "greater_equal"):
        b[0, 0] = a[0, 0, 0]  # exercise the equal case
    run(sched, C, [A, B], BINARY[name], [a, b], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(LOGICAL))
def test_logical(sched, name):
    A = te.placeholder((4, 9), "bool", name="A")
    B = te.placeholder((9,), "bool", name="B")
    C = getattr(topi, name)(A, B)
    assert C.dtype == "bool"
    run(sched, C, [A, B], LOGICAL[name])


def test_logical_not(sched):
    A = te.placeholder((3, 5), "int32", name="A")
    run(sched, topi.logical_not(A), [A], np.logical_not)


@pytest.mark.parametrize("sa, sb", [
    ((5, 3), (5, 3)), ((7,), (4, 7)), ((1,), (3, 5)), ((2, 1, 4, 1), (3, 1, 5)),
    ((1, 1), (1,)), ((), (3, 2)),
])
def test_add_shapes(sched, sa, sb):
    A = te.placeholder(sa, name="A")
    B = te.placeholder(sb, name="B")
    C = topi.add(A, B)
    assert C.op.tag == ("elemwise" if sa == sb else "broadcast")
    assert tuple(int(d) for d in C.shape) == np.broadcast_shapes(sa, sb)
    run(sched, C, [A, B], np.add)


@pytest.mark.parametrize("name, scalar, left", [
    ("add", 2, False), ("subtract", 1.5, True), ("multiply", 3, True), ("divide", 4.0, False),
    ("maximum", 0, False), ("power", 2.0, False), ("less", 0.25, False), ("floor_mod", 0.75, False),
])
def test_scalar_operand(sched, name, scalar, left):
    A = te.placeholder((6, 11), name="A")
    op = getattr(topi, name)
    C = op(scalar, A) if left else op(A, scalar)
    assert C.op.tag == "elemwise"
    ref = BINARY[name]
    a = rand((6, 11), lo=0.1 if name == "power" else -2)
    run(sched, C, [A], (lambda x: ref(np.float32(scalar), x)) if left else (lambda x: ref(x, np.float32(scalar))),
        [a], rtol=1e-5, atol=1e-6)


def test_int_scalar_keeps_dtype(sched):
    A = te.placeholder((4, 5), "int32", name="A")
    C = topi.multiply(A, 3)
    assert C.dtype == "int32"
    run(sched, C, [A], lambda a: a * 3)
    D = topi.add(A, 0.5)  # a float scalar with an int tensor computes in float32
    assert D.dtype == "float32"


@pytest.mark.parametrize("name, ref", [
    ("floor_divide", np.floor_divide), ("floor_mod", np.mod), ("mod", np.fmod),
    ("divide", lambda a, b: np.trunc(a / b).astype(a.dtype)),
])
def test_int_division(sched, name, ref):
    A = te.placeholder((5, 7), "int32", name="A")
    B = te.placeholder((7,), "int32", name="B")
    b = np.array([-7, -3, -2, 1, 2, 3, 9], "int32")
    run(sched, getattr(topi, name)(A, B), [A, B], ref, [rand((5, 7), "int32", -40, 40), b])


def test_two_scalars_give_an_expression():
    e = topi.add(te.const(2.0), 3.0)
    assert isinstance(e, te.Expr) and not isinstance(e, te.Tensor)


def test_where(sched):
    Cd = te.placeholder((4, 1), "bool", name="Cd")
    X = te.placeholder((4, 6), name="X")
    Y = te.placeholder((6,), name="Y")
    run(sched, topi.where(Cd, X, Y), [Cd, X, Y], np.where)
    W = topi.where(topi.greater(X, 0.0), X, 0.5)
    run(sched, W, [X], lambda x: np.where(x > 0, x, np.float32(0.5)))


def test_broadcast_to(sched):
    A = te.placeholder((3, 1), name="A")
    B = topi.broadcast_to(A, (2, 3, 5))
    assert B.op.tag == "broadcast"
    run(sched, B, [A], lambda a: np.broadcast_to(a, (2, 3, 5)))


def test_broadcast_errors():
    A = te.placeholder((3, 4), name="A")
    with pytest.raises(ValueError, match=r"add: cannot broadcast shapes \(3, 4\) and \(5,\)"):
        topi.add(A, te.placeholder((5,), name="B"))
    with pytest.raises(ValueError, match=r"where: cannot broadcast shapes"):
        topi.where(te.placeholder((2,), "bool"), A, A)
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(3, 4\) to \(4,\)"):
        topi.broadcast_to(A, (4,))
    with pytest.raises(ValueError, match=r"broadcast_to: cannot broadcast shape \(3, 4\) to \(2, 3, 5\)"):
        topi.broadcast_to(A, (2, 3, 5))
    with pytest.raises(TypeError, match="multiply: operand 1 must be"):
        topi.multiply(A, "2")


# ------------------------------------------------------------------ math ---
UNARY = {
    "exp": (np.exp, -3, 3), "log": (np.log, 0.01, 5), "log2": (np.log2, 0.01, 5),
    "log10": (np.log10, 0.01, 5), "sqrt": (np.sqrt, 0, 5), "rsqrt": (lambda x: 1 / np.sqrt(x), 0.05, 5),
    "tanh": (np.tanh, -4, 4), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -8, 8),
    "erf": (np.vectorize(math.erf), -3, 3), "abs": (np.abs, -2, 2), "negative": (np.negative, -2, 2),
    "floor": (np.floor, -3, 3), "ceil": (np.ceil, -3, 3), "round": (np.round, -3, 3),
    "trunc": (np.trunc, -3, 3), "sign": (np.sign, -2, 2), "sin": (np.sin, -4, 4), "cos": (np.cos, -4, 4),
    "fast_exp": (np.exp, -3, 3), "fast_tanh": (np.tanh, -4, 4), "identity": (lambda x: x, -2, 2),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(sched, name):
    ref, lo, hi = UNARY[name]
    A = te.placeholder((5, 37), name="A")
    B = getattr(topi, name)(A)
    assert B.op.tag == "elemwise" and B.dtype == "float32"
    a = rand((5, 37), lo=lo, hi=hi)
    if name in ("sign", "round"):
        a[0, :4] = [0.0, -0.0, 0.5, 2.5]
    run(sched, B, [A], lambda x: ref(x.astype(np.float64)).astype(np.float32), [a], rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name, ref", [("abs", np.abs), ("negative", np.negative), ("sign", np.sign)])
def test_unary_int(sched, name, ref):
    A = te.placeholder((3, 17), "int32", name="A")
    B = getattr(topi, name)(A)
    assert B.dtype == "int32"
    run(sched, B, [A], ref)


def test_unary_errors():
    with pytest.raises(TypeError, match="exp: x must be a te.Tensor"):
        topi.exp(1.0)


def test_unary_torch(sched):
    torch = pytest.importorskip("torch")
    A = te.placeholder((64, 33), name="A")
    a = rand((64, 33), lo=-5, hi=5)
    for name in ("exp", "tanh", "sigmoid", "erf"):
        want = getattr(torch, name)(torch.from_numpy(a)).numpy()
        run(sched, getattr(topi, name)(A), [A], lambda x, w=want: w, [a], rtol=1e-5, atol=1e-6)


# -------------------------------------------------------------- nn ---
NN = {
    "relu": (lambda x: topi.nn.relu(x), topi.testing.relu_python),
    "leaky_relu": (lambda x: topi.nn.leaky_relu(x, 0.1), lambda x: topi.testing.leaky_relu_python(x, 0.1)),
    "elu": (lambda x: topi.nn.elu(x, 0.7), lambda x: topi.testing.elu_python(x, 0.7)),
    "selu": (topi.nn.selu, topi.testing.selu_python),
    "gelu": (topi.nn.gelu, topi.testing.gelu_python),
    "clip": (lambda x: topi.nn.clip(x, -0.5, 0.25), lambda x: np.clip(x, -0.5, 0.25)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_activation(sched, name):
    make, ref = NN[name]
    A = te.placeholder((3, 5, 19), name="A")
    B = make(A)
    assert B.op.tag == "elemwise"
    run(sched, B, [A], ref, [rand((3, 5, 19), lo=-3, hi=3)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("axis", [1, -1])
def test_prelu(sched, axis):
    A = te.placeholder((2, 6, 5), name="A")
    S = te.placeholder((6 if axis == 1 else 5,), name="S")
    run(sched, topi.nn.prelu(A, S, axis), [A, S], lambda x, s: topi.testing.prelu_python(x, s, axis))


def test_nn_torch(sched):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    A = te.placeholder((4, 8, 9), name="A")
    a = rand((4, 8, 9), lo=-3, hi=3)
    t = torch.from_numpy(a)
    cases = [(topi.nn.gelu(A), F.gelu(t)), (topi.nn.selu(A), F.selu(t)), (topi.nn.elu(A, 1.0), F.elu(t)),
             (topi.nn.leaky_relu(A, 0.2), F.leaky_relu(t, 0.2))]
    for out, want in cases:
        w = want.numpy()
        run(sched, out, [A], lambda x, w=w: w, [a], rtol=1e-5, atol=1e-6)


def test_fused_chain(sched):
    """relu(x * a + b) with broadcast a, b: one loop nest, intermediates inlined."""
    X = te.placeholder((4, 16, 33), name="X")
    a = te.placeholder((16, 1), name="a")
    b = te.placeholder((33,), name="b")
    Y = topi.nn.relu(topi.add(topi.multiply(X, a), b))
    s = sched.schedule_injective(Y)
    computed = [st.name for st in s.stages if st.attach_type != "inline" and st.op.input_tensors]
    assert computed == [Y.op.name]
    check_build(s, [X, a, b, Y], lambda x, a_, b_: np.maximum(x * a_ + b_, 0))


def test_nn_errors():
    A = te.placeholder((2, 6, 5), name="A")
    with pytest.raises(ValueError, match=r"prelu: slope of shape \(5,\) must be \(6,\)"):
        topi.nn.prelu(A, te.placeholder((5,)), 1)
    with pytest.raises(ValueError, match="prelu: axis=3 is out of range"):
        topi.nn.prelu(A, te.placeholder((5,)), 3)
    with pytest.raises(ValueError, match="clip: a_min=1 is greater than a_max=0"):
        topi.nn.clip(A, 1, 0)


def test_x86_injective_schedule_shape():
    """Large outputs: one fused loop, split by 16, vectorized inner, parallel outer."""
    import schedule

    A = te.placeholder((64, 112, 112), name="A")
    B = topi.nn.relu(topi.add(A, 1.0))
    text = str(schedule.lower(x86.schedule_injective(B), [A, B]))
    assert "parallel" in text and "ramp(" in text and "T_add" not in text
    small = topi.nn.relu(te.placeholder((3, 5), name="S"))
    assert x86.injective.default_injective_config(small)["parallel"].val is False


def test_tensor_operators_build_broadcast_computes():
    import codegen

    A = te.placeholder((3, 4), name="A")
    B = te.placeholder((4,), name="B")
    C = -(A * 2.0 + B) / 4.0 - 1
    s = topi.generic.schedule_injective(C)
    f = codegen.build(s, [A, B, C])
    a = np.random.rand(3, 4).astype("float32")
    b = np.random.rand(4).astype("float32")
    c = np.zeros((3, 4), dtype="float32")
    f(a, b, c)
    np.testing.assert_allclose(c, -(a * 2 + b) / 4 - 1, rtol=1e-6)
    assert A == A and hash(A) == hash(A)  # equality keeps its meaning


@pytest.mark.parametrize("name,dtype", [("tan", "float64"), ("tanf", "float32"), ("expf", "float32")])
def test_kernel_named_like_the_libm_function_it_calls(name, dtype):
    # the entry is emitted under a reserved name: a kernel called "tan" calling libm's tan
    # used to declare the callee as itself (an LLVM type error)
    x = te.placeholder((5, 3), dtype=dtype, name="x")
    fn = topi.tan if name.startswith("tan") else topi.exp
    out = fn(x)
    ref = np.tan if name.startswith("tan") else np.exp
    check_build(generic.schedule_injective(out), [x, out], ref, name=name, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_isnan_is_a_named_call(sched, dtype):
    x = te.placeholder((7, 9), dtype=dtype, name="x")
    out = topi.isnan(x)
    if dtype != "int32":
        assert out.op.body[0].op.name == "tir.isnan"  # as classic TVM's tir.isnan
    data = np.random.default_rng(0).normal(size=(7, 9)).astype(dtype)
    if dtype != "int32":
        data[::2, ::3] = np.nan
    check_build(sched.schedule_injective(out), [x, out], np.isnan, inputs=[data])
