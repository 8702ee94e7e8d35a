"""Every model a user exports imports: one build per model, run at batch 1 and 4, against onnxruntime.

Run ``python benchmarks/check_user_models.py [MODEL ...] [--batches 1 4] [--json FILE]``
(``MODEL``: names or substrings of ``make_user_models.MODELS``; default all).
Each model, exported with a dynamic batch axis by ``benchmarks/make_user_models.py``
into the cache, is imported *without* pinning the batch (``graph.from_onnx(path)``
gives a ``DynamicGraph``), built once (``graph.build``), and run at each batch
size from that one build (the kernels are specialised per batch on first use).
Per model and batch: whether it ran, the largest difference from onnxruntime
relative to the output's scale, and the seconds the first run took (import,
compile and run of that batch's specialisation) and a second run took.

``--static`` measures the dynamic build against static ones: per batch, the
model imported with that batch pinned (``graph.from_onnx(path, shape=...)``)
and built; the report gives the static import+build seconds beside the
dynamic build's cost for that signature (its first run less a later run) and
the run time of both, timed in interleaved paired rounds (median ratio
dynamic / static with its quartiles).

Each model runs in its own process (a failure or a crash is reported, the next
model goes on).  Exit status 1 when a model fails to import, build, run or match.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_user_models as U

TOLERANCE = 1e-3  # max |tessera - onnxruntime| / max(|onnxruntime|, 1)


def check_one(name: str, batches: list, static: bool = False) -> dict:
    """Import, build once, run at every batch size, compare with onnxruntime (and, with
    ``static``, time each batch against a build with that batch pinned)."""
    import numpy as np
    import onnxruntime as ort

    import graph

    path = U.model_path(name)
    spec = U.MODELS[name]
    out: dict = {"model": name}
    start = time.perf_counter()
    g, params = graph.from_onnx(path)
    out["dynamic"] = bool(getattr(g, "is_dynamic", False))
    lib = graph.build(g, params=params)
    m = lib.create_executor()
    out["import_build_s"] = time.perf_counter() - start
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    for b in batches:
        feeds = U.sample_inputs(spec, b)
        t = time.perf_counter()
        m.run(**feeds)
        first = time.perf_counter() - t
        t = time.perf_counter()
        m.run(**feeds)
        second = time.perf_counter() - t
        got, want = m.get_output(0), sess.run(None, feeds)[0]
        scale = max(float(np.abs(want).max()), 1.0)
        err = float(np.abs(got.astype(np.float64) - want).max()) / scale if got.shape == want.shape else float("inf")
        out[f"batch{b}"] = {"shape": list(got.shape), "rel_err": err, "first_run_s": first, "run_s": second,
                            "ok": bool(err <= TOLERANCE)}
        if static:
            out[f"batch{b}"]["static"] = against_static(path, feeds, m, got)
    return out


def against_static(path: str, feeds: dict, dynamic, got) -> dict:
    """A build of ``path`` with the batch of ``feeds`` pinned: its import+build seconds, whether
    it computes what the dynamic build did, and the run time of both in paired rounds."""
    import numpy as np

    import graph
    from codegen.timing import paired, paired_ratio

    start = time.perf_counter()
    g, params = graph.from_onnx(path, shape={k: v.shape for k, v in feeds.items()})
    s = graph.build(g, params=params).create_executor()
    build_s = time.perf_counter() - start
    s.run(**feeds)
    same = bool(np.allclose(s.get_output(0), got, rtol=1e-5, atol=1e-6))
    rounds = paired({"dynamic": lambda: dynamic.run(**feeds), "static": lambda: s.run(**feeds)}, seconds=10)
    ratio = paired_ratio(rounds, "dynamic", "static")
    return {"import_build_s": build_s, "same_output": same, "dynamic_s": float(np.median(rounds["dynamic"])),
            "static_s": float(np.median(rounds["static"])), "ratio": list(ratio)[:3], "rounds": ratio.rounds}


def run_isolated(name: str, batches: list, timeout: float, static: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--one", name, "--batches", *map(str, batches)] + ["--static"] * static
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": name, "error": f"no result after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"model": name, "error": tail[:400]}
    return json.loads(lines[-1])


def report(r: dict, batches: list) -> str:
    if "error" in r:
        return f"{r['model']:22} FAILED  {r['error']}"
    parts = [f"{r['model']:22} {'dynamic' if r['dynamic'] else 'static ':7} import+build {r['import_build_s']:6.1f} s"]
    for b in batches:
        x = r[f"batch{b}"]
        parts.append(f"b{b}: {'ok ' if x['ok'] else 'BAD'} err {x['rel_err']:.1e} first {x['first_run_s']:6.1f} s "
                     f"run {x['run_s'] * 1e3:8.1f} ms")
        if "static" in x:
            st = x["static"]
            mid, lo, hi = st["ratio"]
            parts.append(f"[static build {st['import_build_s']:5.1f} s vs dynamic {x['first_run_s'] - x['run_s']:5.1f} s; "
                         f"run {st['static_s'] * 1e3:.1f} vs {st['dynamic_s'] * 1e3:.1f} ms, dynamic/static "
                         f"{mid:.2f}x ({lo:.2f}-{hi:.2f}, {st['rounds']} rounds){'' if st['same_output'] else ', OUTPUT DIFFERS'}]")
    return "  ".join(parts)


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 4])
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per model (default 1800)")
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--static", action="store_true", help="time each batch against a build with it pinned")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(check_one(args.one, args.batches, args.static)))
        return 0
    names = [n for n in U.MODELS if not args.names or any(p == n or p in n for p in args.names)]
    results, bad = [], 0
    for name in names:
        r = run_isolated(name, args.batches, args.timeout, args.static)
        results.append(r)
        ok = "error" not in r and all(r[f"batch{b}"]["ok"] and r[f"batch{b}"].get("static", {}).get("same_output", True)
                                      for b in args.batches)
        bad += not ok
        print(report(r, args.batches), flush=True)
    print(f"{len(results) - bad} of {len(results)} models import, build once, run at batches {args.batches} and "
          f"match onnxruntime")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
