"""Measurement: failing, hanging, wrong and crashing candidates each cost one trial; scripts; DaskRunner."""

import json
import os
import re
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
    from tune.measure import execute

    monkeypatch.setattr(execute, "ROTATE_BYTES", 1 << 20)
    n = 1000  # 4000-byte weights: 263 copies reach 1 MiB
    A = te.placeholder((n,), name="A")
    W = te.placeholder((n,), name="W")
    C = te.compute((n,), lambda i: A[i] * W[i], name="C")
    mod = codegen.build(te.create_schedule(C.op), [A, W, C])
    specs = [{"is_output": False}, {"is_output": False}, {"is_output": True}]
    rng = np.random.default_rng(0)
    a, w, c = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32), np.zeros(n, np.float32)
    call, copies = execute.rotating_call(mod, [a, w, c], specs)
    assert len(copies) == -(-(1 << 20) // w.nbytes)
    assert all(cp[0] is a and cp[2] is c for cp in copies)  # activations and output stay put
    assert len({cp[1].ctypes.data for cp in copies}) == len(copies)  # every weight copy is its own memory
    for _ in range(len(copies) + 2):
        c[:] = 0
        call()
        np.testing.assert_allclose(c, a * w, rtol=1e-6)
    _, single = execute.rotating_call(mod, [a, w, c], [specs[0], {"is_output": True}, specs[2]])
    assert len(single) == 1  # nothing after the first input: a plain call
    monkeypatch.setattr(execute, "ROTATE_BYTES", 1 << 30)
    _, capped = execute.rotating_call(mod, [a, w, c], specs)
    assert len(capped) == execute.MAX_ROTATIONS


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


@pytest.mark.parametrize("reject", [5.0, None])
def test_slow_candidate_rejected_after_one_call(reject):
    task = autotvm.task.create("test/slowknob", args=(4096,), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(number=2, repeat=3, reject_factor=reject)
    mon = autotvm.callback.Monitor()
    try:
        autotvm.tuner.GridSearchTuner(task).tune(2, autotvm.measure_option(builder, runner), callbacks=[mon])
    finally:
        builder.close()
        runner.close()
    (_, fast), (_, slow) = mon.records
    assert fast.error_no == 0 and slow.error_no == 0 and len(fast.costs) == 3
    assert min(slow.costs) > 50 * max(fast.costs)
    assert len(slow.costs) == (1 if reject else 3)



def test_normalized_timing_is_a_ratio_to_the_reference():
    """Each repeat is the candidate's time over the bracketing reference (fallback) timings, times the
    reference's settled time: the fallback itself measures at ~its settled time, a candidate n times
    slower at ~n times it; each task's reference is settled through its ratio to the yardstick."""
    builder = autotvm.LocalBuilder(n_parallel=1)
    norm = autotvm.LocalRunner(number=2, repeat=3, min_repeat_ms=10, reject_factor=None)
    raw = autotvm.LocalRunner(number=2, repeat=3, min_repeat_ms=10, reject_factor=None, normalize=False)
    got = {}
    try:
        for n in (8192, 4096):  # a fallback of 2-8 us: its native time, not Python's call overhead, dominates
            task = autotvm.task.create("test/slowknob", args=(n,), target="llvm")
            for name, runner in (("norm", norm), ("raw", raw)):
                mon = autotvm.callback.Monitor()
                autotvm.tuner.GridSearchTuner(task).tune(
                    2, autotvm.measure_option(builder, runner), callbacks=[mon]
                )
                assert [r.error_no for _, r in mon.records] == [0, 0]
                got[n, name] = [sum(r.costs) / len(r.costs) for _, r in mon.records]
            assert 0.5 < got[n, "norm"][0] / norm.ref_time < 2.0  # the fallback is the reference
            if n == 8192:
                yard, first = norm.yardstick, norm.ref_time
                assert yard is not None and yard > 0
            else:  # the same yardstick scales the second reference, settled by its own ratio
                assert norm.yardstick == yard and norm.ref_time != first
    finally:
        builder.close()
        norm.close()
        raw.close()
    for n in (8192, 4096):
        fast, slow = got[n, "norm"]
        assert slow > 50 * fast
        assert 0.33 < (slow / fast) / (got[n, "raw"][1] / got[n, "raw"][0]) < 3.0
    assert len(norm._ref_times) == 2 and all(t > 0 for t in norm._ref_times.values())


def test_yardstick_scale_is_stored_once_per_host(tmp_path, monkeypatch):
    """The yardstick settles once and is stored in the cache: a second runner session (a new
    process) reads its figure instead of settling anew, so both sessions' records share one scale;
    a stored settle shorter than the current one is not trusted and a longer one is kept."""
    from tune.measure import yardstick

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    task = autotvm.task.create("test/slowknob", args=(1024,), target="llvm")
    seen = []
    for _ in range(2):
        builder = autotvm.LocalBuilder(n_parallel=1)
        runner = autotvm.LocalRunner(number=2, repeat=1, min_repeat_ms=5, reject_factor=None)
        try:
            autotvm.tuner.GridSearchTuner(task).tune(1, autotvm.measure_option(builder, runner))
        finally:
            builder.close()
            runner.close()
        seen.append(runner.yardstick)
    assert seen[0] is not None and seen[0] == seen[1]
    stored = json.loads((tmp_path / "tune_scale.json").read_text())
    (key, entry), = [(k, e) for k, e in stored.items() if "yardstick:" in k and " reference:" not in k]
    assert entry["seconds"] == seen[0]
    # beside it, the fastest round trip between the vCPUs the runner's state probe has read
    assert all(e["value"] > 0 for k, e in stored.items() if k.endswith("round trip ns"))
    assert yardstick.stored(key, entry["settle_s"]) == seen[0]
    assert yardstick.stored(key, entry["settle_s"] + 1) is None  # settled too briefly for a longer SETTLE_S
    yardstick.store(key, 1.0, entry["settle_s"] / 2)  # a shorter settle never replaces a longer one
    assert yardstick.stored(key, 0) == seen[0]
    yardstick.store(key, 1.0, entry["settle_s"] + 1)
    assert yardstick.stored(key, entry["settle_s"] + 1) == 1.0
    # the line benchmarks print beside a figure: the yardstick now against the stored settle
    from tune.measure.execute import host_note

    assert re.fullmatch(r"host before: the yardstick ran 0\.00x its settled time \(quiet; quiet <= 1\.15x\), "
                        r"the vCPUs (near|apart)", host_note("before", 0.01))  # 1 s stored: far below it
    yardstick.store(key, 1e-9, entry["settle_s"] + 2)
    assert "its settled time (busy;" in host_note("after", 0.01)
    (tmp_path / "tune_scale.json").write_text("{not json")
    assert yardstick.stored(key, 0) is None  # unreadable: settle again
    assert host_note("now", 0.01) == "host now: unknown (no runner has settled the yardstick here)"


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
    from tune.measure.execute import random_arguments

    specs = [{"kind": "buffer", "name": n, "shape": list(s), "dtype": d, "is_output": o}
             for n, s, d, o in (("a", (3, 5), "float32", False), ("b", (7,), "int32", False),
                                ("c", (2, 9), "float32", True))]
    for seed in range(3):
        args = random_arguments(specs, seed)
        assert [a.ctypes.data % 64 for a in args] == [0, 0, 0]
        assert args[0].shape == (3, 5) and np.isnan(args[2]).all()


def test_task_scales_are_calibrated_together_and_stored_per_host(tmp_path, monkeypatch):
    """``LocalRunner.calibrate`` settles several tasks' references in one call, before any
    measurement; the ratios are stored beside the yardstick, so a second runner session (a resumed
    tune) reads every task's scale instead of probing it anew, and its records share the scale."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    tasks = [autotvm.task.create("test/slowknob", args=(n,), target="llvm") for n in (8192, 4096)]
    builder = autotvm.LocalBuilder(n_parallel=1)
    seen = []
    try:
        refs = []
        for task in tasks:
            builder.set_task(task)
            refs.append(builder.build_reference(task))
        for _ in range(2):
            runner = autotvm.LocalRunner(number=2, repeat=1, min_repeat_ms=5, reject_factor=None)
            try:
                runner.calibrate(refs + [None, refs[0]], passes=2)  # None (a failed build) and repeats skipped
                seen.append((dict(runner._ref_times), runner.yardstick))
                mon = autotvm.callback.Monitor()
                autotvm.tuner.GridSearchTuner(tasks[1]).tune(1, autotvm.measure_option(builder, runner),
                                                             callbacks=[mon])
                assert runner.ref_time == runner._ref_times[refs[1]["key"]]  # the task's calibrated scale
                assert mon.records[0][1].error_no == 0
            finally:
                runner.close()
    finally:
        builder.close()
    (first, yard), (second, yard2) = seen
    assert set(first) == {r["key"] for r in refs} and all(v > 0 for v in first.values())
    assert first == second and yard == yard2  # read back, not probed again
    stored = json.loads((tmp_path / "tune_scale.json").read_text())
    ratios = sorted(e["seconds"] for k, e in stored.items() if " reference:" in k)
    assert ratios == pytest.approx(sorted(v / yard for v in first.values()))


def test_calibration_probes_every_reference_in_rounds(monkeypatch):
    # the ratio of two kernels drifts between moments: each reference's probe is split over
    # ``passes`` rounds over all of them (a part of PROBE_S each), its ratio the median of its
    # fast chunks from every round; a ratio stored for this host is used as it is
    from tune.measure import execute, yardstick

    calls, store = [], {"Y reference:" + __import__("hashlib").sha1(b"c").hexdigest()[:16]: 3.0}
    ratios = {"a": iter([2.0, 2.2, 2.1]), "b": iter([5.0, 4.0, 4.4])}

    def probe(hit, yard_timer, seconds, near_wait):
        calls.append((hit.key, seconds))
        return [([next(ratios[hit.key])], [1.0], True)]

    monkeypatch.setattr(execute, "_probe_chunks", probe)
    monkeypatch.setattr(yardstick, "stored", lambda key, probe_s: store.get(key))
    monkeypatch.setattr(yardstick, "store", lambda key, value, probe_s: store.__setitem__(key, value))
    yard = execute._Timed(None, [], None, [], settled=1e-4, key="Y", fastest=1.0)
    timers = {k: execute._Timed(None, [], None, [], key=k) for k in "abc"}
    execute._scale([({"obj": k.encode()}, timers[k]) for k in "abc"], yard, passes=3)
    assert calls == [(k, execute.PROBE_S / 3) for _ in range(3) for k in "ab"]  # c was stored
    assert [timers[k].settled for k in "abc"] == pytest.approx([2.1e-4, 4.4e-4, 3e-4])
    assert sorted(store.values()) == pytest.approx([2.1, 3.0, 4.4])


def test_a_reference_probe_counts_the_chunks_where_the_yardstick_ran_at_its_speed_and_the_vcpus_were_near():
    # a slow state (another process on one of the two CPUs) slows the yardstick more than a conv,
    # and with the vCPUs apart a reference that repacks across threads slows where the yardstick
    # does not: chunks timed in either would set the task's scale off, so only chunks with the
    # yardstick at its settled speed and the vCPUs near count; when there are none, all do
    from tune.measure.execute import FAST_STATE, fast_chunks, probe_ratio

    settled = 1e-4
    slow = ([5.0, 5.2, 4.9], [2.1e-4, 2.0e-4, 2.2e-4], True)  # yardstick twice its settled time
    fast = ([8.0, 8.1, 7.9], [1.0e-4, 1.02e-4, 1.01e-4], True)
    edge = ([6.0], [FAST_STATE * 1.01e-4], True)  # just past the fast state
    apart = ([15.0, 15.2], [1.0e-4, 1.01e-4], False)  # yardstick at speed, the vCPUs apart
    assert fast_chunks([slow, fast, edge, apart], settled) == [fast]
    assert probe_ratio([slow, fast, slow, edge, apart, apart], settled) == 8.0
    assert probe_ratio([slow, slow], settled) == 5.0  # no fast chunk: every chunk counts
    assert probe_ratio([([3.0], [], True)], settled) == 3.0  # a chunk without yardstick times


def test_a_normalized_repeat_counts_the_ratios_timed_with_its_bracket_at_speed():
    # in a slow state kernels do not slow alike (a conv's ratio to its reference moved 1.055 ->
    # 0.93 with the reference 1.5x slower): a repeat keeps the ratios whose bracketing timings both
    # ran at the bracket's fastest speed beside this candidate (``base``: what this and earlier
    # measurements of the config saw), alternating longer to find them; when the state stays slow,
    # every ratio counts
    from tune.measure.execute import FEW_FAST, _fast_alternation, _Timed

    def bracket(times):
        it = iter(times)
        b = _Timed(None, [], None, [], settled=1.3)  # the scale stored when the host was slower
        b.time = lambda _ms: next(it)
        return b

    mine = iter([2.0, 1.5, 1.5, 2.0, 2.0, 2.0])
    # bracket: fast, slow (1.5x), fast, fast, fast
    ratios, last = _fast_alternation(lambda: next(mine), bracket([1.0, 1.5, 1.0, 1.0, 1.0, 9.0]), 5.0, 1.0, 3,
                                     until=time.perf_counter() + 60)
    assert ratios == [2.0, 2.0, 2.0] and last == 1.0  # the 2 ratios next to the slow timing left out
    mine = iter([2.0, 1.5, 1.5])
    ratios, _ = _fast_alternation(lambda: next(mine), bracket([1.0, 1.5, 1.0]), 5.0, 1.0, 3)
    assert ratios == [2.0, 1.2, 1.2]  # no state wait: count alternations, one fast, so every ratio
    mine = iter([3.0] * 20)
    base = [1.0]  # an earlier measurement of this config saw the bracket at 1.0
    ratios, last = _fast_alternation(lambda: next(mine), bracket([1.5] * 20), 5.0, 1.5, 4, base=base)
    assert ratios == [2.0] * 4  # never fast: every ratio counts
    mine = iter([2.0] * 20)
    base = [9.0]
    ratios, _ = _fast_alternation(lambda: next(mine), bracket([1.5, 1.0, 1.0, 1.0, 1.0] + [1.0] * 9), 5.0, 1.5, 3,
                                  until=time.perf_counter() + 60, base=base)
    assert base == [1.0] and ratios == [2.0, 2.0, 2.0]  # the base follows the fastest timing seen
    assert FEW_FAST == 3
    mine = iter([2.0] * 40)
    ratios, _ = _fast_alternation(lambda: next(mine), bracket([1.0, 1.0, 1.0] + [1.5] * 40), 5.0, 1.0, 8)
    assert ratios == [2.0, 2.0, 2.0]  # a slow spell: the FEW_FAST fast ratios found count
    mine = iter([2.0] * 40)
    ratios, _ = _fast_alternation(lambda: next(mine), bracket([1.0, 1.0] + [1.5] * 40), 5.0, 1.0, 8)
    assert len(ratios) == 8 and ratios[:2] == [2.0, 2.0]  # two fast of 8: every ratio
    # through a slow spell a repeat goes on alternating while the measurement's wait lasts
    mine = iter([2.0] * 200)
    ratios, _ = _fast_alternation(lambda: next(mine), bracket([1.5] * 100 + [1.0] * 100), 5.0, 1.5, 4,
                                  until=time.perf_counter() + 60, base=[1.0])
    assert ratios == [2.0] * 4
    # a timer's fastest timing is the fastest it took in this process
    timer = _Timed(None, [], lambda: None, [])
    times = [timer.time(0.05) for _ in range(5)]
    assert timer.fastest == min(times) > 0


def test_the_vcpu_probe_reads_a_round_trip_and_reports_none_on_one_thread():
    from codegen import get_num_threads as get_threads
    from codegen import set_num_threads as set_threads
    from tune.measure import vcpus

    before = get_threads()
    try:
        set_threads(2)
        # a burst whose partner thread is descheduled past the spin limit (other tests on the CPUs)
        # reads None, the state unknown: a quiet moment comes within a few tries
        for _ in range(50):
            ns, near = vcpus.reading()
            if ns is not None:
                break
            time.sleep(0.1)
        assert ns is not None and 1.0 < ns < 1e6 and near in (True, False) and vcpus.fastest() <= ns
        set_threads(1)
        assert vcpus.round_trip_ns(trips=200) is None
        assert vcpus.reading() == (None, True)  # the state unknown: nothing is excluded
    finally:
        set_threads(before)
    assert vcpus.near(100.0, 100.0) and vcpus.near(vcpus.APART * 100.0, 100.0)
    assert not vcpus.near(vcpus.APART * 100.0 + 1, 100.0)


def test_the_vcpu_probe_gives_up_instead_of_hanging_when_its_tasks_run_on_one_thread():
    # the pool runs both tasks inline on the caller when it is busy (a nested launch): each side
    # spins a bounded number of polls for a partner that never comes, and the probe says None
    import ctypes

    from tune.measure import vcpus

    launch, _code, fn, _raw, closure = vcpus._probe()
    ctypes.c_int64.from_address(closure).value = 0
    ctypes.c_int64.from_address(closure + 64).value = 10
    ctypes.c_int64.from_address(closure + 72).value = 0
    t0 = time.perf_counter()
    launch(fn, closure, 1)  # one task: run inline, task 1 never runs
    assert ctypes.c_int64.from_address(closure + 72).value == 1
    assert time.perf_counter() - t0 < 5.0
