"""Noise of tuned measurements: the best config of each conv task of a log re-measured
``--times`` times (separate batches, as a confirmation measures), and the coefficient of variation
of the readings: how far a re-measured best moves.

    python benchmarks/tune_noise.py --log /tmp/resnet50.jsonl --limit 8
    python benchmarks/tune_noise.py --log /tmp/resnet50.jsonl --limit 8 --sessions   # across sessions

``--sessions``: every re-measurement in a new runner process, as a resumed ``tessera tune`` has.
Timings share the machine with whatever else runs on it; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import statistics

import topi  # noqa: F401  (registers the templates)
from tune import autotvm, record
from tune.measure import MeasureInput
from tune.measure.option import create_measure_batch
from tune.network import CONFIRM_REPEAT, RUNNER_OPTIONS


def best_per_task(log: str) -> dict:
    """(template, args) -> (best cost, its MeasureInput) over the conv records of ``log``."""
    return {(inp.task.name, tuple(inp.task.args)): (res.cost, inp)
            for inp, res in record.best_by_workload(record.load_from_file(log)).values()
            if inp.task.name.startswith("conv2d")}


def cv(values: list) -> float:
    return statistics.pstdev(values) / statistics.mean(values)


def main(argv: list | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log", required=True, help="records of a tuning run")
    p.add_argument("--limit", type=int, default=8, help="the first N conv tasks of the log (default 8)")
    p.add_argument("--times", type=int, default=5, help="re-measurements per config (default 5)")
    p.add_argument("--min-repeat-ms", type=float, default=RUNNER_OPTIONS["min_repeat_ms"],
                   help=f"the runner's min_repeat_ms (default {RUNNER_OPTIONS['min_repeat_ms']}, as tessera tune's)")
    p.add_argument("--sessions", action="store_true", help="each re-measurement in a new runner process")
    a = p.parse_args(argv)
    kw = {**RUNNER_OPTIONS, "min_repeat_ms": a.min_repeat_ms, "repeat": CONFIRM_REPEAT}
    builder = autotvm.LocalBuilder(n_parallel=2)
    runner = autotvm.LocalRunner(**kw)
    rows = []
    try:
        for (name, args), (recorded, inp) in list(best_per_task(a.log).items())[: a.limit]:
            task = autotvm.task.create(name, args=args, target=inp.target)
            cfg = task.config_space.get(inp.config.index)
            got = []
            for _ in range(a.times):
                if a.sessions:  # a new measuring process for each (the old one closed)
                    runner.close()
                    runner = autotvm.LocalRunner(**kw)
                batch = create_measure_batch(task, autotvm.measure_option(builder=builder, runner=runner))
                (res,) = batch([MeasureInput(task.target, task, cfg)])
                if res.error_no != 0:
                    raise RuntimeError(f"{name} {args}: re-measuring the best config failed: {res}")
                got.append(res.cost)
            rows.append(cv(got))
            dshape, kshape, strides = args[0], args[1], args[2]
            print(f"{name:20s} {dshape[1]:4d}->{kshape[0]:4d} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]:3d} "
                  f"recorded {recorded * 1e3:.3f} ms; re-measured {statistics.mean(got) * 1e3:.3f} ms "
                  f"CV {100 * rows[-1]:.1f}% ({' '.join(f'{c * 1e3:.3f}' for c in got)})", flush=True)
    finally:
        builder.close()
        runner.close()
    if rows:
        print(f"CV{' across sessions' if a.sessions else ''}: median {100 * statistics.median(rows):.1f}%, "
              f"max {100 * max(rows):.1f}%, <= 3% on {sum(c <= 0.03 for c in rows)}/{len(rows)}")
    return rows


if __name__ == "__main__":
    main()
