"""Whole models: the ONNX "light" zoo through Tessera next to onnxruntime.

Run ``python benchmarks/graph_models.py [MODEL ...] [--repeat 7] [--no-cold]``
(``MODEL``: names or substrings of :data:`MODELS`; default all nine).  Per
model it reports

* latency of Tessera and of onnxruntime (2 intra-op threads each), medians
  of batches interleaved between the two, each after a 0.25 s pause (see
  ``codegen.timing.interleaved``), and the ratio Tessera / onnxruntime (< 1:
  Tessera is faster; the targets: ResNet-50 <= 1.0x, ShuffleNet and
  SqueezeNet <= 1.2x, geometric mean <= 0.95x), after checking that the
  two outputs agree;
* with ``--nchw``, also Tessera with the ``alter_op_layout`` pass excluded
  (activations NCHW between convolutions, each conv packing its input and
  unpacking its output), interleaved in the same batches: the layout pass's
  before/after under the same load;
* compile time: cold (import + build in a fresh process with an empty
  temporary ``TESSERA_CACHE_DIR``) and cached (a second fresh process with
  the same cache directory);
* the memory plan: arena bytes next to one buffer per intermediate (naive);

then the geometric mean of the ratios.  ``--no-cold`` skips the two compile
processes (the build then uses the default kernel cache).

The same models are a pytest-benchmark suite:
``pytest benchmarks/graph_models.py --benchmark-only [-k resnet50]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from codegen.timing import format_time, interleaved, summary
from graph.cli.timing import differences
from graph.cli.timing import ort_session as cli_ort_session
from graph.onnx.zoo import LIGHT_MODELS, light_model_path

MODELS = LIGHT_MODELS
THREADS = 2


def model_path(name: str) -> str:

    return light_model_path(name)


def select(patterns: list) -> list:
    if not patterns:
        return list(MODELS)
    chosen = [m for m in MODELS if any(p in m for p in patterns)]
    if not chosen:
        raise SystemExit(f"graph_models: no model matches {patterns}; models: {', '.join(MODELS)}")
    return chosen


# ------------------------------------------------------------------ building
def build(name: str, exclude: tuple = ()):
    """Import and build one model (passes named in ``exclude`` left out); returns (library, seconds)."""
    import graph

    start = time.perf_counter()
    g, params = graph.from_onnx(model_path(name))
    lib = graph.build(g, params=params, exclude=exclude)
    return lib, time.perf_counter() - start


def compile_child(name: str) -> None:
    """In a fresh process: build ``name`` and print one JSON line of figures."""
    lib, seconds = build(name)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "arena": lib.plan.arena_bytes,
                "naive": lib.plan.naive_bytes,
                "calls": len(lib.steps),
                "kernels": len(lib.kernels),
            }
        )
    )


def compile_in_process(name: str, cache_dir: str) -> dict:
    env = dict(os.environ, TESSERA_CACHE_DIR=cache_dir)
    res = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--compile-child", name],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        raise RuntimeError(f"graph_models: compiling {name} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def compile_times(name: str, cache_dir: str) -> dict:
    """Cold then cached compile, each in a fresh process sharing ``cache_dir`` (empty at first)."""
    cold = compile_in_process(name, cache_dir)
    cached = compile_in_process(name, cache_dir)
    return {
        "cold_s": cold["seconds"],
        "cached_s": cached["seconds"],
        **{k: cold[k] for k in cold if k != "seconds"},
    }


# ------------------------------------------------------------------ timing
def ort_session(name: str):
    """onnxruntime with THREADS intra-op threads, or None where it is missing or refuses the model."""
    return cli_ort_session(model_path(name), THREADS)[0]


def seeded_feed(lib) -> dict:
    rng = np.random.default_rng(0)
    return {v.name: rng.standard_normal(v.shape).astype(v.dtype) for v in lib.graph.inputs}


def bench_model(name: str, repeat: int, cold: bool, nchw: bool = False) -> dict:
    import codegen

    row = {"model": name}
    if cold:
        with tempfile.TemporaryDirectory(prefix="tessera-cache-") as cache:
            row.update(compile_times(name, cache))
            os.environ["TESSERA_CACHE_DIR"] = cache  # the timing build below hits this cache
            lib, _ = build(name)
            os.environ.pop("TESSERA_CACHE_DIR")
    else:
        lib, seconds = build(name)
        row.update(cached_s=seconds, arena=lib.plan.arena_bytes, naive=lib.plan.naive_bytes)
        row.update(calls=len(lib.steps), kernels=len(lib.kernels))
    codegen.set_num_threads(THREADS)
    m = lib.create_executor()
    feed = seeded_feed(lib)
    m.set_input(**feed)
    fns = {"tessera": m.run}
    if nchw:
        plain = build(name, exclude=("alter_op_layout",))[0].create_executor()
        plain.set_input(**feed)
        fns["tessera_nchw"] = plain.run
    sess = ort_session(name)
    if sess is not None:
        m.run()
        ref = sess.run(None, feed)
        abs_d, rel_d, agree = differences(m.get_output(0), ref[0])
        row.update(max_abs=abs_d, max_rel=rel_d, agree=agree)
        fns["onnxruntime"] = lambda: sess.run(None, feed)
    samples = interleaved(fns, repeat)
    row.update(summary(samples))
    if "onnxruntime" in row:
        row["ratio"] = row["tessera"] / row["onnxruntime"]
        if nchw:
            row["ratio_nchw"] = row["tessera_nchw"] / row["onnxruntime"]
    return row


# ------------------------------------------------------------------ report
def report(rows: list) -> None:
    head = (
        f"{'model':14} {'Tessera':>10} {'onnxruntime':>12} {'T/ORT':>6} {'outputs':>8} "
        f"{'cold':>8} {'cached':>8} {'arena':>10} {'naive':>10} {'calls':>6} {'kernels':>7}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        ort_t = format_time(r["onnxruntime"]) if "onnxruntime" in r else "-"
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        agree = ("agree" if r["agree"] else "DIFFER") if "agree" in r else "-"
        cold = f"{r['cold_s']:.1f} s" if "cold_s" in r else "-"
        print(
            f"{r['model']:14} {format_time(r['tessera']):>10} {ort_t:>12} {ratio:>6} {agree:>8} {cold:>8} "
            f"{r['cached_s']:6.2f} s {r['arena'] / 2**20:6.1f} MiB {r['naive'] / 2**20:6.1f} MiB "
            f"{r['calls']:>6} {r['kernels']:>7}"
        )
    ratios = [r["ratio"] for r in rows if "ratio" in r]
    if ratios:
        geo = math.exp(statistics.mean(math.log(x) for x in ratios))
        print(f"geomean ratio (Tessera time / onnxruntime time) over {len(ratios)} models: {geo:.2f}x "
              f"(target <= 0.95x; ResNet-50 <= 1.0x, ShuffleNet and SqueezeNet <= 1.2x)")
    plain = [r for r in rows if "ratio_nchw" in r]
    if plain:
        print("without alter_op_layout (NCHW between convs), same batches: "
              + ", ".join(f"{r['model']} {format_time(r['tessera_nchw'])} {r['ratio_nchw']:.2f}x" for r in plain)
              + f"; geomean {math.exp(statistics.mean(math.log(r['ratio_nchw']) for r in plain)):.2f}x")
    print(
        f"{THREADS} threads each; times are medians of interleaved batches; spread (max-min)/median: "
        + ", ".join(
            f"{r['model']} {r['tessera_spread']:.0%}"
            + (f"/{r['onnxruntime_spread']:.0%}" if "onnxruntime_spread" in r else "")
            for r in rows
        )
        + " (Tessera/onnxruntime)"
    )


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help="model names or substrings (default: all)")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved batches per system (default 7)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold/cached compile processes")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument("--nchw", action="store_true",
                        help="also time a build without alter_op_layout, interleaved (the layout pass's A/B)")
    parser.add_argument("--compile-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compile_child:
        compile_child(args.compile_child)
        return []
    rows = []
    for name in select(args.models):
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        rows.append(bench_model(name, args.repeat, not args.no_cold, args.nchw))
    report(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


# ------------------------------------------------------------------ pytest-benchmark
try:
    import pytest
except ImportError:  # pragma: no cover - the script runs without pytest
    pytest = None

if pytest is not None:
    _built: dict = {}

    def _executor(name: str):
        if name not in _built:
            _built.clear()  # one model's constants in memory at a time
            lib, _ = build(name)
            m = lib.create_executor()
            m.set_input(**seeded_feed(lib))
            _built[name] = (lib, m)
        return _built[name]

    @pytest.mark.parametrize("name", MODELS)
    def test_model_latency(benchmark, name):
        """Tessera's run; onnxruntime's median (settled, same input) and the ratio in extra_info."""
        pytest.importorskip("pytest_benchmark")
        import codegen
        from codegen import timing

        codegen.set_num_threads(THREADS)
        lib, m = _executor(name)
        feed = seeded_feed(lib)
        extra = {"model": name, "arena_bytes": lib.plan.arena_bytes, "naive_bytes": lib.plan.naive_bytes}
        sess = ort_session(name)
        if sess is not None:
            m.run()
            np.testing.assert_allclose(m.get_output(0), sess.run(None, feed)[0], rtol=1e-3, atol=1e-5)
            ort_runs = timing.interleaved({"ort": lambda: sess.run(None, feed)}, repeat=5, number=3)
            extra["onnxruntime_s"] = timing.median(ort_runs["ort"])
        time.sleep(timing.SETTLE_S)
        benchmark.pedantic(m.run, rounds=7, iterations=3, warmup_rounds=1)
        if "onnxruntime_s" in extra:
            extra["ratio_vs_onnxruntime"] = benchmark.stats.stats.median / extra["onnxruntime_s"]
        benchmark.extra_info.update(extra)


if __name__ == "__main__":
    main()
