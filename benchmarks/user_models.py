"""Models users export (torchvision, timm, transformers) through Tessera next to onnxruntime.

Run ``python benchmarks/user_models.py [MODEL ...] [--repeat 7] [--threads 2] [--cpu-time] [--cold]
[--profile] [--json F]``
(``MODEL``: names or substrings of ``make_user_models.MODELS``; default all).
The models are exported by ``benchmarks/make_user_models.py`` into the cache
on first use (torchvision, timm and transformers needed once).  Per model:

* whether it imports (a model the importer refuses is listed with the reason);
* latency of Tessera and onnxruntime at batch 1 (``--threads``, 2 intra-op threads
  each by default), medians of batches interleaved between the two, each after a
  pause (``codegen.timing.interleaved``), the ratio Tessera / onnxruntime and the
  spread (max - min) / median of each, after checking that the outputs agree;
  ``--cpu-time`` (with ``--threads 1``) times the process's CPU time instead of
  the wall clock: on a host shared with other work, a 2-thread wall-clock run
  mostly measures how often a descheduled thread holds up each kernel's
  parallel loop, while one thread's CPU time stays near the unloaded figure;
* compile time: the build in this process (kernel cache as it is), or with
  ``--cold`` import + build in a fresh process with an empty kernel cache;
* with ``--profile``, the model's slowest kernels (``graph.profile``).

Then the geometric mean of the ratios and the slowest model (targets of
issue 49: geomean <= 0.85x, none above 1.1x, every cold compile <= 15 s).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_user_models as U

from codegen.timing import format_time, interleaved, summary
from graph.cli.timing import differences, ort_session

THREADS = 2  # the default: onnxruntime's and Tessera's intra-op threads


def select(patterns: list) -> list:
    if not patterns:
        return list(U.MODELS)
    exact = [p for p in patterns if p in U.MODELS]
    chosen = [m for m in U.MODELS if m in exact or any(p in m for p in patterns if p not in exact)]
    if not chosen:
        raise SystemExit(f"user_models: no model matches {patterns}; models: {', '.join(U.MODELS)}")
    return chosen


def build(name: str):
    """(library, seconds) of model ``name`` at batch 1: import and build."""
    import graph

    path = U.model_path(name)
    start = time.perf_counter()
    g, params = graph.from_onnx(path, shape=U.input_shapes(name))
    lib = graph.build(g, params=params)
    return lib, time.perf_counter() - start


def cold_compile(name: str) -> float:
    """Seconds to import and build ``name`` in a fresh process with an empty kernel cache."""
    with tempfile.TemporaryDirectory(prefix="tessera-cache-") as cache:
        env = dict(os.environ, TESSERA_CACHE_DIR=cache)
        res = subprocess.run([sys.executable, os.path.abspath(__file__), "--compile-child", name],
                             env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"user_models: compiling {name} failed:\n{res.stderr[-3000:]}")
    return float(json.loads(res.stdout.strip().splitlines()[-1])["seconds"])


def bench_model(name: str, repeat: int, cold: bool, profile: bool, threads: int = THREADS,
                cpu_time: bool = False) -> dict:
    import codegen

    row: dict = {"model": name, "library": U.MODELS[name].library}
    U.model_path(name)  # export first, outside the timings
    try:
        lib, row["build_s"] = build(name)
    except (ValueError, NotImplementedError, TypeError, KeyError) as err:
        row["error"] = " ".join(str(err).split())[:160]
        return row
    if cold:
        row["cold_s"] = cold_compile(name)
    codegen.set_num_threads(threads)
    m = lib.create_executor()
    feed = U.sample_inputs(U.MODELS[name])
    m.set_input(**feed)
    m.run()
    fns = {"tessera": m.run}
    sess, why = ort_session(U.model_path(name), threads)
    if sess is not None:
        abs_d, rel_d, agree = differences(m.get_output(0), sess.run(None, feed)[0])
        row.update(max_abs=abs_d, max_rel=rel_d, agree=agree)
        fns["onnxruntime"] = lambda: sess.run(None, feed)
    else:
        row["ort_error"] = why
    samples = interleaved(fns, repeat, clock=time.process_time if cpu_time else time.perf_counter)
    row.update(summary(samples))
    if "onnxruntime" in row:
        row["ratio"] = row["tessera"] / row["onnxruntime"]
        per_batch = [t / o for t, o in zip(samples["tessera"], samples["onnxruntime"])]
        row["ratio_iqr"] = [float(x) for x in statistics.quantiles(per_batch, n=4)[::2]]
    if profile:
        from graph.profile import profile_module

        row["profile"] = profile_module(m, number=5).report(top=8)
    return row


def geomean(xs: list) -> float:
    return math.exp(statistics.mean(math.log(x) for x in xs))


def report(rows: list, threads: int = THREADS, cpu_time: bool = False) -> None:
    head = (f"{'model':20} {'library':12} {'Tessera':>10} {'onnxruntime':>12} {'T/ORT':>6} {'batch IQR':>12} "
            f"{'spread T/ORT':>13} {'outputs':>8} {'build':>7} {'cold':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        if "error" in r:
            print(f"{r['model']:20} {r['library']:12} not imported: {r['error']}")
            continue
        ort_t = format_time(r["onnxruntime"]) if "onnxruntime" in r else "-"
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        iqr = f"{r['ratio_iqr'][0]:.2f}-{r['ratio_iqr'][1]:.2f}" if "ratio_iqr" in r else "-"
        spread = f"{r['tessera_spread']:.0%}/{r.get('onnxruntime_spread', float('nan')):.0%}"
        agree = ("agree" if r["agree"] else "DIFFER") if "agree" in r else "-"
        cold = f"{r['cold_s']:5.1f} s" if "cold_s" in r else "-"
        print(f"{r['model']:20} {r['library']:12} {format_time(r['tessera']):>10} {ort_t:>12} {ratio:>6} "
              f"{iqr:>12} {spread:>13} {agree:>8} {r['build_s']:5.1f} s {cold:>7}")
    ratios = [r for r in rows if "ratio" in r]
    if ratios:
        worst = max(ratios, key=lambda r: r["ratio"])
        print(f"geomean Tessera/onnxruntime over {len(ratios)} models: {geomean([r['ratio'] for r in ratios]):.2f}x "
              f"(target <= 0.85x); slowest {worst['model']} {worst['ratio']:.2f}x (target <= 1.1x); "
              f"{sum(r['ratio'] > 1.1 for r in ratios)} above 1.1x")
    colds = [r["cold_s"] for r in rows if "cold_s" in r]
    if colds:
        print(f"cold compile: max {max(colds):.1f} s (target <= 15 s)")
    clock = "process CPU time" if cpu_time else "wall clock"
    print(f"{threads} thread(s) each, {clock}; medians of interleaved batches; "
          f"batch IQR: quartiles of the per-batch ratio")
    for r in rows:
        if "profile" in r:
            print(f"\n{r['model']}:\n{r['profile']}")


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="model names or substrings (default: all)")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved batches per system (default 7)")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help=f"intra-op threads of each system (default {THREADS})")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time the process's CPU time, not the wall clock (needs --threads 1)")
    parser.add_argument("--cold", action="store_true", help="also time a cold compile in a fresh process")
    parser.add_argument("--profile", action="store_true", help="also print each model's slowest kernels")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--compile-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cpu_time and args.threads != 1:
        parser.error("--cpu-time needs --threads 1 (CPU time summed over threads counts their spinning)")
    if args.threads < 1:
        parser.error(f"--threads {args.threads}: give at least one thread")
    if args.repeat < 2:
        parser.error(f"--repeat {args.repeat}: give at least 2 batches (the ratio's quartiles need two)")
    if args.compile_child:
        print(json.dumps({"seconds": build(args.compile_child)[1]}))
        return []
    rows = []
    for name in select(args.models):
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        rows.append(bench_model(name, args.repeat, args.cold, args.profile, args.threads, args.cpu_time))
        gc.collect()  # one model's constants in memory at a time
    report(rows, args.threads, args.cpu_time)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
