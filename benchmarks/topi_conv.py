"""ResNet-style conv layers: Tessera's x86 default schedules vs onnxruntime and torch.

Run ``python3 benchmarks/topi_conv.py``.  Each layer is built once with the
default config (no tuning), checked against torch, then the three systems
are timed in interleaved batches (each after a 0.25 s sleep, since BLAS and
onnxruntime threads spin after a call and steal cores); the median batch
counts.  Every system uses 2 threads.  Weights are constants to all three:
onnxruntime and torch pack them at session/first-call time, Tessera gets
them pre-packed (``pack_kernel_numpy``), as a graph compiler folds them.
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
import te
import topi
from topi.x86 import conv2d as x86conv

LAYERS = [  # name, IC, OC, H, K, stride, pad, groups
    ("stem 7x7/2 3->64 @224", 3, 64, 224, 7, 2, 3, 1),
    ("3x3 64->64 @56", 64, 64, 56, 3, 1, 1, 1),
    ("3x3 128->128 @28", 128, 128, 28, 3, 1, 1, 1),
    ("3x3 256->256 @14", 256, 256, 14, 3, 1, 1, 1),
    ("3x3 512->512 @7", 512, 512, 7, 3, 1, 1, 1),
    ("1x1 64->256 @56", 64, 256, 56, 1, 1, 0, 1),
    ("dw 3x3 32 @112", 32, 32, 112, 3, 1, 1, 32),
]
SETTLE_S = 0.25
THREADS = 2


def tessera_fn(ic, oc, h, k, st, p, groups, a, w):
    """Build the default x86 schedule; return a no-argument callable and its output."""
    A = te.placeholder((1, ic, h, h), name="data")
    if groups > 1:
        W = te.placeholder(w.shape, name="kernel")
        C = topi.nn.depthwise_conv2d_nchw(A, W, st, p, 1)
        s, wk = topi.x86.schedule_depthwise_conv2d_nchw(C), w
    else:
        wl = topi.nn.conv2d_nchw(A, te.placeholder(w.shape), st, p, 1).op.attrs["workload"]
        cfg = x86conv.default_conv2d_config(wl)
        wk = x86conv.pack_kernel_numpy(w, cfg["ic_bn"], cfg["oc_bn"])
        W = te.placeholder(wk.shape, name="kernel")
        C = x86conv.conv2d_nchw_x86(A, W, st, p, 1, cfg=cfg)
        s = topi.x86.schedule_conv2d_nchw(C, cfg)
    f = codegen.build(s, [A, W, C], name="conv")
    out = np.zeros(tuple(int(d) for d in C.shape), np.float32)
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


def interleaved(fns: dict, rounds: int = 7, budget_s: float = 0.05) -> dict:
    """Median seconds per call of each function, timed in interleaved batches."""
    number = {}
    for name, fn in fns.items():
        fn()
        t0 = time.perf_counter()
        fn()
        number[name] = max(1, int(budget_s / max(time.perf_counter() - t0, 1e-6)))
    runs = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            time.sleep(SETTLE_S)
            t0 = time.perf_counter()
            for _ in range(number[name]):
                fn()
            runs[name].append((time.perf_counter() - t0) / number[name])
    return {name: statistics.median(r) for name, r in runs.items()}


def bench_layer(layer) -> dict:
    name, ic, oc, h, k, st, p, groups = layer
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1, ic, h, h)).astype(np.float32)
    w = rng.standard_normal((oc, ic // groups, k, k)).astype(np.float32)
    args = (ic, oc, h, k, st, p, groups, a, w)
    tess, out = tessera_fn(*args)
    fns = {"tessera": tess, "onnxruntime": ort_fn(*args), "torch": torch_fn(*args)}
    tess()
    ref = fns["torch"]().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))
    oh = (h + 2 * p - k) // st + 1
    flops = 2.0 * oc * (ic // groups) * k * k * oh * oh
    return {"name": name, "flops": flops, **interleaved(fns)}


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
    """Benchmark every layer of :data:`LAYERS` (or those whose name contains an argument)."""
    argv = sys.argv[1:] if argv is None else argv
    codegen.set_num_threads(THREADS)
    rows = [bench_layer(layer) for layer in LAYERS if not argv or any(x in layer[0] for x in argv)]
    report(rows)
    return rows


if __name__ == "__main__":
    main()
