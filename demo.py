"""Tessera demo: the classic TVM GEMM tutorial, step by step, against numpy.

Run ``python demo.py`` (about a minute and a half).  It builds the seven
schedules of "How to optimize GEMM on CPU" at N = 1024 plus the project's
best hand schedule, prints GFLOP/s for each next to numpy's ``A @ B``
measured in the same breath, then a few memory-bound kernels.
"""

from __future__ import annotations

import os
import time

import numpy as np

from codegen import timing
from topi import workloads as W

STEP_NOTES = {
    "default": "the naive triple loop",
    "blocking": "32x32 tiles, k split by 4",
    "vectorization": "+ vectorize the inner column loop",
    "loop_permutation": "+ k.inner inside the row loop",
    "array_packing": "+ pack B into [N/32][K][32] panels",
    "write_cache": "+ cache_write block, compute_at",
    "parallel": "+ parallel outer row blocks",
}


def versus(k: W.Kernel, base, base_args, ins, number: int, repeat: int) -> tuple[float, float]:
    """Interleaved medians (Tessera, baseline), after checking Tessera's output."""
    k.module(*ins)
    np.testing.assert_allclose(ins[-1], k.reference(*ins[:-1]), rtol=2e-4, atol=1e-4)
    runs = timing.interleaved({"tessera": lambda: k.module(*ins), "base": lambda: base(*base_args)},
                              repeat=repeat, number=number)
    return timing.median(runs["tessera"]), timing.median(runs["base"])


def row(name: str, t: float, tb: float, k: W.Kernel, note: str = "") -> None:
    r, rb = k.work / t / 1e9, k.work / tb / 1e9
    bar = "#" * max(1, min(40, round(40 * r / max(rb, 1e-9) / 1.25)))
    print(f"  {name:<18} {t * 1e3:10.2f} ms {r:8.1f} {rb:8.1f} {tb / t:7.2f}x  {bar:<40} {note}")


def header(title: str, unit: str) -> None:
    print(f"\n{title}")
    print(f"  {'':<18} {'time':>13} {'Tessera':>8} {'numpy':>8} {'ratio':>8}  ({unit})")


def main() -> None:
    print(f"Tessera demo: {os.cpu_count()} CPUs, numpy {np.__version__}; "
          "medians of interleaved runs, ratio = numpy time / Tessera time")
    header("How to optimize GEMM on CPU (classic TVM tutorial), N = 1024", "GFLOP/s")
    for step in W.OPT_GEMM_STEPS:
        t0 = time.perf_counter()
        k = W.opt_gemm(step, 1024)
        build_ms = (time.perf_counter() - t0) * 1e3
        a, b, c = k.make_inputs()
        slow = step in ("default", "blocking")
        t, tb = versus(k, np.matmul, (a, b), [a, b, c], 1, 1 if slow else 5)
        row(step, t, tb, k, f"{STEP_NOTES[step]} (build {build_ms:.0f} ms)")
    for n in (1024, 2048):
        k = W.matmul_best(n)
        a, b, c = k.make_inputs()
        t, tb = versus(k, np.matmul, (a, b), [a, b, c], 2, 5)
        mr, nr = W.matmul_tile()
        row(f"best {n}", t, tb, k, f"packed A/B, {mr}x{nr} register tile")

    header("Memory-bound kernels over 16M floats / 4096x1000", "GB/s, bytes read + written")
    k = W.fused_elementwise()
    ins = k.make_inputs()
    out = np.empty_like(ins[0])
    t, tb = versus(k, np.copyto, (out, ins[0]), ins, 3, 5)
    row("max(x*a+b,0)", t, tb * k.work / W.copy_bandwidth(ins[0]), k, "vs np.copyto bandwidth")
    t, tb = versus(k, k.reference, ins[:-1], ins, 3, 5)
    row("max(x*a+b,0)", t, tb, k, "vs numpy's own expression")
    k = W.vector_exp()
    ins = k.make_inputs()
    t, tb = versus(k, k.reference, ins[:-1], ins, 3, 5)
    row("exp", t, tb, k, "vs np.exp")
    k = W.row_sum()
    ins = k.make_inputs()
    t, tb = versus(k, k.reference, ins[:-1], ins, 5, 5)
    row("row sum", t, tb, k, "vs x.sum(axis=1)")
    print("\nFull table with targets: python benchmarks/report.py")


if __name__ == "__main__":
    main()
