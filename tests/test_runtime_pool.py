"""Tests for the native thread pool in codegen/runtime.py.

A hand-written LLVM module (task bodies + kernels calling
``@tessera_parallel_launch`` as an external declaration) is JITted together
with the runtime in one MCJIT engine, the way the Tessera JIT uses it.
Timing figures are printed (run with ``-s``), never asserted.
"""

import ctypes
import faulthandler
import os
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
import llvmlite.binding as llvm

try:
    from codegen.runtime import bind_runtime, runtime_llvm_ir
except ImportError:  # package not importable yet: load the file directly
    import importlib.util
    _path = os.path.join(os.path.dirname(__file__), os.pardir, "codegen", "runtime.py")
    _spec = importlib.util.spec_from_file_location("_tessera_runtime", _path)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    runtime_llvm_ir, bind_runtime = _mod.runtime_llvm_ir, _mod.bind_runtime

ALLOWED = sorted(os.sched_getaffinity(0))   # taken before any pinning
PIN = os.environ.get("TESSERA_PIN", "1")[:1] != "0"
_KEEP = []  # engines must outlive the (persistent) worker threads

# Closure of the "rec" body: int64 array, 3 slots per task:
# [count (+= task_id+1, atomically), pthread_self(), sched_getcpu()].
TEST_IR = r"""
target triple = "@TRIPLE@"
target datalayout = "@LAYOUT@"
declare i32 @tessera_parallel_launch(ptr, ptr, i32)
declare i64 @pthread_self()
declare i32 @sched_getcpu()

define void @rec_body(i32 %t, i32 %n, ptr %cl) {
  %t64 = sext i32 %t to i64
  %base = mul i64 %t64, 3
  %p0 = getelementptr i64, ptr %cl, i64 %base
  %v = add i64 %t64, 1
  %old = atomicrmw add ptr %p0, i64 %v seq_cst
  %p1 = getelementptr i64, ptr %p0, i64 1
  %self = call i64 @pthread_self()
  store i64 %self, ptr %p1
  %p2 = getelementptr i64, ptr %p0, i64 2
  %cpu = call i32 @sched_getcpu()
  %cpu64 = sext i32 %cpu to i64
  store i64 %cpu64, ptr %p2
  ret void
}

define i32 @launch_rec(ptr %arr, i32 %n) {
  %r = call i32 @tessera_parallel_launch(ptr @rec_body, ptr %arr, i32 %n)
  ret i32 %r
}

; iters launches back to back; returns the OR of all return codes
define i32 @launch_rec_repeat(ptr %arr, i32 %n, i32 %iters) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %acc = phi i32 [ 0, %entry ], [ %acc1, %loop ]
  %r = call i32 @tessera_parallel_launch(ptr @rec_body, ptr %arr, i32 %n)
  %acc1 = or i32 %acc, %r
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %iters
  br i1 %c, label %loop, label %exit
exit:
  ret i32 %acc1
}

; Nested: outer task t launches n inner rec tasks on block t (3*n slots each).
define void @outer_body(i32 %t, i32 %n, ptr %cl) {
  %tn = mul i32 %t, %n
  %off = mul i32 %tn, 3
  %blk = getelementptr i64, ptr %cl, i32 %off
  %r = call i32 @tessera_parallel_launch(ptr @rec_body, ptr %blk, i32 %n)
  ret void
}

define i32 @launch_nested(ptr %arr, i32 %n) {
  %r = call i32 @tessera_parallel_launch(ptr @outer_body, ptr %arr, i32 %n)
  ret i32 %r
}

define void @empty_body(i32 %t, i32 %n, ptr %cl) {
  ret void
}

define void @bench_empty(i32 %iters, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]
  %r = call i32 @tessera_parallel_launch(ptr @empty_body, ptr null, i32 %n)
  %i1 = add i32 %i, 1
  %c = icmp slt i32 %i1, %iters
  br i1 %c, label %loop, label %exit
exit:
  ret void
}

; Compute-bound: cl[0] = iterations per task (i64); result stored in cl[1+t].
define void @work_body(i32 %t, i32 %n, ptr %cl) {
entry:
  %iters = load i64, ptr %cl
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %x = phi double [ 1.0, %entry ], [ %x2, %loop ]
  %x1 = fmul double %x, 0.5
  %x2 = fadd double %x1, 0.25
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %iters
  br i1 %c, label %loop, label %exit
exit:
  %t1 = add i32 %t, 1
  %slot = getelementptr double, ptr %cl, i32 %t1
  store double %x2, ptr %slot
  ret void
}

define i32 @launch_work(ptr %cl, i32 %n) {
  %r = call i32 @tessera_parallel_launch(ptr @work_body, ptr %cl, i32 %n)
  ret i32 %r
}
"""


def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(), opt=3)


@pytest.fixture(scope="module")
def pool():
    os.sched_setaffinity(0, ALLOWED)  # in case another pool pinned this thread
    tm = _target_machine()
    triple, layout = llvm.get_process_triple(), str(tm.target_data)
    rt_mod = llvm.parse_assembly(runtime_llvm_ir(triple, layout))
    rt_mod.verify()
    test_mod = llvm.parse_assembly(
        TEST_IR.replace("@TRIPLE@", triple).replace("@LAYOUT@", layout))
    test_mod.verify()
    engine = llvm.create_mcjit_compiler(rt_mod, tm)
    engine.add_module(test_mod)
    engine.finalize_object()
    _KEEP.append(engine)

    def fn(name, restype, *args):
        addr = engine.get_function_address(name)
        assert addr, name
        return ctypes.CFUNCTYPE(restype, *args)(addr)

    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    rt = bind_runtime(engine)
    ns = SimpleNamespace(
        set_num_threads=rt.set_num_threads,
        get_num_threads=rt.get_num_threads,
        parallel_launch=rt.parallel_launch,
        rec_body=engine.get_function_address("rec_body"),
        launch_rec=fn("launch_rec", i32, vp, i32),
        launch_rec_repeat=fn("launch_rec_repeat", i32, vp, i32, i32),
        launch_nested=fn("launch_nested", i32, vp, i32),
        bench_empty=fn("bench_empty", None, i32, i32),
        launch_work=fn("launch_work", i32, vp, i32))
    ns.set_num_threads(0)
    yield ns
    ns.set_num_threads(0)
    os.sched_setaffinity(0, ALLOWED)  # undo the caller pinning for later tests


def _rec(pool, n, launch=None, slots=None):
    arr = np.zeros(max(slots or n, 1) * 3, dtype=np.int64)
    rc = (launch or pool.launch_rec)(arr.ctypes.data, n)
    assert rc == 0
    return arr.reshape(-1, 3)


def test_default_thread_count(pool):
    assert pool.get_num_threads() == len(ALLOWED)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64])
def test_all_tasks_run_once(pool, n):
    pool.set_num_threads(0)
    rec = _rec(pool, n)
    assert list(rec[:, 0]) == list(range(1, n + 1))
    me = threading.get_ident()   # == pthread_self() on Linux
    nthr = min(n, len(ALLOWED))
    # tasks are handed out dynamically: at most P threads ran them, and a
    # worker i (pinned) ran on the i-th allowed CPU, never on CPU #0's share
    assert len(set(rec[:, 1])) <= nthr
    if PIN and nthr > 1:
        worker_cpus = {int(c) for t, c in zip(rec[:, 1], rec[:, 2]) if t != me}
        assert worker_cpus <= set(ALLOWED[1:nthr])


@pytest.mark.skipif(len(ALLOWED) < 2, reason="home ranges need two threads")
def test_home_ranges(pool):
    # participant i runs the first task of its contiguous range [i*n/P, (i+1)*n/P) itself,
    # whoever is faster: consecutive kernels split alike find their data in the same core
    me = threading.get_ident()
    for threads, n in ((2, 4), (2, 9), (3, 7), (2, 64)):
        pool.set_num_threads(threads)
        for _ in range(20):
            rec = _rec(pool, n)
            assert list(rec[:, 0]) == list(range(1, n + 1))
            firsts = [int(rec[i * n // threads, 1]) for i in range(threads)]
            assert firsts[0] == me and len(set(firsts)) == threads, (threads, n, firsts)
    pool.set_num_threads(0)


def test_no_tasks(pool):
    for n in (0, -5):
        assert pool.launch_rec(None, n) == 0


def test_launch_from_python(pool):
    """tessera_parallel_launch called directly (via bind_runtime)."""
    pool.set_num_threads(2)
    arr = np.zeros(5 * 3, dtype=np.int64)
    assert pool.parallel_launch(pool.rec_body, arr.ctypes.data, 5) == 0
    assert list(arr[0::3]) == [1, 2, 3, 4, 5]


def test_thread_count_changes(pool):
    me = threading.get_ident()
    pool.set_num_threads(1)
    assert pool.get_num_threads() == 1
    rec = _rec(pool, 7)
    assert list(rec[:, 0]) == list(range(1, 8))
    assert all(rec[:, 1] == me)              # serial on the caller
    pool.set_num_threads(2)
    assert pool.get_num_threads() == 2
    rec = _rec(pool, 7)
    assert list(rec[:, 0]) == list(range(1, 8))
    assert 1 <= len(set(rec[:, 1])) <= 2
    pool.set_num_threads(3)                  # may exceed the CPU count
    rec = _rec(pool, 7)
    assert list(rec[:, 0]) == list(range(1, 8))
    assert len(set(rec[:, 1])) == 3
    pool.set_num_threads(2)                  # worker 2 now stays idle
    rec = _rec(pool, 64)
    assert list(rec[:, 0]) == list(range(1, 65))
    assert len(set(rec[:, 1])) == 2
    pool.set_num_threads(0)
    assert pool.get_num_threads() == len(ALLOWED)


def test_repeated_launches(pool):
    pool.set_num_threads(2)
    faulthandler.dump_traceback_later(120, exit=True)   # a lost wake-up hangs
    try:
        # back to back from native code
        arr = np.zeros(3 * 3, dtype=np.int64)
        assert pool.launch_rec_repeat(arr.ctypes.data, 3, 10000) == 0
        assert list(arr[0::3]) == [10000, 20000, 30000]
        # from Python, with pauses around the spin/futex boundary (~50 us)
        pauses = [0, 0, 20e-6, 50e-6, 100e-6, 300e-6, 1e-3]
        arr = np.zeros(2 * 3, dtype=np.int64)
        for i in range(10000):
            assert pool.launch_rec(arr.ctypes.data, 2) == 0
            if pauses[i % len(pauses)]:
                time.sleep(pauses[i % len(pauses)])
        assert list(arr[0::3]) == [10000, 20000]
    finally:
        faulthandler.cancel_dump_traceback_later()


def test_nested_launch_runs_inline(pool):
    pool.set_num_threads(2)
    me = threading.get_ident()
    for n in (2, 3, 5):
        rec = _rec(pool, n, pool.launch_nested, n * n).reshape(n, n, 3)
        for t in range(n):
            assert list(rec[t, :, 0]) == list(range(1, n + 1))
            assert len(set(rec[t, :, 1])) == 1           # inline, one thread
        assert rec[0, 0, 1] == me                     # the caller runs task 0 itself


def test_concurrent_host_threads(pool):
    pool.set_num_threads(2)
    arrs = [np.zeros(4 * 3, dtype=np.int64) for _ in range(3)]
    errors = []

    def run(arr):
        for _ in range(2000):
            if pool.launch_rec(arr.ctypes.data, 4) != 0:
                errors.append("rc")

    threads = [threading.Thread(target=run, args=(a,)) for a in arrs]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for arr in arrs:
        assert list(arr[0::3]) == [2000 * k for k in (1, 2, 3, 4)]


def test_fork_child_gets_fresh_pool(pool):
    pool.set_num_threads(2)
    _rec(pool, 2)                                   # workers exist now
    pid = os.fork()
    if pid == 0:                                    # child: must not hang
        code = 1
        try:
            rec = _rec(pool, 4)
            good = list(rec[:, 0]) == [1, 2, 3, 4] and len(set(rec[:, 1])) == 2
            code = 0 if good else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("parallel launch hung in a fork() child")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(status) == 0
    assert list(_rec(pool, 2)[:, 0]) == [1, 2]     # parent pool unaffected


def test_idle_pool_sleeps(pool):
    """After the spin window the workers sleep in the futex: no CPU burnt."""
    pool.set_num_threads(2)
    _rec(pool, 2)
    time.sleep(0.05)
    cpu0 = time.process_time()
    time.sleep(0.5)
    idle_cpu = time.process_time() - cpu0
    assert idle_cpu < 0.1, idle_cpu
    # and a launch after the sleep still wakes the worker
    rec = _rec(pool, 2)
    assert list(rec[:, 0]) == [1, 2] and rec[0, 1] != rec[1, 1]


def test_launch_overhead(pool):
    iters = 100000
    for nthreads in (1, 2):
        pool.set_num_threads(nthreads)
        pool.bench_empty(1000, 2)
        best = min(_timed(pool.bench_empty, iters, 2) for _ in range(3))
        print(f"\n[runtime] empty 2-task launch, {nthreads} thread(s): "
              f"{best / iters * 1e6:.3f} us/launch")
    pool.set_num_threads(2)
    lat = []
    for _ in range(20):                 # launches that must wake a sleeper
        time.sleep(2e-3)
        lat.append(_timed(pool.bench_empty, 1, 2))
    print(f"[runtime] launch waking a futex-sleeping worker: median "
          f"{sorted(lat)[10] * 1e6:.1f} us (incl. ctypes call)")
    pool.set_num_threads(0)


def test_compute_scaling(pool):
    total = 200_000_000
    cl = np.zeros(3, dtype=np.float64)
    cl.view(np.int64)[0] = total // 2
    times = {}
    for nthreads in (1, 2):
        pool.set_num_threads(nthreads)
        times[nthreads] = min(_timed(pool.launch_work, cl.ctypes.data, 2)
                              for _ in range(3))
        assert cl[1] == cl[2] == 0.5
    pool.set_num_threads(0)
    print(f"\n[runtime] compute 2 tasks: 1 thread {times[1] * 1e3:.1f} ms, "
          f"2 threads {times[2] * 1e3:.1f} ms, speedup {times[1] / times[2]:.2f}x")


def _timed(f, *args):
    t0 = time.perf_counter()
    f(*args)
    return time.perf_counter() - t0
