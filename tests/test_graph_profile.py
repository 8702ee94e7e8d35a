"""The per-kernel profile (``GraphModule.profile``) and the compile profile (``graph.profile``)."""

import json

import numpy as np
import pytest

import graph
from graph import profile as P
from graph.ir import Graph, Value, make_node

LIMITS = {"peak_gflops": 100.0, "copy_gbs": 20.0}


def small_graph() -> tuple:
    """x[13, 37] -> dense(37 -> 19) + bias -> relu; and a transpose of x (an injective kernel)."""
    rng = np.random.default_rng(0)
    x, w, b = Value("x", (13, 37), "float32"), Value("w", (19, 37), "float32"), Value("b", (19,), "float32")
    d = make_node("dense", [x, w]).output
    r = make_node("relu", [make_node("add", [d, b]).output]).output
    t = make_node("transpose", [x], {"axes": (1, 0)}).output
    params = {"w": rng.standard_normal((19, 37)).astype("float32"), "b": rng.standard_normal(19).astype("float32")}
    return Graph.from_outputs([x, w, b], [r, t], "small"), params


@pytest.fixture(scope="module")
def lib():
    g, params = small_graph()
    return graph.build(g, params=params)


def ran(lib):
    m = lib.create_executor()
    m.run(x=np.random.default_rng(1).standard_normal((13, 37)).astype("float32"))
    return m


def test_profile_ranks_kernels_with_rates(lib):
    prof = P.profile_module(ran(lib), number=3, limits=LIMITS)
    assert len(prof.kernels) == 2
    times = [k.seconds for k in prof.sorted()]
    assert times == sorted(times, reverse=True) and prof.total == pytest.approx(sum(times))
    dense = next(k for k in prof.kernels if "dense" in k.ops)
    assert dense.flops >= 2 * 13 * 37 * 19  # multiply-adds, bias and relu on top
    trans = next(k for k in prof.kernels if k.ops == "transpose")
    assert trans.flops == 0 and trans.nbytes == 2 * 13 * 37 * 4
    assert prof.rate(trans)[1] == "GB/s"
    text = prof.report()
    assert "total" in text and "GB/s" in text and "kernel (ops)" in text and "transpose" in text
    assert "FMA peak 100 GFLOP/s, copy 20.0 GB/s" in text


def test_profile_of_a_model_never_run(lib):
    m = lib.create_executor()
    with pytest.raises(RuntimeError, match="never run; set its inputs and call run"):
        m.profile()


def test_zero_time_kernels_get_a_message_not_a_division_error():
    zero = P.KernelTime("fused_a", "add", 0.0, flops=10.0, nbytes=40.0)
    prof = P.Profile([zero, P.KernelTime("fused_b", "add", 0.0)], peak_gflops=100.0, copy_gbs=20.0)
    assert "took no measurable time" in prof.report()
    mixed = P.Profile([zero, P.KernelTime("fused_c", "dense", 1e-3, flops=1e6, nbytes=1e3)], 0.0, 100.0, 20.0)
    assert mixed.rate(zero) == (None, "", None)
    text = mixed.report()
    assert "fused_a" in text and "  0.0%" in text
    assert "no kernel calls were timed" in P.Profile([]).report()


def test_report_top_folds_the_rest():
    ks = [P.KernelTime(f"k{i}", "add", (i + 1) * 1e-4, nbytes=1e4) for i in range(6)]
    text = P.Profile(ks, 0.0, 100.0, 20.0).report(top=2)
    assert "k5" in text and "k4" in text and "k3" not in text and "the other 4 calls" in text


def test_machine_limits_are_measured_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    calls = []

    def fake(threads, repeat):
        calls.append(threads)
        return {"peak_gflops": 50.0 * threads, "copy_gbs": 9.0}

    monkeypatch.setattr(P, "_measure_limits", fake)
    assert P.machine_limits(threads=2) == {"peak_gflops": 100.0, "copy_gbs": 9.0}
    assert P.machine_limits(threads=2)["peak_gflops"] == 100.0
    assert calls == [2]
    assert P.machine_limits(threads=1)["peak_gflops"] == 50.0 and calls == [2, 1]
    with open(tmp_path / "machine.json") as fh:
        assert len(json.load(fh)) == 2


def test_compile_report_names_stages(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    g, params = small_graph()
    cold = graph.build(g, params=params, jobs=1)
    text = P.compile_report(cold, import_seconds=0.01)
    assert "2 compiled now, 0 from the cache" in text
    for stage in ("graph passes and fusion", "link and load", "lower", "LLVM", "emit IR"):
        assert stage in text
    from schedule.lower import PIPELINE

    # the lowering passes by name (the five slowest, which depend on the moment's timings)
    assert any(name in text for name, _ in PIPELINE), text
    warm = graph.build(g, params=params)
    assert "0 compiled now, 2 from the cache" in P.compile_report(warm)
