"""Per-target operator strategies: a second target registers conv2d and a graph builds through it."""

from __future__ import annotations

import numpy as np
import pytest

import graph
import topi
from graph.interpreter import interpret
from graph.ir import GraphBuilder
from topi import strategy

FAKE = "llvm -keys=fakecpu"


def conv_relu():
    rng = np.random.default_rng(0)
    b = GraphBuilder("conv_relu")
    x = b.input("x", (1, 8, 9, 7))
    w = b.const(rng.standard_normal((16, 8, 3, 3)).astype("float32"), "w")
    return b.finish(b.op("relu", b.op("conv2d", x, w, padding=(1, 1, 1, 1))))


def test_a_second_target_kind_registers_conv2d_and_the_graph_builds_through_it(monkeypatch, tmp_path):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))  # compiled here, not found in a kernel cache
    calls = []

    def compute(xs, a):
        calls.append("compute")
        return [topi.nn.conv2d_nchw(xs[0], xs[1], a["strides"] if "strides" in a else 1, a["padding"], 1)]

    def schedule(outs, a, target):
        calls.append(("schedule", target.keys))  # the build's target, handed down
        return topi.generic.default_schedule(outs)

    monkeypatch.setitem(strategy._STRATEGIES, ("conv2d", "fakecpu"), strategy.OpStrategy(compute, schedule))
    g = conv_relu()
    lib = graph.build(g, target=FAKE, jobs=1)
    assert "compute" in calls and ("schedule", ("fakecpu",)) in calls
    bodies = [n for node in lib.graph.nodes if node.op == "fused" for n in node.attrs["body"].nodes]
    assert [n.op for n in bodies if n.op.startswith("conv")] == ["conv2d"]  # no x86 blocked layout
    assert all("config" not in n.attrs for n in bodies)  # no x86 template chose its config
    x = np.random.default_rng(1).standard_normal((1, 8, 9, 7)).astype("float32")
    m = lib.create_executor()
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), interpret(g, {"x": x})[0], rtol=1e-4, atol=1e-4)


def test_the_cpu_target_runs_the_x86_strategy():
    lib = graph.build(conv_relu(), target="llvm", jobs=1)
    bodies = [n for node in lib.graph.nodes if node.op == "fused" for n in node.attrs["body"].nodes]
    assert any(n.op in ("conv2d_NCHWc", "conv2d") and "config" in n.attrs for n in bodies)


def test_a_target_kind_without_strategies_names_the_registered_ones():
    with pytest.raises(ValueError, match=r"keys \['nosuchcpu'\].*registered keys: \[.*'cpu'"):
        graph.build(conv_relu(), target="llvm -keys=nosuchcpu")
