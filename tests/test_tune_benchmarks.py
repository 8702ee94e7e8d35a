"""The tuning benchmarks run end to end on a tiny budget (their figures come from long runs).

Each runs as a command, as a user runs it (tests import nothing from ``benchmarks/``):
``benchmarks/tune_quality.py`` (search quality, transfer) with 2 trials on two of
ResNet-50's cheapest conv layers, ``tune_deploy.py`` and ``tune_noise.py`` on the log it
wrote, ``tune_autotvm.py --conv-layers`` (cost per trial) with 2 trials on one layer, and
``model_layers.py`` on a three-conv model.
"""

import os
import re
import subprocess
import sys

import pytest

from tune import autotvm

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMALL = 16  # 2048->512 1x1 @7
OTHER = 9  # 512->2048 1x1 @7


def bench(script: str, *args, fails: bool = False) -> str:
    """Run ``benchmarks/<script>`` with ``args``; its stdout and stderr."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script), *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=900)
    out = done.stdout + done.stderr
    assert (done.returncode != 0) == fails, f"{script} {args}: exit {done.returncode}\n{out[-4000:]}"
    return out


def test_quality_then_transfer_with_two_trials(tmp_path):
    log = str(tmp_path / "q.jsonl")
    common = ["--trials", "2", "--random-factor", "1", "--seeds", "0", "--log", log]
    out = bench("tune_quality.py", "--layers", SMALL, *common)
    assert re.search(r"layer 16 2048->512 1x1/1 @7\s*: xgb 2 trials +[0-9.]+ GFLOP/s \(median of 1 seeds\), "
                     r"random search 2 trials", out)
    assert "search quality over 1 layers" in out
    records = list(autotvm.record.load_from_file(log))
    assert len(records) == 4  # xgb and the reference (random: 896 configs > 2 x 1), 2 trials each
    assert sum(r.error_no == 0 for _, r in records) >= 1
    # the layer deployed through graph.build with the log: the recorded config, a time
    out = bench("tune_deploy.py", "--log", log, "--seconds", "0.05")
    assert "2048-> 512 1x1/1 @  7" in out and "deployed/recorded" in out
    # the record's config, or (the log's best being the rule's own) the rule's read in the block its
    # producer writes: 16 channels, where the rule's own reads 8
    assert "recorded config" in out or "the rule's config in its data's block ({'ic_bn': 16" in out
    assert "deployed in place in the model run/recorded" in out
    assert "deployed/recorded warm" in out and "deployed/task kernel, interleaved" in out
    # its best config re-measured twice, in one session and in two
    assert "CV: median" in bench("tune_noise.py", "--log", log, "--limit", "1", "--times", "2")
    out = bench("tune_noise.py", "--log", log, "--limit", "1", "--times", "2", "--sessions")
    assert "CV across sessions: median" in out

    out = bench("tune_quality.py", "--layers", OTHER, "--transfer", *common)
    assert "with 2 records of other layers" in out  # --history: as many as --trials (2) of its 4
    assert "transfer over 1 layers" in out


def test_transfer_needs_a_log(tmp_path):
    out = bench("tune_quality.py", "--layers", OTHER, "--transfer", "--log", tmp_path / "none.jsonl", fails=True)
    assert "needs --log" in out


def test_layers_out_of_range():
    assert "out of range" in bench("tune_quality.py", "--layers", "23", "--trials", "2", fails=True)


def test_cost_per_trial_mode_with_two_trials():
    out = bench("tune_autotvm.py", "--conv-layers", "--layers", SMALL, "--trials", "2")
    m = re.search(r"median over 1 runs of 2 trials: ([0-9.]+) s/trial wall, ([0-9.]+) s/trial CPU", out)
    assert m, out
    assert float(m.group(2)) > 0  # the workers' CPU time is counted


def test_model_layers_sets_each_conv_beside_onnxruntimes(tmp_path):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    pytest.importorskip("onnxruntime")
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
    out = bench("model_layers.py", path, "--seconds", "0.2", "--window", "0.05")
    assert "all convs" in out
    # each conv found on both sides (1 call of ours, 1 node of onnxruntime's), the stride kept
    assert len(re.findall(r"^ +\d+x +\d+x\d+ +-> +\d+ \dx\d @ *\d+ .* 1/1 ", out, re.M)) == 3, out
