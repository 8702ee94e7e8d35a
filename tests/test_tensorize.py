"""Tensorize (``te.decl_tensor_intrin``, ``s[C].tensorize``): packed-function and C-function bodies,
reductions split around the tensorized loops, a declared compute lowered in place, and the errors."""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import tessera as tvm
from schedule import ScheduleError
from tessera import te

RNG = np.random.default_rng(0)


def intrin_vadd(n, body=True):
    x = te.placeholder((n,), name="vx")
    y = te.placeholder((n,), name="vy")
    z = te.compute(x.shape, lambda i: x[i] + y[i], name="vz")

    def fcompute(ins, outs):
        return tvm.tir.call_packed("test.tensorize.vadd", ins[0], ins[1], outs[0]) if body else None

    return te.decl_tensor_intrin(z.op, fcompute, name=f"vadd{n}")


@tvm.register_func("test.tensorize.vadd")
def _vadd(x, y, z):
    z.numpy()[:] = x.numpy() + y.numpy()


def add_2d(m, n):
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    C = te.compute((m, n), lambda i, j: A[i, j] + B[i, j], name="C")
    return A, B, C


@pytest.mark.parametrize("body", [True, False])
def test_a_packed_function_or_the_declared_compute_performs_each_tile(body):
    A, B, C = add_2d(7, 48)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    s[C].tensorize(ji, intrin_vadd(16, body))
    text = str(tvm.lower(s, [A, B, C]))
    assert ("test.tensorize.vadd" in text) == body and ("j.inner" in text) != body
    a, b = RNG.random((7, 48), dtype=np.float32), RNG.random((7, 48), dtype=np.float32)
    c = np.zeros((7, 48), np.float32)
    tvm.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a + b)


GEMM_C = r"""
void tz_gemm_update(float* c, const float* a, const float* b, int kb, int lda, int ldb, int ldc) {
  for (int i = 0; i < 4; ++i)
    for (int k = 0; k < kb; ++k)
      for (int j = 0; j < 8; ++j) c[i * ldc + j] += a[i * lda + k] * b[k * ldb + j];
}
void tz_gemm_reset(float* c, int ldc) {
  for (int i = 0; i < 4; ++i) for (int j = 0; j < 8; ++j) c[i * ldc + j] = 0.0f;
}
"""


@pytest.fixture(scope="module")
def gemm_library(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("needs a C compiler (cc) to build the micro-kernel")
    d = tmp_path_factory.mktemp("tensorize")
    src, lib = os.path.join(d, "k.c"), os.path.join(d, "k.so")
    with open(src, "w") as fh:
        fh.write(GEMM_C)
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src], check=True)
    return ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)


def intrin_gemm(kb):
    """C[4, 8] (+)= A[4, kb] @ B[kb, 8] over strided tiles, by the C functions above."""
    a = te.placeholder((4, kb), name="a")
    b = te.placeholder((kb, 8), name="b")
    k = te.reduce_axis((0, kb), name="k")
    c = te.compute((4, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")

    def buffer(t, name):
        return tvm.tir.decl_buffer(t.shape, t.dtype, name, offset_factor=1, strides=[te.var(name + "_s"), 1])

    binds = {a: buffer(a, "A"), b: buffer(b, "B"), c: buffer(c, "C")}

    def fcompute(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = tvm.tir.call_extern("int32", "tz_gemm_update", cc.access_ptr("w"), aa.access_ptr("r"),
                                     bb.access_ptr("r"), kb, aa.strides[0], bb.strides[0], cc.strides[0])
        reset = tvm.tir.call_extern("int32", "tz_gemm_reset", cc.access_ptr("w"), cc.strides[0])
        ib = tvm.tir.ir_builder.create()
        ib.emit(reset)
        ib.emit(update)
        return ib.get(), reset, update

    return te.decl_tensor_intrin(c.op, fcompute, name=f"gemm4x8x{kb}", binds=binds)


def matmul(m, n, k):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="r")
    return A, B, te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")


@pytest.mark.parametrize("m,n,k,kb", [(12, 24, 40, 8), (4, 8, 8, 8), (8, 16, 24, 24)])
def test_a_c_function_updates_tiles_with_the_reduction_split_outside(gemm_library, m, n, k, kb):
    A, B, C = matmul(m, n, k)
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=kb)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].tensorize(ii, intrin_gemm(kb))
    text = str(tvm.lower(s, [A, B, C]))
    assert ("if ((r.outer == 0))" in text) == (k > kb) and "tz_gemm_update" in text
    a, b = RNG.random((m, k), dtype=np.float32), RNG.random((k, n), dtype=np.float32)
    c = np.zeros((m, n), np.float32)
    tvm.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_a_region_that_does_not_match_the_intrinsic_is_refused():
    A, B, C = add_2d(8, 48)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=12)
    s[C].tensorize(ji, intrin_vadd(16))
    with pytest.raises(ScheduleError, match=r"stage 'C': tensorize at axis 'j.inner': the loops under it do not "
                                             r"match tensor intrinsic 'vadd16': output C\[1, 12\] against vz\[16\]; "
                                             r"input A\[1, 12\] against vx\[16\]"):
        tvm.lower(s, [A, B, C])


def test_a_tile_that_runs_past_the_tensor_is_refused():
    A, B, C = add_2d(8, 40)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    s[C].tensorize(ji, intrin_vadd(16))
    with pytest.raises(ScheduleError, match="do not cover whole tiles"):
        tvm.lower(s, [A, B, C])


def test_tensorize_arguments_are_checked():
    A, B, C = add_2d(8, 32)
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    with pytest.raises(TypeError, match="expected a te.decl_tensor_intrin"):
        s[C].tensorize(ji, "vadd")
    s[C].tensorize(ji, intrin_vadd(16))
    with pytest.raises(ScheduleError, match="it is tensorized already"):
        s[C].tensorize(jo, intrin_vadd(16))
    with pytest.raises(ValueError, match="must read placeholders only"):
        x = te.placeholder((4,), name="x")
        y = te.compute((4,), lambda i: x[i] * 2.0, name="y")
        te.decl_tensor_intrin(te.compute((4,), lambda i: y[i] + 1.0).op, lambda ins, outs: None)


# tensor computes: te.compute whose lambda returns an intrinsic applied to regions ---------------
@pytest.mark.parametrize("body", [True, False])
def test_a_tensor_compute_calls_the_intrinsic_once_per_outer_point(body):
    A = te.placeholder((7, 16), name="A")
    B = te.placeholder((7, 16), name="B")
    vadd = intrin_vadd(16, body)
    C = te.compute((7, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]), name="C")
    assert isinstance(C.op, te.TensorComputeOp) and len(C.op.axis) == 2
    s = te.create_schedule(C.op)
    text = str(tvm.lower(s, [A, B, C]))
    assert ("test.tensorize.vadd" in text) == body
    a, b = RNG.random((7, 16), dtype=np.float32), RNG.random((7, 16), dtype=np.float32)
    c = np.zeros((7, 16), np.float32)
    tvm.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a + b)


def test_a_tensor_compute_accumulates_over_its_reduce_axis(gemm_library):
    m, n, k, kb = 8, 16, 24, 8
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    ko = te.reduce_axis((0, k // kb), name="ko")
    gemm = intrin_gemm(kb)
    C = te.compute((m // 4, n // 8, 4, 8), lambda io, jo: gemm(
        A[io * 4:io * 4 + 4, ko * kb:ko * kb + kb], B[ko * kb:ko * kb + kb, jo * 8:jo * 8 + 8], reduce_axis=ko),
        name="C")
    s = te.create_schedule(C.op)
    assert [iv.var.name for iv in s[C].leaf_iter_vars][:3] == ["io", "jo", "ko"]
    s[C].reorder(C.op.axis[1], C.op.axis[0])  # the outer loops schedule as usual
    text = str(tvm.lower(s, [A, B, C]))
    assert "if ((ko == 0))" in text and "tz_gemm_update" in text
    a, b = RNG.random((m, k), dtype=np.float32), RNG.random((k, n), dtype=np.float32)
    c = np.zeros((m // 4, n // 8, 4, 8), np.float32)
    tvm.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c.transpose(0, 2, 1, 3).reshape(m, n), a @ b, rtol=1e-5)


def test_a_tensor_compute_region_must_match_the_intrinsic():
    A = te.placeholder((7, 16), name="A")
    vadd = intrin_vadd(16)
    with pytest.raises(ValueError, match=r"region A\[i, 0:8\] has extents \['8'\], the intrinsic's "
                                         r"input 'vx' shape \(16,\)"):
        te.compute((7, 16), lambda i: vadd(A[i, 0:8], A[i, 0:16]), name="C")
