"""``s[C].bind`` to GPU thread axes: lowered and printed as TVM does; GPU builds refused."""

import numpy as np
import pytest

import tessera as tvm
from schedule import ScheduleError
from tessera import te


def _bound_vector(n):
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    return s, A, B


def test_bound_loops_print_as_thread_extents():
    s, A, B = _bound_vector(te.var("n"))
    text = str(tvm.lower(s, [A, B], simple_mode=True))
    assert text == (
        "produce B {\n"
        "  // attr [iter_var(blockIdx.x, range(min=0, ext=floordiv((n + 63), 64)), blockIdx.x)] "
        "thread_extent = floordiv((n + 63), 64)\n"
        "  // attr [iter_var(threadIdx.x, range(min=0, ext=64), threadIdx.x)] thread_extent = 64\n"
        "  if (likely((((blockIdx.x * 64) + threadIdx.x) < n))) {\n"
        "    B[((blockIdx.x * 64) + threadIdx.x)] = (A[((blockIdx.x * 64) + threadIdx.x)] * 2.0f)\n"
        "  }\n"
        "}\n"
    )


@pytest.mark.parametrize("target", ["cuda", "opencl"])
def test_gpu_build_of_bound_schedule_names_the_target(target):
    s, A, B = _bound_vector(1024)
    with pytest.raises(ValueError, match=f"target '{target}' needs a {target} code generator"):
        tvm.build(s, [A, B], target, name="myexp")


@pytest.mark.parametrize("n", [1, 64, 1000])
def test_cpu_build_runs_bound_loops_serially(n):
    s, A, B = _bound_vector(n)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.default_rng(n).standard_normal(n).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2)


def test_bound_reduction_and_rfactor_lower():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    text = str(tvm.lower(s, [A, B]))
    assert "// attr [iter_var(threadIdx.x, range(min=0, ext=16), threadIdx.x)] thread_extent = 16" in text
    f = tvm.build(s, [A, B])
    a = np.random.default_rng(0).standard_normal((37, 45)).astype("float32")
    b = np.zeros(37, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-4, atol=1e-5)


def test_bind_errors():
    C = te.compute((4,), lambda i: i * 1.0, name="C")
    s2 = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="bind needs a thread axis"):
        s2[C].bind(C.op.axis[0], C.op.axis[0])
    x = te.thread_axis("blockIdx.x")
    xo, xi = s2[C].split(C.op.axis[0], factor=2)
    s2[C].bind(xo, x)
    with pytest.raises(ScheduleError, match="already bound to it"):
        s2[C].bind(xi, x)
    with pytest.raises(ValueError, match="thread tag"):
        te.thread_axis()
