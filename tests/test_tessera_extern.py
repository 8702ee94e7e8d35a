"""``te.extern`` with packed functions: Python callbacks, BLAS, scheduling rules, errors."""

import itertools

import numpy as np
import pytest

import tessera as tvm
from schedule import ScheduleError
from tessera import te
from tessera.contrib import cblas

_names = itertools.count()


def _fresh(prefix: str) -> str:
    return f"test.{prefix}.{next(_names)}"


@pytest.mark.parametrize("n,l,m", [(1024, 128, 235), (7, 5, 3), (1, 1, 1)])
def test_call_packed_matmul_then_bias(n, l, m):
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.extern(
        (n, m),
        [A, B],
        lambda ins, outs: tvm.tir.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False
        ),
        name="C",
    )
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = tvm.build(s, [A, B, D, bias], "llvm")
    rng = np.random.default_rng(n)
    a = tvm.nd.array(rng.uniform(size=(n, l)).astype("float32"))
    b = tvm.nd.array(rng.uniform(size=(l, m)).astype("float32"))
    d = tvm.nd.array(np.zeros((n, m), dtype="float32"))
    f(a, b, d, 10.0)
    tvm.testing.assert_allclose(d.numpy(), a.numpy() @ b.numpy() + 10, rtol=1e-5)
    assert "tvm_call_packed" in str(tvm.lower(s, [A, B, D, bias]))


@pytest.mark.parametrize("transa,transb", [(False, False), (True, False), (False, True), (True, True)])
def test_cblas_matmul_transposes(transa, transb):
    n, l, m = 33, 17, 9
    A = te.placeholder((l, n) if transa else (n, l), name="A")
    B = te.placeholder((m, l) if transb else (l, m), name="B")
    C = cblas.matmul(A, B, transa, transb)
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C])
    rng = np.random.default_rng(1)
    a = rng.standard_normal(tuple(int(d) for d in A.shape)).astype("float32")
    b = rng.standard_normal(tuple(int(d) for d in B.shape)).astype("float32")
    c = np.zeros((n, m), "float32")
    f(a, b, c)
    want = (a.T if transa else a) @ (b.T if transb else b)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    assert tvm.get_global_func("tvm.contrib.cblas.matmul", allow_missing=True) is not None


def test_python_callback_receives_ndarrays_and_writes_output():
    name = _fresh("addone")
    seen = []

    @tvm.register_func(name)
    def addone(x, y):
        seen.append((type(x), type(y), x.shape, y.dtype))
        tvm.nd.array(x.numpy() + 1).copyto(y)

    n = 1000
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), name="C")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm")
    a = tvm.nd.array(np.random.uniform(size=(n,)).astype(A.dtype))
    b = tvm.nd.array(np.zeros((n,), "float32"))
    f(a, b)
    tvm.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-5)
    assert seen == [(tvm.nd.NDArray, tvm.nd.NDArray, (n,), "float32")]
    assert tvm.get_global_func(name)(tvm.nd.array(np.zeros(3, "float32")), tvm.nd.empty((3,))) is None


def test_extern_between_computes_with_scalars():
    name = _fresh("scale")

    @tvm.register_func(name)
    def scale(x, y, k, alpha):
        y.numpy()[:] = x.numpy() * alpha + k

    n = te.var("n")
    A = te.placeholder((n, 3), name="A")
    B = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="B")
    alpha = te.var("alpha", dtype="float32")
    E = te.extern(
        B.shape, [B], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0], 5, alpha), name="E"
    )
    F = te.compute(E.shape, lambda i, j: E[i, j] - 1.0, name="F")
    s = te.create_schedule(F.op)
    xo, _ = s[F].split(F.op.axis[0], factor=4)
    s[F].parallel(xo)
    f = tvm.build(s, [A, F, alpha])
    for rows in (1, 6, 13):
        a = np.random.default_rng(rows).standard_normal((rows, 3)).astype("float32")
        out = np.zeros_like(a)
        f(a, out, 0.5)
        np.testing.assert_allclose(out, a * 2 * 0.5 + 5 - 1, rtol=1e-6)


def test_native_module_registered_as_packed_function():
    n = 64
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: X[i] * 3.0, name="Y")
    triple = tvm.build(te.create_schedule(Y.op), [X, Y], name="triple")
    name = _fresh("triple")
    tvm.register_func(name, triple)
    A = te.placeholder((n,), name="A")
    B = te.extern((n,), [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 3)


def test_extern_stage_scheduling_rules():
    A = te.placeholder((16,), name="A")
    P = te.compute((16,), lambda i: A[i] + 1.0, name="P")
    C = cblas.matmul(te.placeholder((4, 4), name="L"), te.placeholder((4, 4), name="R"))
    E = te.extern((16,), [P], lambda ins, outs: tvm.tir.call_packed("x", ins[0], outs[0]), name="E")
    D = te.compute((16,), lambda i: E[i] * 2.0, name="D")
    s = te.create_schedule([D.op, C.op])
    assert list(s[E].leaf_iter_vars) == []
    with pytest.raises(ScheduleError, match=r"cannot compute_at stage 'E' \(ExternOp\), it has no loops"):
        s[P].compute_at(s[E], P.op.axis[0])
    with pytest.raises(ScheduleError, match="cannot compute_inline"):
        s[E].compute_inline()
    with pytest.raises(ScheduleError, match="cannot compute_at"):
        s[E].compute_at(s[D], D.op.axis[0])
    s[P].compute_inline()
    with pytest.raises(ScheduleError, match="extern stage 'E' reads its whole buffer"):
        tvm.lower(s, [A, D, C.op.input_tensors[0], C.op.input_tensors[1], C])
    bounds = tvm.te.create_schedule(D.op)
    from schedule import InferBound

    rng = InferBound(bounds)
    assert int(rng[D.op.axis[0]].extent) == 16


def test_unregistered_function_is_a_clear_error():
    name = _fresh("missing")
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], name="uses_missing")
    with pytest.raises(
        RuntimeError,
        match=f"uses_missing: packed function '{name}' raised LookupError: "
        f"packed function '{name}' is not registered",
    ):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))
    assert tvm.get_global_func(name, allow_missing=True) is None
    with pytest.raises(ValueError, match=f"no function is registered as '{name}'"):
        tvm.get_global_func(name)


def test_callback_exception_reaches_the_caller_with_the_name():
    name = _fresh("boom")
    calls = []

    @tvm.register_func(name)
    def boom(x, y):
        calls.append(1)
        raise KeyError("no such key")

    A = te.placeholder((8,), name="A")
    B = te.extern((8,), [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), name="B")
    C = te.compute((8,), lambda i: B[i] + 1.0, name="C")
    f = tvm.build(te.create_schedule(C.op), [A, C], name="k")
    c = np.full(8, -7, "float32")
    with pytest.raises(RuntimeError, match=f"k: packed function '{name}' raised KeyError") as info:
        f(np.zeros(8, "float32"), c)
    assert isinstance(info.value.__cause__, KeyError)
    assert calls == [1] and (c == -7).all()  # the kernel returned at the failed call
    with pytest.raises(RuntimeError, match=name):  # and again when timed
        f.time_evaluator(number=1, repeat=1)(np.zeros(8, "float32"), c)


def test_callback_writing_the_wrong_shape_is_a_clear_error():
    name = _fresh("wrongshape")

    @tvm.register_func(name)
    def wrong(x, y):
        tvm.nd.array(np.zeros(5, "float32")).copyto(y)

    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    with pytest.raises(RuntimeError, match=r"raised ValueError: copyto: this array has shape \(5,\)"):
        f(np.zeros(4, "float32"), np.zeros(4, "float32"))


def test_register_twice_needs_override_and_tensor_args_are_refused():
    name = _fresh("twice")
    tvm.register_func(name, lambda: None)
    with pytest.raises(ValueError, match="already registered"):
        tvm.register_func(name, lambda: None)
    tvm.register_func(name, lambda: 1, override=True)
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="pass the lambda's buffers"):
        te.extern((4,), [A], lambda ins, outs: tvm.tir.call_packed(name, A, outs[0]))


def test_kernels_with_packed_calls_cannot_be_saved():
    A = te.placeholder((4, 4), name="A")
    C = cblas.matmul(A, A)
    f = tvm.build(te.create_schedule(C.op), [A, C])
    with pytest.raises(ValueError, match="packed functions"):
        f.export_library("/tmp/never_written.so")


def test_declared_input_buffer_views_the_tensor_reshaped():
    name = _fresh("rowsum")

    @tvm.register_func(name)
    def rowsum(x, y):
        assert x.shape == (6, 4)
        y.numpy()[:] = x.numpy().sum(axis=1)

    A = te.placeholder((24,), name="A")
    view = tvm.tir.decl_buffer((6, 4), "float32", "A2d")
    B = te.extern(
        (6,), [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0]), in_buffers=[view], name="B"
    )
    f = tvm.build(te.create_schedule(B.op), [A, B])
    a = np.arange(24, dtype="float32")
    b = np.zeros(6, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.reshape(6, 4).sum(axis=1))


def test_extern_with_two_outputs_of_different_shapes():
    name = _fresh("split")

    @tvm.register_func(name)
    def split(x, lo, hi):
        lo.numpy()[:] = x.numpy()[:3]
        hi.numpy()[:] = x.numpy()[3:].reshape(hi.shape)

    A = te.placeholder((9,), name="A")
    lo, hi = te.extern(
        [(3,), (2, 3)], [A], lambda ins, outs: tvm.tir.call_packed(name, ins[0], outs[0], outs[1]), name="S"
    )
    assert tuple(int(d) for d in hi.shape) == (2, 3)
    total = te.compute((2, 3), lambda i, j: hi[i, j] + lo[j], name="T")
    f = tvm.build(te.create_schedule(total.op), [A, total])
    a = np.arange(9, dtype="float32")
    out = np.zeros((2, 3), "float32")
    f(a, out)
    np.testing.assert_allclose(out, a[3:].reshape(2, 3) + a[:3])
