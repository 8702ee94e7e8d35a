"""cache_write on a scheduled stage (relayout), loop-dependent reductions, a data axis fused
with a reduce axis, tighter bounds through split readers: built and checked against numpy."""

import numpy as np
import pytest

import schedule
import te
from helpers import check_build
from schedule import ScheduleError


def test_cache_write_after_split_and_reorder_takes_the_loops_layout():
    A = te.placeholder((10, 6), name="A")
    B = te.placeholder((10, 6), name="B")
    C = te.compute(A.shape, lambda i, j: A[i, j] * B[i, j], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)  # 10 rows: the last tile overshoots
    s[C].reorder(xo, C.op.axis[1], xi)
    CC = s.cache_write(C, "global")
    assert [int(d) for d in CC.shape] == [3, 6, 4]
    assert [iv.var.name for iv in s[C].leaf_iter_vars] == ["i", "j"] and not s[C].relations
    s[CC].vectorize(CC.op.axis[2])
    check_build(s, [A, B, C], lambda a, b: a * b)


def test_cache_write_after_split_of_a_reduction_keeps_the_reduce_axis():
    A = te.placeholder((9, 7), name="A")
    k = te.reduce_axis((0, 7), "k")
    C = te.compute((9,), lambda i: te.sum(A[i, k] * 2.0, axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    CC = s.cache_write(C, "local")
    assert [int(d) for d in CC.shape] == [3, 4] and len(CC.op.reduce_axis) == 1
    check_build(s, [A, C], lambda a: (a * 2.0).sum(axis=1), rtol=1e-5)


def test_cache_write_after_fuse_reads_the_cache_through_the_fused_index():
    A = te.placeholder((4, 5), name="A")
    C = te.compute(A.shape, lambda i, j: A[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[C].fuse(*C.op.axis)
    CC = s.cache_write(C, "local")
    assert [int(d) for d in CC.shape] == [20]
    check_build(s, [A, C], lambda a: a + 1.0)


def test_cache_write_refuses_a_split_reduce_axis():
    A = te.placeholder((8, 8), name="A")
    k = te.reduce_axis((0, 8), "k")
    C = te.compute((8,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].split(k, factor=4)
    with pytest.raises(ScheduleError, match="a reduce axis was split or fused into 'k.outer'"):
        s.cache_write(C, "local")


def test_cache_write_of_a_loop_dependent_reduction():
    """A reducer and a reduce domain that use the data axis ``n`` follow it into the cache."""
    X = te.placeholder((10,), name="x")

    def f(n):
        rv = te.reduce_axis((0, n))
        init = lambda dtype: te.if_then_else(n > 1, te.const(0, dtype), n.astype(dtype))  # noqa: E731
        red = te.comm_reducer(lambda x, y: te.max(x + y, n.astype("float32")), init, name="sum")
        return red(X[rv], axis=rv)

    Y = te.compute(X.shape, f, name="y")
    s = te.create_schedule([Y.op])
    s.cache_write(Y, "local")

    def ref(x):
        out = np.zeros(10, np.float32)
        for n in range(10):
            acc = np.float32(0 if n > 1 else n)
            for r in range(n):
                acc = max(acc + x[r], np.float32(n))
            out[n] = acc
        return out

    check_build(s, [X, Y], ref)


def test_fusing_a_data_axis_with_a_reduce_axis_makes_a_reduce_loop():
    X = te.placeholder((10,), dtype="int32", name="X")
    k = te.reduce_axis((0, 10))
    Y = te.compute((7,), lambda i: te.sum(X[k] * (i + 1), k), name="Y")
    s = te.create_schedule([Y.op])
    fused = s[Y].fuse(Y.op.axis[0], k)
    assert fused.iter_type == te.expr.COMM_REDUCE
    with pytest.raises(ScheduleError, match="cannot parallel reduce axis"):
        s[Y].parallel(fused)
    check_build(s, [X, Y], lambda x: np.arange(1, 8, dtype=np.int32) * x.sum(dtype=np.int32))


def test_a_consumer_split_into_tiles_bounds_its_producer_per_tile():
    """``(n % 128) // 2`` read in tiles of 32 rows of ``n`` needs 16 rows of the producer."""
    A = te.placeholder((256, 64), name="A")
    P = te.compute((128, 64), lambda r, c: A[r * 2, c] * 3.0, name="P")
    C = te.compute((256, 64), lambda n, m: P[(n % 128) // 2, m], name="C")
    s = te.create_schedule(C.op)
    no, ni = s[C].split(C.op.axis[0], factor=128)
    nio, nii = s[C].split(ni, factor=32)
    s[P].compute_at(s[C], nio)
    bounds = schedule.InferBound(s)
    assert bounds[P.op.axis[0]].extent == 16
    check_build(s, [A, C], lambda a: np.tile((a[0:256:2] * 3.0)[np.arange(128) // 2], (2, 1)))


def test_two_constants_compare_by_value():
    assert te.const(16) == 16 and not (te.const(3) == 4) and te.const(3) != 4


def test_a_consumer_loop_of_extent_one_adds_nothing_to_its_producers_region():
    """A split into one part times a symbolic extent is 0: the producer's region stays a tile."""
    m = te.var("m")
    A = te.placeholder((m,), name="A")
    A1 = te.compute((m,), lambda i: A[i] * 2.0, name="A1")
    A2 = te.compute((m,), lambda i: A1[i] + 2.0, name="A2")
    A3 = te.compute((m,), lambda i: A2[i] + 3.0, name="A3")
    s = te.create_schedule(A3.op)
    bx, tx = s[A3].split(A3.op.axis[0], factor=32)
    s[A2].compute_at(s[A3], bx)
    s[A2].split(A2.op.axis[0], nparts=1)
    s[A1].compute_at(s[A3], bx)
    assert schedule.InferBound(s)[A1.op.axis[0]].extent == 32
    check_build(s, [A, A3], lambda a: a * 2.0 + 5.0, var_values={"m": 77})
