"""Transformer models through Tessera next to onnxruntime (2 threads, interleaved).

Run ``python benchmarks/transformer_models.py [MODEL ...] [--repeat 7] [--profile]``
(``MODEL``: ``encoder4``, ``bert_base``, ``gpt6``; default all three).  The
models are exported from ``torch.nn`` modules with seeded weights by
``python -m graph.onnx.zoo_transformers`` into ``$TESSERA_MODEL_DIR``
(default ``~/.cache/tessera/models``) on first use; torch is needed once.

Per model: latency of Tessera and onnxruntime (medians of interleaved
batches, each after a pause: ``codegen.timing.interleaved``), the ratio
Tessera / onnxruntime (targets: <= 1.0x for all three), the spread of each,
whether the outputs agree, and with ``--profile`` where Tessera's time goes
(kernel calls summed by fused group name).  ``--dense`` also times the packed
dense M=128, K=768, N=3072 against numpy's matmul (target >= 0.9x numpy's speed).
``TESSERA_BENCH_THREADS=1`` compares single-threaded runs (less sensitive to a
loaded machine).
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from codegen.timing import format_time, interleaved, spread, summary
from graph.cli.timing import differences, ort_session
from graph.onnx import zoo_transformers as M

MODELS = ["encoder4", "bert_base", "gpt6"]
THREADS = int(os.environ.get("TESSERA_BENCH_THREADS", "2"))


def build(name: str):
    """(executor, feed, path, seconds) of one model."""
    import graph

    spec = M.SPECS[name]
    path = M.model_path(name)
    start = time.perf_counter()
    g, params = graph.from_onnx(path, shape={spec.input_name: spec.input_shape()})
    lib = graph.build(g, params=params)
    seconds = time.perf_counter() - start
    feed = {spec.input_name: M.sample_input(spec).numpy()}
    m = lib.create_executor()
    m.set_input(**feed)
    return m, feed, path, seconds


def profile(m, number: int = 5) -> list:
    """(group name, ms summed over its calls, calls), slowest first."""
    total: dict = collections.defaultdict(float)
    calls: dict = collections.Counter()
    for label, seconds in m.profile_kernels(number):
        key = label.split("(")[0].strip()
        total[key] += seconds * 1e3
        calls[key] += 1
    return sorted(((k, total[k], calls[k]) for k in total), key=lambda r: -r[1])


def bench_model(name: str, repeat: int, with_profile: bool) -> dict:
    import codegen

    codegen.set_num_threads(THREADS)
    m, feed, path, seconds = build(name)
    row = {"model": name, "build_s": seconds}
    sess, why = ort_session(path, THREADS)
    fns = {"tessera": m.run}
    if sess is not None:
        m.run()
        abs_d, _, agree = differences(m.get_output(0), sess.run(None, feed)[0])
        row.update(max_abs=abs_d, agree=agree)
        fns["onnxruntime"] = lambda: sess.run(None, feed)
    else:
        print(f"[{name}] onnxruntime: {why}", file=sys.stderr)
    samples = interleaved(fns, repeat)
    row.update(summary(samples))
    if "onnxruntime" in row:
        row["ratio"] = row["tessera"] / row["onnxruntime"]
        row["ratio_min"] = row["tessera_best"] / row["onnxruntime_best"]
    if with_profile:
        row["profile"] = profile(m)
    return row


def bench_dense(repeat: int) -> dict:
    """The packed dense M=128, K=768, N=3072 next to numpy's ``x @ W.T`` (interleaved)."""
    import codegen
    import te
    import topi

    codegen.set_num_threads(THREADS)
    m_, k_, n_ = 128, 768, 3072
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m_, k_)).astype("float32")
    w = rng.standard_normal((n_, k_)).astype("float32")
    bn = topi.x86.default_dense_pack_config(m_, n_, k_)["bn"].val
    wp = topi.x86.pack_dense_weight_numpy(w, bn)
    X, W = te.placeholder(x.shape, name="x"), te.placeholder(wp.shape, name="w")
    out = topi.x86.dense_pack(X, W, units=n_)
    f = codegen.build(topi.x86.schedule_dense_pack(out), [X, W, out], name="dense_pack")
    y = np.empty((m_, n_), "float32")
    f(x, wp, y)
    np.testing.assert_allclose(y, x @ w.T, rtol=1e-3, atol=1e-3)
    wt = np.ascontiguousarray(w.T)
    samples = interleaved({"tessera": lambda: f(x, wp, y), "numpy": lambda: np.matmul(x, wt)}, repeat)
    t, npy = statistics.median(samples["tessera"]), statistics.median(samples["numpy"])
    flops = 2 * m_ * n_ * k_
    return {
        "tessera": t,
        "numpy": npy,
        "gflops": flops / t / 1e9,
        "numpy_gflops": flops / npy / 1e9,
        "speed_vs_numpy": npy / t,
        "spread": {k: spread(s) for k, s in samples.items()},
    }


def report(rows: list, dense: dict | None) -> None:
    head = (
        f"{'model':10} {'Tessera':>10} {'onnxruntime':>12} {'T/ORT':>6} {'best T/ORT':>11} {'outputs':>8} "
        f"{'build':>7} {'spread T/ORT':>13}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        ort_t = format_time(r["onnxruntime"]) if "onnxruntime" in r else "-"
        ratio = f"{r['ratio']:.2f}x" if "ratio" in r else "-"
        best = f"{r['ratio_min']:.2f}x" if "ratio_min" in r else "-"
        agree = ("agree" if r["agree"] else "DIFFER") if "agree" in r else "-"
        spread = f"{r['tessera_spread']:.0%}/{r.get('onnxruntime_spread', float('nan')):.0%}"
        print(
            f"{r['model']:10} {format_time(r['tessera']):>10} {ort_t:>12} {ratio:>6} {best:>11} {agree:>8} "
            f"{r['build_s']:5.1f} s {spread:>13}"
        )
    print(
        f"{THREADS} threads each; medians of interleaved batches (best: ratio of the fastest batches, "
        f"steadier on a loaded machine); targets: T/ORT <= 1.0x"
    )
    for r in rows:
        if "profile" in r:
            print(f"\n{r['model']}: kernel time by fused group (ms, summed over calls)")
            for key, ms, calls in r["profile"][:12]:
                print(f"  {ms:8.2f} ms  {calls:3d} calls  {key}")
    if dense is not None:
        print(
            f"\ndense_pack 128x768 -> 3072: {dense['tessera'] * 1e3:.3f} ms ({dense['gflops']:.0f} GFLOP/s), "
            f"numpy {dense['numpy'] * 1e3:.3f} ms ({dense['numpy_gflops']:.0f} GFLOP/s): "
            f"{dense['speed_vs_numpy']:.2f}x numpy's speed (target >= 0.9x); spread "
            + ", ".join(f"{k} {v:.0%}" for k, v in dense["spread"].items())
        )


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", help=f"models (default: {', '.join(MODELS)})")
    parser.add_argument("--repeat", type=int, default=7, help="interleaved batches per system (default 7)")
    parser.add_argument("--profile", action="store_true", help="also print Tessera's kernel time by group")
    parser.add_argument("--dense", action="store_true", help="also time the 128x768x3072 packed dense")
    args = parser.parse_args(argv)
    names = args.models or MODELS
    unknown = [n for n in names if n not in M.SPECS]
    if unknown:
        raise SystemExit(f"transformer_models: unknown {unknown}; models: {', '.join(M.SPECS)}")
    rows = []
    for name in names:
        print(f"[{name}] ...", file=sys.stderr, flush=True)
        rows.append(bench_model(name, args.repeat, args.profile))
    report(rows, bench_dense(args.repeat) if args.dense else None)
    return rows


if __name__ == "__main__":
    main()
