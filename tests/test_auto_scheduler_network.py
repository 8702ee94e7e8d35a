"""auto_scheduler on graphs: extract_tasks, the task scheduler (gradient, resume), ApplyHistoryBest
with graph.build, and ``tessera tune --auto-scheduler``."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import graph
from tune import auto_scheduler


def two_layer_model():
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 4, 3, 3)).astype("float32")
    w2 = rng.standard_normal((16, 8)).astype("float32")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "w2"], ["y"], transB=1)], "two",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 10, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _run(lib, x):
    m = lib.create_executor()
    m.run(x=x)
    return m.get_output(0)


FAST = dict(runner=auto_scheduler.LocalRunner(number=1, min_repeat_ms=0), num_measures_per_round=2, verbose=0)


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """The two-layer model's tasks tuned once by the task scheduler: (graph, params, tasks, weights,
    scheduler, log)."""
    g, params = graph.from_onnx(two_layer_model())
    tasks, weights = auto_scheduler.extract_tasks(g, params, target="llvm")
    log = str(tmp_path_factory.mktemp("net") / "net.json")
    sched = auto_scheduler.TaskScheduler(tasks, weights, seed=1)
    sched.tune(auto_scheduler.TuningOptions(num_measure_trials=2 * len(tasks) + 2,
                                            measure_callbacks=[auto_scheduler.RecordToFile(log)], **FAST))
    return g, params, tasks, weights, sched, log


def test_extract_tune_and_apply(tuned):
    g, params, tasks, weights, sched, log = tuned
    assert len(tasks) >= 2 and all(w >= 1 for w in weights)
    assert "conv2d" in tasks[0].desc and tasks[0].flop >= max(t.flop for t in tasks)
    assert all(t.baseline is not None for t in tasks)  # each kernel's own schedule, as a trace
    assert all(r >= 1 for r in sched.rounds) and math.isfinite(sched.estimate())
    assert sched.curve[-1][0] == sched.trials
    x = np.random.default_rng(1).standard_normal((1, 4, 10, 10)).astype("float32")
    plain = graph.build(g, target="llvm", params=params)
    with auto_scheduler.ApplyHistoryBest(log):
        tuned_lib = graph.build(g, target="llvm", params=params)
    np.testing.assert_allclose(_run(tuned_lib, x), _run(plain, x), rtol=1e-4, atol=1e-4)
    again = graph.build(g, target="llvm", params=params, records=auto_scheduler.ApplyHistoryBest(log))
    assert set(again.kernels) == set(tuned_lib.kernels)
    # a kernel whose best record is a searched program (not its own schedule) is keyed by the trace
    best = {(t.name): auto_scheduler.load_best_record(log, t.workload_key)[0].config.key() for t in tasks}
    searched = [t for t in tasks if best[t.name] != t.baseline.key()]
    assert (set(tuned_lib.kernels) != set(plain.kernels)) == bool(searched)


def test_scheduler_resume_is_exact(tuned):
    g, params, tasks, weights, first, log = tuned
    resumed = auto_scheduler.TaskScheduler(tasks, weights, seed=1, load_log_file=log)
    resumed.restore(log, FAST["num_measures_per_round"])
    assert resumed.rounds == first.rounds and resumed.history == first.history
    assert resumed.curve == first.curve and resumed.trials == first.trials
    assert resumed.next_task() == first.next_task()


def test_traces_are_confirmed_inside_whole_runs(tuned, tmp_path):
    """The traces a build may deploy (each task's fastest warm ones and its own schedule) are timed
    inside whole runs of the model: every one gets an ``in_place`` record, those alone pick the
    deployed trace, a second confirmation times nothing, and a resumed scheduler ignores them."""
    import shutil

    from graph.auto_schedule import confirm_in_place, in_place_candidates
    from tune.record import ranked_by_workload

    g, params, tasks, weights, first, log = tuned
    mine = str(tmp_path / "confirmed.json")
    shutil.copy(log, mine)
    picks = in_place_candidates(tasks, mine, "llvm", top=2)
    assert picks and all(2 <= len(c) <= 3 and any(i.config.own for i in c) for c in picks.values())
    wrote = confirm_in_place(g, params, "llvm", mine, tasks, rounds=2, runs=1)
    assert wrote == sum(map(len, picks.values()))
    placed = [(i, r) for i, r in auto_scheduler.load_records(mine) if r.in_place]
    assert len(placed) == wrote and all(r.error_no == 0 and len(r.costs) == 2 for _, r in placed)
    for workload, cands in picks.items():
        ranked = ranked_by_workload([row for row in placed if row[0].task.workload == workload])
        (rows,) = ranked.values()
        best = auto_scheduler.ApplyHistoryBest(mine).best[(rows[0][0].task.target_key, workload)][0]
        assert best.config.key() == rows[0][0].config.key()
    assert confirm_in_place(g, params, "llvm", mine, tasks, rounds=2, runs=1) == 0
    resumed = auto_scheduler.TaskScheduler(tasks, weights, seed=1)
    resumed.restore(mine, FAST["num_measures_per_round"])
    assert resumed.rounds == first.rounds and resumed.trials == first.trials and resumed.history == first.history
    x = np.random.default_rng(2).standard_normal((1, 4, 10, 10)).astype("float32")
    np.testing.assert_allclose(_run(graph.build(g, target="llvm", params=params,
                                                records=auto_scheduler.ApplyHistoryBest(mine)), x),
                               _run(graph.build(g, target="llvm", params=params), x), rtol=1e-4, atol=1e-4)


def test_gradient_prefers_the_task_that_shortens_the_model():
    class T:
        def __init__(self, flop):
            self.flop, self.desc, self.name = flop, "", "t"

            class D:
                @staticmethod
                def structure():
                    return (flop,)
            self.compute_dag = D()

    s = auto_scheduler.TaskScheduler([T(1e9), T(1e6)], [1, 1], eps_random=0.0)
    s.rounds, s.best_costs, s.history = [4, 4], [0.010, 0.001], [[0.010] * 4, [0.001] * 4]
    assert s.next_task() == 0  # 10 ms of the model's 11 ms
    s.weights = [1, 100]  # the small kernel runs 100 times
    assert s.next_task() == 1


def test_cli_tune_auto_scheduler(tmp_path, capsys):
    from graph.cli import main

    path = str(tmp_path / "two.onnx")
    onnx.save(two_layer_model(), path)
    log = str(tmp_path / "two.json")
    assert main(["tune", path, "--auto-scheduler", "--trials", "3", "--log", log, "-q"]) == 0
    out = capsys.readouterr().out
    assert "latency after" in out and "tuned" in out
    rows = auto_scheduler.load_records(log)
    searched = [r for _, r in rows if not r.in_place]  # the trials, with the cache flush; then the
    assert len(searched) == 3 and all(r.flush for r in searched)  # candidates timed inside whole runs
    assert main(["run", path, "--records", log, "-q"]) == 0


@pytest.mark.parametrize("bad", ["records of another target"])
def test_records_of_another_target_are_not_applied(tmp_path, bad):
    from tune.measure import MeasureInput, MeasureResult

    g, params = graph.from_onnx(two_layer_model())
    tasks, _ = auto_scheduler.extract_tasks(g, params, target="llvm")
    other = auto_scheduler.SearchTask(compute_dag=tasks[0].compute_dag, workload_key=tasks[0].name,
                                      target="llvm -mcpu=haswell")
    log = str(tmp_path / "o.json")
    auto_scheduler.save_records(log, [MeasureInput(other.target, other, tasks[0].baseline)],
                                [MeasureResult((1e-5,), 0, 0.1, 0.0)])
    plain = graph.build(g, target="llvm", params=params)
    with auto_scheduler.ApplyHistoryBest(log):
        lib = graph.build(g, target="llvm", params=params)
    assert set(lib.kernels) == set(plain.kernels)


def test_weights_a_trace_packs_are_folded_at_build(tmp_path):
    """A conv kernel's best trace packs its weights in its tiles' order: the task measures it taking
    them packed, and the build packs the model's constant weights once (the kernel's argument has the
    packed shape, the unpacked weights are gone) instead of in every call; the answer is unchanged."""
    from tune.auto_scheduler.sketch import generate_sketches
    from tune.measure import MeasureInput, MeasureResult

    g, params = graph.from_onnx(two_layer_model())
    tasks, _ = auto_scheduler.extract_tasks(g, params, target="llvm")
    task = tasks[0]
    assert task.layout_rewrite_option == auto_scheduler.LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED
    sk = next(sk for sk in generate_sketches(task.compute_dag, task.target)
              if any(k.endswith(".pack") for k in sk.by_key))
    genes = sk.sample(np.random.default_rng(0))
    genes.update({k: 1 for k in genes if k.endswith(".pack")})
    state = auto_scheduler.State(sk.realize(genes).trace, sk.index, genes)
    _, args, layouts = task.instantiate_with_layouts(state)
    packed_shape = next(tuple(int(d) for d in a.shape) for a, lay in zip(args, layouts) if lay is not None)
    log = str(tmp_path / "packed.json")
    auto_scheduler.save_records(log, [MeasureInput(task.target, task, state)], [MeasureResult((1e-6,), 0, 0.1, 0.0)])
    plain = graph.build(g, target="llvm", params=params)
    with auto_scheduler.ApplyHistoryBest(log):
        lib = graph.build(g, target="llvm", params=params)
    x = np.random.default_rng(1).standard_normal((1, 4, 10, 10)).astype("float32")
    np.testing.assert_allclose(_run(lib, x), _run(plain, x), rtol=1e-4, atol=1e-4)
    shapes = sorted(c.shape for c in lib.constants())
    assert packed_shape in shapes and len(shapes) == len(plain.constants())  # the unpacked copy is dropped
    (conv,) = [k for k in lib.kernels.values() if "conv" in k.label]
    assert packed_shape in [tuple(p.shape) for p in conv.params]
