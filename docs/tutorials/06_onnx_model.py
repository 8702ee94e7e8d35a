"""Importing, running and tuning an ONNX model.

The graph layer imports an ONNX model, folds constants, fuses operators,
lays activations out in blocked formats, plans memory and compiles every
fused group to one native kernel.  This tutorial builds a small CNN with
``onnx.helper`` (SqueezeNet from the onnx wheel with the full sizes), runs it,
compares it with onnxruntime, then tunes its convolutions with AutoTVM.

The command line does the same: ``tessera run model.onnx``, ``tessera bench
model.onnx`` (next to onnxruntime), ``tessera tune model.onnx --trials N --log
model.jsonl`` and ``tessera compile model.onnx --records model.jsonl -o
model.so``.

Run it with ``python docs/tutorials/06_onnx_model.py``.
"""

import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import graph
from codegen import timing
from tune import autotvm

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"


def small_cnn() -> onnx.ModelProto:
    """conv 3x3 -> relu -> conv 3x3 (+ residual) -> relu -> global pool -> dense: 1x16x30x30 in."""
    rng = np.random.default_rng(0)
    w = lambda *shape: numpy_helper.from_array(  # noqa: E731
        (rng.standard_normal(shape) * 0.1).astype(np.float32), name=f"w{len(inits)}")
    inits = []
    for shape in ((32, 16, 3, 3), (32,), (32, 32, 3, 3), (32,), (10, 32), (10,)):
        inits.append(w(*shape))
    names = [t.name for t in inits]
    nodes = [
        helper.make_node("Conv", ["x", names[0], names[1]], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", names[2], names[3]], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", names[4], names[5]], ["y"], transB=1),
    ]
    g = helper.make_graph(nodes, "small_cnn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 30, 30])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


if SMALL:
    model = small_cnn()
else:
    from graph.onnx.zoo import light_model_path

    model = onnx.load(light_model_path("squeezenet"))

# %% 1. Import and build ------------------------------------------------------------
# ``from_onnx`` returns the graph and its weights; ``graph.build`` runs the
# pass table (``print(graph.passes.OPTDB)`` lists it) and compiles.
g, params = graph.from_onnx(model)
lib = graph.build(g, target="llvm", params=params)
m = lib.create_executor()
data = next(i for i in model.graph.input if i.name not in params)  # the one non-weight input
name, shape = data.name, tuple(d.dim_value for d in data.type.tensor_type.shape.dim)
x = np.random.default_rng(1).random(shape, dtype=np.float32)
m.run(**{name: x})
y = m.get_output(0)
print(f"{model.graph.name}: input {name} {shape} -> output {y.shape}")

# %% 2. Compare with onnxruntime --------------------------------------------------------
try:
    import onnxruntime as ort
except ImportError:  # onnxruntime is a test extra and a comparison peer
    ort = None
if ort is not None:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, {name: x})
    np.testing.assert_allclose(y, ref, rtol=1e-3, atol=1e-4)
    runs = timing.interleaved({"tessera": lambda: m.run(**{name: x}),
                               "onnxruntime": lambda: sess.run(None, {name: x})}, repeat=3 if SMALL else 7)
    ratio = timing.paired_ratio(runs, "tessera", "onnxruntime")
    print(f"Tessera {timing.format_samples(runs['tessera'])}")
    print(f"onnxruntime {timing.format_samples(runs['onnxruntime'])}")
    print(f"Tessera / onnxruntime time: {ratio.median:.2f}x")

# %% 3. Tune the convolutions --------------------------------------------------------
# One task per distinct tunable kernel; tune each for a few trials and build
# with the best records.  A record replaces the rule's config only where it
# measured faster.
tasks = autotvm.task.extract_from_program(g, params=params, target="llvm")
print(f"{len(tasks)} tunable tasks: " + ", ".join(t.name for t in tasks[:4]) + (" ..." if len(tasks) > 4 else ""))
log = os.path.join(tempfile.mkdtemp(), "model.jsonl")
trials = 4 if SMALL else 32
for task in tasks[: 2 if SMALL else len(tasks)]:
    tuner = autotvm.tuner.XGBTuner(task)
    tuner.tune(n_trial=min(trials, len(task.config_space)),
               measure_option=autotvm.measure_option(builder="local",
                                                     runner=autotvm.LocalRunner(number=3, repeat=2)),
               callbacks=[autotvm.callback.log_to_file(log)])
with autotvm.apply_history_best(log):
    tuned = graph.build(g, target="llvm", params=params)
mt = tuned.create_executor()
mt.run(**{name: x})
np.testing.assert_allclose(mt.get_output(0), y, rtol=1e-3, atol=1e-4)
print("tuned build matches the untuned one; records in", log)
