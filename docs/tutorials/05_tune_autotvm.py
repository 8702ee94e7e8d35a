"""Tuning a template with AutoTVM.

Instead of fixing split factors by hand, a *template* declares the choices
(knobs) and a tuner searches them by measuring candidates.  This is classic
TVM's AutoTVM API (``from tvm import autotvm`` becomes ``from tune import
autotvm``).  Records are JSON lines; a tuning run can resume from them, and
``apply_history_best`` builds with the best one.

Run it with ``python docs/tutorials/05_tune_autotvm.py`` (a few minutes;
about 20 s with ``TESSERA_TUTORIAL_SMALL=1``).
"""

import os
import tempfile

import numpy as np

import codegen
import te
from tune import autotvm

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
N = 96 if SMALL else 512
TRIALS = 8 if SMALL else 64


# %% 1. A template ------------------------------------------------------------
# ``cfg.define_split`` declares a knob over the ways to split an axis;
# ``cfg["tile_y"].apply`` performs the split the tuner chose.  Outside
# tuning, with no record, ``cfg.is_fallback`` is true and the knobs take
# their first (or the template's default) values.
@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vectorize", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    if cfg["vectorize"].val:
        s[C].vectorize(xi)
    cfg.add_flop(2 * N * L * M)
    return s, [A, B, C]


# %% 2. A task and its space ----------------------------------------------------
task = autotvm.task.create("tutorial/matmul", args=(N, N, N, "float32"), target="llvm")
print(task.config_space)

# %% 3. Tune --------------------------------------------------------------------
# The builder compiles candidates in worker processes; the runner times each
# one in a separate process and checks its output against the fallback
# config's.  A candidate that fails to build, crashes or hangs costs one
# trial and an error number, never the run.
log = os.path.join(tempfile.mkdtemp(), "matmul.jsonl")
measure_option = autotvm.measure_option(
    builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=3, repeat=2, min_repeat_ms=5)
)
tuner = autotvm.tuner.XGBTuner(task)
tuner.tune(
    n_trial=TRIALS,
    measure_option=measure_option,
    callbacks=[autotvm.callback.progress_bar(TRIALS), autotvm.callback.log_to_file(log)],
)

# %% 4. Build with the best record ----------------------------------------------
# Inside ``apply_history_best`` the template reads the best measured config
# of its workload for the target instead of the fallback.
from codegen.target import Target  # noqa: E402

with autotvm.apply_history_best(log), Target("llvm"):
    s, args = matmul(N, N, N, "float32")
    tuned = codegen.build(s, args, name="matmul_tuned")
with Target("llvm"):
    s, args = matmul(N, N, N, "float32")  # no record in scope: the fallback config
    fallback = codegen.build(s, args, name="matmul_fallback")

rng = np.random.default_rng(0)
a = rng.random((N, N), dtype=np.float32)
b = rng.random((N, N), dtype=np.float32)
c = np.zeros((N, N), np.float32)
tuned(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
t_tuned = tuned.time_evaluator(number=5, repeat=3)(a, b, c).median
t_fallback = fallback.time_evaluator(number=5, repeat=3)(a, b, c).median
print(f"fallback {t_fallback * 1e3:.2f} ms, tuned {t_tuned * 1e3:.2f} ms "
      f"({2 * N**3 / t_tuned / 1e9:.1f} GFLOP/s)")

# %% 5. Resume ----------------------------------------------------------------------
# A new tuner warmed with the records (``load_history``) starts its cost model
# from them: a run that stopped can go on, and similar tasks tune faster.
records = list(autotvm.record.load_from_file(log))
tuner2 = autotvm.tuner.XGBTuner(task)
tuner2.load_history(records)
print(f"{len(records)} records loaded; the tuner resumes with its cost model trained on them")
