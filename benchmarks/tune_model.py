"""Whole-model tuning figure: a light ONNX model tuned (``tessera tune``'s loop), then timed
with the rule defaults, with the records, and with onnxruntime, interleaved in one run.

::

    python benchmarks/tune_model.py resnet50 --trials 2000 --budget 20 --log /tmp/resnet50.jsonl
    python benchmarks/tune_model.py resnet50 --trials 0 --log /tmp/resnet50.jsonl   # time an existing log
    python benchmarks/tune_model.py resnet50 --template conv2d_winograd.x86 --per-task 128 --log /tmp/w.jsonl

Run again with the same ``--log`` to resume (nothing already measured is measured again).
The timings share the machine with whatever else runs on it; say so next to the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import graph
from graph.cli.common import RTOL
from codegen.timing import paired, paired_ratio
from graph.cli.timing import ort_session
from graph.cli.model import random_inputs, set_threads
from graph.onnx.zoo import light_model_path
from graph.tuning import GraphProgram
from tune import autotvm, deployed, network


def layout_transforms(lib) -> int:
    """``layout_transform`` nodes in a built model, inside its fused groups or alone."""
    return sum(n.op == "layout_transform" for group in lib.graph.nodes
               for n in (group.attrs["body"].nodes if "body" in group.attrs else (group,)))


def main(argv: list | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", nargs="?", default="resnet50", help="a light zoo name or an .onnx path")
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--budget", type=float, default=None, help="minutes of tuning at most")
    p.add_argument("--log", required=True)
    p.add_argument("--tuner", default="xgb")
    p.add_argument("--seconds", type=float, default=90.0, help="seconds of paired timing rounds")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--template", action="append", default=[],
                   help="tune only the tasks of this template (repeatable), e.g. conv2d_winograd.x86")
    p.add_argument("--per-task", type=int, default=None, metavar="N",
                   help="N trials for every task tuned (instead of --trials spread by the tasks' shares)")
    p.add_argument("--flush", action="store_true",
                   help="time candidates with their weights out of the caches (the runner's enable_cpu_cache_flush)")
    args = p.parse_args(argv)
    path = args.model if args.model.endswith(".onnx") else light_model_path(args.model)
    set_threads(args.threads)
    g, params = graph.from_onnx(path)
    target = "llvm"
    t0 = time.perf_counter()
    tasks = autotvm.task.extract_from_program(g, params, target)
    print(f"{len(tasks)} tasks extracted in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if args.template:
        tuned = [t for t in tasks if t.name in args.template]
        if not tuned:
            raise SystemExit(f"tune_model: no task of {args.template}; templates: {sorted({t.name for t in tasks})}")
    else:
        tuned = tasks
    program = GraphProgram(g, params, target)
    records = network.read_log(args.log, target)
    plan = [args.per_task] * len(tuned) if args.per_task else network.spread_trials(tuned, max(args.trials, 1))
    for line in network.tune_plan(tuned, plan, records):
        print(line, file=sys.stderr)
    t0 = time.perf_counter()
    done, again, placed = {}, 0, 0
    if args.trials > 0 or args.per_task:
        option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(
            **network.RUNNER_OPTIONS, enable_cpu_cache_flush=args.flush))
        done = network.tune_tasks(tuned, plan, args.log, args.tuner,
                                  network.search_budget(None if args.budget is None else 60 * args.budget, tuned),
                                  records, measure_option=option, stream=sys.stderr)
        after, again = deployed.confirm_deployed(program, args.log, tuned, option, stream=sys.stderr)
        after, placed = deployed.confirm_in_place(program, args.log, tuned, stream=sys.stderr)
    else:
        after = program.build(records=args.log)
    tune_s = time.perf_counter() - t0
    before = program.build()
    changed = deployed.records_changed_note(program, before, after)
    feed = random_inputs({v.name: (tuple(v.shape), v.dtype) for v in before.graph.inputs}, 0)
    fns, outs, transforms = {}, {}, {}
    for name, lib in (("default", before), ("tuned", after)):
        transforms[name] = layout_transforms(lib)
        m = lib.create_executor()
        m.set_input(**feed)
        m.run()
        outs[name] = m.get_output(0).copy()
        fns[name] = m.run
    sess, why = ort_session(path, args.threads)
    if sess is not None:
        ort_feed = {i.name: feed[i.name] for i in sess.get_inputs() if i.name in feed}
        outs["onnxruntime"] = sess.run(None, ort_feed)[0]
        fns["onnxruntime"] = lambda: sess.run(None, ort_feed)
    else:
        print(f"onnxruntime not run: {why}", file=sys.stderr)
    scale = float(np.abs(outs["default"]).max()) or 1.0
    for name, y in outs.items():
        assert np.allclose(y, outs["default"], rtol=RTOL, atol=1e-4 * scale), f"{name} disagrees with default"
    rounds = paired(fns, args.seconds)
    med = {k: statistics.median(rounds[k]) for k in fns}
    print(f"{args.model}: {len(tasks)} tasks, {sum(done.values()) + again} trials measured and {placed} configs "
          f"timed in whole runs in {tune_s:.0f} s "
          f"(log {args.log}: {len(network.read_log(args.log, target))} records); "
          f"{len(rounds['tuned'])} paired rounds")
    base = "onnxruntime" if "onnxruntime" in fns else "default"
    for k, v in med.items():
        ratio = ""
        if k != base:
            r, lo, hi, _ = paired_ratio(rounds, k, base)
            ratio = f"  ({r:.3f}x {base}'s time, IQR {lo:.3f}-{hi:.3f})"
        shuffles = f", {transforms[k]} layout transforms" if k in transforms else ""
        print(f"  {k:12} {v * 1e3:8.2f} ms{ratio}{shuffles}")
    r, lo, hi, _ = paired_ratio(rounds, "tuned", "default")
    print(f"  tuned / default: {r:.3f} (IQR {lo:.3f}-{hi:.3f})")
    print(f"  {changed}")
    return med


if __name__ == "__main__":
    main()
