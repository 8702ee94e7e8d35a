"""Tuned speed, deployed: the tuned convolutions of a log, timed where the model built with the
records calls them, against the records' costs.

The model (``--model``, ResNet-50 by default) is built with the log; every kernel call whose fused
group holds a conv config of the log (direct or Winograd) is timed three ways:

* in a loop, in 5 ms windows for ``--seconds``: its 10th percentile against the record (and
  against the deployed config's warm readings, where cold or in-place ones rank the workload);
* alternated, round by round, with the recorded config built alone from its template (the
  kernel the runner timed): the median ratio says whether deployment keeps the tuned kernel's
  speed (its fused epilogue, the model's buffers), the machine's drift cancelled;
* in place, inside whole runs of the model at ``--passes`` + 1 moments: the median over the
  moments of each call's median, against the record (an in-place reading where the tune took
  them, ``tune.deployed.confirm_in_place``).

It also says whether the build chose the recorded config: the best record, or the rule's config
where no record beat it by more than ``tune.autotvm.choose.RECORD_MARGIN``.

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
from codegen import timing
from graph.cli.model import random_inputs, set_threads
from graph.onnx.zoo import light_model_path
from graph.tuning import GraphProgram, node_configs
from tune import record

CONV_TEMPLATES = ("conv2d_NCHWc.x86", "conv2d_winograd.x86")
WINDOW_S = 0.005


def best_per_conv(records) -> dict:
    """conv args -> (template name, best MeasureInput, best cost in seconds) over both implementations
    (``records``: a log's path or its (input, result) pairs)."""
    best: dict = {}
    for inp, res in record.best_by_workload(record.load_records(records)).values():
        cost = res.cost
        key = tuple(inp.task.args)
        if inp.task.name in CONV_TEMPLATES and (key not in best or cost < best[key][2]):
            best[key] = (inp.task.name, inp, cost)
    return best


def measured_configs(records) -> dict:
    """(template, args, knob values) -> (MeasureInput, cost) of every conv config the log measured
    without error (its median measurement, as the records rank it)."""
    return {(inp.task.name, tuple(inp.task.args), tuple(sorted(inp.config.knob_values().items()))): (inp, res.cost)
            for rows in record.ranked_by_workload(record.load_records(records)).values()
            for inp, res in rows if inp.task.name in CONV_TEMPLATES}


def warm_configs(records) -> dict:
    """:func:`measured_configs` of the warm readings alone (the runner without its flush, outside
    the model): what the loop figures, which call a kernel warm, compare with where cold or
    in-place readings rank the workload."""
    return measured_configs([(inp, res) for inp, res in record.load_records(records) if res.warm])


def measured_key(cfg) -> tuple:
    """A built node's config as :func:`measured_configs` keys it."""
    return cfg.template, tuple(cfg.workload[1:]), tuple(sorted(cfg.values.items()))


def deployed_record(cfgs: list, args: tuple, measured: dict):
    """The log's (MeasureInput, cost) of the conv config a call deployed, or None."""
    for cfg in cfgs:
        if cfg.template in CONV_TEMPLATES and tuple(cfg.workload[1:]) == args:
            return measured.get(measured_key(cfg))
    return None


def time_call(call, seconds: float) -> tuple:
    """(10th percentile, median) seconds per call over ``seconds`` of WINDOW_S windows."""
    call()
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        samples.append(window(call))
    return float(np.percentile(samples, 10)), statistics.median(samples)


def window(call) -> float:
    """Seconds per call over one WINDOW_S window of calls back to back."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < WINDOW_S:
        call()
        n += 1
    return (time.perf_counter() - t0) / n


def task_kernel(inp):
    """A call of the recorded config built alone from its template (what the runner timed, on
    buffers aligned as the runner's and the executor's are)."""
    import codegen
    from codegen.ndarray import aligned

    s, args = inp.task.instantiate(inp.config)
    mod = codegen.build(s, args, target=inp.task.target)
    rng = np.random.default_rng(0)
    arrays = [aligned(rng.uniform(-1, 1, tuple(int(d) for d in t.shape)).astype(t.dtype)) for t in args]
    return lambda: mod(*arrays)


def interleaved_ratio(deployed_call, alone_call, seconds: float) -> float:
    """Median over paired rounds of (deployed / alone), the drift of the machine cancelled
    (``codegen.timing.paired``: each round takes the fastest of three calls of each)."""
    rounds = timing.paired({"deployed": deployed_call, "alone": alone_call}, seconds, settle=0.0)
    return timing.paired_ratio(rounds, "deployed", "alone").median


def model_nodes(model: str, log: str | None) -> tuple:
    """``(executor, [(kernel call, its graph node), ...])`` of ``model`` (light zoo name or .onnx)
    built with the records of ``log`` (None: the rule defaults), inputs set, run once."""
    path = model if model.endswith(".onnx") else light_model_path(model)
    g, params = graph.from_onnx(path)
    lib = GraphProgram(g, params, "llvm").build(records=log)
    m = lib.create_executor()
    m.set_input(**random_inputs({v.name: (tuple(v.shape), v.dtype) for v in lib.graph.inputs}, 0))
    m.run()
    return m, list(zip(m._calls, [node for node, key in lib.steps if key is not None]))


def model_calls(model: str, log: str) -> tuple:
    """``(executor, [(kernel call, [config, ...]), ...])`` of ``model`` built with ``log``."""
    m, nodes = model_nodes(model, log)
    return m, [(call, node_configs(node)) for call, node in nodes]


def in_place_moment(m, seconds: float):
    """Each kernel call's median seconds in whole runs of executor ``m`` over about ``seconds`` (5 runs at least)."""
    t0 = time.perf_counter()
    m.run()
    number = max(5, round(seconds / max(time.perf_counter() - t0, 1e-6)))
    return np.median(m.kernel_runs(number), axis=0)


def same_config(chosen: list, want: dict) -> bool:
    """Whether a built node carries the recorded knob values."""
    return any(all(cfg.values.get(k) == v for k, v in want.items()) for cfg in chosen)


def config_note(mine: list, inp) -> str:
    """What the calls deployed against the record ``inp``: its config, the rule's config read in
    its data's block (the record being the rule's own: ``tune.autotvm.choose.rule_in_block``, which a
    log of single layers holds no record of), or another config."""
    from tune.autotvm.choose import rule_variants

    want = inp.config.knob_values()
    if all(same_config(cfgs, want) for _, cfgs in mine):
        return "recorded config"
    variants = rule_variants(tuple(inp.task.workload), inp.task.target)
    chosen = [cfg for _, cfgs in mine for cfg in cfgs if cfg.template == inp.task.name]
    if want == variants[0] and chosen and all(cfg.values in variants[1:] for cfg in chosen):
        return f"the rule's config in its data's block ({chosen[0].values})"
    return "OTHER config " + str(mine[0][1])


def summary(label: str, ratios: list) -> str:
    """``label: median, range, how many within 5% of 1`` of deployed/recorded ratios."""
    within = sum(abs(r - 1) <= 0.05 for r in ratios)
    return (f"{label}: median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}, "
            f"{within}/{len(ratios)} within 5%")


def main(argv: list | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", required=True, help="records of a tuning run (tessera tune / tune_model.py)")
    p.add_argument("--model", default="resnet50", help="the model the log was tuned for (light zoo name or .onnx)")
    p.add_argument("--limit", type=int, default=None, help="only the first N convs of the log")
    p.add_argument("--seconds", type=float, default=4.0, help="timing window per kernel call (default 4)")
    p.add_argument("--passes", type=int, default=3, help="moments after the first of the in-place timing")
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args(argv)
    set_threads(a.threads)
    records = record.load_records(a.log)
    best, measured, warm = best_per_conv(records), measured_configs(records), warm_configs(records)
    m, calls = model_calls(a.model, a.log)
    calls_at = {id(call): k for k, call in enumerate(m._calls)}
    moments = [in_place_moment(m, a.seconds / (a.passes + 1))]
    rows, warm_rows, paired, placed, convs_placed = [], [], [], [], []
    for k, (args, (name, inp, cost)) in enumerate(best.items()):
        if a.limit is not None and k >= a.limit:
            break
        convs = [(call, cfgs) for call, cfgs in calls
                 if any(cfg.template in CONV_TEMPLATES and tuple(cfg.workload[1:]) == args for cfg in cfgs)]
        mine = [(call, cfgs) for call, cfgs in convs if any(cfg.template == name for cfg in cfgs)]
        dshape, kshape, strides = args[0], args[1], args[2]
        label = f"{dshape[1]:4d}->{kshape[0]:4d} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]:3d} {name:20s}"
        if not mine:
            print(f"{label} " + ("deployed by the other template (the log holds no record of the one the "
                                 "build chose)" if convs else "not called by the model"), flush=True)
            continue
        hit = deployed_record(mine[0][1], args, measured)  # the build may keep the rule over a record
        if hit is not None:  # within RECORD_MARGIN: compare with that config's own record
            inp, cost = hit
        hit = deployed_record(mine[0][1], args, warm)
        warm_cost = cost if hit is None else hit[1]
        times = [time_call(call, a.seconds / len(mine)) for call, _ in mine]
        p10, med = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
        alone = task_kernel(inp)
        inter = statistics.median(interleaved_ratio(call, alone, a.seconds / len(mine)) for call, _ in mine)
        rows.append(p10 / cost)
        warm_rows.append(p10 / warm_cost)
        paired.append(inter)
        convs_placed.append((label, [calls_at[id(call)] for call, _ in mine], cost))
        print(f"{label} recorded {cost * 1e3:7.3f} ms (warm {warm_cost * 1e3:7.3f})  deployed p10 {p10 * 1e3:7.3f} ms "
              f"(median {med * 1e3:7.3f}, {len(mine)} call{'s' if len(mine) > 1 else ''})  {rows[-1]:5.2f}x  "
              f"interleaved with the task kernel {inter:5.2f}x  {config_note(mine, inp)}", flush=True)
    for _ in range(a.passes):
        moments.append(in_place_moment(m, a.seconds / (a.passes + 1)))
    if convs_placed:
        print(f"in place in the model run, at {len(moments)} moments, against the record:")
    for label, ks, cost in convs_placed:
        at = [statistics.median(seconds[k] for k in ks) / cost for seconds in moments]
        placed.append(statistics.median(at))
        print(f"{label} {placed[-1]:5.2f}x  (moments {' '.join(f'{r:.2f}' for r in at)})", flush=True)
    if rows:
        print(summary("deployed/recorded", rows))
        print(summary("deployed/recorded warm", warm_rows))
        print(summary("deployed/task kernel, interleaved", paired))
        print(summary("deployed in place in the model run/recorded", placed))
    return rows


if __name__ == "__main__":
    main()
