"""Reference workloads: hand-scheduled Tessera kernels next to their numpy baselines.

The demo, ``benchmarks/report.py`` and ``benchmarks/test_bench_core.py`` time
these against numpy.  This module builds kernels, so it imports ``codegen``;
``import topi`` does not load it.

Every builder returns a :class:`Kernel`, a named tuple that unpacks as
``(module, make_inputs, reference, work)``:

* ``module``: the built ``codegen.Module``;
* ``make_inputs()``: fresh, seeded numpy arrays in call order (outputs
  last, zero-filled);
* ``reference(*inputs)``: the numpy baseline; it returns the expected
  output and is also what the benchmarks time for numpy;
* ``work``: FLOPs (``unit == "GFLOP/s"``) or bytes moved (``"GB/s"``) per
  call, so that ``work / seconds / 1e9`` is the rate.

The GEMM builders reproduce the seven schedules of classic TVM's tutorial
"How to optimize GEMM on CPU" (``opt_gemm.py``) step by step, with only
the import lines (and ``N // bn`` for ``N / bn``) changed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Callable, NamedTuple

import numpy as np

import codegen
import schedule
import te
from codegen.target import Target

OPT_GEMM_STEPS = (
    "default", "blocking", "vectorization", "loop_permutation",
    "array_packing", "write_cache", "parallel",
)
def matmul_tile(target=None) -> tuple:
    """``(MR rows, NR columns)`` of the best matmul's register tile on ``target``: 8 rows of one
    vector with 32 vector registers (AVX-512), 6 rows of two vectors with 16 (AVX2): the
    accumulators, a broadcast and the B vectors fit the register file either way."""
    target = target or Target.current()
    lanes = target.lanes("float32")
    return (8, lanes) if target.vector_registers >= 32 else (6, 2 * lanes)


class Kernel(NamedTuple):
    """A built workload: ``module, make_inputs, reference, work`` (+ ``unit``)."""

    module: codegen.Module
    make_inputs: Callable[[], list]
    reference: Callable[..., np.ndarray]
    work: float
    unit: str = "GFLOP/s"


def _rand(*shape, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


# ---------------------------------------------------------------- matmul ---
def _matmul_kernel(mod: codegen.Module, n: int) -> Kernel:
    def make_inputs():
        return [_rand(n, n, seed=1), _rand(n, n, seed=2), np.zeros((n, n), np.float32)]

    return Kernel(mod, make_inputs, lambda a, b, c=None: a @ b, 2.0 * n**3)


def opt_gemm_schedule(step: str, N: int = 1024, bn: int = 32, kfactor: int = 4):
    """The schedule of one step of the TVM tutorial; returns ``(s, [A, B, C])``.

    Parameters
    ----------
    step : str
        One of :data:`OPT_GEMM_STEPS`.
    N : int
        Square matrix size (M = K = N).
    bn, kfactor : int
        The tutorial's blocking factor and reduction split.
    """
    if step not in OPT_GEMM_STEPS:
        raise ValueError(f"opt_gemm: unknown step {step!r}; choose one of {OPT_GEMM_STEPS}")
    M = K = N
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    if OPT_GEMM_STEPS.index(step) < OPT_GEMM_STEPS.index("array_packing"):
        C = te.compute((M, N), lambda m, n: te.sum(A[m, k] * B[k, n], axis=k), name="C")
    else:
        packedB = te.compute(
            (N // bn, K, bn), lambda bigN, k, littleN: B[k, bigN * bn + littleN], name="packedB"
        )
        C = te.compute(
            (M, N), lambda m, n: te.sum(A[m, k] * packedB[n // bn, k, n % bn], axis=k), name="C"
        )
    s = te.create_schedule(C.op)
    if step == "default":
        return s, [A, B, C]
    if step in ("write_cache", "parallel"):
        CC = s.cache_write(C, "global")
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        s[CC].compute_at(s[C], no)
        mc, nc = s[CC].op.axis
        (kaxis,) = s[CC].op.reduce_axis
        ko, ki = s[CC].split(kaxis, factor=kfactor)
        s[CC].reorder(ko, mc, ki, nc)
        s[CC].vectorize(nc)
        s[CC].unroll(ki)
        if step == "parallel":
            s[C].parallel(mo)
    else:
        mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
        (kaxis,) = s[C].op.reduce_axis
        ko, ki = s[C].split(kaxis, factor=kfactor)
        if step in ("blocking", "vectorization"):
            s[C].reorder(mo, no, ko, ki, mi, ni)
        else:  # loop_permutation, array_packing
            s[C].reorder(mo, no, ko, mi, ki, ni)
        if step != "blocking":
            s[C].vectorize(ni)
    if OPT_GEMM_STEPS.index(step) >= OPT_GEMM_STEPS.index("array_packing"):
        bigN, _, littleN = s[packedB].op.axis
        s[packedB].vectorize(littleN)
        s[packedB].parallel(bigN)
    return s, [A, B, C]


def opt_gemm(step: str, N: int = 1024) -> Kernel:
    """Build one step of the opt_gemm tutorial (see :func:`opt_gemm_schedule`)."""
    s, args = opt_gemm_schedule(step, N)
    return _matmul_kernel(codegen.build(s, args, name=f"mmult_{step}"), N)


def matmul_best_schedule(N: int, MR: int | None = None, NR: int | None = None,
                         MB: int | None = None, KU: int = 4):
    """The project's best float32 matmul schedule; returns ``(s, [A, B, C])``.

    Both operands are packed into panels padded with zeros to whole tiles:
    ``packedA[i/MR, k, MR]`` and ``packedB[j/NR, k, NR]``.  Rows are grouped into
    blocks of ``MB`` (one parallel task; its packed A block stays in L2); inside a
    block each ``MR x NR`` tile of C accumulates in a ``cache_write(C, "local")``
    buffer that LLVM keeps in registers::

        parallel (i.outer, 0, N/MB)            // MB rows of A in L2
          for (j.outer, 0, N/NR)               // one packed B panel
            for (i.inner.outer, 0, MB/MR)      // one MR x NR tile
              C.local = 0
              for (k, 0, N)                    // MR broadcast-FMAs per k
                unrolled (i.c, 0, MR): C.local[i.c, :] += A[i.c, k] * packedB[.., k, :]
              C[tile] = C.local                // NR-wide vector stores

    Parameters
    ----------
    N : int
        Square matrix size (any: the panels are padded).
    MR, NR : int, optional
        Micro-tile rows and columns (NR a multiple of the vector width); default
        :func:`matmul_tile` of the current target.
    MB : int, optional
        Rows per parallel task (a multiple of ``MR``; default about 64).
    KU : int
        The k loop is unrolled by this factor.
    """
    dMR, dNR = matmul_tile()
    MR, NR = MR or dMR, NR or dNR
    MB = MB or MR * max(1, 64 // MR)
    if MB % MR:
        raise ValueError(f"matmul_best: MB={MB} must be a multiple of MR={MR}")
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), "k")
    zero = te.const(0.0, "float32")
    pA = te.compute(((N + MR - 1) // MR, N, MR),
                    lambda x, y, z: te.if_then_else(x * MR + z < N, A[te.min(x * MR + z, N - 1), y], zero),
                    name="packedA")
    pB = te.compute(((N + NR - 1) // NR, N, NR),
                    lambda x, y, z: te.if_then_else(x * NR + z < N, B[y, te.min(x * NR + z, N - 1)], zero),
                    name="packedB")
    C = te.compute(
        (N, N), lambda i, j: te.sum(pA[i // MR, k, i % MR] * pB[j // NR, k, j % NR], axis=k),
        name="C",
    )
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    i, j = s[C].op.axis
    io, ii = s[C].split(i, factor=MB)
    jo, ji = s[C].split(j, factor=NR)
    iio, iii = s[C].split(ii, factor=MR)
    s[C].reorder(io, jo, iio, iii, ji)
    s[C].vectorize(ji)
    s[C].parallel(io)
    s[CC].compute_at(s[C], iio)
    ic, jc = s[CC].op.axis
    (kc,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kc, factor=KU)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    x, _, z = s[pA].op.axis
    s[pA].parallel(x)
    x, _, z = s[pB].op.axis
    s[pB].vectorize(z)
    s[pB].parallel(x)
    return s, [A, B, C]


def matmul_best(N: int = 1024, **factors) -> Kernel:
    """Build :func:`matmul_best_schedule` for an ``N x N`` float32 matmul."""
    s, args = matmul_best_schedule(N, **factors)
    return _matmul_kernel(codegen.build(s, args, name=f"matmul_best_{N}"), N)


# ---------------------------------------------------------- memory bound ---
def _split_parallel_vectorize(s, T, chunk: int, vec: int) -> None:
    """``parallel (x.outer) { for (x.inner.outer) { vectorized x.inner.inner } }``."""
    (x,) = s[T].op.axis
    xo, xi = s[T].split(x, factor=chunk)
    xio, xii = s[T].split(xi, factor=vec)
    s[T].parallel(xo)
    s[T].vectorize(xii)


def fused_elementwise(n: int = 1 << 24, chunk: int = 1 << 16, vec: int = 16) -> Kernel:
    """``y = max(x * a + b, 0)`` over ``n`` floats, ``a`` and ``b`` of shape (1,).

    ``work`` counts the bytes read and written (8 per element).
    """
    X = te.placeholder((n,), name="x")
    a = te.placeholder((1,), name="a")
    b = te.placeholder((1,), name="b")
    Y = te.compute((n,), lambda i: te.max(X[i] * a[0] + b[0], te.const(0.0, "float32")), name="y")
    s = te.create_schedule(Y.op)
    _split_parallel_vectorize(s, Y, chunk, vec)
    mod = codegen.build(s, [X, a, b, Y], name="fused_axpb_relu")

    def make_inputs():
        x = _rand(n, seed=3) - np.float32(0.5)
        return [x, np.array([1.5], np.float32), np.array([-0.1], np.float32),
                np.zeros(n, np.float32)]

    def reference(x, a, b, y=None):
        return np.maximum(x * a[0] + b[0], np.float32(0))

    return Kernel(mod, make_inputs, reference, 8.0 * n, "GB/s")


def vector_exp(n: int = 1 << 24, chunk: int = 1 << 16, vec: int = 16) -> Kernel:
    """``y = exp(x)`` over ``n`` floats (``work``: bytes read and written)."""
    X = te.placeholder((n,), name="x")
    Y = te.compute((n,), lambda i: te.exp(X[i]), name="y")
    s = te.create_schedule(Y.op)
    _split_parallel_vectorize(s, Y, chunk, vec)
    mod = codegen.build(s, [X, Y], name="vexp")

    def make_inputs():
        return [(_rand(n, seed=4) - np.float32(0.5)) * np.float32(20), np.zeros(n, np.float32)]

    return Kernel(mod, make_inputs, lambda x, y=None: np.exp(x), 8.0 * n, "GB/s")


def row_sum(rows: int = 4096, cols: int = 1000, rows_per_task: int = 64) -> Kernel:
    """``y[i] = sum_k x[i, k]``: parallel rows, a plain serial ``k`` loop."""
    X = te.placeholder((rows, cols), name="x")
    k = te.reduce_axis((0, cols), "k")
    Y = te.compute((rows,), lambda i: te.sum(X[i, k], axis=k), name="y")
    s = te.create_schedule(Y.op)
    io, ii = s[Y].split(Y.op.axis[0], factor=rows_per_task)
    s[Y].parallel(io)
    mod = codegen.build(s, [X, Y], name="row_sum")

    def make_inputs():
        return [_rand(rows, cols, seed=5), np.zeros(rows, np.float32)]

    return Kernel(mod, make_inputs, lambda x, y=None: x.sum(axis=1), 4.0 * rows * cols, "GB/s")


def copy_bandwidth(x: np.ndarray) -> float:
    """Bytes moved (read + written) by ``np.copyto(out, x)``, the roofline baseline."""
    return 2.0 * x.nbytes


def copy(n: int = 1 << 24, chunk: int = 1 << 16) -> Kernel:
    """``y = x`` over ``n`` floats, vectorized and parallel: the machine's copy bandwidth
    (``work``: bytes read and written)."""
    lanes = Target.current().lanes("float32")
    X = te.placeholder((n,), name="x")
    Y = te.compute((n,), lambda i: X[i], name="y")
    s = te.create_schedule(Y.op)
    _split_parallel_vectorize(s, Y, chunk, lanes)
    mod = codegen.build(s, [X, Y], name="copy")
    return Kernel(mod, lambda: [_rand(n, seed=7), np.zeros(n, np.float32)], lambda x, y=None: x.copy(),
                  8.0 * n, "GB/s")


def fma_peak(tiles: int = 256, K: int = 256, KU: int = 4) -> Kernel:
    """The machine's float32 FMA peak: the best matmul's register tile on operands in L1.

    ``tiles`` independent ``MR x NR`` tiles (:func:`matmul_tile`), each ``C[t] = A @ B`` with
    ``A`` of ``MR x K`` and ``B`` of ``K x NR`` (together under 32 KiB, so every load hits L1)::

        parallel (t, 0, tiles)
          C.local = 0
          for (k, 0, K)                            // unrolled by KU
            unrolled (i, 0, MR): C.local[i, :] += A[i, k] * B[k, :]   // NR-wide FMAs
          C[t] = C.local

    The accumulators are carried by the ``k`` loop, so every iteration issues MR x NR / lanes
    independent FMAs, enough to cover the FMA latency on two pipes.  (Chains of multiply-adds
    written as one expression do not measure the peak: LLVM schedules them a few at a time.)
    ``work`` is ``2 * tiles * MR * NR * K`` FLOPs.
    """
    MR, NR = matmul_tile()
    A = te.placeholder((MR, K), name="A")
    B = te.placeholder((K, NR), name="B")
    k = te.reduce_axis((0, K), "k")
    C = te.compute((tiles, MR, NR), lambda t, i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    t, _, j = s[C].op.axis
    s[C].parallel(t)
    s[C].vectorize(j)
    s[CC].compute_at(s[C], t)
    _, ic, jc = s[CC].op.axis
    ko, ki = s[CC].split(s[CC].op.reduce_axis[0], factor=KU)
    s[CC].reorder(ko, ki, ic, jc)
    s[CC].unroll(ki)
    s[CC].unroll(ic)
    s[CC].vectorize(jc)
    mod = codegen.build(s, [A, B, C], name="fma_peak")

    def make_inputs():
        return [_rand(MR, K, seed=8), _rand(K, NR, seed=9), np.zeros((tiles, MR, NR), np.float32)]

    def reference(a, b, c=None):
        return np.broadcast_to(a @ b, (tiles, MR, NR))

    return Kernel(mod, make_inputs, reference, 2.0 * tiles * MR * NR * K)


# --------------------------------------------------------------- runtime ---
def compute_bound(n: int = 1 << 20, depth: int = 64, chunk: int = 1 << 14) -> Kernel:
    """``depth`` dependent multiply-adds per element, all in registers (thread scaling).

    ``y = x; y = (y * y) * 0.25 + 0.5 * x`` repeated ``depth`` times: the
    square keeps LLVM (which may reassociate float math) from folding the
    chain into one operation.  ``work`` is ``3 * depth * n`` FLOPs.
    """
    X = te.placeholder((n,), name="x")

    def body(i):
        x = X[i]
        half_x = x * te.const(0.5, "float32")
        y = x
        for _ in range(depth):
            y = y * y * te.const(0.25, "float32") + half_x
        return y

    Y = te.compute((n,), body, name="y")
    s = te.create_schedule(Y.op)
    _split_parallel_vectorize(s, Y, chunk, 16)
    mod = codegen.build(s, [X, Y], name="fma_chain")

    def reference(x, y=None):
        half_x = x * np.float32(0.5)
        out = x.copy()
        for _ in range(depth):
            out = out * out * np.float32(0.25) + half_x
        return out

    return Kernel(mod, lambda: [_rand(n, seed=6), np.zeros(n, np.float32)], reference,
                  3.0 * depth * n)


LAUNCHES = 1000


def empty_launch(parallel: bool = True) -> Kernel:
    """``LAUNCHES`` back-to-back two-task launches from native code.

    ``y[r, i] = x[r, i] + 1`` over (LAUNCHES, 2) with ``r`` serial and ``i``
    parallel: every ``r`` starts the pool once.  With ``parallel=False`` the
    same loops run serially; ``(t_parallel - t_serial) / LAUNCHES`` is the
    cost of one launch, free of the Python call.
    """
    X = te.placeholder((LAUNCHES, 2), name="x")
    Y = te.compute((LAUNCHES, 2), lambda r, i: X[r, i] + te.const(1.0, "float32"), name="y")
    s = te.create_schedule(Y.op)
    if parallel:
        s[Y].parallel(Y.op.axis[1])
    mod = codegen.build(s, [X, Y], name="empty_launch" if parallel else "serial_launch")
    return Kernel(mod, lambda: [np.zeros((LAUNCHES, 2), np.float32), np.zeros((LAUNCHES, 2), np.float32)],
                  lambda x, y=None: x + 1, 0.0, "us")


# ------------------------------------------------------------ build time ---
_COLD = """
import time
import codegen
from topi import workloads
t0 = time.perf_counter()
s, args = workloads.matmul_best_schedule({n})
f = codegen.build(s, args, name="cold")
t1 = time.perf_counter()
f2 = codegen.build(s, args, name="cold")
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def build_times(n: int = 1024) -> tuple[float, float]:
    """Seconds for a cold lower+build of :func:`matmul_best` (fresh process,
    fresh schedule objects, imports excluded) and for rebuilding the same
    schedule objects in that process."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", _COLD.format(n=n)], capture_output=True, text=True, check=True,
                         env=env)
    cold, rebuild = map(float, out.stdout.split()[-2:])
    return cold, rebuild

