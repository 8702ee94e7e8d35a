"""Where a model's time goes, layer by layer, against onnxruntime's.

Each conv workload's kernel calls are timed in place, inside whole runs of the model (as deployed:
every other layer runs between two calls of one, so its weights come from memory and its inputs
from whichever thread wrote them), next to the per-node kernel times onnxruntime's profiler reports
for its convs of the same shapes.  The two run in alternating windows of ``--window`` seconds, each
after a pause (onnxruntime's threads spin after a call), so both see the same states of this VM.
The table lists the workloads by what Tessera loses (or gains) on them in all of their calls; the
other kernels (pools, dense, layout transforms) are summed by kind.

    python benchmarks/model_layers.py resnet50
    python benchmarks/model_layers.py resnet50 --records r50.jsonl --seconds 40

A kernel's time in place counts what it pays for the model around it (weights from memory,
inputs written by another thread), which a benchmark of the layer alone does not see.  Timings
share the machine with whatever else runs on it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import numpy as np  # noqa: E402

from tune_deploy import model_nodes  # noqa: E402

from graph.cli.timing import ort_session  # noqa: E402
from graph.cli.model import set_threads  # noqa: E402
from graph.onnx.zoo import light_model_path  # noqa: E402
from graph.tuning import node_configs  # noqa: E402

PAUSE_S = 0.25  # before each window: the other runtime's threads spin after a call


def conv_key(dshape, kshape, oshape) -> tuple:
    """(input C, H, W), (output channels, KH, KW), output (H, W): a conv's shapes, as both
    runtimes report them (the output's size carries the stride and padding)."""
    return tuple(dshape[1:4]), (kshape[0], *kshape[2:4]), tuple(oshape[2:4])


def tessera_calls(model: str, records: str | None) -> tuple:
    """``(executor, [(conv key, template) or (kernel label, None) per call])`` of the model built
    with ``records``."""
    m, nodes = model_nodes(model, records)
    keys = []
    for (_, node), spec in zip(nodes, m.plan["calls"]):
        convs = [c for c in node_configs(node) if c.template.startswith("conv2d")]
        if convs:
            wl = convs[0].workload  # (name, data shape, kernel shape, strides, pads, ...)
            keys.append((conv_key(wl[1], wl[2], node.outputs[0].shape), convs[0].template.split(".")[0]))
        else:
            keys.append((spec["label"], None))
    return m, keys


def ort_node_times(events: list) -> tuple:
    """``({conv key: [median ms of each node]}, {op type: ms})`` from onnxruntime's profile."""
    durations, info = collections.defaultdict(list), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            durations[e["name"]].append(e["dur"] / 1e3)
            info[e["name"]] = e["args"]
    convs, others = collections.defaultdict(list), collections.Counter()
    for name, ds in durations.items():
        args, ms = info[name], statistics.median(ds)
        shapes = [next(iter(x.values())) for x in args.get("input_type_shape", [])]
        out = [next(iter(x.values())) for x in args.get("output_type_shape", [])]
        if "Conv" in args.get("op_name", "") and len(shapes) >= 2 and out:
            convs[conv_key(shapes[0], shapes[1], out[0])].append(ms)
        else:
            others[args.get("op_name", "?")] += ms
    return convs, others


def main(argv: list | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model", nargs="?", default="resnet50", help="light zoo name or .onnx path (default resnet50)")
    p.add_argument("--records", default=None, help="tuning records to build with (tessera tune's log)")
    p.add_argument("--seconds", type=float, default=20.0, help="timing per runtime, in all (default 20)")
    p.add_argument("--window", type=float, default=1.0, help="seconds of one runtime before the other's turn")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    set_threads(a.threads)
    path = a.model if a.model.endswith(".onnx") else light_model_path(a.model)
    m, keys = tessera_calls(path, a.records)
    sess, why = ort_session(path, a.threads, profile=os.path.join(tempfile.mkdtemp(prefix="model_layers_"), "ort"))
    if sess is None:
        raise SystemExit(f"model_layers: {why}")
    rng = np.random.default_rng(0)
    feed = {i.name: rng.standard_normal([d if isinstance(d, int) else 1 for d in i.shape]).astype(np.float32)
            for i in sess.get_inputs()}
    runs, t0 = [], time.perf_counter()
    m.run()
    per_window = max(1, round(a.window / max(time.perf_counter() - t0, 1e-6)))
    for _ in range(max(1, round(a.seconds / a.window))):
        time.sleep(PAUSE_S)
        runs += [t for _, t in m.profile_kernels(per_window, in_place=True)],
        time.sleep(PAUSE_S)
        end = time.perf_counter() + a.window
        while time.perf_counter() < end:
            sess.run(None, feed)
    with open(sess.end_profiling()) as f:
        ort_convs, ort_others = ort_node_times(json.load(f))
    ours = np.median(np.array(runs), axis=0) * 1e3
    mine, other = collections.defaultdict(list), collections.Counter()
    for (key, kind), ms in zip(keys, ours):
        if kind is None:
            other[key] += ms
        else:
            mine[key].append((ms, kind))
    rows = []
    for key, calls in mine.items():
        theirs = ort_convs.get(key, [])
        t_sum, o_sum = sum(ms for ms, _ in calls), sum(theirs)
        rows.append((t_sum - o_sum, key, calls, t_sum, o_sum, len(theirs)))
    rows.sort(key=lambda r: -r[0])
    print(f"{a.model}: Tessera {ours.sum():.2f} ms in its kernels, onnxruntime {sum(map(sum, ort_convs.values())) + sum(ort_others.values()):.2f} ms in its nodes "
          f"({a.threads} threads, {len(runs)} windows each)")
    print(f"{'conv: input CxHxW -> output C KxK @H':35s} {'template':10s} {'calls':6s} {'Tessera':>9s} "
          f"{'onnxrt':>9s} {'ratio':>6s} {'diff ms':>7s}")
    for diff, (dshape, kshape, oshape), calls, t_sum, o_sum, n in rows:
        label = f"{dshape[0]:4d}x{dshape[1]:3d}x{dshape[2]:<3d} -> {kshape[0]:4d} {kshape[1]}x{kshape[2]} @{oshape[0]:3d}"
        kinds = "/".join(sorted({k.replace('conv2d_', '') for _, k in calls}))
        ratio = f"{t_sum / o_sum:6.2f}" if o_sum else "     -"
        print(f"{label:35s} {kinds:10s} {len(calls):3d}/{n:<2d} {t_sum:7.3f}ms {o_sum:7.3f}ms {ratio} {diff:+7.3f}")
    conv_t, conv_o = sum(r[3] for r in rows), sum(r[4] for r in rows)
    print(f"{'all convs':53s} {conv_t:7.3f}ms {conv_o:7.3f}ms {conv_t / conv_o:6.2f} {conv_t - conv_o:+7.3f}")
    print("other kernels, Tessera: " + ", ".join(f"{k} {v:.3f}" for k, v in other.most_common() if v >= 0.005))
    print("other nodes, onnxruntime: " + ", ".join(f"{k} {v:.3f}" for k, v in ort_others.most_common() if v >= 0.005))
    return {"rows": rows, "tessera_ms": float(ours.sum()), "other": dict(other), "ort_other": dict(ort_others)}


if __name__ == "__main__":
    main()
