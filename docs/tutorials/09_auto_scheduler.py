"""Template-free tuning with the auto_scheduler.

AutoTVM (``05_tune_autotvm``) searches the knobs a template declares; someone
has to write the template.  The auto_scheduler (Ansor; classic TVM's
``auto_scheduler``, here ``from tune import auto_scheduler``) needs only the
computation: it derives sketches of good schedules from the compute itself
(multi-level tiling of the reduction, a register cache for its output, the
elementwise tail fused into it, parallel outer loops, vectorized inner ones),
fills in their sizes at random, evolves them under a learned cost model and
measures the most promising.  Every program it measures is a schedule trace:
what the records hold, what ``apply_best`` replays and ``print_best`` prints.

The workload here is one layer of a network: ``relu(x @ w + b)``.

Run it with ``python docs/tutorials/09_auto_scheduler.py`` (a few minutes;
well under a minute with ``TESSERA_TUTORIAL_SMALL=1``).
"""

import os
import tempfile

import numpy as np

import codegen
import te
from codegen import timing
from tune import auto_scheduler

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
M, K, N = (24, 40, 56) if SMALL else (256, 512, 512)
TRIALS = 8 if SMALL else 128


# %% 1. The computation, and nothing else ------------------------------------------
# ``register_workload`` names the function so that records (and the worker
# processes that build candidates) can find it again by name and arguments.
@auto_scheduler.register_workload
def dense_bias_relu(M, K, N):
    x = te.placeholder((M, K), name="x")
    w = te.placeholder((K, N), name="w")
    b = te.placeholder((N,), name="b")
    k = te.reduce_axis((0, K), name="k")
    y = te.compute((M, N), lambda i, j: te.sum(x[i, k] * w[k, j], axis=k), name="dense")
    out = te.compute((M, N), lambda i, j: te.max(y[i, j] + b[j], 0.0), name="relu")
    return [x, w, b, out]


task = auto_scheduler.SearchTask(func=dense_bias_relu, args=(M, K, N), target="llvm")
print(task.compute_dag)  # the stages the search will schedule

# %% 2. Search -------------------------------------------------------------------------
# Measurements go through the same builder and runner as AutoTVM's: a candidate
# that fails to build, crashes or answers wrongly costs one trial, never the run.
# ``RecordToFile`` appends each measurement to the log as it happens.
log = os.path.join(tempfile.mkdtemp(), "dense_bias_relu.json")
options = auto_scheduler.TuningOptions(
    num_measure_trials=TRIALS,
    num_measures_per_round=8 if SMALL else 32,
    runner=auto_scheduler.LocalRunner(number=3, repeat=2, min_repeat_ms=5),
    measure_callbacks=[auto_scheduler.RecordToFile(log)],
    verbose=0,
)
task.tune(options)

# %% 3. The best program, as a schedule and as te code ----------------------------------
# ``apply_best`` replays the best record's trace on a fresh schedule of the
# computation; ``print_best`` shows it as the primitives you would have written.
sch, args = task.apply_best(log)
print(task.print_best(log))
f = codegen.build(sch, args, name="dense_bias_relu")

rng = np.random.default_rng(0)
x = rng.standard_normal((M, K), dtype=np.float32)
w = rng.standard_normal((K, N), dtype=np.float32)
b = rng.standard_normal(N, dtype=np.float32)
out = np.zeros((M, N), np.float32)
f(x, w, b, out)
expected = np.maximum(x @ w + b, 0)
np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)

# Against numpy (OpenBLAS for the product, then two elementwise passes), in
# alternating batches of one run.
runs = timing.interleaved({"tessera": lambda: f(x, w, b, out),
                           "numpy": lambda: np.maximum(x @ w + b, 0)}, repeat=3 if SMALL else 7)
flops = 2.0 * M * K * N
print(f"tessera {flops / timing.median(runs['tessera']) / 1e9:.1f} GFLOP/s, "
      f"numpy {flops / timing.median(runs['numpy']) / 1e9:.1f} GFLOP/s; "
      f"numpy time / Tessera time {timing.paired_ratio(runs, 'numpy', 'tessera').median:.2f}x")

# %% 4. Resume -----------------------------------------------------------------------
# A search started again with the log preloaded neither measures a program
# twice nor starts its cost model from nothing.
model = auto_scheduler.XGBModel()
model.update_from_file(log)
policy = auto_scheduler.SketchPolicy(task, model,
                                     init_search_callbacks=[auto_scheduler.PreloadMeasuredStates(log)])
task.tune(auto_scheduler.TuningOptions(num_measure_trials=4 if SMALL else 32, verbose=0,
                                       runner=auto_scheduler.LocalRunner(number=3, repeat=2, min_repeat_ms=5),
                                       measure_callbacks=[auto_scheduler.RecordToFile(log)]),
          search_policy=policy)
print(f"{len(auto_scheduler.load_records(log))} records in {log}")

# %% 5. Whole models -------------------------------------------------------------------
# For a network the same machinery runs over every distinct fused kernel::
#
#     tasks, weights = auto_scheduler.extract_tasks(g, params, target="llvm")
#     auto_scheduler.TaskScheduler(tasks, weights).tune(options)   # time where it pays most
#     with auto_scheduler.ApplyHistoryBest(log):
#         lib = graph.build(g, target="llvm", params=params)
#
# or, from the command line, ``tessera tune model.onnx --auto-scheduler
# --trials N --log model.json`` and then ``tessera run model.onnx --records
# model.json``.
