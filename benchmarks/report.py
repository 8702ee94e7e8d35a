"""The performance report: Tessera against numpy and onnxruntime on this machine, in one run.

Usage::

    python benchmarks/report.py [--out DIR] [--quick] [--repeat 9] [--models resnet50,squeezenet]
                                [--records LOG] [--trials 32] [--readme README.md]

The repository's report is made with ``--out docs/report --readme README.md``.

It measures the machine (float32 FMA peak and copy bandwidth, with Tessera's own
kernels on every thread), then times, always interleaved with the peer in one run
(``codegen.timing.interleaved``: alternating batches, each after a pause so that
another runtime's spinning threads do not steal the cores):

* hand-scheduled kernels against numpy (``topi/workloads.py``: the classic
  opt_gemm tutorial's steps, the best matmul schedule, memory-bound kernels);
* ResNet's conv layers (default schedules, no tuning) against onnxruntime;
* the ONNX "light" models (shipped in the onnx wheel) against onnxruntime;
* the runtime: thread scaling, the cost of a parallel launch, build times;
* a tuning curve: best GFLOP/s against trials, from ``--records`` or from a
  short AutoTVM run of topi's packed dense template.

It prints a markdown report; with ``--out DIR`` it writes ``DIR/report.md`` and
three pictures: ``roofline.png`` (the kernels on this machine's measured roofline),
``models.png`` (each model's speed against onnxruntime) and ``tuning.png``; with
``--readme`` it rewrites the README's summary table between two marker comments.
Every ratio is "speed against the peer" (the peer's time over Tessera's: above 1,
Tessera is faster).  The whole run takes about 5-10 minutes on 2 cores
(``--quick``: a few).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import codegen  # noqa: E402
from codegen import timing  # noqa: E402
from codegen.target import Target  # noqa: E402
from graph import plot, profile  # noqa: E402
from topi import workloads as W  # noqa: E402

THREADS = 2


# ------------------------------------------------------------------ machine
def machine(repeat: int) -> dict:
    """CPU name and vector width, and the limits Tessera's own kernels reach, measured afresh
    (``graph.profile.machine_limits``, which the per-kernel profile reads too): the float32 FMA
    peak (the matmul register tile on operands in L1) and the copy bandwidth of arrays larger
    than the caches."""
    target = Target("llvm")
    limits = profile.machine_limits(THREADS, refresh=True, repeat=repeat)
    codegen.set_num_threads(THREADS)
    return {
        "cpu": f"{cpu_model()} ({target.cpu}, {target.vector_bits}-bit vectors, {os.cpu_count()} CPUs)",
        "target": str(target),
        "peak_gflops": limits["peak_gflops"],
        "copy_gbs": limits["copy_gbs"],
        "load": os.getloadavg()[0],  # runnable processes, averaged over a minute: the machine's load
    }


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else the platform's processor or machine."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def checked(k: W.Kernel) -> list:
    ins = k.make_inputs()
    k.module(*ins)
    np.testing.assert_allclose(ins[-1], k.reference(*ins[:-1]), rtol=2e-4, atol=1e-4)
    return ins


# ------------------------------------------------------------------ rows
class Report:
    """Rows of the kernels table and points of the roofline, filled by the sections below."""

    def __init__(self):
        self.kernels: list[dict] = []
        self.points: list[tuple] = []  # (label, flops per byte, GFLOP/s)
        self.peer_gflops: list = []  # the peer's GFLOP/s on each point's workload
        self.models: list[dict] = []
        self.runtime: list[tuple] = []

    def versus(self, name: str, k: W.Kernel, ins: list, peer: str, peer_fn, repeat: int, *, number=None,
               target: tuple | None = None, flops: float | None = None, nbytes: float | None = None) -> float:
        """Time ``k`` against ``peer_fn`` interleaved; add a row (and a roofline point when ``flops`` and
        ``nbytes`` are given); ``target``: (text, predicate on the speed ratio)."""
        runs = timing.interleaved({"tessera": lambda: k.module(*ins), "peer": peer_fn}, repeat=repeat, number=number)
        t, tp = timing.median(runs["tessera"]), timing.median(runs["peer"])
        ratio = timing.paired_ratio(runs, "peer", "tessera").median
        self.kernels.append({"name": name, "tessera": t, "peer": peer, "peer_s": tp, "ratio": ratio,
                             "rate": f"{k.work / t / 1e9:.1f} {k.unit}", "spread": timing.spread(runs["tessera"]),
                             "target": target[0] if target else "", "ok": target[1](ratio) if target else None})
        if flops and nbytes:
            self.points.append((name, flops / nbytes, flops / t / 1e9))
            self.peer_gflops.append(flops / tp / 1e9)
        return ratio


def gemm_rows(rep: Report, repeat: int, quick: bool) -> None:
    n = 1024
    matmul_bytes = 3 * 4.0 * n * n
    for step in W.OPT_GEMM_STEPS:
        if quick and step != "parallel":
            continue
        k = W.opt_gemm(step, n)
        a, b, c = checked(k)
        slow = step in ("default", "blocking")
        rep.versus(f"opt_gemm tutorial, step {step} ({n})", k, [a, b, c], "numpy", lambda a=a, b=b: np.matmul(a, b),
                   1 if slow else repeat, number=1 if slow else None,
                   target=(">= 0.5x", lambda r: r >= 0.5) if step == "parallel" else None,
                   flops=k.work if step == "parallel" else None, nbytes=matmul_bytes)
    for n in (1024, 2048):
        k = W.matmul_best(n)
        a, b, c = checked(k)
        rep.versus(f"matmul {n}, best hand schedule", k, [a, b, c], "numpy", lambda a=a, b=b: np.matmul(a, b),
                   repeat, target=(">= 0.9x", lambda r: r >= 0.9), flops=k.work, nbytes=3 * 4.0 * n * n)


def memory_rows(rep: Report, repeat: int) -> None:
    k = W.fused_elementwise()
    ins = checked(k)
    n = ins[0].size
    out = np.empty_like(ins[0])
    rep.versus("max(x*a+b, 0) 16M, against a copy of the same bytes", k, ins, "numpy copyto",
               lambda: np.copyto(out, ins[0]), repeat, target=(">= 0.8x", lambda r: r >= 0.8))
    rep.versus("max(x*a+b, 0) 16M", k, ins, "numpy", lambda: k.reference(*ins[:-1]), repeat,
               target=("> 1x", lambda r: r > 1), flops=3.0 * n, nbytes=k.work)
    k = W.row_sum()
    ins = checked(k)
    rep.versus("row sum 4096x1000", k, ins, "numpy", lambda: k.reference(*ins[:-1]), repeat,
               target=(">= 1x", lambda r: r >= 1), flops=float(ins[0].size), nbytes=k.work)
    k = W.vector_exp()
    ins = checked(k)
    rep.versus("exp 16M", k, ins, "numpy", lambda: k.reference(*ins[:-1]), repeat,
               target=(">= 2x", lambda r: r >= 2))


def conv_rows(rep: Report, repeat: int) -> None:
    """ResNet-style conv layers, default x86 schedules, against onnxruntime (benchmarks/topi_conv.py)."""
    import topi_conv

    topi_conv.ROUNDS = repeat
    for layer in topi_conv.LAYERS:
        args, flops = topi_conv._layer_args(layer)
        tess, out = topi_conv.tessera_fn(*args)
        ort = topi_conv.ort_fn(*args)
        tess()
        topi_conv._check(out, ort())
        runs = timing.interleaved({"tessera": tess, "peer": ort}, repeat=repeat)
        t, tp = timing.median(runs["tessera"]), timing.median(runs["peer"])
        ic, oc, h, kk, st, p, groups, a, w = args
        nbytes = 4.0 * (a.size + w.size + out.size)
        rep.kernels.append({"name": f"conv {layer[0]}", "tessera": t, "peer": "onnxruntime", "peer_s": tp,
                            "ratio": timing.paired_ratio(runs, "peer", "tessera").median,
                            "rate": f"{flops / t / 1e9:.1f} GFLOP/s", "spread": timing.spread(runs["tessera"]),
                            "target": "", "ok": None})
        rep.points.append((f"conv {layer[0]}", flops / nbytes, flops / t / 1e9))
        rep.peer_gflops.append(flops / tp / 1e9)


def model_rows(rep: Report, names: list, repeat: int) -> None:
    """Whole models against onnxruntime (benchmarks/graph_models.py's measurement)."""
    import graph_models

    for name in names:
        row = graph_models.bench_model(name, repeat, cold=False)
        if "onnxruntime" in row:
            rep.models.append(row)
            print(f"  {name}: {timing.format_time(row['tessera'])} against {timing.format_time(row['onnxruntime'])}",
                  file=sys.stderr, flush=True)


def runtime_rows(rep: Report, repeat: int) -> None:
    k = W.compute_bound()
    ins = checked(k)

    def one_thread():
        codegen.set_num_threads(1)
        k.module(*ins)
        codegen.set_num_threads(THREADS)

    runs = timing.interleaved({"2": lambda: k.module(*ins), "1": one_thread}, repeat=repeat)
    scaling = timing.paired_ratio(runs, "1", "2").median
    rep.runtime.append(("compute-bound kernel, 2 threads against 1", f"{scaling:.2f}x", ">= 1.8x", scaling >= 1.8))
    par, ser = W.empty_launch(True), W.empty_launch(False)
    ins = checked(par)
    runs = timing.interleaved({"par": lambda: par.module(*ins), "ser": lambda: ser.module(*ins)}, repeat=repeat,
                              number=20)
    launch = (timing.median(runs["par"]) - timing.median(runs["ser"])) / W.LAUNCHES
    rep.runtime.append(("empty 2-task parallel launch (native loop)", f"{launch * 1e6:.2f} us", "<= 20 us",
                        launch <= 20e-6))
    cold, rebuild = W.build_times()
    rep.runtime.append(("lower + build of the best matmul, cold / rebuild",
                        f"{cold * 1e3:.0f} ms / {rebuild * 1e3:.2f} ms", "<= 1 s / 10 ms",
                        cold <= 1.0 and rebuild <= 0.010))


# ------------------------------------------------------------------ tuning
TUNED = ("dense_pack.x86", (64, 1024, 1024, "float32"))  # a transformer's projection, 64 tokens


def tuning_curves(records: str | None, trials: int) -> tuple:
    """(curves, where they came from): ``records`` as given, else a short XGB run of topi's packed
    dense template on ``TUNED`` (its log in a temporary directory)."""
    import topi.x86  # noqa: F401  (registers the x86 templates)
    from tune import autotvm, deployed

    if records is None:
        records = os.path.join(tempfile.mkdtemp(prefix="tessera-report-"), "tuning.jsonl")
        task = autotvm.task.create(TUNED[0], args=TUNED[1], target="llvm")
        tuner = autotvm.tuner.XGBTuner(task)
        tuner.tune(n_trial=trials, measure_option=autotvm.measure_option(
            builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(number=3, repeat=3, min_repeat_ms=20)),
            callbacks=[autotvm.callback.log_to_file(records)])
        source = f"{trials} XGB trials of {TUNED[0]}, M, N, K = {TUNED[1][:3]}"
    else:
        source = f"records {records}"
    # the tasks made afresh carry the template's FLOP count (records hold its name and arguments)
    tasks = {(inp.task.name, tuple(inp.task.args)): inp.task for inp, _ in autotvm.record.load_from_file(records)}
    tasks = [autotvm.task.create(name, args=args, target=t.target) for (name, args), t in tasks.items()]
    curves = deployed.best_curves(records, tasks, Target("llvm"))
    return {f"{t.name}{tuple(t.args)}": c for t, c in curves.items()}, source


# ------------------------------------------------------------------ output
def geomean(xs: list) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summary(m: dict, rep: Report, when: str) -> list:
    """The short table the README carries: the rows with a target, the conv layers' and the models'
    speed against onnxruntime, and their geometric means."""
    lines = [f"One run of `benchmarks/report.py` ({when}) on {m['cpu']}, {THREADS} threads each; "
             f"measured FMA peak {m['peak_gflops']:.0f} GFLOP/s, copy {m['copy_gbs']:.0f} GB/s; load average "
             f"{m['load'][0]:.1f} at the start, {m['load'][1]:.1f} at the end. Speed vs peer "
             "is the peer's time over Tessera's (above 1: Tessera faster), from batches interleaved with the "
             "peer; spread is (max - min) / median of Tessera's batches (of a geometric mean: the "
             f"largest of its rows). Absolute rates are in the full report: they follow the machine's load.", "",
             "| workload | peer | speed vs peer | spread | target |", "|---|---|---|---|---|"]
    for r in rep.kernels:
        if r["target"]:
            lines.append(f"| {r['name']} | {r['peer']} | {r['ratio']:.2f}x | {r['spread']:.0%} | {r['target']} |")
    convs = [r for r in rep.kernels if r["peer"] == "onnxruntime"]
    if convs:
        lines.append(f"| {len(convs)} ResNet conv layers, geometric mean (default schedules) | onnxruntime | "
                     f"{geomean([r['ratio'] for r in convs]):.2f}x | {max(r['spread'] for r in convs):.0%} | |")
    for r in rep.models:
        lines.append(f"| {r['model']} (ONNX light zoo, batch 1) | onnxruntime | {1 / r['ratio']:.2f}x | "
                     f"{r['tessera_spread']:.0%} | |")
    if len(rep.models) > 1:
        lines.append(f"| {len(rep.models)} light models, geometric mean | onnxruntime | "
                     f"{geomean([1 / r['ratio'] for r in rep.models]):.2f}x | "
                     f"{max(r['tessera_spread'] for r in rep.models):.0%} | |")
    return lines


def markdown(m: dict, rep: Report, curves_source: str, pictures: bool, when: str) -> str:
    lines = [f"# Tessera performance report ({when})", "",
             "Written by `python benchmarks/report.py --out DIR`; every figure below comes from that one run.", "",
             "## Summary", "", *summary(m, rep, when), "", "## Kernels", "",
             f"Machine: {m['cpu']}; target `{m['target'][:60]}{'...' if len(m['target']) > 60 else ''}`; "
             f"measured float32 FMA peak {m['peak_gflops']:.0f} GFLOP/s (the matmul register tile on operands in "
             f"L1: {THREADS} x one thread's rate in its CPU time, or all threads' wall-clock rate, whichever is "
             f"faster) and copy bandwidth {m['copy_gbs']:.0f} GB/s (arrays larger than the caches); each the faster "
             f"of two readings, at the start and at the end. numpy {np.__version__}"
             + _ort_version() + f"; {THREADS} threads each. Speed vs peer is the peer's time over Tessera's "
             "(above 1: Tessera faster), the median of per-round ratios; spread is (max - min) / median of "
             "Tessera's batches.", "",
             "| workload | Tessera | peer | peer time | speed vs peer | Tessera rate | spread | target |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rep.kernels:
        verdict = "" if r["ok"] is None else (" (met)" if r["ok"] else " (NOT met)")
        lines.append(f"| {r['name']} | {timing.format_time(r['tessera'])} | {r['peer']} | "
                     f"{timing.format_time(r['peer_s'])} | {r['ratio']:.2f}x | {r['rate']} | {r['spread']:.0%} | "
                     f"{r['target']}{verdict} |")
    if pictures:
        lines += ["", "Points above the sloped roof read operands that stay in the caches.", "",
                  "![roofline](roofline.png)"]
    if rep.models:
        lines += ["", "## Models", "",
                  "The ONNX light zoo shipped in the onnx wheel, input 1x3x224x224, default schedules (no tuning); "
                  "outputs compared with onnxruntime's.", "",
                  "| model | Tessera | onnxruntime | speed vs onnxruntime | outputs | spread (Tessera / onnxruntime) |",
                  "|---|---|---|---|---|---|"]
        for r in rep.models:
            lines.append(f"| {r['model']} | {timing.format_time(r['tessera'])} | {timing.format_time(r['onnxruntime'])} "
                         f"| {1 / r['ratio']:.2f}x | {'agree' if r.get('agree') else 'DIFFER'} | "
                         f"{r['tessera_spread']:.0%} / {r['onnxruntime_spread']:.0%} |")
        lines.append(f"| geometric mean | | | {geomean([1 / r['ratio'] for r in rep.models]):.2f}x | | |")
        if pictures:
            lines += ["", "![models](models.png)"]
    lines += ["", "## Runtime", "", "| runtime | measured | target |", "|---|---|---|"]
    lines += [f"| {name} | {value} | {want}{' (met)' if ok else ' (NOT met)'} |" for name, value, want, ok in rep.runtime]
    lines += ["", "## Tuning", "", f"Best GFLOP/s after each trial: {curves_source}."]
    if pictures:
        lines += ["", "![tuning](tuning.png)"]
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- benchmarks/report.py summary: begin -->", "<!-- benchmarks/report.py summary: end -->"


def update_readme(path: str, lines: list, report: str | None) -> None:
    """Replace the block between ``BEGIN`` and ``END`` in ``path`` with ``lines`` (and a link to
    ``report``, relative to the README)."""
    with open(path) as fh:
        text = fh.read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"report: {path} has no {BEGIN} ... {END} block to replace")
    if report:
        rel = os.path.relpath(report, os.path.dirname(os.path.abspath(path)))
        lines = [*lines, "", f"The full report, with a roofline, the models' chart and a tuning curve: [{rel}]({rel})."]
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    with open(path, "w") as fh:
        fh.write(head + BEGIN + "\n" + "\n".join(lines) + "\n" + END + tail)


def _ort_version() -> str:
    try:
        import onnxruntime
    except ImportError:
        return ""
    return f", onnxruntime {onnxruntime.__version__}"


def main(argv=None) -> int:
    from graph.onnx.zoo import LIGHT_MODELS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", help="write report.md and the PNG pictures into this directory")
    p.add_argument("--repeat", type=int, default=9, help="interleaved batches per workload (default 9)")
    p.add_argument("--quick", action="store_true",
                   help="fewer workloads: no slow opt_gemm steps, two models, 16 tuning trials")
    p.add_argument("--models", help=f"comma-separated light models (default: all of {', '.join(LIGHT_MODELS)})")
    p.add_argument("--records", help="a tuning log to draw the tuning curve from (default: tune a matmul briefly)")
    p.add_argument("--trials", type=int, default=32, help="trials of the tuning run without --records (default 32)")
    p.add_argument("--readme", metavar="README.md",
                   help="also replace the summary block of this README with this run's table (and link the report)")
    args = p.parse_args(argv)
    models = args.models.split(",") if args.models else (["resnet50", "squeezenet"] if args.quick else LIGHT_MODELS)
    unknown = [m for m in models if m not in LIGHT_MODELS]
    if unknown:
        p.error(f"unknown models {unknown}; choose from {', '.join(LIGHT_MODELS)}")
    codegen.set_num_threads(THREADS)
    out_dir = args.out or tempfile.mkdtemp(prefix="tessera-report-")
    os.makedirs(out_dir, exist_ok=True)
    when = time.strftime("%Y-%m-%d")
    start = time.perf_counter()
    log = lambda what: print(f"[{time.perf_counter() - start:6.0f} s] {what}", file=sys.stderr, flush=True)  # noqa: E731

    log("machine: FMA peak and copy bandwidth")
    m = machine(args.repeat)
    rep = Report()
    log("kernels against numpy")
    gemm_rows(rep, args.repeat, args.quick)
    memory_rows(rep, args.repeat)
    log("conv layers against onnxruntime")
    conv_rows(rep, args.repeat)
    log(f"models against onnxruntime: {', '.join(models)}")
    model_rows(rep, models, args.repeat)
    log("runtime")
    runtime_rows(rep, args.repeat)
    log("tuning curve")
    curves, source = tuning_curves(args.records, 16 if args.quick and not args.records else args.trials)
    log("machine again (the limits are the faster of two readings, at the start and at the end)")
    again = machine(args.repeat)
    m.update(peak_gflops=max(m["peak_gflops"], again["peak_gflops"]), copy_gbs=max(m["copy_gbs"], again["copy_gbs"]),
             load=(m["load"], again["load"]))

    pictures = True
    try:
        plot.roofline(rep.points, m["peak_gflops"], m["copy_gbs"], os.path.join(out_dir, "roofline.png"),
                      title=f"Tessera kernels on this machine's roofline ({Target('llvm').cpu}, {THREADS} threads)",
                      peers=rep.peer_gflops, peer_names="numpy / onnxruntime")
        if rep.models:
            plot.speed_against_peer([(r["model"], r["tessera"], r["onnxruntime"]) for r in rep.models], "onnxruntime",
                                os.path.join(out_dir, "models.png"),
                                title=f"ONNX light zoo, batch 1: Tessera against onnxruntime ({THREADS} threads each)")
        plot.tuning_curves(curves, os.path.join(out_dir, "tuning.png"), title=f"tuning: {source}")
    except ImportError as e:
        pictures = False
        print(f"report: no pictures ({e})", file=sys.stderr)
    text = markdown(m, rep, source, pictures, when)
    report = os.path.join(out_dir, "report.md") if args.out else None
    if report:
        with open(report, "w") as fh:
            fh.write(text)
    if args.readme:
        update_readme(args.readme, summary(m, rep, when), report)
    print(text)
    log(f"done{'; wrote ' + out_dir if args.out else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
