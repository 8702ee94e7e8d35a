"""graph.plot: the pictures of ``benchmarks/report.py`` and ``tessera tune --plot``."""

import sys
from types import SimpleNamespace as NS

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


def test_tuning_curves_keep_the_best_so_far():
    task = NS(name="mm", args=(8, 8), flop=2e9)
    ok = lambda s: NS(error_no=0, costs=(s, s, s))  # noqa: E731
    failed = NS(error_no=4, costs=("timeout",))
    pairs = [(NS(task=task), r) for r in (ok(2.0), failed, ok(1.0), ok(4.0))]
    assert plot.tuning_curves_of_records(pairs) == {"mm(8, 8)": [1.0, 1.0, 2.0, 2.0]}
    bare = NS(name="mm", args=(8, 8), flop=0)
    curves = plot.tuning_curves_of_records([(NS(task=bare), ok(0.5))], flop_of=lambda t: 1e9)
    assert curves == {"mm(8, 8)": [2.0]}


def test_without_matplotlib_the_error_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot.tuning_curves({}, str(tmp_path / "t.png"))
