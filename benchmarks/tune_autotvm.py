"""AutoTVM on this machine: search quality and cost per trial of the tuners.

Two te templates (no topi): the tutorial's GEMM with a blocked reduction and a
parallel knob, and a direct NCHW 3x3 convolution with a register tile
(output channels x output columns).  For each task and tuner it reports the
best GFLOP/s found within ``--trials`` (the default config is measured first,
so the best is never below it), the trial at which 95% of the reference was
reached, the median wall time per measured candidate and the share of the
wall time spent in search (features, model, annealing).  The reference is
the best of all runs, or of a ``--reference-trials`` random search.

    python benchmarks/tune_autotvm.py --trials 64 --seeds 0,1,2

``--conv-layers`` measures the cost per trial instead, on the distinct conv
workloads of ResNet-50 (the ``light_resnet50`` ONNX model's tasks, 23 layers;
``--layers 0,5,9`` picks some): XGBTuner, ``--trials`` per layer, and per
layer the wall seconds per measured candidate, the CPU seconds per candidate
(the tuner's process and its builder and runner workers together: the figure
that holds on a machine shared with other work) and the search share
(features, cost model, annealing) of the wall time; then the medians.

    python benchmarks/tune_autotvm.py --conv-layers --trials 32
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

import te
from tune.network import RUNNER_OPTIONS
from tune import autotvm


@autotvm.template("bench/gemm")
def gemm(N, L, M):
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((L, M), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2, max_factor=32)
    cfg.define_split("tile_x", x, num_outputs=2, filter=lambda e: e.size[-1] >= 8, max_factor=128)
    cfg.define_split("tile_k", k, num_outputs=2, max_factor=64)
    cfg.define_knob("parallel", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    ko, ki = cfg["tile_k"].apply(s, C, k)
    s[C].reorder(yo, xo, ko, ki, yi, xi)
    s[C].vectorize(xi)
    if cfg["parallel"].val:
        s[C].parallel(yo)
    return s, [A, B, C]


@autotvm.template("bench/conv3x3")
def conv3x3(C, H, W, F):
    data = te.placeholder((1, C, H, W), name="data")
    kernel = te.placeholder((F, C, 3, 3), name="kernel")
    pad = te.compute(
        (1, C, H + 2, W + 2),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= 1, y <= H, x >= 1, x <= W), data[n, c, y - 1, x - 1], te.const(0.0, "float32")
        ),
        name="pad",
    )
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, 3), name="ry")
    rx = te.reduce_axis((0, 3), name="rx")
    out = te.compute(
        (1, F, H, W),
        lambda n, f, y, x: te.sum(pad[n, rc, y + ry, x + rx] * kernel[f, rc, ry, rx], axis=[rc, ry, rx]),
        name="conv",
    )
    s = te.create_schedule(out.op)
    n, f, y, x = s[out].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_f", f, num_outputs=2, max_factor=16)
    cfg.define_split("tile_x", x, num_outputs=2, max_factor=56)
    cfg.define_knob("unroll_rx", [0, 1])
    cfg.define_knob("pad_inline", [0, 1])
    fo, fi = cfg["tile_f"].apply(s, out, f)
    xo, xi = cfg["tile_x"].apply(s, out, x)
    s[out].reorder(n, fo, y, xo, rc, ry, rx, fi, xi)
    s[out].vectorize(xi)
    if cfg["unroll_rx"].val:
        s[out].unroll(rx)
    s[out].parallel(s[out].fuse(fo, y))
    if cfg["pad_inline"].val:
        s[pad].compute_inline()
    return s, [data, kernel, out]


TASKS = {
    "gemm": ("bench/gemm", (512, 512, 512)),
    "gemm-wide": ("bench/gemm", (256, 512, 1024)),
    "conv": ("bench/conv3x3", (64, 56, 56, 64)),
}
RESNET = {  # topi's blocked conv template on ResNet-50's 3x3 layers: (C, H) -> C->C 3x3 pad 1 at HxH
    "r64": (64, 56),
    "r128": (128, 28),
    "r256": (256, 14),
    "r512": (512, 7),
}


def task_args(name: str) -> tuple:
    if name in TASKS:
        return TASKS[name]
    import topi.x86.templates  # noqa: F401  (registers conv2d_NCHWc.x86)
    from topi.x86.conv2d_rule import conv2d_workload

    c, h = RESNET[name]
    wl = conv2d_workload((1, c, h, h), (c, c, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    return wl[0], wl[1:]


TUNERS = {
    "xgb": lambda t, seed: autotvm.tuner.XGBTuner(t, plan_size=16, seed=seed),
    "xgb-reg": lambda t, seed: autotvm.tuner.XGBTuner(t, plan_size=16, loss_type="reg", seed=seed),
    "ga": lambda t, seed: autotvm.tuner.GATuner(t, pop_size=16, seed=seed),
    "random": lambda t, seed: autotvm.tuner.RandomTuner(t, seed=seed),
}


def resnet50_conv_tasks() -> list:
    """The distinct direct-conv tasks (``conv2d_NCHWc.x86``) of ResNet-50 (onnx's light model), in the
    model's order: 23 layers (the Winograd tasks of its 3x3 layers are left out)."""
    import graph
    from graph.onnx.zoo import light_model_path

    g, params = graph.from_onnx(light_model_path("resnet50"))
    return [t for t in autotvm.task.extract_from_program(g, params, "llvm") if t.name == "conv2d_NCHWc.x86"]


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a live process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(measure: dict) -> float:
    """CPU seconds so far of this process and its worker processes: the live ones read from /proc,
    the ones that ended (killed after a timeout) from the children's resource usage."""
    import resource

    procs = [w.proc for w in getattr(measure["builder"], "_workers", [])]
    procs.append(getattr(getattr(measure["runner"], "worker", None), "proc", None))
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    live = sum(_proc_cpu(p.pid) for p in procs if p is not None and p.poll() is None)
    return time.process_time() + ended.ru_utime + ended.ru_stime + live


def run_one(task, tuner_name: str, seed: int, trials: int, measure, history=None) -> dict:
    mon = autotvm.callback.Monitor()
    tuner = TUNERS[tuner_name](task, seed)
    if history:
        tuner.load_history(history)
    c0 = cpu_seconds(measure)
    t0 = time.perf_counter()
    tuner.tune(trials, measure, callbacks=[mon])
    wall = time.perf_counter() - t0
    cpu = cpu_seconds(measure) - c0
    curve = np.maximum.accumulate(np.array(mon.trial_scores())) / 1e9
    return {
        "tuner": tuner_name,
        "seed": seed,
        "curve": curve,
        "default": curve[0],
        "per_trial": wall / max(len(curve), 1),
        "cpu_per_trial": cpu / max(len(curve), 1),
        "search_share": tuner.stats["search_s"] / max(wall, 1e-9),
        "errors": sorted(autotvm.MeasureErrorNo(r.error_no).name for _, r in mon.records if r.error_no),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="gemm,conv", help=f"of {sorted(TASKS) + sorted(RESNET)}")
    ap.add_argument("--tuners", default="xgb,random")
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--reference-trials", type=int, default=0, help="a long random search as the reference")
    ap.add_argument(
        "--transfer-from", default="", help="also run xgb warmed by --trials random records of this task"
    )
    ap.add_argument("--conv-layers", action="store_true", help="cost per trial on ResNet-50's conv layers")
    ap.add_argument("--layers", default="", help="with --conv-layers: indices of the layers to run")
    args = ap.parse_args(argv)
    measure = autotvm.measure_option(
        builder=autotvm.LocalBuilder(n_parallel=2),
        runner=autotvm.LocalRunner(**RUNNER_OPTIONS),
    )
    if args.conv_layers:
        return conv_layers(args, measure)
    for name in args.tasks.split(","):
        tname, targs = task_args(name)
        task = autotvm.task.create(tname, targs, target="llvm")
        print(f"== {name}: {len(task.config_space)} configs, {task.flop / 1e9:.2f} GFLOP", flush=True)
        runs = []
        for tuner_name in args.tuners.split(","):
            for seed in map(int, args.seeds.split(",")):
                r = run_one(task, tuner_name, seed, args.trials, measure)
                runs.append(r)
                print(
                    f"  {tuner_name:8s} seed {seed}: best {r['curve'][-1]:7.1f} GFLOP/s (default "
                    f"{r['default']:.1f}) | {r['per_trial']:.2f} s/trial | search {100 * r['search_share']:.0f}% "
                    f"| errors {r['errors']}",
                    flush=True,
                )
        if args.transfer_from:
            src_name, src_args = task_args(args.transfer_from)
            src = autotvm.task.create(src_name, src_args, target="llvm")
            for seed in map(int, args.seeds.split(",")):
                mon = autotvm.callback.Monitor()
                autotvm.tuner.RandomTuner(src, seed=100 + seed).tune(args.trials, measure, callbacks=[mon])
                r = run_one(task, "xgb", seed, args.trials, measure, history=mon.records)
                r["tuner"] = "xgb+transfer"
                runs.append(r)
                print(
                    f"  xgb+transfer seed {seed}: best {r['curve'][-1]:7.1f} GFLOP/s "
                    f"(history: {len(mon.records)} records of {args.transfer_from})",
                    flush=True,
                )
        ref = max(r["curve"][-1] for r in runs)
        if args.reference_trials:
            rr = run_one(task, "random", 1000, args.reference_trials, measure)
            ref = max(ref, rr["curve"][-1])
            print(f"  reference: random {args.reference_trials} trials -> {rr['curve'][-1]:.1f} GFLOP/s")
        for tuner_name in args.tuners.split(",") + (["xgb+transfer"] if args.transfer_from else []):
            mine = [r for r in runs if r["tuner"] == tuner_name]
            hits = [
                int(np.argmax(r["curve"] >= 0.95 * ref)) + 1 if r["curve"][-1] >= 0.95 * ref else None
                for r in mine
            ]
            best = statistics.median(r["curve"][-1] for r in mine)
            print(
                f"  {tuner_name:8s} median best {best:.1f} GFLOP/s = {100 * best / ref:.0f}% of reference "
                f"{ref:.1f}; trials to 95%: {hits}; median s/trial "
                f"{statistics.median(r['per_trial'] for r in mine):.2f}"
            )
    return 0


def conv_layers(args, measure) -> int:
    """Cost per trial of XGBTuner on each distinct ResNet-50 conv workload, then the medians."""
    tasks = resnet50_conv_tasks()
    picked = [int(k) for k in args.layers.split(",")] if args.layers else range(len(tasks))
    rows = []
    for k in picked:
        task = tasks[k]
        dshape, kshape, strides = task.args[0], task.args[1], task.args[2]
        label = f"{dshape[1]}->{kshape[0]} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]}"
        for seed in map(int, args.seeds.split(",")):
            r = run_one(task, "xgb", seed, args.trials, measure)
            rows.append(r)
            print(
                f"  layer {k:2d} {label:22s} seed {seed}: {r['per_trial']:.2f} s/trial wall, "
                f"{r['cpu_per_trial']:.2f} s/trial CPU, search {100 * r['search_share']:.0f}%, "
                f"best {r['curve'][-1]:.1f} GFLOP/s (default {r['default']:.1f}), errors {r['errors']}",
                flush=True,
            )
    med = statistics.median
    print(
        f"median over {len(rows)} runs of {args.trials} trials: {med(r['per_trial'] for r in rows):.2f} s/trial "
        f"wall, {med(r['cpu_per_trial'] for r in rows):.2f} s/trial CPU, search share "
        f"{100 * med(r['search_share'] for r in rows):.0f}% (max {100 * max(r['search_share'] for r in rows):.0f}%)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
