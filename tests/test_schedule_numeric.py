"""Numeric tests of every schedule primitive against numpy.

Shapes deliberately do not divide the split factors (1000 by 64, 37x53 by
8x16, 100 by 32) so that tails and guards are exercised.  Every call goes
through ``check_build``: guard canaries around each buffer, sentinel-filled
outputs, and a numpy reference.
"""

import math

import numpy as np
import pytest

import te
import schedule
import codegen
from helpers import check_build

N1 = 1000
M2, N2 = 37, 53


def ew1d(n=N1):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    return A, B, lambda a: a * 2 + 1


def ew2d(m=M2, n=N2):
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    C = te.compute((m, n), lambda i, j: A[i, j] * B[i, j] + A[i, j], name="C")
    return A, B, C, lambda a, b: a * b + a


# split ------------------------------------------------------------------------
@pytest.mark.parametrize("factor", [1, 3, 64, 999, 1000, 1001, 4096])
def test_split_factor(factor):
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=factor)
    assert int(xi.dom.extent) == min(factor, N1)  # never wider than its parent (TVM)
    assert int(xo.dom.extent) == -(-N1 // factor)
    check_build(s, [A, B], ref)


@pytest.mark.parametrize("nparts", [1, 3, 7, 64, 1000, 1500])
def test_split_nparts(nparts):
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], nparts=nparts)
    assert int(xo.dom.extent) == min(nparts, N1)
    check_build(s, [A, B], ref)


def test_split_twice_nested():
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    xio, xii = s[B].split(xi, factor=5)
    xoo, xoi = s[B].split(xo, nparts=3)
    check_build(s, [A, B], ref)


# tile / fuse / reorder ---------------------------------------------------------
@pytest.mark.parametrize("tx, ty", [(8, 16), (1, 1), (37, 53), (5, 60), (64, 64)])
def test_tile(tx, ty):
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], x_factor=tx, y_factor=ty)
    assert [iv.var.name for iv in s[C].leaf_iter_vars] == ["i.outer", "j.outer", "i.inner", "j.inner"]
    check_build(s, [A, B, C], ref)


def test_fuse_then_split():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    assert f.var.name == "i.j.fused" and int(f.dom.extent) == M2 * N2
    fo, fi = s[C].split(f, factor=64)
    check_build(s, [A, B, C], ref)


def test_fuse_split_axes():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    f = s[C].fuse(xi, yi)
    s[C].fuse(xo, yo)
    check_build(s, [A, B, C], ref)


def test_fuse_three_axes():
    A = te.placeholder((5, 7, 9), name="A")
    B = te.compute((5, 7, 9), lambda i, j, k: A[i, j, k] - 3.0, name="B")
    s = te.create_schedule(B.op)
    f = s[B].fuse(*B.op.axis)
    s[B].split(f, factor=16)
    check_build(s, [A, B], lambda a: a - 3)


@pytest.mark.parametrize("perm", [(1, 0), (0, 1)])
def test_reorder_2d(perm):
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    ax = C.op.axis
    s[C].reorder(*[ax[p] for p in perm])
    check_build(s, [A, B, C], ref)


def test_reorder_after_tile():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].reorder(yi, xo, xi, yo)
    assert s[C].leaf_iter_vars[0] is yi
    check_build(s, [A, B, C], ref)


def test_transpose_reorder():
    A = te.placeholder((M2, N2), name="A")
    B = te.compute((N2, M2), lambda i, j: A[j, i], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 8)
    s[B].reorder(yo, xo, yi, xi)
    check_build(s, [A, B], lambda a: a.T)


# vectorize / parallel / unroll -------------------------------------------------
@pytest.mark.parametrize("factor", [4, 8, 16, 64, 7])
def test_vectorize(factor):
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=factor)
    s[B].vectorize(xi)
    check_build(s, [A, B], ref)


def test_vectorize_2d_inner_non_dividing():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].vectorize(yi)
    check_build(s, [A, B, C], ref)


def test_vectorize_whole_axis():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    check_build(s, [A, B, C], ref)


def test_vectorize_strided_access():
    A = te.placeholder((M2, N2), name="A")
    B = te.compute((N2, M2), lambda i, j: A[j, i] * 3.0, name="B")
    s = te.create_schedule(B.op)
    jo, ji = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(ji)
    check_build(s, [A, B], lambda a: a.T * 3)


@pytest.mark.parametrize("src, dst, ramp", [(16, 8, True), (16, 4, True), (32, 8, True), (12, 8, False),
                                            (16, 3, False)])
def test_vectorized_reblocking_reads_one_ramp_where_lanes_share_a_block(src, dst, ramp):
    """``out[co, x, ci] = A[(co*dst + ci) // src, x, (co*dst + ci) % src]`` vectorized over ``ci``:
    where ``dst`` divides ``src`` every lane reads one source block, a contiguous load (``ramp``);
    otherwise (12 by 8, 16 by 3: lanes straddle two blocks) a gather.  Both match numpy."""
    c, w = 96, 5
    A = te.placeholder((c // src, w, src), name="A")
    B = te.compute((c // dst, w, dst), lambda co, x, ci: A[(co * dst + ci) // src, x, (co * dst + ci) % src] * 2.0,
                   name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[2])
    text = str(schedule.lower(s, [A, B]))
    assert ("A[ramp(" in text) == ramp, text
    plain = lambda a: a.transpose(0, 2, 1).reshape(c, w)  # noqa: E731  [c, w]
    check_build(s, [A, B], lambda a: 2 * plain(a).reshape(c // dst, dst, w).transpose(0, 2, 1))


def test_parallel_outer_split():
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[B].parallel(xo)
    s[B].vectorize(xi)
    check_build(s, [A, B], ref)


def test_parallel_fused():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    f = s[C].fuse(xo, yo)
    s[C].parallel(f)
    s[C].vectorize(yi)
    check_build(s, [A, B, C], ref)


def test_parallel_reduction_rows():
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((0, N2), name="k")
    B = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("factor", [1, 4, 7, 16])
def test_unroll(factor):
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=factor)
    s[B].unroll(xi)
    check_build(s, [A, B], ref)


def test_unroll_reduce_axis():
    A = te.placeholder((M2, 13), name="A")
    k = te.reduce_axis((0, 13), name="k")
    B = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    s[B].unroll(ki)
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_pragma_auto_unroll_max_step():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[C].pragma(xo, "auto_unroll_max_step", 16)
    check_build(s, [A, B, C], ref)


def test_pragma_unroll_explicit():
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].pragma(xo, "auto_unroll_max_step", 8)
    s[B].pragma(xo, "unroll_explicit", True)
    check_build(s, [A, B], ref)


# compute_at / inline / root --------------------------------------------------------
def producer_consumer(n=N1):
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((n,), lambda i: B[i] * 2.0, name="C")
    return A, B, C, lambda a: (a + 1) * 2


@pytest.mark.parametrize("where", ["outer", "inner"])
def test_compute_at_elementwise(where):
    A, B, C, ref = producer_consumer()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[B].compute_at(s[C], xo if where == "outer" else xi)
    check_build(s, [A, C], ref)


def stencil(n=N1):
    A = te.placeholder((n + 4,), name="A")
    B = te.compute((n + 2,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    C = te.compute((n,), lambda i: B[i] + B[i + 2], name="C")

    def ref(a):
        b = a[:-2] + a[1:-1] + a[2:]
        return b[:-2] + b[2:]

    return A, B, C, ref


@pytest.mark.parametrize("where", ["outer", "inner"])
@pytest.mark.parametrize("factor", [64, 7, 1])
def test_compute_at_stencil_halo(where, factor):
    A, B, C, ref = stencil()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=factor)
    s[B].compute_at(s[C], xo if where == "outer" else xi)
    check_build(s, [A, C], ref, rtol=1e-5, atol=1e-5)


def test_compute_at_stencil_vectorized_consumer():
    A, B, C, ref = stencil()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[B].compute_at(s[C], xo)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    bo, bi = s[B].split(s[B].op.axis[0], factor=8)
    s[B].vectorize(bi)
    check_build(s, [A, C], ref, rtol=1e-5, atol=1e-5)


def test_compute_at_2d_stencil():
    A = te.placeholder((M2 + 2, N2 + 2), name="A")
    B = te.compute((M2 + 2, N2), lambda i, j: A[i, j] + A[i, j + 1] + A[i, j + 2], name="B")
    C = te.compute((M2, N2), lambda i, j: B[i, j] + B[i + 1, j] + B[i + 2, j], name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[B].compute_at(s[C], yo)

    def ref(a):
        b = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
        return b[:-2] + b[1:-1] + b[2:]

    check_build(s, [A, C], ref, rtol=1e-5, atol=1e-5)


def test_compute_at_chain_of_three():
    A = te.placeholder((N1 + 2,), name="A")
    B = te.compute((N1 + 2,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((N1 + 1,), lambda i: B[i] + B[i + 1], name="C")
    D = te.compute((N1,), lambda i: C[i] - C[i + 1], name="D")
    s = te.create_schedule(D.op)
    xo, xi = s[D].split(D.op.axis[0], factor=50)
    s[C].compute_at(s[D], xo)
    s[B].compute_at(s[C], s[C].op.axis[0])

    def ref(a):
        b = a * 2
        c = b[:-1] + b[1:]
        return c[:-1] - c[1:]

    check_build(s, [A, D], ref, rtol=1e-5, atol=1e-5)


def test_compute_at_reduction_producer():
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((0, N2), name="k")
    S = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="S")
    C = te.compute((M2, N2), lambda i, j: A[i, j] / S[i], name="C")
    s = te.create_schedule(C.op)
    s[S].compute_at(s[C], C.op.axis[0])
    rng = np.random.default_rng(3)
    a = (rng.random((M2, N2)) + 0.5).astype("float32")
    check_build(s, [A, C], lambda a: a / a.sum(axis=1, keepdims=True), inputs=[a], rtol=1e-5)


def test_compute_inline():
    A, B, C, ref = producer_consumer()
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    assert "produce B" not in str(schedule.lower(s, [A, C]))
    check_build(s, [A, C], ref)


def test_compute_inline_stencil():
    A, B, C, ref = stencil()
    s = te.create_schedule(C.op)
    s[B].compute_inline()
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(xi)
    check_build(s, [A, C], ref, rtol=1e-5, atol=1e-5)


def test_compute_root_undoes_compute_at():
    A, B, C, ref = stencil()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[B].compute_at(s[C], xo)
    s[B].compute_root()
    check_build(s, [A, C], ref, rtol=1e-5, atol=1e-5)


def test_intermediate_as_argument():
    A, B, C, ref = producer_consumer()
    s = te.create_schedule(C.op)
    check_build(s, [A, B, C], lambda a: (a + 1, (a + 1) * 2))


# cache_read / cache_write ------------------------------------------------------------
def test_cache_read():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    check_build(s, [A, B, C], ref)
    assert "A.local" in str(schedule.lower(s, [A, B, C]))


def test_cache_read_compute_at():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[AA].compute_at(s[C], yo)
    check_build(s, [A, B, C], ref)


def test_cache_read_global_scope():
    A, B, ref = ew1d()
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "global", [B])
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[AA].compute_at(s[B], xo)
    check_build(s, [A, B], ref)


def test_cache_write_reduction():
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((0, N2), name="k")
    B = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[BL].compute_at(s[B], xo)
    check_build(s, [A, B], lambda a: a.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_cache_write_elementwise():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[CL].compute_at(s[C], yo)
    s[C].vectorize(yi)
    check_build(s, [A, B, C], ref)


# the classic opt_gemm tutorial, step by step ---------------------------------------------
def gemm_compute(M, N, K):
    k = te.reduce_axis((0, K), name="k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    return A, B, C, k


def gemm_ref(a, b):
    return (a.astype("float64") @ b.astype("float64")).astype("float32")


def gemm_schedule(step, size, bn=32, kfactor=4):
    M = N = K = size
    if step < 5:
        A, B, C, k = gemm_compute(M, N, K)
        s = te.create_schedule(C.op)
        if step == 0:
            return s, [A, B, C]
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        (kaxis,) = s[C].op.reduce_axis
        ko, ki = s[C].split(kaxis, factor=kfactor)
        if step in (1, 2):
            s[C].reorder(xo, yo, ko, ki, xi, yi)
        else:
            s[C].reorder(xo, yo, ko, xi, ki, yi)
        if step >= 2:
            s[C].vectorize(yi)
        if step == 4:
            s[C].parallel(xo)
        return s, [A, B, C]
    # array packing (5), write cache (6), parallel (7)
    nb = -(-N // bn)
    k = te.reduce_axis((0, K), name="k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute(
        (nb, K, bn),
        lambda x, y, z: te.if_then_else(x * bn + z < N, B[y, te.min(x * bn + z, N - 1)], 0.0),
        name="packedB",
    )
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, te.floormod(y, bn)], axis=k),
        name="C",
    )
    s = te.create_schedule(C.op)
    if step == 5:
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        (kaxis,) = s[C].op.reduce_axis
        ko, ki = s[C].split(kaxis, factor=kfactor)
        s[C].reorder(xo, yo, ko, xi, ki, yi)
        s[C].vectorize(yi)
    else:
        CC = s.cache_write(C, "global")
        xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        s[CC].compute_at(s[C], yo)
        xc, yc = s[CC].op.axis
        (kaxis,) = s[CC].op.reduce_axis
        ko, ki = s[CC].split(kaxis, factor=kfactor)
        s[CC].reorder(ko, xc, ki, yc)
        s[CC].unroll(ki)
        s[CC].vectorize(yc)
        if step == 7:
            s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    return s, [A, B, C]


@pytest.mark.parametrize("size", [128, 100])
@pytest.mark.parametrize("step", range(8))
def test_opt_gemm_tutorial(step, size):
    s, args = gemm_schedule(step, size)
    check_build(s, args, gemm_ref, rtol=1e-4, atol=1e-4, name=f"gemm{step}")


# storage_align ---------------------------------------------------------------------
@pytest.mark.parametrize("factor, offset", [(16, 0), (16, 3), (7, 1)])
def test_storage_align(factor, offset):
    A, B, C, ref = ew2d()
    T = te.compute((M2, N2), lambda i, j: A[i, j] + 1.0, name="T")
    D = te.compute((M2, N2), lambda i, j: T[i, j] * B[i, j], name="D")
    s = te.create_schedule(D.op)
    s[T].storage_align(T.op.axis[0], factor, offset)
    check_build(s, [A, B, D], lambda a, b: (a + 1) * b)


def test_storage_align_cache_read_compute_at():
    A, B, C, ref = ew2d()
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[AA].compute_at(s[C], yo)
    s[AA].storage_align(AA.op.axis[0], 16, 1)
    check_build(s, [A, B, C], ref)


# reductions ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_reductions_split(kind):
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((0, N2), name="k")
    red = getattr(te, kind)
    B = te.compute((M2,), lambda i: red(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].reorder(xo, ko, xi, ki)
    s[B].vectorize(xi)
    ref = {"sum": lambda a: a.sum(1), "max": lambda a: a.max(1), "min": lambda a: a.min(1)}[kind]
    check_build(s, [A, B], ref, rtol=1e-5, atol=1e-5)


def test_reduction_two_axes():
    A = te.placeholder((7, 11, 13), name="A")
    k1 = te.reduce_axis((0, 11), name="k1")
    k2 = te.reduce_axis((0, 13), name="k2")
    B = te.compute((7,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    s[B].reorder(k2, k1)
    s[B].fuse(k2, k1)
    check_build(s, [A, B], lambda a: a.sum(axis=(1, 2)), rtol=1e-5, atol=1e-5)


def test_reduction_offset_axis():
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((3, 40), name="k")
    B = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    s[B].split(k, factor=5)
    check_build(s, [A, B], lambda a: a[:, 3:40].sum(axis=1), rtol=1e-5, atol=1e-5)


def argmax_op(m, n):
    def fcombine(x, y):
        lhs = te.if_then_else(x[1] >= y[1], x[0], y[0])
        rhs = te.if_then_else(x[1] >= y[1], x[1], y[1])
        return lhs, rhs

    argmax = te.comm_reducer(fcombine, lambda t0, t1: (te.const(-1, t0), te.min_value(t1)), name="argmax")
    val = te.placeholder((m, n), name="val")
    k = te.reduce_axis((0, n), name="k")
    T0, T1 = te.compute((m,), lambda i: argmax((k.var, val[i, k]), axis=k), name="T")
    return val, T0, T1, k


def test_argmax_split_reduce():
    m, n = 19, 47
    val, T0, T1, k = argmax_op(m, n)
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(k, factor=8)
    s[T0].parallel(T0.op.axis[0])
    rng = np.random.default_rng(5)
    v = rng.permutation(m * n).reshape(m, n).astype("float32")  # unique maxima
    check_build(s, [val, T0, T1], lambda v: (v.argmax(1).astype("int32"), v.max(1)), inputs=[v])


# symbolic extents -------------------------------------------------------------------
def test_symbolic_extent_passed_as_int():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[B].vectorize(xi)
    f = codegen.build(s, [A, B, n], name="sym")
    for size in (0, 1, 63, 64, 65, 1000):
        check_build(s, [A, B, n], lambda a: a * 2 + 1, var_values={"n": size}, module=f)


def test_symbolic_extent_inferred_from_shapes():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 8, 16)
    s[B].parallel(xo)
    f = codegen.build(s, [A, B], name="sym2")
    for shape in ((37, 53), (1, 1), (16, 8), (9, 100)):
        a = np.random.default_rng(0).random(shape).astype("float32")
        b = np.zeros(shape, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a + 1)
        check_build(s, [A, B], lambda a: a + 1, inputs=[a], module=f)


def test_symbolic_reduction_and_compute_at():
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n + 2,), lambda i: A[i] * 3.0, name="B")
    C = te.compute((n,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[B].compute_at(s[C], xo)
    f = codegen.build(s, [A, C, n], name="sym3")
    for size in (1, 16, 17, 100):
        check_build(s, [A, C, n], lambda a: 3 * a[:-2] + 3 * a[2:], var_values={"n": size},
                    module=f, rtol=1e-5)


# dtypes ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "int32", "int8", "uint8", "int64", "int16"])
def test_dtypes_elementwise(dtype):
    A = te.placeholder((M2, N2), name="A", dtype=dtype)
    B = te.placeholder((M2, N2), name="B", dtype=dtype)
    C = te.compute((M2, N2), lambda i, j: A[i, j] * B[i, j] + A[i, j], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[1], factor=16)
    s[C].vectorize(xi)
    with np.errstate(over="ignore"):
        check_build(s, [A, B, C], lambda a, b: (a * b + a).astype(dtype))


def test_float16_if_it_builds():
    A = te.placeholder((M2, N2), name="A", dtype="float16")
    B = te.compute((M2, N2), lambda i, j: A[i, j] * te.const(2.0, "float16") + A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[1], factor=8)
    s[B].vectorize(xi)
    try:
        f = codegen.build(s, [A, B], name="f16")
    except (NotImplementedError, TypeError) as e:  # pragma: no cover - optional dtype
        pytest.skip(f"float16 does not build: {e}")
    check_build(s, [A, B], lambda a: a * np.float16(2) + a, module=f, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["int32", "float32", "int8", "uint8"])
def test_bool_compares(dtype):
    A = te.placeholder((M2, N2), name="A", dtype=dtype)
    B = te.placeholder((M2, N2), name="B", dtype=dtype)
    C = te.compute((M2, N2), lambda i, j: te.any(A[i, j] < B[i, j], A[i, j] == 0), name="C", )
    assert C.dtype == "bool"
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[1], factor=16)
    s[C].vectorize(xi)
    check_build(s, [A, B, C], lambda a, b: (a < b) | (a == 0))


def test_bool_input_select():
    M = te.placeholder((M2, N2), name="M", dtype="bool")
    A = te.placeholder((M2, N2), name="A")
    C = te.compute((M2, N2), lambda i, j: te.if_then_else(M[i, j], A[i, j], -A[i, j]), name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[1])
    check_build(s, [M, A, C], lambda m, a: np.where(m, a, -a))


def test_casts():
    A = te.placeholder((N1,), name="A", dtype="int32")
    B = te.compute((N1,), lambda i: A[i].astype("float64") * 0.5, name="B")
    C = te.compute((N1,), lambda i: (B[i] * 4.0).astype("int8"), name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=32)
    s[C].vectorize(xi)
    check_build(s, [A, B, C], lambda a: (a * 0.5, (a * 2).astype("int8")))


def test_integer_floordiv_floormod_negative():
    A = te.placeholder((N1,), name="A", dtype="int32")
    B = te.compute((N1,), lambda i: A[i] // 7 + A[i] % 5, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    check_build(s, [A, B], lambda a: a // 7 + a % 5)


# math intrinsics, vectorised ---------------------------------------------------------------
_verf = np.vectorize(math.erf)

MATH = {
    "exp": (lambda x: x * 4.0, lambda a: np.exp(a * 4)),
    "log": (lambda x: x + 1.5, lambda a: np.log(a + 1.5)),
    "sqrt": (lambda x: x + 1.0, lambda a: np.sqrt(a + 1)),
    "tanh": (lambda x: x * 5.0, lambda a: np.tanh(a * 5)),
    "sigmoid": (lambda x: x * 8.0, lambda a: 1 / (1 + np.exp(-a * 8))),
    "erf": (lambda x: x * 3.0, lambda a: _verf((a * 3).astype("float64"))),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("vec", [None, 8, 16, 64])
@pytest.mark.parametrize("fname", sorted(MATH))
def test_math_intrinsics(fname, vec, dtype):
    pre, ref = MATH[fname]
    A = te.placeholder((N1,), name="A", dtype=dtype)
    B = te.compute((N1,), lambda i: getattr(te, fname)(pre(A[i])), name="B")
    s = te.create_schedule(B.op)
    if vec:
        xo, xi = s[B].split(B.op.axis[0], factor=vec)
        s[B].vectorize(xi)
    tol = 2e-6 if dtype == "float32" else 1e-12
    check_build(s, [A, B], lambda a: ref(a).astype(dtype), rtol=tol * 4, atol=tol)


def test_math_intrinsics_extreme_inputs():
    vals = np.array([-100, -20, -1e-3, 0, 1e-3, 20, 88, 100], dtype="float32")
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: te.tanh(A[i]) + te.sigmoid(A[i]) + te.erf(A[i]), name="B")
    s = te.create_schedule(B.op)
    s[B].vectorize(B.op.axis[0])
    v64 = vals.astype("float64")
    check_build(s, [A, B], lambda a: (np.tanh(v64) + 1 / (1 + np.exp(-v64)) + _verf(v64)).astype("float32"),
                inputs=[vals], rtol=1e-5, atol=1e-6)


def test_power_floor_ceil_abs():
    A = te.placeholder((N1,), name="A")
    B = te.compute(
        (N1,),
        lambda i: te.power(te.abs(A[i]) + 0.5, 1.5) + te.floor(A[i] * 4.0) - te.ceil(A[i] * 3.0),
        name="B",
    )
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].vectorize(xi)
    check_build(s, [A, B], lambda a: (np.abs(a) + 0.5) ** 1.5 + np.floor(a * 4) - np.ceil(a * 3),
                rtol=1e-5, atol=1e-5)


# InferBound ------------------------------------------------------------------------------------
def test_infer_bound_stencil():
    A, B, C, ref = stencil()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[B].compute_at(s[C], xo)
    bounds = schedule.InferBound(s)
    assert int(bounds[xi].extent) == 64
    assert int(bounds[s[B].op.axis[0]].extent) == 66  # 64 + halo of 2


def test_infer_bound_of_a_flat_read_under_fused_axes():
    """A consumer that fuses its axes and reads a flat producer at ``y * W + x`` needs the tile's
    points, not the whole rows its fused loop's parts span (a box of 2 rows, 74 points)."""
    A = te.placeholder((M2 * N2,), name="A")
    B = te.compute((M2 * N2,), lambda i: A[i] * 2.0 + 1.0, name="B")
    C = te.compute((M2, N2), lambda i, j: B[i * N2 + j] - 3.0, name="C")
    s = te.create_schedule(C.op)
    fo, fi = s[C].split(s[C].fuse(*C.op.axis), factor=5)
    s[B].compute_at(s[C], fo)
    bounds = schedule.InferBound(s)
    assert int(bounds[s[B].op.axis[0]].extent) == 5
    check_build(s, [A, C], lambda a: (a * 2 + 1 - 3).reshape(M2, N2))


# annotations combined with later primitives, odd placements --------------------------------
def pc2d():
    A = te.placeholder((M2, N2), name="A")
    B = te.compute((M2, N2), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((M2, N2), lambda i, j: B[i, j] * 2.0, name="C")
    return A, B, C, lambda a: (a + 1) * 2


def test_nested_parallel():
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    s[B].compute_at(s[C], C.op.axis[0])
    s[B].parallel(s[B].op.axis[1])
    check_build(s, [A, C], ref)


@pytest.mark.parametrize("kind", ["vectorize", "parallel", "unroll"])
def test_annotate_then_split(kind):
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    getattr(s[C], kind)(C.op.axis[1])
    s[C].split(C.op.axis[1], factor=5)
    check_build(s, [A, C], ref)


def test_compute_at_vectorized_axis():
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].vectorize(ji)
    s[B].compute_at(s[C], ji)
    check_build(s, [A, C], ref)


def test_compute_at_inside_parallel_fused():
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    fo, fi = s[C].split(f, factor=16)
    s[C].parallel(fo)
    s[B].compute_at(s[C], fi)
    check_build(s, [A, C], ref)


def test_vectorize_outer_axis():
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    s[C].vectorize(C.op.axis[0])
    check_build(s, [A, C], ref)


def test_unroll_whole_nest():
    A, B, C, ref = pc2d()
    s = te.create_schedule(C.op)
    s[C].unroll(C.op.axis[1])
    s[C].unroll(C.op.axis[0])
    check_build(s, [A, C], ref)


def test_cache_read_two_readers():
    A = te.placeholder((M2, N2), name="A")
    B = te.compute((M2, N2), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((M2, N2), lambda i, j: B[i, j] * A[i, j], name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [B, C])
    s[B].compute_at(s[C], C.op.axis[0])
    s[AA].compute_at(s[C], C.op.axis[0])
    check_build(s, [A, C], lambda a: (a + 1) * a)


def test_zero_extent():
    A = te.placeholder((0, 5), name="A")
    B = te.compute((0, 5), lambda i, j: A[i, j] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=4)
    check_build(s, [A, B], lambda a: a + 1)


# rfactor ------------------------------------------------------------------------------------
def test_rfactor_full_reduction():
    n = 1027
    A = te.placeholder((n,), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((1,), lambda i: te.sum(A[k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=16)
    BF = s.rfactor(B, ki)
    s[BF].vectorize(s[BF].op.axis[0])
    check_build(s, [A, B], lambda a: np.array([a.astype("float64").sum()]), rtol=1e-4, atol=1e-4)


def test_rfactor_rows_parallel():
    A = te.placeholder((M2, N2), name="A")
    k = te.reduce_axis((0, N2), name="k")
    B = te.compute((M2,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    BF = s.rfactor(B, ki)
    s[B].parallel(B.op.axis[0])
    s[BF].compute_at(s[B], B.op.axis[0])
    check_build(s, [A, B], lambda a: a.sum(1), rtol=1e-4, atol=1e-4)


def test_shared_subexpressions_compile_in_linear_time():
    # y = y * y ... builds a DAG of depth 64; a tree walk would take 2**64 steps
    n = 1000
    X = te.placeholder((n,), name="X")

    def body(i):
        y = X[i]
        for _ in range(64):
            y = y * y * 0.25 + 0.5
        return y

    Y = te.compute((n,), body, name="Y")
    s = te.create_schedule(Y.op)
    xo, xi = s[Y].split(Y.op.axis[0], factor=16)
    s[Y].vectorize(xi)
    s[Y].parallel(xo)

    def ref(x):
        y = x.copy()
        for _ in range(64):
            y = y * y * np.float32(0.25) + np.float32(0.5)
        return y

    check_build(s, [X, Y], ref, rtol=1e-4)


def test_build_one_output_of_a_tuple_reduction():
    am = te.comm_reducer(
        lambda x, y: (te.if_then_else(y[1] > x[1], y[0], x[0]), te.max(x[1], y[1])),
        lambda ti, tv: (te.const(-1, ti), te.min_value(tv)),
    )
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    idx, _ = te.compute((4,), lambda i: am((k.var, A[i, k]), axis=k), name="R")
    f = codegen.build(te.create_schedule(idx.op), [A, idx])
    a = np.random.rand(4, 5).astype("float32")
    out = np.zeros(4, dtype="int32")
    f(a, out)
    np.testing.assert_array_equal(out, a.argmax(axis=1))


def test_strided_and_clamped_vector_loads():
    # stride-2 ramps load the span once and shuffle; clamped ramps load as ramps
    # inside the clamp and gather at the border (guards catch any overreach)
    n = 37
    A = te.placeholder((2 * n,), name="A")
    B = te.compute((n,), lambda i: A[2 * i] + A[te.min(te.max(2 * i - 1, 0), 2 * n - 1)], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)

    def ref(a):
        idx = np.clip(2 * np.arange(n) - 1, 0, 2 * n - 1)
        return a[0::2] + a[idx]

    check_build(s, [A, B], ref)


@pytest.mark.parametrize("side", ["min", "max"])
def test_one_sided_clamped_vector_loads(side):
    # min(ramp, x(hi)) / max(ramp, x(lo)) (padded attention keys): a ramp load inside the bound,
    # the clamped lanes gathered at the border, none past the buffer (guards)
    n, pad = 29, 40
    A = te.placeholder((n,), name="A")
    if side == "min":
        B = te.compute((pad,), lambda i: A[te.min(i, n - 1)] * 2.0, name="B")
        idx = np.minimum(np.arange(pad), n - 1)
    else:
        B = te.compute((pad,), lambda i: A[te.max(i - (pad - n), 0)] * 2.0, name="B")
        idx = np.maximum(np.arange(pad) - (pad - n), 0)
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    check_build(s, [A, B], lambda a: a[idx] * 2.0)
