"""Reductions: sums, custom reducers and rfactor.

A reduction iterates a ``te.reduce_axis``.  This tutorial sums rows,
writes an argmax with a tuple ``comm_reducer``, and uses ``rfactor`` to give
a reduction with little data parallelism (a sum over one long vector) work
for SIMD lanes and threads.

Run it with ``python docs/tutorials/04_reductions.py``.
"""

import os

import numpy as np

import codegen
import schedule
import te
from codegen import timing

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
rows, cols = (33, 1001) if SMALL else (4096, 1000)
rng = np.random.default_rng(0)

# %% A row sum ---------------------------------------------------------------
# ``te.sum(expr, axis=k)`` reduces over ``k``; the reduce axis becomes the
# innermost loop of the stage, after an initialisation to 0.
X = te.placeholder((rows, cols), name="X")
k = te.reduce_axis((0, cols), name="k")
Y = te.compute((rows,), lambda i: te.sum(X[i, k], axis=k), name="Y")
s = te.create_schedule(Y.op)
io, ii = s[Y].split(Y.op.axis[0], factor=16)
s[Y].parallel(io)
print(schedule.lower(s, [X, Y]))
row_sum = codegen.build(s, [X, Y], name="row_sum")
x = rng.random((rows, cols), dtype=np.float32)
y = np.zeros(rows, np.float32)
row_sum(x, y)
np.testing.assert_allclose(y, x.sum(axis=1), rtol=1e-4)

# %% A custom reducer: argmax ---------------------------------------------------
# ``comm_reducer(combine, identity)`` defines a commutative reduction; with
# tuples it carries (index, value) pairs.  A tie keeps the first index, as
# numpy's argmax does.
def combine(a, b):
    take_b = te.any(b[1] > a[1], te.all(b[1] == a[1], b[0] < a[0]))
    return te.if_then_else(take_b, b[0], a[0]), te.if_then_else(take_b, b[1], a[1])


def identity(t0, t1):
    return te.const(-1, t0), te.min_value(t1)


argmax = te.comm_reducer(combine, identity, name="argmax")
idx = te.placeholder((rows, cols), name="idx", dtype="int32")
k = te.reduce_axis((0, cols), name="k")
T_idx, T_val = te.compute((rows,), lambda i: argmax((idx[i, k], X[i, k]), axis=k), name="T")
s = te.create_schedule(T_idx.op)
f = codegen.build(s, [idx, X, T_idx, T_val], name="argmax")
indices = np.broadcast_to(np.arange(cols, dtype=np.int32), (rows, cols)).copy()
out_i, out_v = np.zeros(rows, np.int32), np.zeros(rows, np.float32)
f(indices, x, out_i, out_v)
np.testing.assert_array_equal(out_i, x.argmax(axis=1))
print("argmax matches numpy:", out_i[:5])

# %% rfactor: parallelism inside one reduction -----------------------------------
# A dot product over n elements has a single output: nothing to vectorize or
# parallelize along data axes.  ``rfactor(Z, ki)`` after splitting ``k`` makes
# a new stage of partial sums indexed by ``ki`` (a data axis now: lanes or
# threads), and Z sums the partials.  Floating-point sums are reassociated
# (as numpy's pairwise sum is): compare with a tolerance.
n = 10_016 if SMALL else 1 << 24  # a multiple of the 32 lanes: no tail guard inside the vector loop
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
k = te.reduce_axis((0, n), name="k")
Z = te.compute((1,), lambda _: te.sum(A[k] * B[k], axis=k), name="Z")

s_plain = te.create_schedule(Z.op)
plain = codegen.build(s_plain, [A, B, Z], name="dot_plain")

s = te.create_schedule(Z.op)
ko, ki = s[Z].split(s[Z].op.reduce_axis[0], factor=32)
ZF = s.rfactor(Z, ki)  # ZF[ki] = sum over ko of A[ko*32+ki] * B[ko*32+ki]
zi = s[ZF].op.axis[0]  # ki, now a data axis of the partial sums
(zk,) = s[ZF].op.reduce_axis  # ko
s[ZF].reorder(zk, zi)  # the lanes innermost: 32 running sums in 4 vectors
s[ZF].vectorize(zi)
print(schedule.lower(s, [A, B, Z]))
fast = codegen.build(s, [A, B, Z], name="dot_rfactor")

# The same idea gives threads work: split k into 8 chunks (``nparts``),
# rfactor on the chunk index, and run the chunks' partial sums in parallel.
s = te.create_schedule(Z.op)
kp, kr = s[Z].split(s[Z].op.reduce_axis[0], nparts=8)
ZP = s.rfactor(Z, kp)
s[ZP].parallel(s[ZP].op.axis[0])
threaded = codegen.build(s, [A, B, Z], name="dot_rfactor_parallel")

a = rng.random(n, dtype=np.float32)
b = rng.random(n, dtype=np.float32)
z1, z2, z3 = (np.zeros(1, np.float32) for _ in range(3))
plain(a, b, z1)
fast(a, b, z2)
threaded(a, b, z3)
ref = np.dot(a.astype(np.float64), b)
np.testing.assert_allclose([z1[0], z2[0], z3[0]], [ref] * 3, rtol=1e-3)
# Float ``+`` may be reassociated (see the README), so LLVM already vectorizes
# the plain loop; rfactor makes the lanes explicit and adds threads.
runs = timing.interleaved({"plain": lambda: plain(a, b, z1), "rfactor": lambda: fast(a, b, z2),
                           "rfactor parallel": lambda: threaded(a, b, z3),
                           "numpy": lambda: np.dot(a, b)}, repeat=3 if SMALL else 7)
for name, samples in runs.items():
    print(f"  {name:<17} {timing.format_samples(samples)}")
