"""Measurement: failing, hanging, wrong and crashing candidates each cost one trial; scripts; DaskRunner."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import te
from tune import autotvm
from tune import record

E = autotvm.MeasureErrorNo
MODES = ["ok", "raise", "wrong", "hang", "crash", "slow_build", "ok_again"]


@autotvm.template("test/faulty")
def faulty(n):
    """``C[i] = A[B[i]] * 2`` with a knob that breaks it in every way a candidate can break."""
    cfg = autotvm.get_config()
    cfg.define_knob("mode", MODES)
    mode = cfg["mode"].val
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B", dtype="int32")  # random inputs are ints in [0, 4)
    if mode == "raise":
        raise ValueError("this config cannot be instantiated")
    if mode == "slow_build":
        time.sleep(30)
    if mode == "hang":  # ~1e11 iterations
        k1 = te.reduce_axis((0, 40000), name="k1")
        k2 = te.reduce_axis((0, 40000), name="k2")
        R = te.compute((n,), lambda i: te.sum(A[(i + k1 + k2) % n] * 1e-9, axis=[k1, k2]), name="R")
        C = te.compute((n,), lambda i: R[i] * 0.0 + A[B[i]] * 2.0, name="C")
    elif mode == "crash":  # reads 1.6 GB past A: SIGSEGV
        C = te.compute((n,), lambda i: A[B[i] * 400000000 + 400000000] * 2.0, name="C")
    elif mode == "wrong":
        C = te.compute((n,), lambda i: A[B[i]] * 2.0 + 1.0, name="C")
    else:
        C = te.compute((n,), lambda i: A[B[i]] * 2.0, name="C")
    s = te.create_schedule(C.op)
    if mode == "ok_again":
        s[C].split(C.op.axis[0], factor=16)
    return s, [A, B, C]


@autotvm.template("test/vadd")
def vadd(n):
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    cfg.define_split("t", C.op.axis[0], num_outputs=2)
    cfg["t"].apply(s, C, C.op.axis[0])
    return s, [A, C]


def test_every_failure_costs_one_trial(tmp_path):
    task = autotvm.task.create("test/faulty", args=(64,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=2, timeout=3)
    runner = autotvm.LocalRunner(number=1, repeat=1, timeout=3)
    log = str(tmp_path / "faulty.log")
    tuner = autotvm.tuner.GridSearchTuner(task)
    t0 = time.time()
    try:
        tuner.tune(
            len(MODES), autotvm.measure_option(builder, runner), callbacks=[autotvm.callback.log_to_file(log)]
        )
    finally:
        builder.close()
        runner.close()
    got = {r[0].config["mode"].val: r[1] for r in record.load_from_file(log)}
    assert {m: got[m].error_no for m in MODES} == {
        "ok": E.NO_ERROR,
        "raise": E.INSTANTIATION_ERROR,
        "wrong": E.WRONG_ANSWER,
        "hang": E.RUN_TIMEOUT,
        "crash": E.RUNTIME_DEVICE,
        "slow_build": E.BUILD_TIMEOUT,
        "ok_again": E.NO_ERROR,
    }
    assert "cannot be instantiated" in got["raise"].costs[0]
    assert "SIGSEGV" in got["crash"].costs[0]
    assert "differs from the reference" in got["wrong"].costs[0]
    assert runner.worker.starts >= 3  # restarted after the hang and after the crash
    assert time.time() - t0 < 60


def test_runner_options_and_cache_flush():
    task = autotvm.task.create("test/vadd", args=(1 << 16,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(
        number=3,
        repeat=4,
        min_repeat_ms=5,
        enable_cpu_cache_flush=True,
        cooldown_interval=0.01,
        reject_factor=None,
    )
    mon = autotvm.callback.Monitor()
    try:
        autotvm.tuner.RandomTuner(task, seed=0).tune(
            3, autotvm.measure_option(builder, runner), callbacks=[mon]
        )
    finally:
        builder.close()
        runner.close()
    assert len(mon.records) == 3
    for _, res in mon.records:
        assert res.error_no == 0 and len(res.costs) == 4 and all(c > 0 for c in res.costs)
    with pytest.raises(ValueError, match="number and repeat must be >= 1"):
        autotvm.LocalRunner(number=0)


def test_cache_flush_rotates_the_weights_through_copies_past_the_cache(monkeypatch):
    """With the flush, each call reads the inputs after the first from the next of copies that add
    up to ROTATE_BYTES (the first input and the output stay put), and computes the same answer."""
    import codegen
    from tune.measure import runner as run

    monkeypatch.setattr(run, "ROTATE_BYTES", 1 << 20)
    n = 1000  # 4000-byte weights: 263 copies reach 1 MiB
    A = te.placeholder((n,), name="A")
    W = te.placeholder((n,), name="W")
    C = te.compute((n,), lambda i: A[i] * W[i], name="C")
    mod = codegen.build(te.create_schedule(C.op), [A, W, C])
    specs = [{"is_output": False}, {"is_output": False}, {"is_output": True}]
    rng = np.random.default_rng(0)
    a, w, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    call, copies = run.rotating_call(mod, [a, w, c], specs)
    assert len(copies) == -(-(1 << 20) // w.nbytes)
    assert all(cp[0] is a and cp[2] is c for cp in copies)  # activations and output stay put
    assert len({cp[1].ctypes.data for cp in copies}) == len(copies)  # every weight copy is its own memory
    for _ in range(len(copies) + 2):
        c[:] = 0
        call()
        np.testing.assert_allclose(c, a * w, rtol=1e-6)
    w2 = rng.random(n, dtype=np.float32)
    call2, again = run.rotating_call(mod, [a, w2, c], specs)  # the next candidate: the same memory, its values
    assert [cp[1].ctypes.data for cp in again[1:]] == [cp[1].ctypes.data for cp in copies[1:]]
    for _ in range(len(again) + 2):
        call2()
        np.testing.assert_allclose(c, a * w2, rtol=1e-6)
    _, single = run.rotating_call(mod, [a, w, c], [specs[0], {"is_output": True}, specs[2]])
    assert len(single) == 1  # nothing after the first input: a plain call
    monkeypatch.setattr(run, "ROTATE_BYTES", 1 << 30)
    _, capped = run.rotating_call(mod, [a, w, c], specs)
    assert len(capped) == run.MAX_ROTATIONS


@autotvm.template("test/slowknob")
def slowknob(n):
    cfg = autotvm.get_config()
    cfg.define_knob("extra_work", [0, 1])
    A = te.placeholder((n,), name="A")
    if cfg["extra_work"].val:  # the same answer, n times the work
        k = te.reduce_axis((0, n), name="k")
        S = te.compute((n,), lambda i: te.sum(A[(i + k) % n], axis=k), name="S")
        C = te.compute((n,), lambda i: A[i] * 2.0 + S[i] * 0.0, name="C")
    else:
        C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    return te.create_schedule(C.op), [A, C]


def _tune_both(template: str, **runner_options) -> tuple:
    """The results of both configs of a two-config ``template`` at n=4096, grid search, one builder."""
    task = autotvm.task.create(template, args=(4096,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(**runner_options)
    mon = autotvm.callback.Monitor()
    try:
        autotvm.tuner.GridSearchTuner(task).tune(2, autotvm.measure_option(builder, runner), callbacks=[mon])
    finally:
        builder.close()
        runner.close()
    return tuple(res for _, res in mon.records)


@pytest.mark.parametrize("reject", [5.0, None])
def test_slow_candidate_rejected_after_one_call(reject):
    fast, slow = _tune_both("test/slowknob", number=2, repeat=3, reject_factor=reject)
    assert fast.error_no == 0 and slow.error_no == 0 and len(fast.costs) == 3
    assert min(slow.costs) > 50 * max(fast.costs)
    assert len(slow.costs) == (1 if reject else 3)


def test_slow_candidate_stopped_after_its_first_batch():
    """With stop_factor, a candidate whose first `number` calls average that many times the best is
    timed by those calls (one cost), the fast one by its full repeats."""
    fast, slow = _tune_both("test/slowknob", number=2, repeat=3, min_repeat_ms=50, reject_factor=None,
                            stop_factor=1.5)
    assert fast.error_no == 0 and slow.error_no == 0 and len(fast.costs) == 3
    assert len(slow.costs) == 1 and slow.costs[0] > 50 * max(fast.costs)


def test_calls_or_stop_reads_as_calls_lasting():
    """Not stopped, the reading is calls_lasting's (the same calls); stopped, the mean of the first
    batch that lasts STOP_PROBE_MS."""
    from tune.measure.runner import calls_or_stop

    now = [0.0]
    clock = lambda: now[0]  # noqa: E731 (each call takes 2 ms of it)
    calls = []

    def fn():
        calls.append(1)
        now[0] += 2e-3

    cost, stopped = calls_or_stop(fn, [], 3, 100, clock, stop_above=None)
    assert not stopped and cost == pytest.approx(2e-3) and len(calls) == 3 + 51  # calls_lasting's: 3, then 51
    calls.clear()
    cost, stopped = calls_or_stop(fn, [], 3, 100, clock, stop_above=1.5e-3)
    assert stopped and len(calls) == 3 and cost == pytest.approx(2e-3)  # 6 ms: past the probe's 5
    calls.clear()
    cost, stopped = calls_or_stop(fn, [], 1, 100, clock, stop_above=1.5e-3)
    assert stopped and len(calls) == 1 + 3 and cost == pytest.approx(2e-3)  # 2 ms, then 3 calls to pass 5 ms
    calls.clear()
    cost, stopped = calls_or_stop(fn, [], 1, 100, clock, stop_above=2.5e-3)
    assert not stopped and len(calls) == 1 + 3 + 51 and cost == pytest.approx(2e-3)


@autotvm.template("test/idleknob")
def idleknob(n):
    cfg = autotvm.get_config()
    cfg.define_knob("unused", [0, 1])  # changes nothing: both configs compile to the same code
    A = te.placeholder((n,), name="A")
    C = te.compute((n,), lambda i: A[i] * 2.0, name="C")
    return te.create_schedule(C.op), [A, C]


@pytest.mark.parametrize("once", [True, False])
def test_same_code_measured_once(once):
    """With same_code_once, a candidate whose code was measured already takes that measurement."""
    first, second = _tune_both("test/idleknob", number=2, repeat=3, same_code_once=once)
    assert first.error_no == 0 and second.error_no == 0
    assert (second.costs == first.costs) == once


def test_the_builder_compiles_the_same_code_once(monkeypatch):
    from codegen import service
    from tune.measure import builder as bm

    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: A[i] + 1.0, name="C")
    compiled = []
    real = service.compile_ir
    monkeypatch.setattr(service, "compile_ir", lambda *a, **k: compiled.append(1) or real(*a, **k))
    monkeypatch.setattr(bm, "_objects", {})
    first = bm.compile_object(te.create_schedule(C.op), [A, C], "k")
    second = bm.compile_object(te.create_schedule(C.op), [A, C], "k")
    assert len(compiled) == 1 and second["obj"] == first["obj"] and second["symbol"] == first["symbol"]


def test_the_runner_takes_classic_parameters_and_refuses_bad_ones():
    runner = autotvm.LocalRunner(timeout=5, number=2, repeat=4, min_repeat_ms=7, cooldown_interval=0.1,
                                 enable_cpu_cache_flush=True)
    payload = runner.payload({"symbol": "f"})
    assert (payload["number"], payload["repeat"], payload["min_repeat_ms"], payload["flush"]) == (2, 4, 7.0, True)
    runner.close()
    with pytest.raises(ValueError, match="min_repeat_ms and cooldown_interval must be >= 0"):
        autotvm.LocalRunner(min_repeat_ms=-1)
    with pytest.raises(TypeError):
        autotvm.LocalRunner(normalize=True)  # no normalising runner: classic parameters only



def test_tutorial_script_without_main_guard(tmp_path):
    """A script that defines its template at top level (as TVM's tutorial does) is not re-run by the workers."""
    script = tmp_path / "tutorial.py"
    log = tmp_path / "t.log"
    script.write_text(
        textwrap.dedent(f"""
        import te, codegen
        from tune import autotvm

        @autotvm.template("script/scale")
        def scale(n):
            A = te.placeholder((n,), name="A")
            B = te.compute((n,), lambda i: A[i] * 3.0, name="B")
            s = te.create_schedule(B.op)
            cfg = autotvm.get_config()
            cfg.define_split("t", B.op.axis[0], num_outputs=2)
            cfg["t"].apply(s, B, B.op.axis[0])
            return s, [A, B]

        print("RUN")
        task = autotvm.task.create("script/scale", args=(256,), target="llvm")
        mo = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=2), runner=autotvm.LocalRunner(number=2))
        tuner = autotvm.tuner.RandomTuner(task, seed=0)
        tuner.tune(n_trial=4, measure_option=mo, callbacks=[autotvm.callback.log_to_file({str(log)!r})])
        with autotvm.apply_history_best({str(log)!r}):
            s, args = scale(256)
            f = codegen.build(s, args)
        print("BEST", tuner.best_flops > 0)
    """)
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("RUN") == 1 and "BEST True" in out.stdout
    recs = list(record.load_from_file(log))
    assert len(recs) == 4 and all(r[1].error_no == 0 for r in recs)


# -------------------------------------------------------------------- Dask --
@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=50,
        ) as lc,
        distributed.Client(lc) as client,
    ):
        yield lc, client


def test_dask_runner_measures_with_the_same_records(cluster, tmp_path):
    lc, client = cluster
    task = autotvm.task.create("test/vadd", args=(4096,), target="llvm")
    runner = autotvm.DaskRunner(lc.scheduler_address, number=2, repeat=2, reject_factor=None)
    builder = autotvm.LocalBuilder(n_parallel=2)
    log = str(tmp_path / "dask.log")
    try:
        autotvm.tuner.RandomTuner(task, seed=0).tune(
            6, autotvm.measure_option(builder, runner), callbacks=[autotvm.callback.log_to_file(log)]
        )
    finally:
        builder.close()
        runner.close()
    recs = list(record.load_from_file(log))
    assert len(recs) == 6 and all(r[1].error_no == 0 and len(r[1].costs) == 2 for r in recs)
    assert recs[0][0].config.index == task.default_config().index
    hosts = {ws.host for ws in lc.scheduler.workers.values()}
    assert hosts == {"127.0.0.1"} and len(lc.scheduler.workers) == 2
    spans = sorted(runner.spans, key=lambda sp: sp[1])
    assert len(spans) == 6 and len({sp[0] for sp in spans}) == 2  # both workers measured...
    assert all(a[2] <= b[1] for a, b in zip(spans, spans[1:]))  # ...but never two at once on one host


def test_dask_worker_killed_mid_measurement_costs_that_trial(cluster, tmp_path):
    lc, client = cluster
    task = autotvm.task.create("test/faulty", args=(64,), target="llvm")
    runner = autotvm.DaskRunner(client, number=1, repeat=1, timeout=30)
    builder = autotvm.LocalBuilder(n_parallel=2)
    hang = task.config_space.get(MODES.index("hang"))
    ok = task.config_space.get(MODES.index("ok_again"))

    pids = client.run(os.getpid)

    def killer():  # SIGKILL the Dask worker that measures the hanging candidate
        for _ in range(400):
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                time.sleep(1.0)
                os.kill(pids[busy[0]], signal.SIGKILL)
                return
            time.sleep(0.05)

    try:
        batch = autotvm.measure.create_measure_batch(task, autotvm.measure_option(builder, runner))
        inputs = [autotvm.MeasureInput(task.target, task, c) for c in (hang, ok)]
        th = threading.Thread(target=killer)
        th.start()
        t0 = time.time()
        results = batch(inputs)
        th.join()
    finally:
        builder.close()
        runner.close()
    assert results[0].error_no == E.RUNTIME_DEVICE and "lost" in results[0].costs[0]
    assert results[1].error_no == E.NO_ERROR
    assert time.time() - t0 < 30


def test_measured_arguments_are_64_byte_aligned():
    # the runner times a candidate on buffers aligned as the graph executor's are
    from tune.measure.runner import random_arguments

    specs = [{"kind": "buffer", "name": n, "shape": list(s), "dtype": d, "is_output": o}
             for n, s, d, o in (("a", (3, 5), "float32", False), ("b", (7,), "int32", False),
                                ("c", (2, 9), "float32", True))]
    for seed in range(3):
        args = random_arguments(specs, seed)
        assert [a.ctypes.data % 64 for a in args] == [0, 0, 0]
        assert args[0].shape == (3, 5) and np.isnan(args[2]).all()


def test_ref_input_is_what_the_runner_times_and_each_trial_goes_through_the_executor():
    # mode "crash" reads A[B[i] * 4e8 + 4e8]: with random B it faults, with B = -1 it reads A[0]
    task = autotvm.task.create("test/faulty", args=(64,), target="llvm")
    crash = next(c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                 if c["mode"].val == "crash")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(number=1, repeat=1, check_correctness=False)
    submitted = []

    class Recording:
        def submit(self, func, *args, **kwargs):
            submitted.append(kwargs.get("ref_input"))
            return runner_executor.submit(func, *args, **kwargs)

    runner_executor, runner.executor = runner.executor, Recording()
    try:
        batch = autotvm.measure.create_measure_batch(task, autotvm.measure_option(builder, runner))
        inp = [autotvm.MeasureInput(task.target, task, crash)]
        assert batch(inp)[0].error_no == E.RUNTIME_DEVICE
        runner.ref_input = [np.ones(64, "float32"), np.full(64, -1, "int32")]
        res = batch(inp)[0]
        assert res.error_no == E.NO_ERROR and res.costs[0] > 0
        runner.ref_input = [np.ones(64, "float32")]
        res = batch(inp)[0]
        assert res.error_no == E.RUNTIME_DEVICE and "ref_input: 1 arrays for 2 input arguments (A, B)" in res.costs[0]
    finally:
        builder.close()
        runner.close()
    assert submitted[0] is None and len(submitted) == 3 and submitted[1][1][0] == -1


def test_measure_result_is_classic_four_fields():
    res = autotvm.MeasureResult((1.0,), 0, 2.0, 3.0, flush=True)
    assert tuple(res) == ((1.0,), 0, 2.0, 3.0) and res.flush and not res.in_place
    again = autotvm.MeasureResult(*list(res))  # classic tests rebuild results this way
    assert again.timestamp == 3.0 and not again.flush
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(res)).flush and copy.deepcopy(res).flush


def test_thread_cpu_clock_times_on_one_thread_by_the_given_clock(monkeypatch):
    """``clock="thread_cpu"``: the measuring process's pool at one thread, every reading taken with
    ``time.thread_time`` (here a fake that ticks one second a reading), the result marked."""
    import codegen
    from tune.measure import runner as run

    task = autotvm.task.create("test/vadd", args=(1000,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    builder.set_task(task)
    (built,) = builder.build([autotvm.MeasureInput(task.target, task, task.config_space.get(0))])
    builder.close()
    runner = autotvm.LocalRunner(number=2, repeat=3, clock="thread_cpu", check_correctness=False)
    payload = runner.payload(built.build)
    assert payload["clock"] == "thread_cpu"
    ticks = iter(range(1000))
    monkeypatch.setitem(run.CLOCK_FUNCTIONS, "thread_cpu", lambda: float(next(ticks)))
    before = codegen.get_num_threads()
    try:
        value = run.run_candidate(payload)
        assert codegen.get_num_threads() == 1
        # a repeat: 2 calls between two readings one tick apart (min_repeat_ms 0: no doubling)
        assert value["clock"] == "thread_cpu" and value["costs"] == [0.5, 0.5, 0.5]
        res = run.run_result("ok", value, built, 0.1, 10)
        assert res.clock == "thread_cpu" and res.cost == 0.5
        value = run.run_candidate(dict(payload, clock="wall"))
        assert value["clock"] == "wall" and all(0 < c < 0.5 for c in value["costs"])
    finally:
        codegen.set_num_threads(before)
        run.pool_for("wall")
        runner.close()
    with pytest.raises(ValueError, match="unknown clock 'cpu'"):
        autotvm.LocalRunner(clock="cpu")


def test_a_tune_on_the_thread_cpu_clock_records_it_and_best_reads_one_clock(tmp_path):
    """A short AutoTVM tune measured by one thread's CPU time: every record says so, survives the
    log, and where a log holds readings of two clocks the last one's rank the configs."""
    task = autotvm.task.create("test/vadd", args=(1 << 14,), target="llvm")
    log = str(tmp_path / "vadd.jsonl")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(number=2, repeat=2, min_repeat_ms=1, clock="thread_cpu")
    try:
        autotvm.tuner.RandomTuner(task, seed=0).tune(
            4, autotvm.measure_option(builder, runner), callbacks=[autotvm.callback.log_to_file(log)])
    finally:
        builder.close()
        runner.close()
    rows = record.load_records(log)
    assert len(rows) == 4 and all(r.clock == "thread_cpu" and r.error_no == 0 and r.cost > 0 for _, r in rows)
    assert '"clock": "thread_cpu"' in open(log).readline()
    res = autotvm.MeasureResult((1.0,), 0, 2.0, 3.0, clock="thread_cpu")
    assert "clock='thread_cpu'" in repr(res) and tuple(res) == ((1.0,), 0, 2.0, 3.0)
    assert pickle_roundtrip(res).clock == "thread_cpu" and autotvm.MeasureResult(*list(res)).clock == "wall"
    # a wall reading ten times faster, of another config, then the log's last record on the thread clock
    inp_a, inp_b = rows[0][0], next(i for i, _ in rows if i.config.index != rows[0][0].config.index)
    mixed = [(inp_a, autotvm.MeasureResult((1e-9,), 0, 0.1, 1.0)), *rows]
    best = record.best_by_workload(mixed)
    assert next(iter(best.values()))[1].clock == "thread_cpu"
    mixed.append((inp_b, autotvm.MeasureResult((2e-9,), 0, 0.1, 1.0)))  # the last record: wall
    (inp, res), = record.best_by_workload(mixed).values()
    assert res.clock == "wall" and inp.config.index == inp_a.config.index


def pickle_roundtrip(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))


@pytest.mark.parametrize("clock", ["thread_cpu", "wall"])
def test_on_the_thread_cpu_clock_candidates_run_as_their_builds_finish(clock):
    """One thread's CPU time does not count the time builds take the cores: each candidate runs as
    soon as its build is done (here, builds that finish in order); on the wall clock a batch is built
    before anything runs."""
    from tune.measure.option import create_measure_batch

    task = autotvm.task.create("test/vadd", args=(1000,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(number=1, repeat=1, clock=clock)
    events = []

    def build_each(inputs):
        for k, inp in enumerate(inputs):
            events.append(f"build {k}")
            yield builder._build_one(inp)

    measure = runner.measure

    def logged(inp, build, ref_input=None):
        events.append(f"run {inp.config.index}")
        return measure(inp, build, ref_input)

    builder.build_each = build_each
    builder.build = lambda inputs: list(build_each(inputs))
    runner.measure = logged
    try:
        batch = create_measure_batch(task, autotvm.measure_option(builder, runner))
        events.clear()
        configs = [task.config_space.get(k) for k in (1, 2, 3)]
        results = batch([autotvm.MeasureInput(task.target, task, c) for c in configs])
    finally:
        builder.close()
        runner.close()
    assert all(r.error_no == 0 and r.clock == clock for r in results)
    runs = [f"run {c.index}" for c in configs]
    if clock == "thread_cpu":
        assert events == ["build 0", runs[0], "build 1", runs[1], "build 2", runs[2]]
    else:
        assert events == ["build 0", "build 1", "build 2", *runs]
