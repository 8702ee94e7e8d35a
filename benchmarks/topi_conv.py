"""ResNet-style conv layers: Tessera's x86 default schedules vs onnxruntime and torch.

Run ``python3 benchmarks/topi_conv.py``.  Each layer is built once with the
default config (no tuning), checked against torch, then the three systems
are timed in interleaved batches (each after a 0.25 s sleep, since BLAS and
onnxruntime threads spin after a call and steal cores); the median batch
counts.  Every system uses 2 threads.  Weights are constants to all three:
onnxruntime and torch pack them at session/first-call time, Tessera gets
them pre-packed (``pack_kernel_numpy``), as a graph compiler folds them.

``--target "llvm -mcpu=x86-64-v3"`` builds Tessera's kernels for that target
(schedules and configs read it: AVX2 has 8 float lanes and 16 registers);
``--compare-avx2`` builds every layer for the host and for AVX2 (x86-64-v3),
checks both against torch and prints both times and their ratio, interleaved
in one run.

``--cpu-time`` (with ``--threads 1``) times each batch by the calling
thread's CPU time (``time.thread_time``) instead of wall time and skips the
settling sleeps: on a machine loaded by other processes, wall times swing
while a single thread's CPU time holds steady.  It
times only Tessera's kernels, so use it with ``--compare-avx2``.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import codegen
from codegen import timing
from codegen.ndarray import aligned, aligned_zeros
import te
import topi
from codegen.target import Target
from topi.x86 import conv2d as x86conv
from topi.x86 import conv2d_rule as x86conv_rule

LAYERS = [  # name, IC, OC, H, K, stride, pad, groups
    ("stem 7x7/2 3->64 @224", 3, 64, 224, 7, 2, 3, 1),
    ("3x3 64->64 @56", 64, 64, 56, 3, 1, 1, 1),
    ("3x3 128->128 @28", 128, 128, 28, 3, 1, 1, 1),
    ("3x3 256->256 @14", 256, 256, 14, 3, 1, 1, 1),
    ("3x3 512->512 @7", 512, 512, 7, 3, 1, 1, 1),
    ("1x1 64->256 @56", 64, 256, 56, 1, 1, 0, 1),
    ("dw 3x3 32 @112", 32, 32, 112, 3, 1, 1, 32),
    ("dw 7x7 96 @56 (ConvNeXt-T)", 96, 96, 56, 7, 1, 3, 96),
    ("dw 7x7 384 @14 (ConvNeXt-T)", 384, 384, 14, 7, 1, 3, 384),
]
THREADS = 2
ROUNDS = 7
STAT = statistics.median
CLOCK = time.perf_counter  # time.thread_time under --cpu-time


def tessera_fn(ic, oc, h, k, st, p, groups, a, w, target: str = "llvm"):
    """Build the default x86 schedule for ``target``; return a no-argument callable and its output."""
    with Target(target):
        return _tessera_fn(ic, oc, h, k, st, p, groups, a, w, target)


def _tessera_fn(ic, oc, h, k, st, p, groups, a, w, target):
    A = te.placeholder((1, ic, h, h), name="data")
    if groups > 1:
        W = te.placeholder(w.shape, name="kernel")
        C = topi.nn.depthwise_conv2d_nchw(A, W, st, p, 1)
        s, wk = topi.x86.schedule_depthwise_conv2d_nchw(C), w
    else:
        wl = topi.nn.conv2d_nchw(A, te.placeholder(w.shape), st, p, 1).op.attrs["workload"]
        cfg = x86conv_rule.default_conv2d_config(wl)
        wk = x86conv.pack_kernel_numpy(w, cfg["ic_bn"].val, cfg["oc_bn"].val)
        W = te.placeholder(wk.shape, name="kernel")
        C = x86conv.conv2d_nchw_x86(A, W, st, p, 1, cfg=cfg)
        s = topi.x86.schedule_conv2d_nchw(C, cfg)
    f = codegen.build(s, [A, W, C], target=target, name="conv")
    out = aligned_zeros(tuple(int(d) for d in C.shape), np.float32)
    a, wk = aligned(a), aligned(wk)  # on 64-byte lines, as the graph executor's buffers
    return (lambda: f(a, wk, out)), out


def ort_fn(ic, oc, h, k, st, p, groups, a, w):
    """An ONNX Conv model in an onnxruntime session with 2 intra-op threads."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    oh = (h + 2 * p - k) // st + 1
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[k, k], strides=[st, st],
                            pads=[p] * 4, group=groups)
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, a.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, oc, oh, oh))],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = THREADS
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return lambda: sess.run(None, {"x": a})[0]


def torch_fn(ic, oc, h, k, st, p, groups, a, w):
    import torch

    torch.set_num_threads(THREADS)
    ta, tw = torch.from_numpy(a), torch.from_numpy(w)

    def run():
        with torch.no_grad():
            return torch.nn.functional.conv2d(ta, tw, stride=st, padding=p, groups=groups)

    return run


def interleaved(fns: dict, rounds: int | None = None, budget_s: float = 0.05) -> dict:
    """Median (``--best``: fastest) seconds per call of each function, timed in interleaved batches
    (``codegen.timing.interleaved``; no pauses under ``--cpu-time``, which counts this thread only)."""
    runs = timing.interleaved(fns, repeat=rounds or ROUNDS, budget=budget_s, clock=CLOCK,
                              settle=timing.SETTLE_S if CLOCK is time.perf_counter else 0.0)
    global SPREAD
    SPREAD = {name: _spread(r) for name, r in runs.items()}
    return {name: STAT(r) for name, r in runs.items()}


SPREAD: dict = {}  # name -> (fastest, slowest) batch of the last interleaved() call


def _spread(r: list) -> tuple:
    return min(r), max(r)


def _layer_args(layer) -> tuple:
    _, ic, oc, h, k, st, p, groups = layer
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, ic, h, h)).astype(np.float32)
    w = rng.standard_normal((oc, ic // groups, k, k)).astype(np.float32)
    oh = (h + 2 * p - k) // st + 1
    return (ic, oc, h, k, st, p, groups, a, w), 2.0 * oc * (ic // groups) * k * k * oh * oh


def _check(out, ref) -> None:
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))


def bench_layer(layer, target: str = "llvm") -> dict:
    args, flops = _layer_args(layer)
    tess, out = tessera_fn(*args, target=target)
    fns = {"tessera": tess, "onnxruntime": ort_fn(*args), "torch": torch_fn(*args)}
    tess()
    _check(out, fns["torch"]().numpy())
    return {"name": layer[0], "flops": flops, **interleaved(fns)}


AVX2 = "llvm -mcpu=x86-64-v3"


def compare_avx2_layer(layer) -> dict:
    """The layer built for the host and for AVX2, both checked against torch, timed interleaved."""
    args, flops = _layer_args(layer)
    host, out_host = tessera_fn(*args, target="llvm")
    avx2, out_avx2 = tessera_fn(*args, target=AVX2)
    host(), avx2()
    ref = torch_fn(*args)().numpy()
    _check(out_host, ref)
    _check(out_avx2, ref)
    times = interleaved({"host": host, "avx2": avx2})
    return {"name": layer[0], "flops": flops, "spread": dict(SPREAD), **times}


def report_avx2(rows: list) -> None:
    print(f"{'layer':24} {'host (' + Target('llvm').cpu + ')':>18} {'AVX2 x86-64-v3':>18} {'AVX2 speed':>10}")
    for r in rows:
        cells = [f"{r[k] * 1e3:7.3f}ms {r['flops'] / r[k] / 1e9:5.0f}GF" for k in ("host", "avx2")]
        lo, hi = (f"{r['spread'][k][0] * 1e3:.3f}-{r['spread'][k][1] * 1e3:.3f}" for k in ("host", "avx2"))
        print(f"{r['name']:24} {cells[0]:>18} {cells[1]:>18} {r['host'] / r['avx2']:9.2f}x"
              f"   (batches: host {lo} ms, avx2 {hi} ms)")
    g = math.exp(statistics.mean(math.log(r["host"] / r["avx2"]) for r in rows))
    print(f"geomean AVX2 speed / host speed: {g:.2f}x")


def report(rows: list) -> None:
    print(f"{'layer':24} {'tessera':>16} {'onnxruntime':>16} {'torch':>16} {'vs ort':>7} {'vs torch':>8}")
    for r in rows:
        cells = [f"{r[k] * 1e3:7.3f}ms {r['flops'] / r[k] / 1e9:5.0f}GF" for k in ("tessera", "onnxruntime", "torch")]
        print(f"{r['name']:24} {cells[0]:>16} {cells[1]:>16} {cells[2]:>16} "
              f"{r['onnxruntime'] / r['tessera']:6.2f}x {r['torch'] / r['tessera']:7.2f}x")
    for base in ("onnxruntime", "torch"):
        g = math.exp(statistics.mean(math.log(r[base] / r["tessera"]) for r in rows))
        print(f"geomean speed ratio vs {base}: {g:.2f}x")


def main(argv=None) -> list:
    """Benchmark every layer of :data:`LAYERS` (or those whose name contains an argument);
    ``--target SPEC`` builds for SPEC, ``--compare-avx2`` times host and AVX2 builds."""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", nargs="*", help="substrings of layer names (default: all)")
    ap.add_argument("--target", default="llvm", help='e.g. "llvm -mcpu=x86-64-v3" (default: the host)')
    ap.add_argument("--compare-avx2", action="store_true", help="host vs AVX2 builds, interleaved")
    ap.add_argument("--threads", type=int, default=THREADS, help=f"Tessera's threads (default {THREADS})")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (default 7)")
    ap.add_argument("--best", action="store_true",
                    help="report each system's fastest batch, not the median (a loaded machine)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time by the calling thread's CPU time (needs --threads 1 and --compare-avx2)")
    opts = ap.parse_args(sys.argv[1:] if argv is None else argv)
    if opts.cpu_time and (opts.threads != 1 or not opts.compare_avx2):
        ap.error("--cpu-time counts the calling thread only: use it with --threads 1 --compare-avx2")
    codegen.set_num_threads(opts.threads)
    global ROUNDS, STAT, CLOCK
    ROUNDS, STAT = opts.rounds, (min if opts.best else statistics.median)
    CLOCK = time.thread_time if opts.cpu_time else time.perf_counter
    layers = [layer for layer in LAYERS if not opts.layers or any(x in layer[0] for x in opts.layers)]
    if opts.compare_avx2:
        rows = [compare_avx2_layer(layer) for layer in layers]
        report_avx2(rows)
        return rows
    rows = [bench_layer(layer, opts.target) for layer in layers]
    report(rows)
    return rows


if __name__ == "__main__":
    main()
