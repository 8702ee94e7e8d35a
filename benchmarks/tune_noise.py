"""Noise of tuned measurements: the best config of each conv task of a log re-measured
``--times`` times (separate batches), the normalized runner (the default) and raw seconds
(``normalize=False``) interleaved; the coefficient of variation of the re-measured means.

The "Noise" figure (the best config re-measured 5 times varies by <= 3%):

    python benchmarks/tune_noise.py --log /tmp/resnet50.jsonl --limit 8
    python benchmarks/tune_noise.py --log /tmp/resnet50.jsonl --limit 8 --sessions   # across sessions

Each re-measurement first waits for the vCPUs to be near (``--near-wait`` seconds per config in
all), and its runner waits for the machine's good state as long as ``tessera tune``'s confirmations
of the best configs do, and takes as many repeats (``graph.tuning.confirm_best``,
``CONFIRM_STATE_WAIT_S``, ``CONFIRM_REPEAT``): the records are
the confirmations' figures, near- and fast-state ones.

``--sessions``: every re-measurement in a new runner session (a new measuring process, as a
resumed ``tessera tune`` has): the spread a log gathered over several sessions has.  Each session
reads the task reference's ratio to the yardstick stored on this host (``execute._scale``), the
scale the records were written with; a ratio not stored yet (another host's log) is probed anew.

Timings share the machine with whatever else runs on it; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import statistics
import time

import topi  # noqa: F401  (registers the templates)
from graph.tuning import CONFIRM_REPEAT, CONFIRM_STATE_WAIT_S, RUNNER_OPTIONS
from tune import autotvm
from tune.autotvm import record
from tune.measure import MeasureInput, vcpus
from tune.measure.execute import host_note
from tune.measure.option import create_measure_batch


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
                   help=f"the runners' min_repeat_ms (default {RUNNER_OPTIONS['min_repeat_ms']}, as tessera tune's)")
    p.add_argument("--sessions", action="store_true", help="each re-measurement in a new runner session")
    p.add_argument("--near-wait", type=float, default=20.0,
                   help="seconds per config the re-measurements may wait for the vCPUs to be near (default 20)")
    a = p.parse_args(argv)
    kw = {**RUNNER_OPTIONS, "min_repeat_ms": a.min_repeat_ms, "repeat": CONFIRM_REPEAT,
          "state_wait": CONFIRM_STATE_WAIT_S}
    builder = autotvm.LocalBuilder(n_parallel=2)
    runners = {"normalized": autotvm.LocalRunner(**kw), "raw": autotvm.LocalRunner(normalize=False, **kw)}
    rows, state = [], host_note("before")
    try:
        for (name, args), (recorded, inp) in list(best_per_task(a.log).items())[: a.limit]:
            task = autotvm.task.create(name, args=args, target=inp.target)
            cfg = task.config_space.get(inp.config.index)
            got: dict = {k: [] for k in runners}
            wait_until = time.monotonic() + a.near_wait
            for _ in range(a.times):
                if a.sessions:  # a new measuring process for each (the old one closed)
                    for k, r in list(runners.items()):
                        r.close()
                        runners[k] = autotvm.LocalRunner(normalize=k == "normalized", **kw)
                for k, r in runners.items():
                    vcpus.wait_near(max(0.0, wait_until - time.monotonic()))
                    batch = create_measure_batch(task, autotvm.measure_option(builder=builder, runner=r))
                    (res,) = batch([MeasureInput(task.target, task, cfg)])
                    if res.error_no != 0:
                        raise RuntimeError(f"{name} {args}: re-measuring the best config failed: {res}")
                    got[k].append(res.cost)
            row = {k: cv(v) for k, v in got.items()}
            rows.append(row)
            dshape, kshape, strides = args[0], args[1], args[2]
            print(f"{name:20s} {dshape[1]:4d}->{kshape[0]:4d} {kshape[2]}x{kshape[3]}/{strides[0]} @{dshape[2]:3d} "
                  f"recorded {recorded * 1e3:.3f} ms; re-measured normalized "
                  f"{statistics.mean(got['normalized']) * 1e3:.3f} ms CV {100 * row['normalized']:.1f}% "
                  f"({' '.join(f'{c * 1e3:.3f}' for c in got['normalized'])}), "
                  f"raw {statistics.mean(got['raw']) * 1e3:.3f} ms CV {100 * row['raw']:.1f}%", flush=True)
    finally:
        builder.close()
        for r in runners.values():
            r.close()
    if rows:
        norm = [r["normalized"] for r in rows]
        print(f"CV normalized{' across sessions' if a.sessions else ''}: median {100 * statistics.median(norm):.1f}%, max {100 * max(norm):.1f}%, "
              f"<= 3% on {sum(c <= 0.03 for c in norm)}/{len(norm)}; raw median "
              f"{100 * statistics.median(r['raw'] for r in rows):.1f}%")
    print(f"{state}\n{host_note('after')}")
    return rows


if __name__ == "__main__":
    main()
