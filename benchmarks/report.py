"""Run every benchmark workload once and print one table against numpy.

Usage::

    python benchmarks/report.py [--repeat 15] [--quick]

Tessera and numpy timings are interleaved (one Tessera sample, one numpy
sample, ...) so that both see the same machine load; the table shows
medians.  ``ratio`` is numpy time / Tessera time (higher is better) except
where the target names another quantity (copy bandwidth, thread scaling,
microseconds, milliseconds).  ``--quick`` skips the two slowest opt_gemm
steps (default and blocking, several seconds per call).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads as W  # noqa: E402

import codegen  # noqa: E402


SETTLE_S = 0.25  # OpenBLAS's threads spin ~0.2 s after a call and would steal our cores


def sample(fn, args, number: int) -> float:
    """Seconds per call of ``number`` back-to-back calls, after a settle pause and a warm-up."""
    time.sleep(SETTLE_S)
    fn(*args)
    t0 = time.perf_counter()
    for _ in range(number):
        fn(*args)
    return (time.perf_counter() - t0) / number


def interleaved(a, a_args, b, b_args, repeat: int, number: int = 1) -> tuple[float, float]:
    """Medians of ``repeat`` alternating samples of ``a(*a_args)`` and ``b(*b_args)``."""
    a(*a_args), b(*b_args)
    ta, tb = [], []
    for _ in range(repeat):
        ta.append(sample(a, a_args, number))
        tb.append(sample(b, b_args, number))
    return statistics.median(ta), statistics.median(tb)


def checked(k: W.Kernel) -> list:
    ins = k.make_inputs()
    k.module(*ins)
    np.testing.assert_allclose(ins[-1], k.reference(*ins[:-1]), rtol=2e-4, atol=1e-4)
    return ins


class Table:
    """Rows of (workload, tessera, numpy, ratio, rate, target, verdict)."""

    HEAD = ("workload", "Tessera", "numpy", "ratio", "rate", "target", "")

    def __init__(self):
        self.rows: list[tuple] = []

    def add(self, name, t, tn, ratio, rate, target, ok):
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        self.rows.append((name, t, tn, ratio, rate, target, verdict))
        print("  " + " | ".join(self.rows[-1]), file=sys.stderr, flush=True)

    def show(self) -> None:
        widths = [max(len(r[i]) for r in self.rows + [self.HEAD]) for i in range(len(self.HEAD))]
        line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(r, widths)))
        print(line(self.HEAD))
        print("-" * len(line(self.HEAD)))
        for r in self.rows:
            print(line(r))


def ms(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t < 10 else f"{t:.2f} s"


def rate(k: W.Kernel, t: float) -> str:
    return f"{k.work / t / 1e9:.1f} {k.unit}"


def gemm_rows(tab: Table, repeat: int, quick: bool) -> None:
    prev = None
    for step in W.OPT_GEMM_STEPS:
        if quick and step in ("default", "blocking"):
            continue
        k = W.opt_gemm(step, 1024)
        a, b, c = checked(k)
        slow = step in ("default", "blocking")
        t, tn = interleaved(k.module, (a, b, c), np.matmul, (a, b), 1 if slow else repeat)
        if step == "parallel":
            want, ok = ">= 0.5x", tn / t >= 0.5
        elif step == "vectorization":  # LLVM already vectorized the blocked loop: no gain expected
            want, ok = "~ prev", prev is None or t < 1.1 * prev
        else:
            want, ok = "> prev", prev is None or t < prev
        tab.add(f"opt_gemm {step}", ms(t), ms(tn), f"{tn / t:.2f}x", rate(k, t), want,
                ok if (prev is not None or step == "parallel") else None)
        prev = t
    for n in (1024, 2048):
        k = W.matmul_best(n)
        a, b, c = checked(k)
        t, tn = interleaved(k.module, (a, b, c), np.matmul, (a, b), repeat)
        tab.add(f"matmul_best {n}", ms(t), ms(tn), f"{tn / t:.2f}x", rate(k, t), ">= 0.9x",
                tn / t >= 0.9)


def memory_rows(tab: Table, repeat: int) -> None:
    k = W.fused_elementwise()
    ins = checked(k)
    out = np.empty_like(ins[0])
    t, tc = interleaved(k.module, ins, np.copyto, (out, ins[0]), repeat, 3)
    bw, bwc = k.work / t, W.copy_bandwidth(ins[0]) / tc
    tab.add("max(x*a+b,0) 16M vs copyto", ms(t), ms(tc), f"{bw / bwc:.2f}x bw", rate(k, t),
            ">= 0.8x bw", bw / bwc >= 0.8)
    t, tn = interleaved(k.module, ins, k.reference, ins[:-1], repeat, 3)
    tab.add("max(x*a+b,0) 16M vs numpy", ms(t), ms(tn), f"{tn / t:.2f}x", rate(k, t), "> 1x",
            tn > t)
    for k, name, want in ((W.row_sum(), "row sum 4096x1000", 1.0), (W.vector_exp(), "exp 16M", 2.0)):
        ins = checked(k)
        t, tn = interleaved(k.module, ins, k.reference, ins[:-1], repeat, 3)
        tab.add(name, ms(t), ms(tn), f"{tn / t:.2f}x", rate(k, t), f">= {want:g}x", tn / t >= want)


def runtime_rows(tab: Table, repeat: int) -> None:
    k = W.compute_bound()
    ins = checked(k)
    old = codegen.get_num_threads()

    def one_thread(*args):
        codegen.set_num_threads(1)
        k.module(*args)
        codegen.set_num_threads(2)

    codegen.set_num_threads(2)
    t2, t1 = interleaved(k.module, ins, one_thread, ins, repeat, 3)
    codegen.set_num_threads(old)
    tn = statistics.median(sample(k.reference, ins[:-1], 1) for _ in range(3))
    tab.add("fma chain, 2 threads vs 1", ms(t2), ms(tn), f"{t1 / t2:.2f}x scal", rate(k, t2),
            ">= 1.8x", t1 / t2 >= 1.8)
    par, ser = W.empty_launch(True), W.empty_launch(False)
    ins = checked(par)
    tp, ts = interleaved(par.module, ins, ser.module, ins, repeat, 20)
    per_launch = (tp - ts) / W.LAUNCHES
    tab.add("empty 2-task launch", f"{per_launch * 1e6:.2f} us", "-", f"x{W.LAUNCHES} in native loop",
            "-", "<= 20 us", per_launch * 1e6 <= 20)
    cold, rebuild = W.build_times()
    tab.add("build matmul_best cold", f"{cold * 1e3:.0f} ms", "-", "-", "-", "<= 1000 ms",
            cold <= 1.0)
    tab.add("rebuild same schedule", f"{rebuild * 1e3:.3f} ms", "-", "-", "-", "<= 10 ms",
            rebuild <= 0.010)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=15, help="interleaved samples per workload")
    p.add_argument("--quick", action="store_true", help="skip the slowest opt_gemm steps")
    args = p.parse_args(argv)
    tab = Table()
    print(f"Tessera vs numpy {np.__version__}, {os.cpu_count()} CPUs; medians of "
          f"{args.repeat} interleaved samples", file=sys.stderr)
    gemm_rows(tab, args.repeat, args.quick)
    memory_rows(tab, args.repeat)
    runtime_rows(tab, args.repeat)
    print()
    tab.show()
    return 0


if __name__ == "__main__":
    sys.exit(main())
