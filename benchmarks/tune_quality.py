"""AutoTVM search quality on ResNet-50's conv layers: XGBTuner against a 10x longer random search.

The "Search quality" figure: for each distinct conv workload of ResNet-50
(the ``light_resnet50`` ONNX model's tasks, 23 layers; ``--layers 0,5,9``
picks some), XGBTuner measures ``--trials`` configs (128) for each of
``--seeds`` (median over 3), and one reference search measures the whole
space when it has at most ``--random-factor`` x ``--trials`` configs (the
conv spaces have 896 against 1280: exhaustive), else that many random ones.
Per layer it prints the best GFLOP/s of each, XGB's best as a share of the
best any search found and the trial at which XGB reached 95% of it; then
the medians over layers.

``--replay``: measure each layer's whole space once (``GridSearchTuner``, appended to ``--log``
and resumed from it: a layer whose space the log already covers is not measured again), then run
each XGB seed against that table of measurements instead of the machine.  The tuner's model,
annealing and batches run as in a live tune; only the timing is looked up, so the seeds compare on
one set of measurements and a layer costs its space (896 trials, about 14 min) instead of
896 + 3 x 128.

``--transfer``: the "Transfer" figure (with ``--replay``: on the layers' tables).  For each
layer, XGBTuner warmed by ``load_history`` with the records of the *other* layers (from ``--log``,
which every run appends to; run the quality mode first, or pass ``--log`` of an earlier run;
``--history`` records of each, a seeded sample: by default as many as one tuning run of
``--trials`` leaves) against a cold XGBTuner: the trials each needs
to reach 95% of the layer's reference (the best measurement of that layer
in the log, or of this run).

    python benchmarks/tune_quality.py --log /tmp/quality.jsonl                 # the figure (hours)
    python benchmarks/tune_quality.py --log /tmp/quality.jsonl --replay         # the same, from tables
    python benchmarks/tune_quality.py --log /tmp/quality.jsonl --transfer
    python benchmarks/tune_quality.py --layers 0 --trials 8 --random-factor 2 --seeds 0   # smoke

Timings share the machine with whatever else runs on it; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tune_autotvm import resnet50_conv_tasks

from tune.network import RUNNER_OPTIONS
from tune import autotvm
from tune.measure.measure import MeasureInput
from tune.measure.option import create_measure_batch

REACH = 0.95  # the share of the best; --reach sets another


def layer_label(task) -> str:
    dshape, kshape, strides = task.args[0], task.args[1], task.args[2]
    return f"{dshape[1]}->{kshape[0]} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]}"


def tune_curve(task, tuner, trials: int, measure, log: str | None) -> np.ndarray:
    """Best GFLOP/s so far after each measured trial of ``tuner`` on ``task``."""
    mon = autotvm.callback.Monitor()
    callbacks = [mon] + ([autotvm.callback.log_to_file(log)] if log else [])
    tuner.tune(trials, measure, callbacks=callbacks)
    scores = np.array(mon.trial_scores() or [0.0]) / 1e9
    return np.maximum.accumulate(scores)


def trials_to(curve: np.ndarray, target: float) -> int | None:
    """The first trial (1-based) whose best reaches ``target``; None if none does."""
    hit = np.nonzero(curve >= target)[0]
    return int(hit[0]) + 1 if len(hit) else None


def logged_best(log: str | None, task) -> float:
    """The best GFLOP/s of ``task`` among the records of ``log`` (0 without any)."""
    return max([task.flop / res.cost / 1e9 for _, res in task_records(log, task)
                if res.error_no == 0 and res.costs], default=0.0)


def task_records(log: str | None, task) -> list:
    """The (input, result) records of ``task`` (its workload and target) in ``log``."""
    if not log or not os.path.exists(log):
        return []
    from tune.record import target_key

    me = (task.target_key, task.workload)
    return [(inp, res) for inp, res in autotvm.record.load_from_file(log)
            if (target_key(inp.target), inp.task.workload) == me]


def reference_search(task, args, measure) -> tuple:
    """The best-known curve of ``task``: the whole space when it has at most ``--random-factor``
    times ``--trials`` configs (896 for a ResNet conv against 1280), else that many random ones."""
    budget = args.trials * args.random_factor
    if len(task.config_space) <= budget:
        return "exhaustive", tune_curve(task, autotvm.tuner.GridSearchTuner(task), len(task.config_space),
                                        measure, args.log)
    return "random", tune_curve(task, autotvm.tuner.RandomTuner(task, seed=0), budget, measure, args.log)


RECHECK = 8  # the table's best configs measured this many more times: a lucky single reading
#            would otherwise set the reference (the winner's curse of a max over 896 noisy values)


def measured_table(task, args, measure) -> dict:
    """``{config index: MeasureResult}`` over the whole space of ``task``: the records of ``--log``,
    completed by a grid search over the configs it lacks; then, in the same runner session, the
    ``RECHECK`` best are measured three times in all and keep their median (everything measured
    is appended to the log)."""

    to_log = autotvm.callback.log_to_file(args.log) if args.log else (lambda *_: None)
    have = task_records(args.log, task)
    runs = {}
    for inp, res in have:
        runs.setdefault(task.config_space.index_of(inp.config._entity_map), []).append(res)
    missing = len(task.config_space) - len(runs)
    if missing:
        print(f"  layer {layer_label(task)}: measuring {missing} of {len(task.config_space)} configs",
              flush=True)
        tuner = autotvm.tuner.GridSearchTuner(task)
        tuner.load_history(have)
        mon = autotvm.callback.Monitor()
        tuner.tune(missing, measure, callbacks=[mon, to_log])
        for inp, res in mon.records:
            runs.setdefault(inp.config.index, []).append(res)

    def settled(results):
        return sorted(results, key=lambda r: r.cost if r.error_no == 0 and r.costs else float("inf"))[
            (len(results) - 1) // 2]

    table = {index: settled(results) for index, results in runs.items()}
    if not missing:
        # rechecked when it was measured; a later runner session takes the task reference's ratio
        # to the yardstick anew (sessions' readings 2-6% apart), so it must not add readings now
        return table
    batch = None
    while True:  # until the RECHECK best all have three readings (a recheck can reorder them)
        ok = [i for i, r in table.items() if r.error_no == 0 and r.costs]
        top = sorted(ok, key=lambda i: table[i].cost)[:RECHECK]
        again = [i for i in top for _ in range(3 - len(runs[i]))]
        if not again:
            return table
        batch = batch or create_measure_batch(task, measure)
        for start in range(0, len(again), batch.n_parallel):
            inputs = [MeasureInput(task.target, task, task.config_space.get(i))
                      for i in again[start:start + batch.n_parallel]]
            results = batch(inputs)
            to_log(None, inputs, results)
            for inp, res in zip(inputs, results):
                runs[inp.config.index].append(res)
        table.update({i: settled(runs[i]) for i in top})


class TableBuilder:
    """The builder half of a replay: nothing to build."""

    n_parallel = 2  # the batch size of LocalBuilder(n_parallel=2), as in a live tune

    def set_task(self, task) -> None:
        pass

    def build(self, inputs: list) -> list:
        return [None] * len(inputs)


class TableRunner:
    """The runner half of a replay: a config's measurement is looked up in a table of the space."""

    check_correctness = False

    def __init__(self, table: dict):
        self.table = table

    def set_task(self, task, ref) -> None:
        pass

    def run(self, inputs: list, builds: list) -> list:
        missing = [inp.config.index for inp in inputs if inp.config.index not in self.table]
        if missing:
            raise KeyError(f"tune_quality --replay: configs {missing} are not in the measured table")
        return [self.table[inp.config.index] for inp in inputs]


def replayed_measure(task, args, measure) -> tuple:
    """A measure option that looks ``task``'s configs up in its table (measured first where
    the log lacks some), and the GFLOP/s of every config that ran."""
    table = measured_table(task, args, measure)
    ok = [task.flop / r.cost / 1e9 for r in table.values() if r.error_no == 0 and r.costs]
    return {"builder": TableBuilder(), "runner": TableRunner(table)}, ok


def replay(tasks: list, picked: list, args, measure) -> list:
    rows = []
    for k in picked:
        task = tasks[k]
        replayed, ok = replayed_measure(task, args, measure)
        best = max(ok)
        xgb = [tune_curve(task, autotvm.tuner.XGBTuner(task, seed=seed), args.trials, replayed, None)
               for seed in args.seeds]
        rand = [tune_curve(task, autotvm.tuner.RandomTuner(task, seed=seed), args.trials, replayed, None)
                for seed in args.seeds]
        share = statistics.median(x[-1] / best for x in xgb)
        reach = [trials_to(x, args.reach * best) for x in xgb]
        default, found = xgb[0][0], statistics.median(x[-1] for x in xgb)
        row = {"layer": k, "xgb": found, "reference": best,
               "share": share, "reach": reach, "worst_vs_default": min(x[-1] for x in xgb) / default,
               "rank": 1 + sum(g > found for g in ok),  # 1 + the configs faster than XGB's
               "default_share": default / best, "random_share": statistics.median(r[-1] / best for r in rand)}
        rows.append(row)
        print(
            f"  layer {k:2d} {layer_label(task):22s}: space {len(task.config_space)} configs, best {best:7.1f} GFLOP/s; "
            f"xgb {args.trials} trials (replayed, median of {len(args.seeds)} seeds) {100 * share:.1f}% of it "
            f"(rank {row['rank']} of {len(ok)}), trials to {100 * args.reach:.0f}%: {reach}; "
            f"random {args.trials} trials {100 * row['random_share']:.1f}%, the rule default "
            f"{100 * row['default_share']:.1f}%",
            flush=True,
        )
    summary(rows, args)
    return rows


def summary(rows: list, args) -> None:
    shares = [r["share"] for r in rows]
    print(
        f"search quality over {len(rows)} layers: xgb/best median {100 * statistics.median(shares):.0f}%, "
        f"min {100 * min(shares):.0f}%; layers where xgb reached {100 * args.reach:.0f}% of the best in "
        f"{args.trials} trials (median seed): {sum(1 for r in rows if r['share'] >= args.reach)}/{len(rows)}; "
        f"never slower than the default: {all(r['worst_vs_default'] >= 1.0 for r in rows)}"
    )
    if rows and "random_share" in rows[0]:
        print(f"  same trials, median over layers: random {100 * statistics.median(r['random_share'] for r in rows):.1f}%, "
              f"the rule default alone {100 * statistics.median(r['default_share'] for r in rows):.1f}%; "
              f"layers where the default is below {100 * args.reach:.0f}%: "
              f"{sum(1 for r in rows if r['default_share'] < args.reach)}")


def quality(tasks: list, picked: list, args, measure) -> list:
    rows = []
    for k in picked:
        task = tasks[k]
        xgb = [tune_curve(task, autotvm.tuner.XGBTuner(task, seed=seed), args.trials, measure, args.log)
               for seed in args.seeds]
        how, ref = reference_search(task, args, measure)
        best = max([ref[-1]] + [x[-1] for x in xgb])  # the best any search found
        share = statistics.median(x[-1] / best for x in xgb)
        reach = [trials_to(x, args.reach * best) for x in xgb]
        default = min(x[0] for x in xgb)  # every run measures the rule default first
        row = {"layer": k, "xgb": statistics.median(x[-1] for x in xgb), "reference": ref[-1],
               "how": how, "share": share, "reach": reach, "worst_vs_default": min(x[-1] for x in xgb) / default}
        rows.append(row)
        print(
            f"  layer {k:2d} {layer_label(task):22s}: xgb {args.trials} trials {row['xgb']:7.1f} GFLOP/s "
            f"(median of {len(args.seeds)} seeds), {how} search {len(ref)} trials {ref[-1]:7.1f}: "
            f"xgb/best {100 * share:.0f}%; trials to {100 * args.reach:.0f}%: {reach}; "
            f"default {default:.1f}",
            flush=True,
        )
    summary(rows, args)
    return rows


def history_of_others(records: list, task, per_task: int) -> list:
    """The records of the other workloads than ``task``'s, at most ``per_task`` of each (a seeded
    sample: the history one tuning run of ``--trials`` leaves, not a whole measured table)."""
    by_workload: dict = {}
    for inp, res in records:
        if inp.task.workload != task.workload:
            by_workload.setdefault(inp.task.workload, []).append((inp, res))
    rng = np.random.default_rng(0)
    out = []
    for rows in by_workload.values():
        if per_task and len(rows) > per_task:
            rows = [rows[i] for i in sorted(rng.choice(len(rows), per_task, replace=False))]
        out += rows
    return out


def transfer(tasks: list, picked: list, args, measure) -> list:
    if not args.log or not os.path.exists(args.log):
        raise SystemExit(
            "tune_quality --transfer: needs --log with the records of earlier runs (other layers)"
        )
    records = list(autotvm.record.load_from_file(args.log))
    rows = []
    for k in picked:
        task = tasks[k]
        others = history_of_others(records, task, args.history)
        here, table_best = measure, 0.0
        if args.replay:
            here, ok = replayed_measure(task, args, measure)
            table_best = max(ok)
        cold, warm = [], []
        for seed in args.seeds:
            cold.append(tune_curve(task, autotvm.tuner.XGBTuner(task, seed=seed), args.trials, here, None))
            tuner = autotvm.tuner.XGBTuner(task, seed=seed)
            tuner.load_history(others)
            warm.append(tune_curve(task, tuner, args.trials, here, None))
        ref = table_best or max([logged_best(args.log, task)] + [c[-1] for c in cold + warm])
        row = {
            "layer": k,
            "cold": [trials_to(c, args.reach * ref) for c in cold],
            "warm": [trials_to(w, args.reach * ref) for w in warm],
            "history": len(others),
        }
        rows.append(row)
        print(
            f"  layer {k:2d} {layer_label(task):22s}: trials to {100 * args.reach:.0f}% of {ref:.1f} GFLOP/s: "
            f"cold {row['cold']}, with {len(others)} records of other layers {row['warm']}",
            flush=True,
        )

    def med(key):
        vals = [v if v is not None else args.trials + 1 for r in rows for v in r[key]]
        return statistics.median(vals)

    print(
        f"transfer over {len(rows)} layers: median trials to {100 * args.reach:.0f}% cold {med('cold'):g}, "
        f"warm {med('warm'):g} (a run that never reached it counts as {args.trials + 1})"
    )
    return rows


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--layers", default="", help="indices of ResNet-50's distinct conv layers (default: all 23)"
    )
    ap.add_argument("--trials", type=int, default=128)
    ap.add_argument("--random-factor", type=int, default=10)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--log", default=None, help="append every record here (JSON lines); --transfer reads it")
    ap.add_argument("--transfer", action="store_true", help="XGB warmed by other layers' records vs cold")
    ap.add_argument("--reach", type=float, default=REACH,
                    help="the share of the best that counts as reached (trials-to figures, transfer)")
    ap.add_argument("--replay", action="store_true", help="measure each space once, replay the XGB seeds on it")
    ap.add_argument("--history", type=int, default=None,
                    help="--transfer: at most this many records of each other layer (default --trials; 0: all)")
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    if args.history is None:
        args.history = args.trials
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    tasks = resnet50_conv_tasks()
    picked = [int(k) for k in args.layers.split(",")] if args.layers else list(range(len(tasks)))
    bad = [k for k in picked if not 0 <= k < len(tasks)]
    if bad:
        raise SystemExit(
            f"tune_quality: --layers {bad} out of range; ResNet-50 has {len(tasks)} distinct conv layers"
        )
    measure = autotvm.measure_option(
        builder=autotvm.LocalBuilder(n_parallel=2),
        runner=autotvm.LocalRunner(**RUNNER_OPTIONS),
    )
    try:
        mode = transfer if args.transfer else replay if args.replay else quality  # --transfer --replay: on tables
        mode(tasks, picked, args, measure)
    finally:
        measure["builder"].close()
        measure["runner"].close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
