"""The runtime Module: timing, sources, export/load, build caching, threads."""

import time

import numpy as np
import pytest

import te
import codegen
from helpers import check_build


def axpy_schedule(n=1000):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.0 + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(xi)
    return s, [A, B, C]


def arrays(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random(n).astype("float32"), rng.random(n).astype("float32"), np.zeros(n, "float32"))


@pytest.fixture(scope="module")
def axpy():
    s, args = axpy_schedule()
    return codegen.build(s, args, name="axpy_rt")


@pytest.mark.parametrize("number, repeat", [(1, 1), (5, 3), (2, 7)])
def test_time_evaluator(axpy, number, repeat):
    a, b, c = arrays()
    res = axpy.time_evaluator(number=number, repeat=repeat)(a, b, c)
    assert len(res.results) == repeat
    assert all(r > 0 for r in res.results)
    assert res.mean > 0 and res.median > 0
    assert min(res.results) <= res.median <= max(res.results)
    np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)


def test_time_evaluator_classic_signature(axpy):
    a, b, c = arrays()
    res = axpy.time_evaluator(axpy.entry_name, None, number=3)(a, b, c)
    assert res.mean > 0 and len(res.results) == 3


def test_time_evaluator_checks_arguments(axpy):
    a, b, c = arrays()
    with pytest.raises((TypeError, ValueError), match="axpy_rt"):
        axpy.time_evaluator(number=1, repeat=1)(a, b)


def test_get_source_ll_names_function(axpy):
    ll = axpy.get_source("ll")
    assert isinstance(ll, str)
    assert "define" in ll
    assert "axpy_rt" in ll


def test_get_source_asm(axpy):
    asm = axpy.get_source("asm")
    assert isinstance(asm, str) and len(asm) > 0
    assert "axpy_rt" in asm


def test_get_source_unknown_format(axpy):
    with pytest.raises(ValueError, match="unknown format"):
        axpy.get_source("ptx")


def test_export_and_load(axpy, tmp_path):
    path = tmp_path / "k.so"
    axpy.export_library(str(path))
    assert path.exists() and path.stat().st_size > 0
    loaded = codegen.load_module(str(path))
    a, b, c1 = arrays()
    c2 = np.zeros_like(c1)
    axpy(a, b, c1)
    loaded(a, b, c2)
    np.testing.assert_array_equal(c1, c2)
    # the loaded module checks its arguments the same way
    with pytest.raises(ValueError, match=r"argument 2 'C'"):
        loaded(a, b, np.zeros(999, "float32"))


def test_export_and_load_parallel_symbolic(tmp_path):
    n = te.var("n")
    A = te.placeholder((n, 17), name="A")
    B = te.compute((n, 17), lambda i, j: te.exp(A[i, j]) + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    s[B].vectorize(B.op.axis[1])
    f = codegen.build(s, [A, B, n], name="sym_export")
    path = tmp_path / "sym.so"
    f.export_library(str(path))
    g = codegen.load_module(str(path))
    for rows in (1, 5, 33):
        check_build(s, [A, B, n], lambda a: np.exp(a) + 1, var_values={"n": rows}, module=g, rtol=1e-5)


def test_rebuild_is_cached():
    s, args = axpy_schedule(777)
    t0 = time.perf_counter()
    f1 = codegen.build(s, args, name="cached")
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    f2 = codegen.build(s, args, name="cached")
    second = time.perf_counter() - t0
    assert second < 0.05, f"second build took {second * 1e3:.1f} ms (first {first * 1e3:.1f} ms)"
    a, b, c = arrays(777)
    f2(a, b, c)
    np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)


def test_rebuild_same_schedule_new_objects_is_fast():
    # an identical schedule built from fresh tensors hits the IR-text cache
    s, args = axpy_schedule(555)
    codegen.build(s, args, name="cached2")
    s2, args2 = axpy_schedule(555)
    t0 = time.perf_counter()
    codegen.build(s2, args2, name="cached2")
    assert time.perf_counter() - t0 < 0.5


def test_schedule_change_after_build_is_seen():
    s, args = axpy_schedule(300)
    f1 = codegen.build(s, args, name="mutated")
    C = args[2]
    s[C].parallel(s[C].leaf_iter_vars[0])
    f2 = codegen.build(s, args, name="mutated")
    assert f2 is not f1
    check_build(s, args, lambda a, b: a * 2 + b, module=f2)


@pytest.mark.parametrize("threads", [1, 2])
def test_num_threads(threads):
    old = codegen.get_num_threads()
    try:
        codegen.set_num_threads(threads)
        assert codegen.get_num_threads() == threads
        A = te.placeholder((97, 61), name="A")
        k = te.reduce_axis((0, 61), name="k")
        B = te.compute((97,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="B")
        s = te.create_schedule(B.op)
        xo, xi = s[B].split(B.op.axis[0], factor=5)
        s[B].parallel(xo)
        for seed in range(3):
            check_build(s, [A, B], lambda a: (a * a).sum(axis=1), seed=seed, rtol=1e-5, atol=1e-5,
                        name="par_threads")
    finally:
        codegen.set_num_threads(old)


def test_parallel_loops_cut_into_unit_tasks_when_short():
    """Up to UNIT_TASKS_PER_THREAD iterations a thread, an iteration a task (6 iterations on 2
    threads: 6 tasks, not 1, 2, 1, 2); longer loops TASKS_PER_THREAD a thread; the tasks cover
    the loop once."""
    from codegen.parallel import TASKS_PER_THREAD, UNIT_TASKS_PER_THREAD, task_count, task_ranges

    assert task_count(6, 2) == 6 and task_count(1, 2) == 1 and task_count(0, 2) == 0
    assert task_count(2 * UNIT_TASKS_PER_THREAD + 1, 2) == 2 * TASKS_PER_THREAD
    assert task_count(7, 1) == 1
    for ext in (1, 5, 16, 17, 97):
        ranges = task_ranges(ext, 2)
        assert ranges[0][0] == 0 and ranges[-1][1] == ext
        assert all(a < b and b == c for (a, b), (c, _) in zip(ranges, ranges[1:] + [(ext, None)]))


def test_finish_time_mirrors_the_pools_home_ranges():
    from codegen.parallel import finish_time

    # 2 threads, 4 equal tasks: each runs its own two
    assert finish_time([1, 1, 1, 1], (1.0, 1.0)) == 2
    # the slow one keeps its first task; the fast one takes the rest of its range
    assert finish_time([1, 1, 1, 1], (1.0, 0.25)) == 4
    # a task of 3 at the start of the second range: the first thread takes the other leftovers
    assert finish_time([1, 1, 3, 1], (1.0, 1.0)) == 3
    assert finish_time([], (1.0, 1.0)) == 0 and finish_time([5], (1.0, 1.0)) == 5


@pytest.mark.parametrize("rows", [6, 17])
def test_short_parallel_loops_at_two_threads(rows):
    old = codegen.get_num_threads()
    try:
        codegen.set_num_threads(2)
        A = te.placeholder((rows, 37), name="A")
        B = te.compute((rows, 37), lambda i, j: A[i, j] * 3.0 + i, name="B")
        s = te.create_schedule(B.op)
        s[B].parallel(B.op.axis[0])
        check_build(s, [A, B], lambda a: a * 3 + np.arange(rows, dtype="float32")[:, None], name="short_par")
    finally:
        codegen.set_num_threads(old)


def test_module_repr_and_entry_name(axpy):
    assert axpy.entry_name == "axpy_rt"
    assert "axpy_rt" in repr(axpy)
    assert axpy["axpy_rt"] is axpy


def test_parallel_launch_leaves_the_calling_thread_unpinned():
    import os

    before = os.sched_getaffinity(0)
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    f = codegen.build(s, [A, B], name="unpinned")
    a = np.zeros(64, dtype="float32")
    b = np.zeros(64, dtype="float32")
    f(a, b)
    assert os.sched_getaffinity(0) == before
    np.testing.assert_allclose(b, a + 1)


def test_static_workspace_is_safe_under_concurrent_calls():
    import threading

    n = 400  # B is 640 KB: a static workspace of the module, not a stack buffer
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + B[j, i], name="C")
    s = te.create_schedule(C.op)
    f = codegen.build(s, [A, C], name="workspace")
    assert "_ws" in f.get_source("ll")
    errors = []

    def run(seed):
        rng = np.random.default_rng(seed)
        for _ in range(20):
            a = rng.random((n, n), dtype=np.float32)
            c = np.zeros((n, n), dtype=np.float32)
            f(a, c)
            if not np.allclose(c, 2 * a + 2 * a.T):
                errors.append(seed)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def misaligned(arr):
    """A C-contiguous copy of ``arr`` whose data starts 16 bytes past a 64-byte boundary."""
    raw = np.empty(arr.nbytes + 128, np.uint8)
    start = (16 - raw.ctypes.data) % 64
    out = raw[start:start + arr.nbytes].view(arr.dtype).reshape(arr.shape)
    out[...] = arr
    assert out.ctypes.data % 64 == 16
    return out


def test_nd_arrays_are_64_byte_aligned():
    from codegen.ndarray import ALIGN, aligned, aligned_zeros, array, empty

    src = misaligned(np.arange(37, dtype="float32"))
    for a in (array(src).numpy(), empty((5, 7), "float64").numpy(), aligned(src), aligned_zeros((3,), "int8")):
        assert a.ctypes.data % ALIGN == 0 and a.flags.c_contiguous
    np.testing.assert_array_equal(array(src).numpy(), src)
    kept = aligned_zeros((9,))
    assert aligned(kept) is kept  # already aligned: no copy


def test_heap_buffers_in_parallel_loops_start_on_a_line():
    # B (1.2 MB per row) is past the stack limit inside a parallel loop: malloc'ed per iteration,
    # its vector loop must start on a 64-byte boundary (malloc gives 16)
    n = 300_000
    A = te.placeholder((4, n), name="A")
    B = te.compute((4, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((4, n), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].parallel(C.op.axis[0])
    s[C].vectorize(s[C].split(C.op.axis[1], factor=8)[1])
    f = codegen.build(s, [A, C], name="heap_aligned")
    ll = f.get_source("ll")
    assert "@malloc" in ll and "ptrtoint" in ll  # the pointer rounded up to the next line
    a = np.random.default_rng(0).random((4, n), dtype=np.float32)
    c = np.zeros_like(a)
    f(a, c)
    np.testing.assert_allclose(c, 2 * a + 1, rtol=1e-6)
