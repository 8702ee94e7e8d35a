"""Tuned speed, deployed: each tuned convolution of a log, built alone through ``graph.build``
under ``apply_history_best``, its kernel timed as the graph runs it, against the record's cost.

The "deployed within 5% of what tuning recorded" figure. For every distinct conv of the log
(direct and Winograd records of one conv count as one: the build picks between them), a graph
of that one conv (NCHW input, constant weights) is built with the records; the conv node's
kernel call is timed in 5 ms windows for ``--seconds`` and its 10th percentile (the machine's
fast state: this VM drifts between speed states for seconds at a time) is set against the best
record's cost (the runner's settled scale, also a fast-state figure). It also checks that the
build chose the recorded config.

    python benchmarks/tune_deploy.py --log /tmp/resnet50.jsonl
    python benchmarks/tune_deploy.py --log /tmp/resnet50.jsonl --limit 4 --seconds 2

Timings share the machine with whatever else runs on it; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import graph
from graph import GraphBuilder
from graph.cli import set_threads
from tune import autotvm
from tune.autotvm import record

CONV_TEMPLATES = ("conv2d_NCHWc.x86", "conv2d_winograd.x86")
WINDOW_S = 0.005


def best_per_conv(log: str) -> dict:
    """conv args -> (template name, best MeasureInput, best cost in seconds) over both implementations."""
    best: dict = {}
    for inp, res in record.best_by_workload(record.load_from_file(log)).values():
        cost = sum(res.costs) / len(res.costs)
        key = tuple(inp.task.args)
        if inp.task.name in CONV_TEMPLATES and (key not in best or cost < best[key][2]):
            best[key] = (inp.task.name, inp, cost)
    return best


def conv_graph(args: tuple):
    dshape, kshape, strides, padding, dilation, groups = args[:6]
    rng = np.random.default_rng(0)
    b = GraphBuilder("one_conv")
    x = b.input("x", tuple(dshape))
    w = b.const((rng.standard_normal(tuple(kshape)) * 0.1).astype("float32"), "w")
    y = b.op("conv2d", x, w, name="conv", strides=tuple(strides), padding=tuple(padding),
             dilation=tuple(dilation), groups=int(groups))
    return b.finish([y]), rng.standard_normal(tuple(dshape)).astype("float32")


def time_call(call, seconds: float) -> tuple:
    """(10th percentile, median) seconds per call over ``seconds`` of WINDOW_S windows."""
    call()
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < WINDOW_S:
            call()
            n += 1
        samples.append((time.perf_counter() - t0) / n)
    return float(np.percentile(samples, 10)), statistics.median(samples)


def deployed(args: tuple, log: str, seconds: float) -> tuple:
    """(chosen config of the conv node, p10 seconds, median seconds) of the conv built with ``log``."""
    g, data = conv_graph(args)
    with autotvm.apply_history_best(log):
        lib = graph.build(g, target="llvm")
    m = lib.create_executor()
    m.run(x=data)
    calls = [c for c, spec in zip(m._calls, m.plan["calls"]) if "conv" in spec["label"]]
    if len(calls) != 1:
        raise RuntimeError(f"expected one conv kernel call, found {len(calls)}: "
                           f"{[s['label'] for s in m.plan['calls']]}")
    chosen = node_configs(lib.graph)
    p10, med = time_call(calls[0], seconds)
    return chosen, p10, med


def node_configs(g) -> list:
    """(op, config) of every node that carries one, inside fused groups too."""
    out = []
    for n in g.nodes:
        if n.op == "fused":
            out += node_configs(n.attrs["body"])
        elif n.attrs.get("config") is not None:
            out.append((n.op, n.attrs["config"]))
    return out


def knob_values(cfg) -> dict:
    return {k: getattr(e, "val", e) for k, e in cfg._entity_map.items()}


def same_config(chosen: list, want: dict) -> bool:
    """Whether a built node carries the recorded knob values."""
    return any(all(cfg.values.get(k) == v for k, v in want.items()) for _, cfg in chosen)


def main(argv: list | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", required=True, help="records of a tuning run (tessera tune / tune_model.py)")
    p.add_argument("--limit", type=int, default=None, help="only the first N convs of the log")
    p.add_argument("--seconds", type=float, default=4.0, help="timing window per conv (default 4)")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    set_threads(a.threads)
    rows = []
    for k, (args, (name, inp, cost)) in enumerate(best_per_conv(a.log).items()):
        if a.limit is not None and k >= a.limit:
            break
        chosen, p10, med = deployed(args, a.log, a.seconds)
        ratio = p10 / cost
        rows.append(ratio)
        same = same_config(chosen, knob_values(inp.config))
        dshape, kshape, strides = args[0], args[1], args[2]
        print(f"{dshape[1]:4d}->{kshape[0]:4d} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]:3d} {name:20s} "
              f"recorded {cost * 1e3:7.3f} ms  deployed p10 {p10 * 1e3:7.3f} ms (median {med * 1e3:7.3f})  "
              f"{ratio:5.2f}x  {'recorded config' if same else f'OTHER config {chosen}'}", flush=True)
    if rows:
        within = sum(abs(r - 1) <= 0.05 for r in rows)
        print(f"deployed/recorded: median {statistics.median(rows):.3f}, range {min(rows):.3f}-{max(rows):.3f}, "
              f"{within}/{len(rows)} within 5%")
    return rows


if __name__ == "__main__":
    main()
