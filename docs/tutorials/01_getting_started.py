"""Getting started: a vector kernel from a compute lambda to native code.

Tessera separates *what* a kernel computes (a tensor expression) from *how*
it runs (a schedule), as Halide and TVM do.  This tutorial writes ``C = A *
2 + B``, prints its loop nest, schedules it for SIMD and threads, builds it
through LLVM and times it against numpy.

Run it with ``python docs/tutorials/01_getting_started.py``.  Classic TVM
code runs unchanged with ``import tessera as tvm`` and ``from tessera import
te``; this gallery uses the packages directly (``te``, ``schedule``,
``codegen``), which is what the facade re-exports.
"""

import os

import numpy as np

import codegen
import schedule
import te

# Sizes shrink when the tests run the gallery (``TESSERA_TUTORIAL_SMALL=1``).
SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
n = 10_000 if SMALL else 1 << 22

# %% 1. Describe the computation ---------------------------------------------
# ``te.placeholder`` declares an input; ``te.compute`` a tensor whose every
# element is given by a lambda over its indices.  Nothing runs yet: these
# are expressions.
A = te.placeholder((n,), name="A", dtype="float32")
B = te.placeholder((n,), name="B", dtype="float32")
C = te.compute((n,), lambda i: A[i] * 2.0 + B[i], name="C")
print(C, C.shape, C.dtype)

# %% 2. The default schedule ------------------------------------------------
# A schedule starts as one serial loop per axis.  ``schedule.lower`` prints
# the loop nest the compiler will emit.
s = te.create_schedule(C.op)
print(schedule.lower(s, [A, B, C]))

# %% 3. Build and run -------------------------------------------------------
# ``codegen.build`` compiles for the host CPU (its name and real features);
# the result takes numpy arrays and writes outputs in place.  Arguments are
# checked: a wrong dtype, shape or a read-only output raises naming it.
f = codegen.build(s, [A, B, C], target="llvm", name="axpy")
a = np.random.default_rng(0).random(n, dtype=np.float32)
b = np.random.default_rng(1).random(n, dtype=np.float32)
c = np.empty(n, dtype=np.float32)
f(a, b, c)
np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)

# %% 4. Schedule it ---------------------------------------------------------
# Split the loop in two: the outer part runs on the thread pool, the inner
# part becomes SIMD lanes.  The split need not divide ``n``: the tail is
# peeled, never read or written out of bounds.
s = te.create_schedule(C.op)
outer, inner = s[C].split(C.op.axis[0], factor=64 * 8)
inner_o, lanes = s[C].split(inner, factor=8)
s[C].parallel(outer)
s[C].vectorize(lanes)
print(schedule.lower(s, [A, B, C]))
fast = codegen.build(s, [A, B, C], target="llvm", name="axpy_parallel")
fast(a, b, c)
np.testing.assert_allclose(c, a * 2 + b, rtol=1e-6)

# %% 5. Time it against numpy ---------------------------------------------
# ``time_evaluator`` times one kernel: ``f.time_evaluator(number=20,
# repeat=5)(a, b, c).median`` is seconds per call.  To compare systems on a
# noisy machine, time them in alternating batches and compare medians from
# one run: ``codegen.timing.interleaved`` does that (a short pause before
# each batch lets another library's spinning threads go to sleep).
from codegen import timing  # noqa: E402

out = np.empty_like(c)
runs = timing.interleaved(
    {
        "serial": lambda: f(a, b, c),
        "parallel + vector": lambda: fast(a, b, c),
        "numpy": lambda: np.add(np.multiply(a, 2, out=out), b, out=out),
    },
    repeat=3 if SMALL else 7,
)
for name, samples in runs.items():
    t = timing.median(samples)
    print(f"{name:<18} {timing.format_samples(samples)}  {3 * 4 * n / t / 1e9:6.1f} GB/s")
print("numpy time / Tessera time: %.2fx" % timing.paired_ratio(runs, "numpy", "parallel + vector").median)

# %% 6. Look at the code ----------------------------------------------------
# ``get_source("asm")`` is the machine code: the inner loop uses vector
# registers (ymm on AVX2, zmm on AVX-512).
asm = fast.get_source("asm")
print("vector instructions:", sum(line.strip().startswith("vfmadd") or "ymm" in line or "zmm" in line
                                  for line in asm.splitlines()))
