"""Exporting a library: build once, load anywhere on the same kind of CPU.

A built kernel (``codegen.Module``) and a built model (``graph.GraphLibrary``)
both export to one self-contained shared library, and load back without
compiling again.  Build for the host, or name another x86 CPU to cross-compile
(``target="llvm -mcpu=x86-64-v3"``: AVX2 and FMA, runs on any such CPU).
Exporting needs a C linker (``cc``) on the machine.

Run it with ``python docs/tutorials/07_export_library.py``.
"""

import os
import tempfile

import numpy as np

import codegen
import graph
import te

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
n = 1000 if SMALL else 1 << 20
out_dir = tempfile.mkdtemp()

# %% 1. One kernel ------------------------------------------------------------------------
A = te.placeholder((n,), name="A")
B = te.compute((n,), lambda i: te.exp(A[i]) * 0.5, name="B")
s = te.create_schedule(B.op)
xo, xi = s[B].split(B.op.axis[0], factor=8)
s[B].vectorize(xi)
f = codegen.build(s, [A, B], target="llvm -mcpu=x86-64-v3", name="half_exp")
path = os.path.join(out_dir, "half_exp.so")
f.export_library(path)
loaded = codegen.load_module(path)  # classic: tvm.runtime.load_module
a = np.linspace(-3, 3, n, dtype=np.float32)
b = np.zeros(n, np.float32)
loaded(a, b)
np.testing.assert_allclose(b, np.exp(a) * 0.5, rtol=1e-5)
print(f"kernel: {path} ({os.path.getsize(path)} bytes), loaded and checked")

# %% 2. A whole model -------------------------------------------------------------------------
# A graph library holds every kernel, the constants and the memory plan.
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

rng = np.random.default_rng(0)
w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
model = helper.make_model(
    helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["y"])],
        "conv_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 17, 17])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 17, 17])],
        [w],
    ),
    opset_imports=[helper.make_opsetid("", 17)],
)
g, params = graph.from_onnx(model)
lib = graph.build(g, target="llvm", params=params)
model_path = os.path.join(out_dir, "conv_relu.so")
lib.export_library(model_path)

m = graph.load_library(model_path).create_executor()
x = rng.random((1, 4, 17, 17), dtype=np.float32)
m.run(x=x)
direct = lib.create_executor()
direct.run(x=x)
np.testing.assert_allclose(m.get_output(0), direct.get_output(0), rtol=1e-6)
print(f"model: {model_path} ({os.path.getsize(model_path)} bytes), loaded and checked")
# The command line does the same: tessera compile model.onnx -o model.so
