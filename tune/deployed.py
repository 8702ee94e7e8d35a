"""The configs a tuned model may deploy, timed as it calls them (the end of ``tune.network``).

A search times a candidate warm, called in a loop; a model streams each
layer's weights from memory between two calls of it, and its other layers run
in between.  So the configs a model may deploy are timed twice more:

* :func:`confirm_deployed`: each task's ``DEPLOY_TOP`` fastest, the rule's config
  and whatever the build deploys, with the runner's cache flush, in rounds over
  all of them (``MeasureResult.flush``);
* :func:`confirm_in_place`: inside whole runs of the model, in builds that each
  take the k-th candidate of every operator, alternated with the rule's build
  (``MeasureResult.in_place``: each cost one round's median of the call).

Those readings then rank their tasks (``tune.record.ranked_by_workload``).  The
program is the layer above's (``tune.network``'s module doc).
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from tune.autotvm import callback
from tune.autotvm.choose import RECORD_MARGIN, alternatives, deployable
from tune.autotvm.config import has_rule, recorded_values
from tune.autotvm.space import ConfigEntity
from tune.autotvm.tuner.tuner import config_key
from tune.measure import MeasureInput, MeasureResult
from tune.measure.runner import measuring_clock
from tune.network import (
    CONFIRMED_FROM,
    DEPLOY_TOP,
    DEPLOYED_ROUNDS,
    IN_PLACE_ROUNDS,
    IN_PLACE_RUNS,
    IN_PLACE_TOP,
    default_measure_option,
    measure_again,
    measured,
    read_log,
    space_point,
)
from tune.record import ranked_by_workload


def records_changed(program, before, after) -> tuple:
    """``(changed, kernels)``: of the configs the built model ``after`` runs, how many are not
    among those ``before`` (the rule's build) runs.  0: the two builds run the same kernels."""
    def configs(built):  # a ConfigEntity compares by its workload and values
        return Counter(cfg for call in program.configs(built) for cfg in call)

    mine = configs(after)
    return sum((mine - configs(before)).values()), sum(mine.values())


def records_changed_note(program, before, after) -> str:
    """One line on what the records changed in the built model (:func:`records_changed`)."""
    changed, kernels = records_changed(program, before, after)
    if changed == 0:
        return (f"the records changed none of the {kernels} kernels' configs (no record beats the "
                f"rule's config by {RECORD_MARGIN:.0%}): both builds are the same code, and the difference "
                f"timed between them is the machine's")
    return f"the records changed {changed} of the {kernels} kernels' configs (the rest keep the rule's)"


def deployed(program, built, tasks: list) -> list:
    """``[(task, config)]``: each distinct config of ``tasks`` the built model runs, as a point of its space."""
    by_args = {(t.name, tuple(t.args)): t for t in tasks}
    out: dict = {}
    for cfg in (cfg for call in program.configs(built) for cfg in call):
        task = by_args.get((cfg.template, tuple(cfg.workload[1:])))
        point = None if task is None else space_point(task, cfg.values)
        if point is not None:
            out[(task.workload, point.index)] = (task, point)
    return list(out.values())


def deploy_candidates(task, records: list) -> list:
    """The configs of ``task`` :func:`confirm_deployed` times: its ``DEPLOY_TOP`` fastest warm
    readings and the rule's config."""
    ranked = next(iter(ranked_by_workload(measured(records, task)).values()), [])
    return [inp.config for inp, _ in ranked[:DEPLOY_TOP]] + [task.default_config()]


def confirm_deployed(program, log_path: str, tasks: list, measure_option=None, rounds: int = DEPLOYED_ROUNDS,
                     stream=None) -> tuple:
    """Measure the configs of ``tasks`` the model may deploy ``rounds`` times each with the cache
    flush, in rounds over all of them: each task's :func:`deploy_candidates` and what the model
    built with the log runs (built again after, once more at most).  Only tasks tuned far enough
    to be confirmed (``CONFIRMED_FROM`` records); a config read so ``rounds`` times already is left
    alone.  Returns ``(the model built with the records, measurements taken)``."""
    measure_option = measure_option or default_measure_option()
    records = read_log(log_path, program.target)
    counts = Counter((inp.task.workload, config_key(inp.config)) for inp, res in records
                     if res.error_no == 0 and res.flush)
    tasks = [task for task in tasks if len(measured(records, task)) >= CONFIRMED_FROM]
    log = callback.log_to_file(log_path)
    runner = measure_option["runner"]
    warm = runner.enable_cpu_cache_flush
    runner.enable_cpu_cache_flush = True
    taken, seen = 0, set()
    try:
        for first in (True, False):
            built = program.build(records=log_path)
            pairs = deployed(program, built, tasks)
            if first:
                pairs = [(task, cfg) for task in tasks for cfg in deploy_candidates(task, records)] + pairs
            todo = {}
            for task, cfg in pairs:
                key = (task.workload, config_key(cfg))
                if key not in seen and counts[key] < rounds:
                    todo[key] = (task, cfg)
            seen |= set(todo)
            if not todo:
                return built, taken
            if stream is not None:
                stream.write(f"measuring {len(todo)} configs the model may deploy {rounds} times each, "
                             f"their weights out of the caches, in rounds\n")
            for _ in range(rounds):
                for key, (task, cfg) in todo.items():
                    ((_, res),) = measure_again(task, [cfg], measure_option, [log])
                    counts[key] += res.error_no == 0
                    taken += 1
    finally:
        runner.enable_cpu_cache_flush = warm
    return program.build(records=log_path), taken


def in_place_groups(tasks: list, records: list) -> list:
    """``[[(task, config), ...], ...]``: the candidates :func:`confirm_in_place` times, one list per
    operator (a conv's implementations share one: a model runs one of them): each task's
    ``IN_PLACE_TOP`` fastest by its records' ranking and by its warm readings, those the graph
    runs as measured."""
    groups: dict = {}
    for task in tasks:
        picks: dict = {}
        mine = [(inp, res) for inp, res in records if inp.task.workload == task.workload]
        for rows in (mine, measured(records, task)):
            for inp, _ in next(iter(ranked_by_workload(rows).values()), [])[:IN_PLACE_TOP]:
                if deployable(task.workload, inp.config.knob_values()):
                    picks.setdefault(config_key(inp.config), inp.config)
        key = tuple(task.args) if has_rule(task.name) and alternatives(task.workload) else task.workload
        groups.setdefault(key, []).extend((task, cfg) for cfg in picks.values())
    return [group for group in groups.values() if group]


def forced(program, choice: dict):
    """The model built with the knob values of ``choice`` (``(template, args) -> values``, a record's:
    legacy knobs filled) and the rule's configs elsewhere."""
    def chosen(workload, _target):
        values = choice.get((workload[0], tuple(workload[1:])))
        return None if values is None else recorded_values(workload, values)

    return program.build(choices=chosen)


def task_calls(program, built, tasks: list) -> list:
    """``[(call index, task, config)]``: each kernel call of the built model that runs one config of
    ``tasks`` (a call with two is nobody's alone), the config as a point of its task's space."""
    by_args = {(t.name, tuple(t.args)): t for t in tasks}
    out = []
    for k, configs in enumerate(program.configs(built)):
        hits = [(by_args[(c.template, tuple(c.workload[1:]))], c.values) for c in configs
                if (c.template, tuple(c.workload[1:])) in by_args]
        if len(hits) == 1:
            task, values = hits[0]
            cfg = space_point(task, values)
            if cfg is not None:
                out.append((k, task, cfg))
    return out


def confirm_in_place(program, log_path: str, tasks: list, rounds: int = IN_PLACE_ROUNDS, stream=None,
                     clock: str = "wall") -> tuple:
    """Time the configs the model may deploy inside whole runs of it: the :func:`in_place_groups`
    candidates of every task with records, in builds that each take the k-th candidate of every
    operator, and the rule's build, alternated in ``rounds`` rounds (each variant ``IN_PLACE_RUNS``
    runs); each config's record holds one reading a round, its calls' median, read by ``clock``
    (``"thread_cpu"``: the runs on this thread alone, ``tune.measure.runner.measuring_clock``).  A resumed tune
    whose candidates and rule's configs all have such records times nothing.  Returns ``(the model
    built with the records, configs timed)``."""
    records = read_log(log_path, program.target)
    tasks = [task for task in tasks if measured(records, task)]
    groups = in_place_groups(tasks, records)
    timed = {(inp.task.workload, config_key(inp.config)) for inp, res in records if res.error_no == 0 and res.in_place}
    rule = forced(program, {})
    wanted = [pair for group in groups for pair in group] + [(t, c) for _, t, c in task_calls(program, rule, tasks)]
    if not groups or all((task.workload, config_key(cfg)) in timed for task, cfg in wanted):
        return program.build(records=log_path), 0
    width = max(map(len, groups))
    choices = [{}] + [{(task.name, tuple(task.args)): cfg.knob_values()
                       for task, cfg in (group[k % len(group)] for group in groups)} for k in range(width)]
    if stream is not None:
        stream.write(f"timing {sum(map(len, groups))} configs the model may deploy inside whole runs of it: "
                     f"{len(choices)} builds (the rule's and {width} of candidates) alternated in {rounds} rounds\n")
    start, variants = time.perf_counter(), []
    for choice in choices:
        try:
            built = forced(program, choice) if choice else rule
        except Exception as err:  # noqa: BLE001 - one refused build costs its candidates' readings, not the tune
            if stream is not None:
                stream.write(f"a build with candidates {sorted(choice.values(), key=str)} failed ({err}); "
                             f"its candidates go untimed in place\n")
            continue
        variants.append((built, task_calls(program, built, tasks)))
    readings: dict = {}  # (workload, config key) -> (task, config, [[seconds of its calls] per round])
    with measuring_clock(clock) as clock_fn:
        for r in range(rounds):
            for k in range(len(variants)):
                built, calls = variants[(k + r) % len(variants)]  # each round starts with another build
                seconds = np.median(program.kernel_runs(built, IN_PLACE_RUNS, clock_fn), axis=0)
                for i, task, cfg in calls:
                    entry = readings.setdefault((task.workload, config_key(cfg)),
                                                (task, cfg, [[] for _ in range(rounds)]))
                    entry[2][r].append(float(seconds[i]))
    spent, now = time.perf_counter() - start, time.time()
    rows = [(MeasureInput(task.target, task, cfg),
             MeasureResult(tuple(float(np.median(s)) for s in per_round if s), 0, spent / max(len(readings), 1), now,
                           in_place=True, clock=clock))
            for task, cfg, per_round in readings.values()]
    callback.log_to_file(log_path)(None, [i for i, _ in rows], [r for _, r in rows])
    return program.build(records=log_path), len(rows)


def best_curves(log_path: str, tasks: list, target) -> dict:
    """Task -> best GFLOP/s after each trial, in log order (failed trials keep the best so far)."""
    records = read_log(log_path, target)
    curves = {}
    for t in tasks:
        best, curve = 0.0, []
        for _, res in measured(records, t):
            if res.error_no == 0 and res.costs:
                best = max(best, t.flop / res.cost / 1e9)
            curve.append(best)
        curves[t] = curve
    return curves


__all__ = ["best_curves", "confirm_deployed", "confirm_in_place", "deploy_candidates", "deployed",
           "in_place_groups", "records_changed", "records_changed_note", "task_calls"]
