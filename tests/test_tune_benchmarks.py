"""The tuning benchmarks run end to end on a tiny budget (their figures come from long runs).

``benchmarks/tune_quality.py`` (search quality, transfer) with 2 trials on
two of ResNet-50's cheapest conv layers, and ``benchmarks/tune_autotvm.py
--conv-layers`` (cost per trial) with 2 trials on one.
"""

import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import tune_autotvm
import tune_deploy
import tune_noise
import tune_quality

from tune import autotvm

SMALL = 16  # 2048->512 1x1 @7
OTHER = 9  # 512->2048 1x1 @7


def test_resnet50_conv_tasks_are_the_23_distinct_layers():
    tasks = tune_autotvm.resnet50_conv_tasks()
    assert len(tasks) == 23
    assert len({t.workload for t in tasks}) == 23
    assert tune_quality.layer_label(tasks[SMALL]) == "2048->512 1x1/1 @7"
    assert tune_quality.layer_label(tasks[OTHER]) == "512->2048 1x1/1 @7"


def test_trials_to():
    import numpy as np

    curve = np.array([1.0, 3.0, 3.0, 9.0])
    assert tune_quality.trials_to(curve, 3.0) == 2
    assert tune_quality.trials_to(curve, 9.0) == 4
    assert tune_quality.trials_to(curve, 9.5) is None


def test_quality_then_transfer_with_two_trials(tmp_path, capsys):
    log = str(tmp_path / "q.jsonl")
    common = ["--trials", "2", "--random-factor", "1", "--seeds", "0", "--log", log]
    assert tune_quality.main(["--layers", str(SMALL)] + common) == 0
    out = capsys.readouterr().out
    assert re.search(r"layer 16 2048->512 1x1/1 @7\s*: xgb 2 trials +[0-9.]+ GFLOP/s \(median of 1 seeds\), "
                     r"random search 2 trials", out)
    assert "search quality over 1 layers" in out
    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 4  # xgb and the reference (random: 896 configs > 2 x 1), 2 trials each
    assert sum(r.error_no == 0 for _, r in records) >= 1
    assert tune_quality.logged_best(log, tune_autotvm.resnet50_conv_tasks()[SMALL]) > 0
    # the layer deployed through graph.build with the log: the recorded config, a time
    assert len(tune_deploy.main(["--log", log, "--seconds", "0.05"])) == 1
    out = capsys.readouterr().out
    assert "2048-> 512 1x1/1 @  7" in out and "deployed/recorded" in out
    # the record's config, or (the log's best being the rule's own) the rule's read in the block its
    # producer writes: 16 channels, where the rule's own reads 8
    assert "recorded config" in out or "the rule's config in its data's block ({'ic_bn': 16" in out
    assert "deployed in place in the model run/recorded" in out
    assert "deployed/recorded warm" in out and "deployed/task kernel, interleaved" in out
    # its best config re-measured twice, in one session and in two
    (row,) = tune_noise.main(["--log", log, "--limit", "1", "--times", "2"])
    assert row >= 0 and "CV: median" in capsys.readouterr().out
    (row,) = tune_noise.main(["--log", log, "--limit", "1", "--times", "2", "--sessions"])
    assert row >= 0 and "CV across sessions: median" in capsys.readouterr().out

    assert tune_quality.main(["--layers", str(OTHER), "--transfer"] + common) == 0
    out = capsys.readouterr().out
    assert "with 2 records of other layers" in out  # --history: as many as --trials (2) of its 4
    assert "transfer over 1 layers" in out


def test_deployed_loop_figures_compare_with_the_warm_readings():
    """Where cold readings (the runner's flush) rank a workload, the deployed config's record is
    its cold median, and its warm readings' median is what a kernel called in a loop compares with."""
    from tune.measure.measure import MeasureInput, MeasureResult

    task = tune_autotvm.resnet50_conv_tasks()[SMALL]
    cfg = task.config_space.get(0)
    inp = MeasureInput(task.target, task, cfg)
    reading = lambda s, flush=False: (inp, MeasureResult((s,), 0, 0.0, 0.0, flush))  # noqa: E731
    records = [reading(1.2e-3), reading(1.0e-3), reading(1.1e-3), reading(2.0e-3, True), reading(1.8e-3, True)]
    ((ranked_inp, cold),) = tune_deploy.measured_configs(records).values()
    ((_, warm),) = tune_deploy.warm_configs(records).values()
    assert ranked_inp.config.index == cfg.index
    assert cold == pytest.approx(1.8e-3) and warm == pytest.approx(1.1e-3)


def test_transfer_history_is_a_sample_of_each_other_layer():
    """--transfer warms the tuner with --history records of each other workload (a tuning run's
    worth), none of the held-back layer's own."""
    from types import SimpleNamespace as NS

    def rec(workload, k):
        return NS(task=NS(workload=workload)), k

    records = [rec(w, k) for w in ("a", "b", "mine") for k in range(10 if w != "b" else 3)]
    out = tune_quality.history_of_others(records, NS(workload="mine"), 4)
    assert sorted(inp.task.workload for inp, _ in out) == ["a"] * 4 + ["b"] * 3
    assert len({k for inp, k in out if inp.task.workload == "a"}) == 4
    assert out == tune_quality.history_of_others(records, NS(workload="mine"), 4)  # seeded
    assert len(tune_quality.history_of_others(records, NS(workload="mine"), 0)) == 13  # 0: all


def test_transfer_needs_a_log(tmp_path):
    with pytest.raises(SystemExit, match="needs --log"):
        tune_quality.main(["--layers", str(OTHER), "--transfer", "--log", str(tmp_path / "none.jsonl")])


def test_layers_out_of_range():
    with pytest.raises(SystemExit, match="out of range"):
        tune_quality.main(["--layers", "23", "--trials", "2"])


def test_cost_per_trial_mode_with_two_trials(capsys):
    assert tune_autotvm.main(["--conv-layers", "--layers", str(SMALL), "--trials", "2"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"median over 1 runs of 2 trials: ([0-9.]+) s/trial wall, ([0-9.]+) s/trial CPU", out)
    assert m, out
    assert float(m.group(2)) > 0  # the workers' CPU time is counted


def _synthetic_table(task, path, best_index: int) -> None:
    """A log holding every config of ``task`` once (the fastest 8 three times, as after a
    recheck) with made-up costs: ``best_index`` is the fastest, by 10% over the next."""
    from tune.measure.measure import MeasureInput, MeasureResult

    def cost(i):
        return 1e-3 if i == best_index else 1.1e-3 + 1e-6 * ((i * 37) % 101)

    order = sorted(range(len(task.config_space)), key=cost)
    lines = []
    for i in range(len(task.config_space)):
        inp = MeasureInput(task.target, task, task.config_space.get(i))
        for _ in range(3 if i in order[:tune_quality.RECHECK] else 1):
            lines.append(autotvm.record.encode(inp, MeasureResult((cost(i),) * 3, 0, 0.1, 0.0)))
    with open(path, "a") as fh:
        fh.write("\n".join(lines) + "\n")


def test_replay_on_measured_tables_needs_no_new_measurement(tmp_path, capsys):
    tasks = tune_autotvm.resnet50_conv_tasks()
    log = str(tmp_path / "tables.jsonl")
    _synthetic_table(tasks[SMALL], log, best_index=5)
    _synthetic_table(tasks[OTHER], log, best_index=700)
    before = os.path.getsize(log)
    common = ["--replay", "--trials", "16", "--seeds", "0,1", "--log", log]
    (row,) = tune_quality.replay(tasks, [SMALL], tune_quality.parse_args(common), None)
    best = tasks[SMALL].flop / 1e-3 / 1e9
    assert row["reference"] == pytest.approx(best)  # the table's best, not a measurement
    assert 0 < row["share"] <= 1 and row["rank"] >= 1
    assert "search quality over 1 layers" in capsys.readouterr().out
    assert tune_quality.main(["--layers", str(OTHER), "--transfer"] + common) == 0
    out = capsys.readouterr().out
    assert "with 16 records of other layers" in out  # --history: as many as --trials, of the table
    assert tune_quality.main(["--layers", str(OTHER), "--transfer", "--history", "0"] + common) == 0
    out = capsys.readouterr().out
    assert f"with {len(tasks[SMALL].config_space) + 2 * tune_quality.RECHECK} records of other layers" in out
    assert os.path.getsize(log) == before  # nothing was measured or appended


def test_table_runner_refuses_a_config_outside_its_table():
    task = tune_autotvm.resnet50_conv_tasks()[SMALL]
    from tune.measure.measure import MeasureInput

    runner = tune_quality.TableRunner({})
    with pytest.raises(KeyError, match="not in the measured table"):
        runner.run([MeasureInput(task.target, task, task.config_space.get(3))], [None])


def test_model_layers_sets_each_conv_beside_onnxruntimes(tmp_path, capsys):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import model_layers

    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype("float32"), n)
             for n, s in (("w1", (16, 3, 3, 3)), ("w2", (16, 16, 3, 3)), ("w3", (32, 16, 1, 1)))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["y"])]
    g = helper.make_graph(nodes, "three_convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 15, 15])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])], inits)
    path = str(tmp_path / "three_convs.onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    got = model_layers.main([path, "--seconds", "0.2", "--window", "0.05"])
    keys = {key: (len(calls), n) for _, key, calls, _, _, n in got["rows"]}
    assert keys == {((3, 15, 15), (16, 3, 3), (15, 15)): (1, 1), ((16, 15, 15), (16, 3, 3), (8, 8)): (1, 1),
                    ((16, 8, 8), (32, 1, 1), (8, 8)): (1, 1)}  # each conv found on both sides, the stride kept
    assert all(t > 0 and o > 0 for _, _, _, t, o, _ in got["rows"])
    assert "all convs" in capsys.readouterr().out
