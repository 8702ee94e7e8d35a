"""Tuning what the user defined wherever it was defined: a script's ``__main__``, a pytest
module a fresh worker cannot import by name, code run through ``exec`` as a notebook cell does;
for an AutoTVM template and an auto_scheduler workload alike (each source's ``tune_three(log)``
tunes three candidates and returns their error numbers)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

AUTOTVM = """
import te
from tune import autotvm


@autotvm.template("anywhere/matmul")
def matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    cfg = autotvm.get_config()
    y, x = s[C].op.axis
    cfg.define_split("tile_x", x, num_outputs=2)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    return s, [A, B, C]


def tune_three(log):
    task = autotvm.task.create("anywhere/matmul", args=(32,), target="llvm")
    mo = autotvm.measure_option(builder=autotvm.LocalBuilder(n_parallel=1), runner=autotvm.LocalRunner(number=1))
    autotvm.tuner.GridSearchTuner(task).tune(n_trial=3, measure_option=mo,
                                            callbacks=[autotvm.callback.log_to_file(log)])
    return [res.error_no for _, res in autotvm.record.load_from_file(log)]
"""

AUTO_SCHEDULER = """
import te
from tune import auto_scheduler


@auto_scheduler.register_workload
def anywhere_scale(n):
    A = te.placeholder((n, n), name="A")
    return [A, te.compute((n, n), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")]


def tune_three(log):
    task = auto_scheduler.SearchTask(func=anywhere_scale, args=(32,), target="llvm")
    opts = auto_scheduler.TuningOptions(num_measure_trials=3, num_measures_per_round=3, verbose=0,
                                        runner=auto_scheduler.LocalRunner(number=1, min_repeat_ms=0),
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)])
    task.tune(opts, search_policy=auto_scheduler.SketchPolicy(task, auto_scheduler.RandomModel(), verbose=0))
    return [res.error_no for _, res in auto_scheduler.load_records(log)]
"""

SOURCES = {"autotvm": AUTOTVM, "auto_scheduler": AUTO_SCHEDULER}


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p and os.path.isdir(p)))


@pytest.mark.parametrize("tuner", SOURCES)
def test_defined_in_a_scripts_main_is_tuned(tuner, tmp_path):
    (tmp_path / "script.py").write_text(SOURCES[tuner] + textwrap.dedent("""

        if __name__ == "__main__":
            import sys
            print("ERRORS", tune_three(sys.argv[1]))
    """))
    out = subprocess.run([sys.executable, "script.py", str(tmp_path / "t.json")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300, env=_env())
    assert out.returncode == 0, out.stderr[-2000:]
    assert "ERRORS [0, 0, 0]" in out.stdout


@pytest.mark.parametrize("tuner", SOURCES)
def test_defined_in_a_pytest_module_is_tuned(tuner, tmp_path):
    """A test module, imported by pytest where a fresh worker cannot import it by name
    (``--import-mode=importlib``)."""
    (tmp_path / "test_tuned_here.py").write_text(SOURCES[tuner] + textwrap.dedent("""

        def test_tune(tmp_path):
            assert tune_three(str(tmp_path / "t.json")) == [0, 0, 0]
    """))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                          "test_tuned_here.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=_env())
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


@pytest.mark.parametrize("tuner", SOURCES)
def test_defined_by_exec_as_a_notebook_cell_is_tuned(tuner, tmp_path):
    """Code run through ``exec`` (a notebook cell) has no module a worker could import."""
    cell: dict = {"__name__": "notebook_cell"}
    exec(compile(SOURCES[tuner], "<cell 3>", "exec"), cell)
    assert cell["tune_three"](str(tmp_path / "t.json")) == [0, 0, 0]
