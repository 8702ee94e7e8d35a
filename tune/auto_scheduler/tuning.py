"""The measuring loop: ``TuningOptions``, ``RecordToFile``, and ``tune_tasks`` (rounds of search,
measurement with the shared builder and runner, records, model update)."""

from __future__ import annotations

import math
import time

from tune import measure as shared
from tune.measure.measure import MeasureInput
from tune.measure.option import create_measure_batch
from tune.record import encode


class LocalBuilder(shared.LocalBuilder):
    """The shared builder (classic ``auto_scheduler.LocalBuilder(timeout, n_parallel)``)."""

    def __init__(self, timeout: float = 15, n_parallel: int | None = None, build_func: str = "default"):
        super().__init__(timeout=timeout, n_parallel=n_parallel, build_func=build_func)


class LocalRunner(shared.LocalRunner):
    """The shared runner with classic ``auto_scheduler.LocalRunner``'s defaults; a candidate whose
    first timed call is ``reject_factor`` times the task's best is timed by that call alone, one
    whose first ``number`` calls average ``stop_factor`` times the best by those calls (most programs
    a search draws are slow, and the ``min_repeat_ms`` window would be most of their trial's time);
    a candidate whose code is that of one measured before (genes that change nothing, such as an
    unroll step over loops LLVM unrolls anyway) takes that measurement (``same_code_once``)."""

    def __init__(self, timeout: float = 10, number: int = 3, repeat: int = 1, min_repeat_ms: float = 100,
                 cooldown_interval: float = 0.0, enable_cpu_cache_flush: bool = False, reject_factor: float = 3.0,
                 stop_factor: float | None = 1.5, same_code_once: bool = True, **kwargs):
        super().__init__(timeout=timeout, number=number, repeat=repeat, min_repeat_ms=min_repeat_ms,
                         cooldown_interval=cooldown_interval, enable_cpu_cache_flush=enable_cpu_cache_flush,
                         reject_factor=reject_factor, stop_factor=stop_factor,
                         same_code_once=same_code_once, **kwargs)


class TuningOptions:
    """How long and how to tune (classic ``auto_scheduler.TuningOptions``)."""

    def __init__(self, num_measure_trials: int = 0, early_stopping: int | None = None,
                 num_measures_per_round: int = 64, verbose: int = 1, builder="local", runner="local",
                 measure_callbacks=None):
        if num_measure_trials < 0 or num_measures_per_round < 1:
            raise ValueError(f"TuningOptions: num_measure_trials must be >= 0 and num_measures_per_round >= 1, "
                             f"got {num_measure_trials}, {num_measures_per_round}")
        self.num_measure_trials = int(num_measure_trials)
        self.early_stopping = None if early_stopping is None or early_stopping < 0 else int(early_stopping)
        self.num_measures_per_round = int(num_measures_per_round)
        self.verbose = int(verbose)
        self.builder = LocalBuilder() if builder == "local" else builder
        self.runner = LocalRunner() if runner == "local" else runner
        for name, obj in (("builder", self.builder), ("runner", self.runner)):
            if isinstance(obj, str):
                raise ValueError(f"TuningOptions: unknown {name} {obj!r}; use 'local' or a Local{name.title()}(...)")
        self.measure_callbacks = list(measure_callbacks or [])

    def measure_option(self) -> dict:
        return {"builder": self.builder, "runner": self.runner}


class RecordToFile:
    """Measure callback: append every measurement to ``filename`` as a JSON line, flushed."""

    def __init__(self, filename):
        self.filename = filename

    def callback(self, policy, inputs, results) -> None:
        with open(self.filename, "a", encoding="utf-8") as fh:
            fh.writelines(encode(i, r) + "\n" for i, r in zip(inputs, results))
            fh.flush()


class Stats:
    """Wall time of a tune split into search (sampling, evolution, the model's update) and
    measurement; ``rounds``: per measured round, ``(trials, seconds, search seconds)``."""

    def __init__(self):
        self.trials, self.search, self.measure, self.wall = 0, 0.0, 0.0, 0.0
        self.cpu = 0.0  # CPU seconds of the tuner's and its workers' processes, where a caller counts them
        self.rounds: list = []


def measure_round(policy, batch, n: int, options: TuningOptions, stats: Stats) -> list:
    """Search ``n`` programs of ``policy``'s task, measure them, record them; the results."""
    t0 = time.perf_counter()
    states = policy.search_round(n, pool=search_pool(policy.task, batch))
    t1 = time.perf_counter()
    stats.search += t1 - t0
    if not states:
        return []
    inputs = [MeasureInput(policy.task.target, policy.task, s) for s in states]
    results = batch(inputs)
    stats.measure += time.perf_counter() - t1
    for cb in options.measure_callbacks:
        cb.callback(policy, inputs, results)
    policy.note_measured(inputs, results)
    t2 = time.perf_counter()
    policy.model.update(inputs, results)
    t3 = time.perf_counter()
    stats.search += t3 - t2
    stats.trials += len(results)
    stats.rounds.append((len(results), t3 - t0, t1 - t0 + t3 - t2))
    return results


def search_pool(task, batch):
    """The builder whose idle workers the search may realise and score programs in (one that
    can make the task's schedules in its workers), or None."""
    from tune.measure.builder import rebuilt_in_worker

    builder = getattr(batch, "builder", None)
    return builder if hasattr(builder, "map_calls") and rebuilt_in_worker(task) else None


def tune_tasks(policies: list, options: TuningOptions) -> Stats:
    """Tune each policy's task in turn for ``num_measure_trials`` (one task: classic ``task.tune``)."""
    stats = Stats()
    start = time.perf_counter()
    for policy in policies:
        batch = create_measure_batch(policy.task, options.measure_option())
        done, since_best, best = 0, 0, policy.best()[1]
        batch.runner.best_cost = best  # the bar for rejecting slow candidates (a resumed search's)
        while done < options.num_measure_trials:
            n = min(options.num_measures_per_round, options.num_measure_trials - done)
            results = measure_round(policy, batch, n, options, stats)
            if not results:
                break
            done += len(results)
            new = policy.best()[1]
            since_best = 0 if new < best else since_best + len(results)
            best = new
            if options.verbose:
                report(policy, done, stats)
            if options.early_stopping is not None and since_best >= options.early_stopping:
                break
    stats.wall = time.perf_counter() - start
    return stats


def report(policy, done: int, stats: Stats) -> None:
    _, best = policy.best()
    gflops = policy.task.flop / best / 1e9 if math.isfinite(best) and best > 0 else 0.0
    print(f"{policy.task.name}: {done} trials, best {best * 1e3:.3f} ms ({gflops:.2f} GFLOPS); "
          f"search {stats.search:.1f} s, measure {stats.measure:.1f} s", flush=True)


__all__ = ["LocalBuilder", "LocalRunner", "RecordToFile", "Stats", "TuningOptions", "measure_round", "search_pool",
           "tune_tasks"]
