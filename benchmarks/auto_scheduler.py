"""auto_scheduler quality and cost: tuned from the bare compute, against numpy, the AutoTVM template
and the default schedule, with the tuning's wall time per trial split into search and measurement.

    python benchmarks/auto_scheduler.py matmul --trials 1000        # 1024^3 against numpy
    python benchmarks/auto_scheduler.py conv --trials 1000           # ResNet-50 layers vs AutoTVM's best
    python benchmarks/auto_scheduler.py ops --trials 200             # operators without a template vs default
    python benchmarks/auto_scheduler.py model --model M.onnx --minutes 30   # vs default and AutoTVM builds
    python benchmarks/auto_scheduler.py rank --log as_matmul1024.json # the cost model on held-out programs
                                                                      # (of a matmul or a conv log)

``conv`` times the tuned kernel with its weights packed once, as a build folds
constant weights (the template's kernel takes them pre-packed too), checks the
kernel that packs them itself against numpy and prints its time beside.

Each prints ratios from one run (interleaved medians, ``codegen.timing``) and
the tune's cost: wall seconds per trial (the run's mean and the median over rounds), the
search's share, and the CPU seconds per trial of all its processes (which the load of a shared
machine stretches less than the wall time).  On a
machine others load, ``--threads 1`` tunes and compares everything on one thread by
its CPU time (a parallel kernel's wall time there measures the load): the runners
of the auto_scheduler and of AutoTVM measure with ``clock="thread_cpu"``, the
final timings read ``time.thread_time`` with the thread pool (and numpy's BLAS)
at one thread.
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

import codegen  # noqa: E402
import te  # noqa: E402
import topi  # noqa: E402
from codegen import timing  # noqa: E402
from topi.testing import conv2d_nchw_python  # noqa: E402
from tune import layout  # noqa: E402
from tune import auto_scheduler  # noqa: E402
from tune.auto_scheduler.tuning import tune_tasks  # noqa: E402


# --threads 1: what the runners measure by and the final timings' clock (one thread's CPU time)
CLOCK = {"runner": "wall", "clock": time.perf_counter}


def tune_dag(tensors, name, trials, log, per_round=32, seed=0):
    """Tune a compute from scratch (or resume ``log``); returns (task, stats, best State)."""
    task = auto_scheduler.SearchTask(compute_dag=auto_scheduler.ComputeDAG(tensors), workload_key=name)
    preload = [auto_scheduler.PreloadMeasuredStates(log)] if os.path.exists(log) else []
    model = auto_scheduler.XGBModel(seed=seed)
    if preload:
        model.update_from_file(log)
    policy = auto_scheduler.SketchPolicy(task, model, seed=seed, init_search_callbacks=preload)
    done = len(policy.measured)
    opts = auto_scheduler.TuningOptions(num_measure_trials=max(0, trials - done), num_measures_per_round=per_round,
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)], verbose=1,
                                        runner=auto_scheduler.LocalRunner(clock=CLOCK["runner"],
                                                                         enable_cpu_cache_flush=True))
    cpu = time.process_time()
    stats = tune_tasks([policy], opts)
    stats.cpu = time.process_time() - cpu + workers_cpu([*opts.builder._workers, opts.runner.worker])
    return task, stats, policy.best()[0]


def workers_cpu(workers: list) -> float:
    """CPU seconds the worker processes used so far (Linux's /proc; 0 elsewhere): with this process's,
    what a tune costs whatever else loads the machine (its wall time stretches with the load)."""
    total = 0.0
    for w in workers:
        try:
            with open(f"/proc/{w.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (AttributeError, OSError, ValueError, IndexError):
            pass
    return total


def cost_line(stats) -> str:
    if not stats.trials:
        return "no trials this run"
    per = stats.wall / stats.trials
    rounds = [(sec / n, search / sec) for n, sec, search in stats.rounds if n and sec > 0]
    median = (f"; per round (median, quartiles): {statistics.median(r[0] for r in rounds):.2f} s per trial "
              f"({_quartiles([r[0] for r in rounds])}), search {statistics.median(r[1] for r in rounds):.0%}"
              if rounds else "")
    cpu = (f"; CPU time of all its processes {stats.cpu / stats.trials:.2f} s per trial"
           if stats.cpu else "")
    return (f"{stats.trials} trials in {stats.wall:.0f} s: {per:.2f} s per trial, search {stats.search / stats.wall:.0%} "
            f"({stats.search / stats.trials:.3f} s/trial), measurement {stats.measure / stats.wall:.0%}" + median + cpu)


def _quartiles(xs: list) -> str:
    if len(xs) < 2:
        return f"{xs[0]:.2f}-{xs[0]:.2f}"
    q = statistics.quantiles(xs, n=4)
    return f"{q[0]:.2f}-{q[2]:.2f}"


def random_inputs(tensors, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for t in tensors:
        shape = tuple(int(d) for d in t.shape)
        out.append(rng.uniform(-1, 1, shape).astype(t.dtype) if isinstance(t.op, te.tensor.PlaceholderOp)
                   else np.zeros(shape, t.dtype))
    return out


def time_pair(fns: dict, repeat=9, ratio: tuple | None = None) -> dict:
    """name -> (median seconds, spread) of interleaved batches; with ``ratio=(a, b)`` also
    ``"ratio"``: a's time over b's per round (``timing.paired_ratio``: median and quartiles)."""
    samples = timing.interleaved(fns, repeat=repeat, clock=CLOCK["clock"])
    out = {k: (statistics.median(v), timing.spread(v)) for k, v in samples.items()}
    if ratio is not None:
        out["ratio"] = timing.paired_ratio(samples, *ratio)
    return out


def matmul_tensors(n: int) -> list:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C",
                   attrs={"layout_free_placeholders": [B]})  # as the tutorial's: B may be packed
    return [A, B, C]


def matmul(args):
    n = args.size
    task, stats, best = tune_dag(matmul_tensors(n), f"bench_matmul_{n}", args.trials, args.log or f"as_matmul{n}.json",
                                 seed=args.seed)
    print(cost_line(stats))
    sch, tensors = task.instantiate(best)
    f = codegen.build(sch, tensors)
    a, b, c = random_inputs(tensors)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
    r = time_pair({"tessera": lambda: f(a, b, c), "numpy": lambda: a @ b})
    print(f"matmul {n}^3: tessera {r['tessera'][0] * 1e3:.2f} ms (spread {r['tessera'][1]:.0%}), numpy "
          f"{r['numpy'][0] * 1e3:.2f} ms (spread {r['numpy'][1]:.0%}): {r['numpy'][0] / r['tessera'][0]:.2f}x numpy")


RESNET_CONVS = [  # (C, H, F, kernel): ResNet-50's four 3x3 and four 1x1 layer shapes, batch 1
    (64, 56, 64, 3), (128, 28, 128, 3), (256, 14, 256, 3), (512, 7, 512, 3),
    (256, 56, 64, 1), (512, 28, 128, 1), (1024, 14, 256, 1), (2048, 7, 512, 1),
]


def conv_nchw(c, h, f, k):
    """A bare NCHW convolution (stride 1, same padding) in te, its weights marked layout-free."""
    data = te.placeholder((1, c, h, h), name="data")
    kernel = te.placeholder((f, c, k, k), name="kernel")
    p = k // 2
    pad = te.compute((1, c, h + 2 * p, h + 2 * p), lambda n, ci, y, x: te.if_then_else(
        te.all(y >= p, y < h + p, x >= p, x < h + p), data[n, ci, y - p, x - p], 0.0), name="pad")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    out = te.compute((1, f, h, h), lambda n, ff, y, x: te.sum(pad[n, rc, y + ry, x + rx] * kernel[ff, rc, ry, rx],
                                                                axis=[rc, ry, rx]),
                     name="conv", attrs={"layout_free_placeholders": [kernel]})
    return [data, kernel, out]


def autotvm_option() -> dict:
    """AutoTVM's measure option of a whole-model tune (``tessera tune``'s), on this run's clock."""
    from tune import autotvm
    from tune.network import RUNNER_OPTIONS

    return autotvm.measure_option(builder=autotvm.LocalBuilder(),
                                  runner=autotvm.LocalRunner(**RUNNER_OPTIONS, clock=CLOCK["runner"]))


def autotvm_best(c, h, f, k, trials, log):
    """The AutoTVM direct template (conv2d_NCHWc.x86) tuned ``trials`` (resuming ``log``): its best
    build and its arguments."""
    import topi.x86.templates  # noqa: F401
    from topi.x86.conv2d_rule import conv2d_workload
    from tune import autotvm

    wl = conv2d_workload((1, c, h, h), (f, c, k, k), (1, 1), (k // 2,) * 4, (1, 1))
    task = autotvm.task.create(wl[0], wl[1:], target="llvm")
    done = len(autotvm.record.load_records(log)) if os.path.exists(log) else 0
    if trials > done:
        tuner = autotvm.tuner.XGBTuner(task)
        if done:
            tuner.load_history(autotvm.record.load_records(log))
        tuner.tune(trials - done, autotvm_option(), callbacks=[autotvm.callback.log_to_file(log)])
    with autotvm.apply_history_best(log), task.target:
        sch, tensors = task.func()(*task.args)
    return codegen.build(sch, tensors), tensors


def conv(args):
    ratios = []
    for c, h, f, k in RESNET_CONVS[args.first:args.first + args.layers]:
        name = f"bench_conv_{c}_{h}_{f}_{k}"
        tensors = conv_nchw(c, h, f, k)
        task, stats, best = tune_dag(tensors, name, args.trials, f"{args.log or 'as'}_{name}.json", seed=args.seed)
        print(cost_line(stats))
        a = random_inputs(tensors)
        whole = codegen.build(task.instantiate(best)[0], tensors)  # takes the weights as they are
        whole(*a)
        np.testing.assert_allclose(a[-1], conv2d_nchw_python(a[0], a[1], 1, k // 2), rtol=1e-3, atol=1e-3)
        # timed as a build runs it: weights packed once (folded), like the template's pre-packed kernel
        sch, m_tensors, layouts = task.instantiate_with_layouts(best, auto_scheduler.LayoutRewriteOption
                                                                .REWRITE_FOR_PRE_TRANSFORMED)
        mine = codegen.build(sch, m_tensors)
        m = [x if lay is None else layout.to_blocked(x, lay[0]) for x, lay in zip(a, layouts or [None] * len(a))]
        theirs, t_tensors = autotvm_best(c, h, f, k, args.trials, f"{args.log or 'as'}_{name}.autotvm.jsonl")
        b = random_inputs(t_tensors)
        fns = {"auto_scheduler": lambda: mine(*m), "autotvm": lambda: theirs(*b)}
        if layouts:
            fns["unfolded"] = lambda: whole(*a)
        r = time_pair(fns, repeat=15, ratio=("autotvm", "auto_scheduler"))
        ratio = r["ratio"].median
        ratios.append(ratio)
        print(f"conv {c}x{h}x{h} -> {f} {k}x{k}: auto_scheduler {r['auto_scheduler'][0] * 1e3:.3f} ms "
              f"(spread {r['auto_scheduler'][1]:.0%}), AutoTVM direct template {r['autotvm'][0] * 1e3:.3f} ms "
              f"(spread {r['autotvm'][1]:.0%}): {ratio:.2f}x the template's speed (per round, quartiles "
              f"{r['ratio'].p25:.2f}-{r['ratio'].p75:.2f})"
              + (f"; weights packed in each call {r['unfolded'][0] * 1e3:.3f} ms" if layouts else ""), flush=True)
    print(f"geometric mean: {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x the AutoTVM template's speed")


def op_computes() -> dict:
    """Operators without a hand template: name -> tensors (placeholders first, outputs last)."""
    out = {}
    x = te.placeholder((1, 128, 56, 56), name="x")
    w = te.placeholder((128, 1, 3, 3), name="w")
    out["depthwise_conv"] = [x, w, topi.nn.depthwise_conv2d_nchw(x, w, 1, 1, 1)]
    x = te.placeholder((1, 64, 28, 28), name="x")
    w = te.placeholder((64, 32, 4, 4), name="w")
    out["conv2d_transpose"] = [x, w, topi.nn.conv2d_transpose_nchw(x, w, (2, 2), (1, 1))]
    a = te.placeholder((12, 128, 64), name="a")
    b = te.placeholder((12, 128, 64), name="b")
    out["batch_matmul_softmax"] = [a, b, topi.nn.softmax(topi.nn.batch_matmul(a, b), axis=-1)]
    x = te.placeholder((512, 768), name="x")
    g = te.placeholder((768,), name="g")
    bb = te.placeholder((768,), name="bb")
    from topi.nn.layer_norm import layer_norm

    out["layer_norm"] = [x, g, bb, layer_norm(x, g, bb)]
    x = te.placeholder((64, 4096), name="x")
    r = te.reduce_axis((0, 4096), "r")
    out["row_sum"] = [x, te.compute((64,), lambda i: te.sum(x[i, r], axis=r), name="row_sum")]
    x = te.placeholder((1 << 20,), name="x")
    n = 1 << 20
    p = te.compute((n + 2,), lambda i: te.if_then_else(te.all(i >= 1, i <= n), x[i - 1], 0.0), name="p")
    out["stencil3"] = [x, te.compute((n,), lambda i: (p[i] + p[i + 1] + p[i + 2]) / 3.0, name="stencil")]
    x = te.placeholder((1024, 1024), name="x")
    e1 = te.compute(x.shape, lambda i, j: te.exp(x[i, j]) * 0.5, name="e1")
    e2 = te.compute(x.shape, lambda i, j: te.max(e1[i, j] + 1.0, 0.0), name="e2")
    out["elementwise_chain"] = [x, te.compute(x.shape, lambda i, j: te.sqrt(e2[i, j]) * e1[i, j], name="e3")]
    return out


def topi_schedules() -> dict:
    """The schedule a graph build gives each operator (topi's x86 rule), where one applies as a whole."""
    from topi import x86

    return {"depthwise_conv": x86.depthwise_conv2d.schedule_depthwise_conv2d_nchw,
            "conv2d_transpose": x86.conv2d_transpose.schedule_conv2d_transpose_nchw,
            "layer_norm": x86.layer_norm.schedule_layer_norm, "row_sum": x86.reduction.schedule_reduce,
            "stencil3": x86.injective.schedule_injective, "elementwise_chain": x86.injective.schedule_injective}


def ops(args):
    from codegen.target import Target

    ratios, vs_topi = [], []
    rules = topi_schedules()
    for name, tensors in op_computes().items():
        task, stats, best = tune_dag(tensors, f"bench_op_{name}", args.trials, f"{args.log or 'as'}_op_{name}.json",
                                     per_round=16, seed=args.seed)
        print(cost_line(stats))
        mine = codegen.build(task.instantiate(best)[0], tensors)
        default = codegen.build(task.compute_dag.schedule(), tensors)
        a = random_inputs(tensors)
        fns = {"auto_scheduler": lambda: mine(*a), "default": lambda: default(*a)}
        if name in rules:
            with Target("llvm"):
                rule = codegen.build(rules[name]([tensors[-1]]), tensors)
            fns["topi"] = lambda: rule(*a)
        r = time_pair(fns, repeat=7)
        ratios.append(r["default"][0] / r["auto_scheduler"][0])
        line = (f"{name}: auto_scheduler {r['auto_scheduler'][0] * 1e3:.3f} ms (spread {r['auto_scheduler'][1]:.0%}), "
                f"te default schedule {r['default'][0] * 1e3:.3f} ms (spread {r['default'][1]:.0%}): {ratios[-1]:.2f}x")
        if "topi" in r:
            vs_topi.append(r["topi"][0] / r["auto_scheduler"][0])
            line += f"; topi x86 schedule {r['topi'][0] * 1e3:.3f} ms (spread {r['topi'][1]:.0%}): {vs_topi[-1]:.2f}x"
        print(line, flush=True)
    geo = lambda v: math.exp(sum(map(math.log, v)) / len(v))
    print(f"geometric mean: {geo(ratios):.2f}x the te default schedule's speed; {geo(vs_topi):.2f}x topi's x86 "
          f"schedules' ({len(vs_topi)} operators that have one)")


def bench_tensors(name: str) -> list:
    """The tensors of a task this benchmark names: ``bench_matmul_N`` or ``bench_conv_C_H_F_K``."""
    kind, *dims = name.split("_")[1:]
    return matmul_tensors(*map(int, dims)) if kind == "matmul" else conv_nchw(*map(int, dims))


def rank(args):
    """The cost model trained on two thirds of a log of ``matmul`` or ``conv`` (``--log``; default the matmul
    log), ranking the rest: Spearman rank correlation of its scores with the measured speeds (0: chance),
    for two held-out thirds: the last programs measured (what the search asks of it: later programs,
    crowded near the best) and a random one."""
    import json

    from tune.auto_scheduler.cost_model import XGBModel

    log = args.log or f"as_matmul{args.size}.json"
    with open(log) as fh:
        name = json.loads(fh.readline())["input"]["task"]
    auto_scheduler.SearchTask(compute_dag=auto_scheduler.ComputeDAG(bench_tensors(name)),
                              workload_key=name)  # makes the log's task known here
    rows = [(i, r) for i, r in auto_scheduler.load_records(log) if r.error_no == 0]
    cut = len(rows) * 2 // 3
    shuffled = [rows[k] for k in np.random.default_rng(0).permutation(len(rows))]
    rk = lambda v: np.argsort(np.argsort(v))
    for split, order in (("the last third", rows), ("a random third", shuffled)):
        model = XGBModel(num_warmup_sample=0)
        model.update([i for i, _ in order[:cut]], [r for _, r in order[:cut]])
        held = order[cut:]
        pred = model.predict(held[0][0].task, [i.config for i, _ in held])
        speed = np.array([1.0 / r.cost for _, r in held])
        rho = np.corrcoef(rk(pred), rk(speed))[0, 1]
        print(f"cost model: trained on {cut} programs, Spearman rank correlation {rho:.2f} on {split} "
              f"({len(held)} programs, speeds {speed.min() / speed.max():.2f}-1 of the fastest)")


def model_file(name: str) -> tuple:
    """``(ONNX path, input shapes)`` of a file, a transformer of ``graph.onnx.zoo_transformers``
    (exported on first use, at its spec's shape) or a model of the user-model cache
    (``benchmarks/make_user_models.py``); elsewhere every symbolic dimension (the batch) is 1."""
    from graph.onnx import zoo_transformers

    if not os.path.exists(name) and name in zoo_transformers.SPECS:
        spec = zoo_transformers.SPECS[name]
        return zoo_transformers.model_path(name), {spec.input_name: spec.input_shape()}
    path = name if os.path.exists(name) else os.path.join(os.path.expanduser("~/.cache/tessera/models/user"),
                                                          name + ".onnx")
    return path, static_shapes(path)


def static_shapes(path: str) -> dict:
    """Each graph input's declared shape with every symbolic dimension (the batch) set to 1."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    return {i.name: tuple(d.dim_value if d.HasField("dim_value") else 1 for d in i.type.tensor_type.shape.dim)
            for i in m.graph.input if i.name not in inits}


def model(args):
    """A whole model tuned by the task scheduler for ``--minutes`` (its candidates measured with the
    cache flush, as ``tessera tune --auto-scheduler`` does), and by AutoTVM's templates for as long
    or ``--autotvm-minutes`` (``tessera tune``'s path; 0: the builds take the AutoTVM log as it is):
    latency of both against the default build, timed interleaved."""
    import graph
    from graph import tuning
    from graph.auto_schedule import tune_model
    from graph.tuning import model_feed

    path, shapes = model_file(args.model)
    g, params = graph.from_onnx(path, shape=shapes)
    log = args.log or os.path.splitext(os.path.basename(path))[0]
    start = time.perf_counter()
    sched, default, after = tune_model(g, params, "llvm", args.trials, log + ".as.json", budget_s=60 * args.minutes,
                                       runner=auto_scheduler.LocalRunner(clock=CLOCK["runner"],
                                                                         enable_cpu_cache_flush=True))
    print(f"auto_scheduler: {len(sched.tasks)} tasks, {sched.trials} trials in the log, "
          f"{time.perf_counter() - start:.0f} s")
    builds = {"default": default, "auto_scheduler": after}
    start = time.perf_counter()
    minutes = args.minutes if args.autotvm_minutes is None else args.autotvm_minutes
    if minutes > 0:
        tasks, _, builds["autotvm"], note = tuning.tune_model(g, params, "llvm", args.trials, log + ".autotvm.jsonl",
                                                              budget_s=60 * minutes, measure_option=autotvm_option())
        print(f"autotvm: {note.splitlines()[0]}, {time.perf_counter() - start:.0f} s")
    else:
        if not os.path.exists(log + ".autotvm.jsonl"):
            raise SystemExit(f"--autotvm-minutes 0: no AutoTVM log {log}.autotvm.jsonl to build with")
        builds["autotvm"] = graph.build(g, target="llvm", params=params, records=log + ".autotvm.jsonl")
    runs = {}
    for name, lib in builds.items():
        m = lib.create_executor()
        m.set_input(**model_feed(lib))
        runs[name] = m.run
    r = time_pair(runs)
    best = min(("default", "autotvm"), key=lambda k: r[k][0])
    print(f"{args.model}: " + ", ".join(f"{k} {r[k][0] * 1e3:.2f} ms (spread {r[k][1]:.0%})" for k in runs)
          + f"; auto_scheduler / {best} (the faster of the default and AutoTVM builds): "
          f"{r['auto_scheduler'][0] / r[best][0]:.2f}x the time")


def blas_threads(n: int) -> None:
    """numpy's OpenBLAS at ``n`` threads (the matmul's peer, timed by this thread's CPU time)."""
    import ctypes

    with open("/proc/self/maps") as fh:
        libs = {line.split()[-1] for line in fh if "openblas" in line and line.split()[-1].startswith("/")}
    for path in libs:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(lib, name):
                getattr(lib, name)(ctypes.c_int(n))
                return
    raise SystemExit("--threads 1: cannot set numpy's BLAS threads (no OpenBLAS loaded); time without --threads")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=["matmul", "conv", "ops", "rank", "model"])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--log", default=None, help="log (prefix for conv, ops and model; the log to read for rank)")
    p.add_argument("--first", type=int, default=0, help="conv: the first layer")
    p.add_argument("--layers", type=int, default=8, help="conv: how many layers")
    p.add_argument("--model", default=None, help="model: an ONNX file")
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--autotvm-minutes", type=float, default=None,
                   help="model: AutoTVM's tuning time (default: --minutes; 0: use its log as it is)")
    p.add_argument("--seed", type=int, default=0, help="the search's seed (a log resumes with the seed it was made with)")
    p.add_argument("--threads", type=int, default=0,
                   help="run the programs on this many threads (1: tune and time them by one thread's CPU time, "
                        "which other processes on the cores do not inflate; numpy's BLAS at one thread too)")
    args = p.parse_args(argv)
    if args.threads:
        if args.threads != 1 and args.what != "rank":
            p.error("--threads: 1 (one thread's CPU time) or leave it out (wall time on all threads)")
        codegen.set_num_threads(1)
        blas_threads(1)
        CLOCK.update(runner="thread_cpu", clock=time.thread_time)
    {"matmul": matmul, "conv": conv, "ops": ops, "rank": rank, "model": model}[args.what](args)


if __name__ == "__main__":
    main()
