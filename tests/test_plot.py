"""graph.plot: the pictures of ``benchmarks/report.py`` and ``tessera tune --plot``."""

import sys

import pytest

from graph import plot

pytest.importorskip("matplotlib")


def png(path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_each_picture_is_a_png(tmp_path):
    points = [("matmul", 170.0, 95.0), ("copy", 0.1, 2.0)]
    assert png(plot.roofline(points, 180.0, 30.0, str(tmp_path / "r.png"), peers=[120.0, None]))
    assert png(plot.speed_against_peer([("resnet50", 0.040, 0.045), ("vgg", 0.2, 0.1)], "onnxruntime",
                                   str(tmp_path / "sub" / "m.png")))
    assert png(plot.tuning_curves({"a": [1.0, 2.0, 2.0], "b": []}, str(tmp_path / "t.png")))


def test_without_matplotlib_the_error_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot.tuning_curves({}, str(tmp_path / "t.png"))


def test_tuning_curves_of_a_log_keep_the_best_so_far(tmp_path):
    """``tune.deployed.best_curves``, the data of both pictures: best GFLOP/s after each trial."""
    import te
    from codegen.target import Target
    from tune import autotvm, deployed
    from tune.measure import MeasureInput, MeasureResult

    @autotvm.template("test_plot/scale")
    def scale(n):
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        cfg = autotvm.get_config()
        cfg.define_split("x", B.op.axis[0], num_outputs=2)
        cfg["x"].apply(s, B, B.op.axis[0])
        cfg.add_flop(2e9)
        return s, [A, B]

    task = autotvm.task.create("test_plot/scale", args=(64,), target="llvm")
    cfg = task.config_space.get(0)
    costs = [(2.0, 2.0, 2.0), ("timeout",), (1.0, 1.0, 1.0), (4.0, 4.0, 4.0)]
    results = [MeasureResult(c, 0 if isinstance(c[0], float) else 4, 1.0, 0.0) for c in costs]
    log = tmp_path / "log.jsonl"
    autotvm.callback.log_to_file(str(log))(None, [MeasureInput(task.target, task, cfg)] * 4, results)
    (curve,) = deployed.best_curves(str(log), [task], Target("llvm")).values()
    assert curve == [1.0, 1.0, 2.0, 2.0]
