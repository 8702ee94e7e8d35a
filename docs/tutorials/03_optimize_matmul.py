"""Optimizing a matmul step by step, to numpy's speed.

``C = A @ B`` for square float32 matrices.  Each step below adds one idea
to the schedule; the computation never changes.  At the end the kernel runs
at the speed of numpy's OpenBLAS (``python benchmarks/report.py`` measures
the same schedule at 1024 and 2048 against numpy).

1. the naive triple loop (strided reads of B: cache misses);
2. blocking: 32 x 32 tiles of C, so a tile's rows of A and columns of B stay
   in cache;
3. vectorize the columns of a tile (8 or 16 lanes);
4. (skipped here: the classic tutorial's packing of B alone)
5. a register tile: both operands packed into panels (``B`` as
   ``[N/NR][K][NR]``, read contiguously by the innermost loop; ``A`` likewise),
   an ``MR x NR`` block of C accumulating in registers (``cache_write(C,
   "local")`` computed at the tile), the k loop unrolled;
6. parallel row blocks on the thread pool.

Run it with ``python docs/tutorials/03_optimize_matmul.py`` (about a minute).
"""

import os

import numpy as np

import codegen
import te
from codegen import timing
from codegen.target import Target

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
N = 128 if SMALL else 1024
LANES = Target("llvm").lanes("float32")  # 8 with AVX2, 16 with AVX-512

A = te.placeholder((N, N), name="A")
B = te.placeholder((N, N), name="B")


def naive():
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_schedule(C.op), C


def blocking(vectorize=False, bn=32):
    s, C = naive()
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    # k outside the tile rows: one row of B's tile is reused across the tile
    s[C].reorder(io, jo, ko, ii, ki, ji)
    if vectorize:
        s[C].vectorize(ji)
    return s, C


def packed_register_tile(parallel=False, MR=6, NR=2 * LANES, MB=48):
    """Both operands packed into panels, an MR x NR tile of C in registers."""
    k = te.reduce_axis((0, N), name="k")
    # Panels padded with zeros to whole tiles: any N works, no tile reads past A or B.
    pA = te.compute(((N + MR - 1) // MR, N, MR),
                    lambda x, y, z: te.if_then_else(x * MR + z < N, A[te.min(x * MR + z, N - 1), y], 0.0),
                    name="packedA")
    pB = te.compute(((N + NR - 1) // NR, N, NR),
                    lambda x, y, z: te.if_then_else(x * NR + z < N, B[y, te.min(x * NR + z, N - 1)], 0.0),
                    name="packedB")
    C = te.compute((N, N), lambda i, j: te.sum(pA[i // MR, k, i % MR] * pB[j // NR, k, j % NR], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")  # the register tile
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=MB)  # MB rows: one task, its packed A block stays in L2
    jo, ji = s[C].split(j, factor=NR)
    iio, iii = s[C].split(ii, factor=MR)
    s[C].reorder(io, jo, iio, iii, ji)
    s[C].vectorize(ji)
    s[CC].compute_at(s[C], iio)
    ic, jc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kc, factor=4)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].unroll(ic)  # MR rows x NR/LANES vectors of accumulators
    s[CC].vectorize(jc)
    s[pB].vectorize(s[pB].op.axis[2])
    if parallel:
        s[C].parallel(io)
        s[pA].parallel(s[pA].op.axis[0])
        s[pB].parallel(s[pB].op.axis[0])
    return s, C


STEPS = {
    "1 naive": naive,
    "2 blocking": blocking,
    "3 + vectorize": lambda: blocking(vectorize=True),
    "5 packed register tile": packed_register_tile,
    "6 + parallel": lambda: packed_register_tile(parallel=True),
}

rng = np.random.default_rng(0)
a = rng.random((N, N), dtype=np.float32)
b = rng.random((N, N), dtype=np.float32)
expected = a @ b
flops = 2.0 * N**3

kernels = {}
for name, make in STEPS.items():
    s, C = make()
    f = codegen.build(s, [A, B, C], name="mm_" + name.split()[0])
    c = np.zeros((N, N), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)
    kernels[name] = (lambda f=f, c=c: f(a, b, c))

# Time the fast steps against numpy in alternating batches (the naive loop
# once: it is slow at N = 1024).
c = np.zeros((N, N), np.float32)
naive_runs = timing.interleaved({"1 naive": kernels.pop("1 naive")}, repeat=1, number=1, settle=0)
runs = timing.interleaved({**kernels, "numpy": lambda: np.matmul(a, b, out=c)}, repeat=3 if SMALL else 7)
runs.update(naive_runs)
print(f"N = {N}, {LANES} float32 lanes; GFLOP/s (median of interleaved batches)")
for name in ["1 naive", *kernels, "numpy"]:
    t = timing.median(runs[name])
    print(f"  {name:<24} {flops / t / 1e9:8.1f} GFLOP/s   {timing.format_time(t)}")
best = timing.paired_ratio(runs, "numpy", "6 + parallel").median
print(f"numpy time / Tessera time with every step: {best:.2f}x")
