"""A GEMM micro-kernel tensorized into a matmul schedule, next to numpy and the hand-scheduled matmul.

Run ``python benchmarks/tensorize_gemm.py [--n 1024] [--repeat 9]`` (needs ``cc``).  The micro-kernel
is C with GCC vector extensions: an ``MR x NR`` tile of C in registers, one broadcast of A and
``NR / lanes`` loads of B per reduction step (``-O3 -mavx2 -mfma``: 8-float vectors; with
``--avx512``, 16).  ``s[C].tensorize(i.inner, gemm)`` puts one call per tile and reduction block
in the matmul's loop nest (the blocks outside: ``reset`` on the first, ``update`` after); the outer
rows run in parallel.  Printed: GFLOP/s of the tensorized matmul, of ``topi.workloads.matmul_best``
and of numpy, interleaved in one run, and the ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tessera as tvm  # noqa: E402
from codegen import timing  # noqa: E402
from tessera import te  # noqa: E402
from topi import workloads as W  # noqa: E402

KERNEL = r"""
typedef float vf __attribute__((vector_size(LANES * 4)));
static inline vf load(const float* p) { vf v; __builtin_memcpy(&v, p, sizeof v); return v; }
static inline void store(float* p, vf v) { __builtin_memcpy(p, &v, sizeof v); }
void tz_update(float* c, const float* a, const float* b, int kb, int lda, int ldb, int ldc) {
  vf acc[MR][NV];
  for (int i = 0; i < MR; ++i) for (int v = 0; v < NV; ++v) acc[i][v] = load(c + i * ldc + v * LANES);
  for (int k = 0; k < kb; ++k) {
    vf bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = load(b + k * ldb + v * LANES);
    for (int i = 0; i < MR; ++i) {
      vf av = (vf){0} + a[i * lda + k];
      for (int v = 0; v < NV; ++v) acc[i][v] += av * bv[v];
    }
  }
  for (int i = 0; i < MR; ++i) for (int v = 0; v < NV; ++v) store(c + i * ldc + v * LANES, acc[i][v]);
}
void tz_reset(float* c, int ldc) {
  for (int i = 0; i < MR; ++i) for (int j = 0; j < NV * LANES; ++j) c[i * ldc + j] = 0.0f;
}
"""


def build_kernel(mr: int, lanes: int, nv: int, flags: list) -> None:
    d = tempfile.mkdtemp(prefix="tessera-tensorize-")
    src, lib = os.path.join(d, "k.c"), os.path.join(d, "k.so")
    with open(src, "w") as fh:
        fh.write(KERNEL.replace("LANES", str(lanes)).replace("MR", str(mr)).replace("NV", str(nv)))
    subprocess.run(["cc", "-O3", *flags, "-shared", "-fPIC", "-o", lib, src], check=True)
    ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)  # its symbols resolve the kernels' calls


def intrin(mr: int, nr: int, kb: int):
    a = te.placeholder((mr, kb), name="a")
    b = te.placeholder((kb, nr), name="b")
    k = te.reduce_axis((0, kb), name="k")
    c = te.compute((mr, nr), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    buf = {t: tvm.tir.decl_buffer(t.shape, t.dtype, n, offset_factor=1, strides=[te.var(n + "_s"), 1])
           for t, n in ((a, "A"), (b, "B"), (c, "C"))}

    def fcompute(ins, outs):
        aa, bb = ins
        cc = outs[0]
        update = tvm.tir.call_extern("int32", "tz_update", cc.access_ptr("w"), aa.access_ptr("r"), bb.access_ptr("r"),
                                     kb, aa.strides[0], bb.strides[0], cc.strides[0])
        reset = tvm.tir.call_extern("int32", "tz_reset", cc.access_ptr("w"), cc.strides[0])
        return None, reset, update

    return te.decl_tensor_intrin(c.op, fcompute, name=f"gemm{mr}x{nr}x{kb}", binds=buf)


def tensorized_matmul(n: int, mr: int, nr: int, kb: int):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    r = te.reduce_axis((0, n), name="r")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], mr, nr)
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=kb)
    s[C].reorder(io, ko, jo, ii, ji, ki)  # a k block of A's rows stays in L1 across the column tiles
    s[C].tensorize(ii, intrin(mr, nr, kb))
    s[C].parallel(io)
    return tvm.build(s, [A, B, C], name="tensorized_matmul")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=9)
    p.add_argument("--kb", type=int, default=256, help="reduction block per call (default 256)")
    p.add_argument("--avx512", action="store_true", help="16-float vectors (-mavx512f)")
    a = p.parse_args(argv)
    lanes, flags = (16, ["-mavx512f", "-mfma"]) if a.avx512 else (8, ["-mavx2", "-mfma"])
    mr, nv = 4, 2  # 8 accumulators of NR = 2 vectors, a broadcast and two B vectors: 11 of 16 registers
    nr = nv * lanes
    if a.n % mr or a.n % nr or a.n % a.kb:
        p.error(f"--n {a.n} must be a multiple of {mr}, {nr} and --kb {a.kb}")
    build_kernel(mr, lanes, nv, flags)
    f = tensorized_matmul(a.n, mr, nr, a.kb)
    best = W.matmul_best(a.n)
    x, y, z = best.make_inputs()
    z2 = np.zeros_like(z)
    f(x, y, z2)
    np.testing.assert_allclose(z2, x @ y, rtol=1e-3, atol=1e-3)
    runs = timing.interleaved({"tensorized": lambda: f(x, y, z2), "matmul_best": lambda: best.module(x, y, z),
                               "numpy": lambda: np.matmul(x, y)}, repeat=a.repeat)
    flops = 2.0 * a.n ** 3
    print(f"matmul {a.n}^3, micro-kernel {mr}x{nr} ({lanes}-float vectors), k blocks of {a.kb}; medians of "
          f"{a.repeat} interleaved batches")
    for name, r in runs.items():
        print(f"  {name:<12} {flops / timing.median(r) / 1e9:7.1f} GFLOP/s  {timing.format_samples(r)}")
    print(f"tensorized / numpy speed: {timing.paired_ratio(runs, 'numpy', 'tensorized').median:.2f}x; "
          f"tensorized / matmul_best: {timing.paired_ratio(runs, 'matmul_best', 'tensorized').median:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
