"""ResNet 3x3 stride-1 layers: Winograd (``conv2d_winograd.x86``) vs the direct blocked template.

Run ``python3 benchmarks/topi_winograd.py [--set knob=value ...] [--records log.jsonl]``.

Each layer is built twice with default configs (``conv2d_NCHWc.x86`` with its
kernel pre-packed, ``conv2d_winograd.x86`` with its kernel pre-transformed:
both as a graph compiler folds a constant weight), both outputs are checked
against numpy's direct convolution (rtol 1e-3), then the two are timed in
interleaved batches (each after a 0.25 s pause) for ``--rounds`` rounds.
Printed per layer: the median batch ms of each, the spread (min-max over
rounds, in % of the median), their ratio, the fastest batch of each
(ms, direct/winograd) and that ratio; last the geometric means of both
ratios.  On a shared, loaded machine the fastest batches are the
steadier figure (the batch medians swing with other processes' load).  ``--set tile=2`` (repeatable) overrides winograd knobs;
``--records`` applies AutoTVM records to both templates (the tuned direct);
``--tune-direct N`` compares with the fastest of the direct rule default and N
random direct configs (a small random search).
"""

from __future__ import annotations

import argparse
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
from tune.autotvm.config import make_config
from topi.nn.winograd import winograd_kernel_transform_numpy
from topi.testing import conv2d_nchw_python
from topi.x86 import conv2d as x86conv
from topi.x86 import conv2d_rule as x86conv_rule
from topi.x86 import conv2d_schedule as x86conv_schedule
from topi.x86 import conv2d_winograd as wino

LAYERS = [("3x3 64->64 @56", 64, 56), ("3x3 128->128 @28", 128, 28), ("3x3 256->256 @14", 256, 14),
          ("3x3 512->512 @7", 512, 7)]


def direct_fn(a, w, cfg=None):
    c, h = a.shape[1], a.shape[2]
    key = x86conv_rule.conv2d_workload(a.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1))
    cfg = cfg or x86conv_rule.default_conv2d_config(key)
    wk = x86conv.pack_kernel_numpy(w, cfg["ic_bn"].val, cfg["oc_bn"].val)
    A = te.placeholder((1, c, h, h), name="data")
    W = te.placeholder(wk.shape, name="kernel")
    C = x86conv.conv2d_nchw_x86(A, W, 1, 1, 1, cfg=cfg)
    f = codegen.build(x86conv_schedule.schedule_conv2d_nchw(C, cfg), [A, W, C], target="llvm", name="direct")
    out = aligned_zeros(tuple(int(d) for d in C.shape), np.float32)
    a, wk = aligned(a), aligned(wk)  # on 64-byte lines, as the graph executor's buffers
    return (lambda: f(a, wk, out)), out, cfg


def tuned_direct_fn(a, w, trials: int, ref):
    """The fastest (by its fastest of 20 calls) of the rule default and ``trials`` random
    configs of the direct template's space: a small random search standing in for tuning."""
    from tune.autotvm.config import sample_config

    key = x86conv_rule.conv2d_workload(a.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1))
    rng = np.random.default_rng(0)
    best = None
    for cfg in [x86conv_rule.default_conv2d_config(key)] + [sample_config(key, rng) for _ in range(trials)]:
        fn, out, cfg = direct_fn(a, w, cfg)
        fn()
        np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))
        t = min(_timed(fn) for _ in range(20))
        if best is None or t < best[0]:
            best = (t, fn, out, cfg)
    return best[1:]


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def winograd_fn(a, w, overrides: dict):
    c, h = a.shape[1], a.shape[2]
    key = wino.winograd_workload(a.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1))
    cfg = wino.default_winograd_config(key)
    if overrides:
        cfg = make_config(key, {**cfg.values, **overrides})
    cp = -(-c // cfg["cb"].val) * cfg["cb"].val
    u = winograd_kernel_transform_numpy(w, cfg["tile"].val, cfg["bn"].val, cp)
    A = te.placeholder((1, c, h, h), name="data")
    U = te.placeholder(u.shape, name="kernel_winograd")
    C = wino.conv2d_winograd_x86(A, U, 1, cfg=cfg, kshape=w.shape)
    f = codegen.build(wino.schedule_conv2d_winograd(C, cfg), [A, U, C], target="llvm", name="winograd")
    out = aligned_zeros(tuple(int(d) for d in C.shape), np.float32)
    a, u = aligned(a), aligned(u)
    return (lambda: f(a, u, out)), out, cfg


def interleaved(fns: dict, rounds: int, budget_s: float = 0.05) -> tuple:
    """Seconds per call of each function per round (batch means), timed in interleaved batches
    (``codegen.timing.interleaved``), and the fastest batch of each (the least disturbed)."""
    runs = timing.interleaved(fns, repeat=rounds, budget=budget_s)
    return runs, {name: min(r) for name, r in runs.items()}


def _spread(r: list) -> str:
    med = statistics.median(r)
    return f"{100 * (min(r) - med) / med:+.0f}/{100 * (max(r) - med) / med:+.0f}%"


def _geomean(xs: list) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], help="winograd knob=value override")
    ap.add_argument("--records", help="AutoTVM records applied to both templates")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--tune-direct", type=int, default=0, metavar="N",
                    help="compare with the fastest of the direct rule default and N random direct configs")
    ap.add_argument("--layers", default="", help="comma-separated layer indices (default: all)")
    args = ap.parse_args(argv)
    overrides = {k: int(v) for k, v in (s.split("=") for s in args.set)}
    chosen = [LAYERS[int(i)] for i in args.layers.split(",")] if args.layers else LAYERS
    ctx = None
    if args.records:
        from tune import autotvm

        ctx = autotvm.apply_history_best(args.records)
        ctx.__enter__()
    ratios, best_ratios = [], []
    print(f"{'layer':20s} {'direct ms':>10s} {'spread':>10s} {'winograd ms':>12s} {'spread':>10s} {'ratio':>6s} "
          f"{'fastest':>8s} {'ratio':>6s}  config")
    for name, c, h in chosen:
        rng = np.random.default_rng(0)
        a = rng.standard_normal((1, c, h, h)).astype(np.float32)
        w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
        ref = conv2d_nchw_python(a, w, 1, 1)
        fd, od, dcfg = tuned_direct_fn(a, w, args.tune_direct, ref) if args.tune_direct else direct_fn(a, w)
        fw, ow, cfg = winograd_fn(a, w, overrides)
        for fn, out in ((fd, od), (fw, ow)):
            fn()
            np.testing.assert_allclose(out, ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()))
        runs, fastest = interleaved({"direct": fd, "winograd": fw}, args.rounds)
        d, wg = statistics.median(runs["direct"]), statistics.median(runs["winograd"])
        best = fastest["direct"] / fastest["winograd"]
        ratios.append(d / wg)
        best_ratios.append(best)
        vals = " ".join(f"{k}={v}" for k, v in cfg.values.items())
        if args.tune_direct:
            vals += " | direct " + " ".join(f"{k}={v}" for k, v in dcfg.values.items())
        print(f"{name:20s} {1e3 * d:10.3f} {_spread(runs['direct']):>10s} {1e3 * wg:12.3f} "
              f"{_spread(runs['winograd']):>10s} {d / wg:5.2f}x {1e3 * fastest['direct']:6.3f}/{1e3 * fastest['winograd']:.3f} "
              f"{best:5.2f}x  {vals}", flush=True)
    print(f"geomean speedup of winograd over direct: {_geomean(ratios):.2f}x (medians), "
          f"{_geomean(best_ratios):.2f}x (fastest batches)")
    if ctx is not None:
        ctx.__exit__(None, None, None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
