"""Whole-model tuning: extract_from_program, apply_history_best through graph.build, ``tessera tune``.

A tiny ONNX model (three 3x3 convs, two of them alike, and a dense layer) and
a handful of trials keep these fast; the figures live in benchmarks/tune_model.py.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graph
from graph.cli import main
from graph.interpreter import interpret
from graph.tuning import GraphProgram, graph_workloads, node_configs
from tune import autotvm, deployed
from tune.measure import MeasureInput, MeasureResult
from tune.network import read_log, spread_trials

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONV = "conv2d_NCHWc.x86"


def tiny_model(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)

    def w(name, *shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype("float32"), name)

    inits = [w("w1", 8, 3, 3, 3), w("w2", 8, 8, 3, 3), w("w3", 8, 8, 3, 3), w("fc", 10, 8 * 7 * 7), w("fcb", 10)]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Flatten", ["r3"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 7])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("tune") / "tiny.onnx"
    m = tiny_model()
    onnx.save(m, path)
    return str(path), m


def run_model(lib, x):
    m = lib.create_executor()
    m.run(x=x)
    return m.get_output(0)


def model_program(model) -> tuple:
    """``(graph, params, GraphProgram, AutoTVM tasks)`` of the ``model`` fixture's model."""
    g, params = graph.from_onnx(model[1])
    return g, params, GraphProgram(g, params, "llvm"), autotvm.task.extract_from_program(g, params=params,
                                                                                        target="llvm")


def configs_of(lib) -> dict:
    """Workload -> config of every kernel node a built library holds."""
    out = {}
    for node in lib.graph.nodes:
        body = node.attrs.get("body")
        for n in body.nodes if body is not None else ():
            if n.attrs.get("config") is not None:
                out[n.attrs["config"].workload] = n.attrs["config"]
    return out


# ----------------------------------------------------------- extraction ---
def test_extract_from_program_counts(model):
    _, m = model
    g, params = graph.from_onnx(m)
    tasks = autotvm.task.extract_from_program(g, params=params, target="llvm")
    assert [t.name for t in tasks] == [CONV, CONV, "dense_pack.x86"]  # heaviest first
    alike, first, dense = tasks
    assert alike.args[:2] == ((1, 8, 7, 7), (8, 8, 3, 3)) and alike.count == 2
    assert first.args[:2] == ((1, 3, 7, 7), (8, 3, 3, 3)) and first.count == 1
    assert dense.args == (1, 10, 392, "float32") and dense.count == 1
    assert sum(t.share for t in tasks) == pytest.approx(1.0)
    assert alike.share == pytest.approx(2 * alike.flop / sum(t.flop * t.count for t in tasks))
    assert alike.flop == 2 * 8 * 7 * 7 * 8 * 9
    # a task's workload is the key the graph's choose_configs pass looks records up by
    assert {t.workload for t in tasks} <= set(graph_workloads(g, params))
    assert all(len(t.config_space) > 1 for t in tasks)
    # an onnx ModelProto goes through the same registered extractor
    assert [t.workload for t in autotvm.task.extract_from_program(m, target="llvm")] == [t.workload for t in tasks]


def test_extract_from_program_unknown_object():
    with pytest.raises(autotvm.TuneError, match="no extractor knows a dict"):
        autotvm.task.extract_from_program({"not": "a graph"})


def test_spread_trials_by_share(model):
    tasks = autotvm.task.extract_from_program(model[1], target="llvm")
    plan = spread_trials(tasks, 20)
    assert sum(plan) == 20 and plan[0] > plan[1] >= plan[2] >= 1
    assert spread_trials(tasks, 1) == [1, 1, 1]  # every task measured at least once (its default)


# ------------------------------------------------------ applied records ---
def non_default_config(task):
    """A legal config of ``task`` other than its fallback (the rule default)."""
    default = task.default_config()
    for index in range(len(task.config_space)):
        cfg = task.config_space.get(index)
        if cfg.index == default.index:
            continue
        try:
            task.instantiate(cfg)
        except autotvm.TuneError:
            continue
        return cfg
    raise AssertionError("no legal non-default config")


def write_records(path, pairs) -> None:
    from tune.record import encode

    with open(path, "w") as fh:
        fh.writelines(encode(MeasureInput(task.target, task, cfg), MeasureResult((cost,), 0, cost, time.time())) + "\n" for task, cfg, cost in pairs)


def test_apply_history_best_numerics(model, tmp_path):
    _, m = model
    g, params = graph.from_onnx(m)
    tasks = autotvm.task.extract_from_program(g, params=params, target="llvm")
    chosen = {t.workload: non_default_config(t) for t in tasks}
    log = tmp_path / "best.jsonl"
    # two records per task: the slower (the default) must lose to the chosen config
    write_records(log, [(t, t.default_config(), 1.0) for t in tasks] + [(t, chosen[t.workload], 1e-6) for t in tasks])

    x = np.random.default_rng(1).standard_normal((1, 3, 7, 7)).astype("float32")
    default = graph.build(g, target="llvm", params=params)
    with autotvm.apply_history_best(str(log)):
        tuned = graph.build(g, target="llvm", params=params)
    got = configs_of(tuned)
    for wl, cfg in chosen.items():
        values = {k: getattr(e, "val", e) for k, e in cfg._entity_map.items()}
        assert got[wl].values == values, wl
        assert configs_of(default)[wl].values != values
    ref = interpret(g, {"x": x}, params)[0]  # numpy, op by op
    y0, y1 = run_model(default, x), run_model(tuned, x)
    np.testing.assert_allclose(y1, y0, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(y1, ref, rtol=1e-4, atol=1e-5)
    # outside the context the rule defaults come back
    assert configs_of(graph.build(g, target="llvm", params=params)) == configs_of(default)
    # records given to graph.build choose as the context does, and win over an enclosing one
    assert configs_of(graph.build(g, target="llvm", params=params, records=str(log))) == got
    with autotvm.apply_history_best(str(log)):
        assert configs_of(graph.build(g, target="llvm", params=params, records=[])) == configs_of(default)


def test_records_changed_counts_the_kernels_whose_config_a_record_replaced(model, tmp_path):
    _, m = model
    g, params = graph.from_onnx(m)
    tasks = autotvm.task.extract_from_program(g, params=params, target="llvm")
    program = GraphProgram(g, params, "llvm")
    default = graph.build(g, target="llvm", params=params)
    kernels = sum(len(node_configs(n)) for n in default.graph.nodes)
    assert kernels >= len(tasks) >= 2
    assert deployed.records_changed(program, default, graph.build(g, target="llvm", params=params)) == (0, kernels)
    assert "changed none of the" in deployed.records_changed_note(program, default, default)
    # a record beating the rule for one task only: that task's kernels change (and any whose input
    # block follows theirs), not all of them
    one = tasks[0]
    log = tmp_path / "one.jsonl"
    write_records(log, [(one, one.default_config(), 1.0), (one, non_default_config(one), 1e-6)])
    with autotvm.apply_history_best(str(log)):
        tuned = graph.build(g, target="llvm", params=params)
    changed, total = deployed.records_changed(program, default, tuned)
    assert 1 <= one.count <= changed < kernels == total
    assert f"changed {changed} of the {kernels}" in deployed.records_changed_note(program, default, tuned)


# ---------------------------------------------------------- command line ---
def log_workloads(path) -> list:
    """The search's measurements in a log: the records timed inside whole runs of the model at the
    end of a tune (``in_place``) are not trials."""
    return [(inp.task.workload, str(inp.config)) for inp, res in read_log(str(path), "llvm") if not res.in_place]


def test_cli_tune_then_run_with_records(model, tmp_path, capsys):
    path, _ = model
    log, png = tmp_path / "tiny.jsonl", tmp_path / "tuning.png"
    argv = ["tune", path, "--trials", "6", "--log", str(log), "--tuner", "random", "--plot", str(png), "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "6 trials measured now" in out
    assert "latency before (rule defaults):" in out and "latency after" in out
    assert re.search(r"the records changed (none of the|\d+ of the) \d+ kernels' configs", out)
    assert png.stat().st_size > 1000
    measured = log_workloads(log)
    assert len(measured) == 6 and len(set(measured)) == 6  # each a new config
    assert any(res.in_place for _, res in read_log(str(log), "llvm"))  # then timed in the model
    # resume: everything planned is in the log, nothing is measured again
    assert main(argv) == 0
    assert "0 trials measured now" in capsys.readouterr().out
    assert log_workloads(log) == measured
    # more trials: only the missing ones, no config measured twice
    assert main([*argv[:3], "10", *argv[4:]]) == 0
    assert "4 trials measured now" in capsys.readouterr().out
    again = log_workloads(log)
    assert again[:6] == measured and len(again) == 10 and len(set(again)) == 10
    assert main(["run", path, "--records", str(log), "-q"]) == 0
    assert "latency:" in capsys.readouterr().out
    assert main(["bench", path, "--repeat", "1", "--records", str(log), "-q"]) == 0  # 1: outputs differ
    assert ": agree" in capsys.readouterr().out
    assert main(["compile", path, "-o", str(tmp_path / "t.so"), "--records", str(log), "-q"]) == 0


def test_budget_stops_every_task_early(model, tmp_path, capsys):
    path, _ = model
    log = tmp_path / "budget.jsonl"
    # 0.001 minutes: each task stops at its first batch boundary, every task gets its turn
    assert main(["tune", path, "--trials", "40", "--log", str(log), "--tuner", "random", "--budget", "0.001",
                 "-q"]) == 0
    counts = {}
    for wl, _ in log_workloads(log):
        counts[wl] = counts.get(wl, 0) + 1
    assert len(counts) == 3 and sum(counts.values()) < 40
    assert max(counts.values()) <= 8  # one batch of at most n_parallel (the build workers) each


def test_sigkill_then_resume_loses_at_most_the_batch_in_flight(model, tmp_path, capsys):
    path, _ = model
    log = tmp_path / "killed.jsonl"
    argv = ["tune", path, "--trials", "12", "--log", str(log), "--tuner", "random", "-q"]
    proc = subprocess.Popen([sys.executable, "-m", "graph", *argv], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "tessera tune ended before it could be killed"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the tuner and its build/run workers
        proc.wait()
    before = log_workloads(log)
    assert 2 <= len(before) < 12
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"{12 - len(before)} trials measured now" in out
    after = log_workloads(log)
    assert after[: len(before)] == before and len(after) == 12 and len(set(after)) == 12


def other_target_log(path) -> None:
    task = autotvm.task.create(CONV, ((1, 8, 7, 7), (8, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "float32",
                                      "float32"), target="llvm -mcpu=x86-64 -mattr=-avx2,-avx512f,-fma")
    write_records(path, [(task, task.default_config(), 1e-3)])


@pytest.mark.parametrize("case", ["tuner", "unreadable", "other_target", "trials", "records_missing",
                                  "records_other_target", "no_matplotlib"])
def test_bad_inputs_are_named_errors(model, tmp_path, capsys, monkeypatch, case):
    path, _ = model
    log = tmp_path / "x.jsonl"
    tune = ["tune", path, "--trials", "2", "--log", str(log)]
    argv, message = {
        "tuner": ([*tune, "--tuner", "annealing"], "--tuner 'annealing': unknown tuner; use one of: xgb, ga"),
        "unreadable": (["tune", path, "--trials", "2", "--log", str(tmp_path)], "cannot read tuning records"),
        "other_target": (tune, "holds records for target 'llvm -mcpu=x86-64"),
        "trials": (["tune", path, "--trials", "0", "--log", str(log)], "--trials 0: must be at least 1"),
        "records_missing": (["run", path, "--records", str(log)], f"--records {log}: no such file"),
        "records_other_target": (["compile", path, "--records", str(log)], "holds records for target"),
        "no_matplotlib": ([*tune, "--plot", str(tmp_path / "p.png")], "--plot needs matplotlib: pip install"),
    }[case]
    if "other_target" in case:
        other_target_log(log)
    if case == "no_matplotlib":
        monkeypatch.setitem(sys.modules, "matplotlib", None)
    before = log.read_text() if log.exists() else None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert (log.read_text() if log.exists() else None) == before  # nothing recorded is lost


def test_the_configs_the_model_may_deploy_are_measured_cold_in_rounds(model, tmp_path):
    """``confirm_deployed``: each task's ``DEPLOY_TOP`` fastest records, the rule's config and every
    config the model built with the records runs are measured ``DEPLOYED_ROUNDS`` times with the
    weights out of the caches (``flush`` records), in rounds over all of them; those readings alone
    then rank the task (the lucky 2 ns reading no longer wins), and the model is built from them;
    tasks with too few records to be confirmed are left out; the runner is left warm; run again,
    nothing is measured twice."""
    from collections import Counter

    from tune.deployed import confirm_deployed
    from tune.network import CONFIRM_TRIALS, DEPLOY_TOP, DEPLOYED_ROUNDS
    from tune.record import ranked_by_workload

    g, params, program, tasks = model_program(model)
    log = tmp_path / "deployed.jsonl"
    rows, top = [], set()
    for k, task in enumerate(tasks[:2]):  # the third task has one record: not confirmed
        legal = [c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                 if c.index != task.default_config().index][:4 * CONFIRM_TRIALS - 1]
        rows += [(task, task.default_config(), 1.0), (task, legal[0], 2e-9)]  # the rule; a lucky reading
        rows += [(task, cfg, 2.0 + j) for j, cfg in enumerate(legal[1:])]
        top |= {(task.workload, c.index) for c in [legal[0], task.default_config(), legal[1]][:DEPLOY_TOP]}
    rows.append((tasks[2], tasks[2].default_config(), 1.0))
    write_records(log, rows)
    builder, runner = autotvm.LocalBuilder(n_parallel=1), autotvm.LocalRunner(number=1, repeat=1, min_repeat_ms=1)
    try:
        option = autotvm.measure_option(builder=builder, runner=runner)
        lib, taken = confirm_deployed(program, str(log), tasks, option)
        assert runner.enable_cpu_cache_flush is False
        again = list(read_log(str(log), "llvm"))[len(rows):]
        assert taken == len(again) > 0 and all(res.error_no == 0 and res.flush for _, res in again)
        assert {inp.task.workload for inp, _ in again} == {t.workload for t in tasks[:2]}
        # in rounds: every config of the round once before any of them again
        per_round = len(again) // DEPLOYED_ROUNDS
        order = [(inp.task.workload, inp.config.index) for inp, _ in again]
        assert all(order[r * per_round:(r + 1) * per_round] == order[:per_round] for r in range(DEPLOYED_ROUNDS))
        assert set(Counter(order).values()) == {DEPLOYED_ROUNDS}
        assert top <= set(order)  # the warm top and the rule's config
        assert {(t.workload, c.index) for t, c in deployed.deployed(program, lib, tasks[:2])} <= set(order)
        # the cold readings alone rank the tasks measured so: the lucky reading is out
        for (_, wl), rows_of in ranked_by_workload(read_log(str(log), "llvm")).items():
            if wl in {t.workload for t in tasks[:2]}:
                assert all(res.flush for _, res in rows_of) and rows_of[0][1].cost > 1e-7
        # resumed: nothing measured twice
        assert confirm_deployed(program, str(log), tasks, option)[1] == 0
    finally:
        builder.close()
        runner.close()


def test_the_configs_the_model_may_deploy_are_timed_inside_whole_runs_of_it(model, tmp_path, capsys):
    """``confirm_in_place``: each confirmed task's fastest configs (by its ranking and by its warm
    readings) and the rule's deployed config are timed inside whole runs of the model, builds of
    the k-th candidate of every task alternated with the rule's build in rounds: one record per
    config (``in_place``), one reading a round; those readings then rank the task, the model is
    built from them and computes as the rule's build does; a task without records is left out; run
    again, nothing is timed twice."""
    from tune.autotvm.tuner.tuner import config_key
    from tune.deployed import confirm_in_place, in_place_groups
    from tune.network import IN_PLACE_TOP
    from tune.record import ranked_by_workload

    g, params, program, tasks = model_program(model)
    log = tmp_path / "in_place.jsonl"
    rows = conv_records(tasks[:2], log)  # none of the dense task
    groups = in_place_groups(tasks, read_log(str(log), "llvm"))
    assert [len(group) for group in groups] == [IN_PLACE_TOP, IN_PLACE_TOP]  # warm and ranked agree here
    lib, timed = confirm_in_place(program, str(log), tasks, rounds=3)
    again = list(read_log(str(log), "llvm"))[len(rows):]
    assert timed == len(again) > 0 and all(res.error_no == 0 and res.in_place and 1 <= len(res.costs) <= 3
                                           and min(res.costs) > 0 for _, res in again)
    keys = {(inp.task.workload, config_key(inp.config)) for inp, _ in again}
    assert {inp.task.workload for inp, _ in again} == {t.workload for t in tasks[:2]}
    assert {(t.workload, config_key(c)) for group in groups for t, c in group} <= keys
    rule = graph.build(g, target="llvm", params=params)
    assert {(t.workload, config_key(c)) for t, c in deployed.deployed(program, rule, tasks[:2])} <= keys
    assert {(t.workload, config_key(c)) for t, c in deployed.deployed(program, lib, tasks[:2])} <= keys
    for (_, wl), rows_of in ranked_by_workload(read_log(str(log), "llvm")).items():
        assert all(res.in_place for _, res in rows_of) == (wl in {t.workload for t in tasks[:2]})
    x = np.random.default_rng(1).standard_normal((1, 3, 7, 7)).astype("float32")
    np.testing.assert_allclose(run_model(lib, x), run_model(rule, x), rtol=1e-4, atol=1e-5)
    assert confirm_in_place(program, str(log), tasks, rounds=3)[1] == 0  # resumed


def test_in_place_runs_on_the_thread_cpu_clock_run_on_one_thread_and_say_so(model, tmp_path):
    """``confirm_in_place(clock="thread_cpu")``: the whole runs on this thread alone, each kernel call
    read by its CPU time, the records marked; the pool as it was after."""
    import codegen
    from tune.deployed import confirm_in_place

    g, params, program, tasks = model_program(model)
    log = tmp_path / "in_place_cpu.jsonl"
    rows = conv_records(tasks[:1], log)
    threads, seen = codegen.get_num_threads(), []
    runs = program.kernel_runs

    def kernel_runs(lib, number, clock=None):
        seen.append((codegen.get_num_threads(), clock))
        return runs(lib, number, clock)

    program.kernel_runs = kernel_runs
    assert confirm_in_place(program, str(log), tasks, rounds=1, clock="thread_cpu")[1] > 0
    again = list(read_log(str(log), "llvm"))[len(rows):]
    assert again and all(res.in_place and res.clock == "thread_cpu" and min(res.costs) > 0 for _, res in again)
    assert seen and all(s == (1, time.thread_time) for s in seen) and codegen.get_num_threads() == threads


def test_a_resumed_tune_times_in_place_what_a_changed_rule_deploys(model, tmp_path, monkeypatch):
    """A log written under another rule: its candidates all have in-place records, but the
    rule's build now runs a config without one, so the in-place phase runs again and times it."""
    import dataclasses

    from tune.autotvm import task as registry
    from tune.autotvm.config import config_space, rule_of
    from tune.autotvm.tuner.tuner import config_key

    from tune.deployed import confirm_in_place, task_calls

    g, params, program, tasks = model_program(model)
    log = tmp_path / "rule_changed.jsonl"
    conv_records(tasks[:2], log)
    assert confirm_in_place(program, str(log), tasks, rounds=2)[1] > 0
    assert confirm_in_place(program, str(log), tasks, rounds=2)[1] == 0
    name = tasks[0].name
    template = rule_of(name)

    def changed_rule(workload, target, *rest):  # another column tile than the rule's
        values = template.default(workload, target, *rest)
        other = next(v for v in config_space(workload, target)["ow_bn"] if v != values["ow_bn"])
        return {**values, "ow_bn": other}

    monkeypatch.setitem(registry._TEMPLATES, name, dataclasses.replace(registry.registered(name),
                                                                    rule=dataclasses.replace(template, default=changed_rule)))
    def timed_in_place():
        return {(inp.task.workload, config_key(inp.config)) for inp, res in read_log(str(log), "llvm")
                if res.in_place}

    rule = graph.build(g, target="llvm", params=params)
    new = {(t.workload, config_key(c)) for _, t, c in task_calls(program, rule, tasks[:2])}
    assert new - timed_in_place()  # the changed rule deploys a config not timed in place yet
    assert confirm_in_place(program, str(log), tasks, rounds=2)[1] > 0
    assert new <= timed_in_place()
    assert confirm_in_place(program, str(log), tasks, rounds=2)[1] == 0


def test_a_build_the_graph_refuses_costs_only_its_candidates_readings(model, tmp_path, monkeypatch):
    # one refused build (here: every build of candidates) is reported and skipped; the rule's
    # build is still timed, and the tune goes on
    import io

    g, params, program, tasks = model_program(model)
    log = tmp_path / "refused.jsonl"
    rows = conv_records(tasks[:2], log)
    real = deployed.forced

    def refuses_candidates(program, choice):
        if choice:
            raise ValueError("refused here")
        return real(program, choice)

    monkeypatch.setattr(deployed, "forced", refuses_candidates)
    stream = io.StringIO()
    lib, timed = deployed.confirm_in_place(program, str(log), tasks, rounds=2, stream=stream)
    assert stream.getvalue().count("failed (refused here)") == 2  # IN_PLACE_TOP builds of candidates
    again = list(read_log(str(log), "llvm"))[len(rows):]
    rule = graph.build(g, target="llvm", params=params)
    assert timed == len(again) == 2 and all(res.in_place for _, res in again)
    assert {(inp.task.workload, inp.config.index) for inp, _ in again} == \
        {(t.workload, c.index) for t, c in deployed.deployed(program, rule, tasks[:2])}


def conv_records(tasks: list, log) -> list:
    """Records of ``tasks`` enough to confirm: the rule's config at 1 s, deployable others faster."""
    from tune.network import CONFIRMED_FROM

    rows = []
    for task in tasks:
        legal = [c for c in (task.config_space.get(i) for i in range(len(task.config_space)))
                 if c.index != task.default_config().index and deployable_config(task, c)][:CONFIRMED_FROM]
        rows += [(task, task.default_config(), 1.0)] + [(task, cfg, 2e-9 * (j + 1)) for j, cfg in enumerate(legal)]
    write_records(log, rows)
    return rows


def deployable_config(task, cfg) -> bool:
    from tune.autotvm.choose import deployable

    try:
        task.instantiate(cfg)
    except autotvm.TuneError:
        return False
    return deployable(task.workload, cfg.knob_values())


def test_a_confirmation_takes_more_repeats_than_a_search_trial_and_leaves_the_runner_as_it_was(model):
    # the confirmations' figures are the records: the median of more repeats (CONFIRM_REPEAT) moves
    # less with one repeat caught by other work
    from tune.network import CONFIRM_REPEAT, RUNNER_OPTIONS, measure_again

    _, m = model
    g, params = graph.from_onnx(m)
    task = autotvm.task.extract_from_program(g, params=params, target="llvm")[0]
    builder, runner = autotvm.LocalBuilder(n_parallel=1), autotvm.LocalRunner(**{**RUNNER_OPTIONS, "min_repeat_ms": 1})
    try:
        ((_, res),) = measure_again(task, [task.default_config()], autotvm.measure_option(builder, runner))
        assert res.error_no == 0 and len(res.costs) == CONFIRM_REPEAT > RUNNER_OPTIONS["repeat"]
        assert runner.repeat == RUNNER_OPTIONS["repeat"]
    finally:
        builder.close()
        runner.close()


def test_a_budget_keeps_time_for_timing_the_configs_the_model_may_deploy():
    """``--budget`` covers the whole tune: the search gets what timing each task's deploy
    candidates as deployed will not need, and at least half."""
    from tune.network import DEPLOY_MEASURE_S, DEPLOY_TOP, DEPLOYED_ROUNDS, IN_PLACE_S, search_budget

    tasks = [object()] * 29
    reserve = 29 * (DEPLOY_TOP + 1) * DEPLOYED_ROUNDS * DEPLOY_MEASURE_S + IN_PLACE_S  # and the whole runs
    assert search_budget(None, tasks) is None
    assert search_budget(3600.0, tasks) == 3600.0 - reserve
    assert search_budget(60.0, tasks) == 30.0  # a short budget: half for the search
