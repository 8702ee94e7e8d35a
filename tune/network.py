"""Whole-model tuning: every tunable kernel of a model searched, confirmed and timed as deployed.

The steps, each resumable from the log (records already there count as done)::

    tasks = autotvm.task.extract_from_program(g, params, target)   # one per distinct kernel
    plan = spread_trials(tasks, trials)                             # by each task's share of the flops
    tune_tasks(tasks, plan, log, tuner)       # search, then confirm each task's best few
    confirm_deployed(program, log, tasks)     # candidates timed with the cache flush, in rounds
    confirm_in_place(program, log, tasks)     # candidates timed inside whole runs of the model

A *program* is the model as the layer above offers it (``graph.tuning.GraphProgram``;
this package imports no graph): ``build(records=None, choices=None)`` builds it with
the best records of a log (or ``choices``: ``(template, args) -> knob values``, taken
as they are), ``configs(built)`` lists the configs of each kernel call, and
``kernel_runs(built, number[, clock])`` times every call in ``number`` whole runs.

Why confirm: the fastest of a few hundred readings is biased low, so a task's
best few are measured ``CONFIRM_TIMES`` more times and ranked by their median
(``tune.record.ranked_by_workload``).  Why time as deployed: a search times a
candidate warm, in a loop, while a model streams each layer's weights from memory
between calls; the flush readings, then the in-place ones, rank their tasks where
a log has them, so the deployed configs are chosen by the speeds deployment sees.
The ``tessera tune`` command runs all of it.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter

from tune.autotvm import callback
from tune.autotvm import tuner as tuners
from tune.autotvm.choose import rule_variants as variants_of
from tune.autotvm.config import has_rule, rule_of
from tune.autotvm.knobs import OtherOptionEntity
from tune.autotvm.tuner.tuner import config_key
from tune.errors import RecordError
from tune.measure import LocalBuilder, LocalRunner, MeasureInput
from tune.measure import measure_option as make_measure_option
from tune.measure.option import create_measure_batch
from tune.record import load_records, ranked_by_workload, target_key

# The runner of a whole-model tune: repeats of at least 40 ms, three of them, their median the reading.
RUNNER_OPTIONS = {"number": 3, "repeat": 3, "min_repeat_ms": 40}
# After a task's search its CONFIRM_TOP fastest configs are measured CONFIRM_TIMES more times each
# (CONFIRM_REPEAT repeats a measurement) and count at their median; a confirmed config that read
# slower hands its place to the next, measured too.  The confirmations come out of the task's
# trials; a task planned fewer than CONFIRMED_FROM is not confirmed.
CONFIRM_TOP, CONFIRM_TIMES, CONFIRM_REPEAT = 3, 2, 5
CONFIRM_TRIALS = (CONFIRM_TOP + 1) * CONFIRM_TIMES
CONFIRMED_FROM = 4 * CONFIRM_TRIALS
# Then each task's DEPLOY_TOP fastest, the rule's config and whatever the build deploys are measured
# DEPLOYED_ROUNDS times with the cache flush, in rounds over all of them (each DEPLOY_MEASURE_S, for
# the budget), and the candidates IN_PLACE_TOP per task are timed inside whole runs of the model:
# one build per k-th candidate of every operator and the rule's build, alternated in IN_PLACE_ROUNDS
# rounds of IN_PLACE_RUNS runs (IN_PLACE_S of a budget kept for it).
DEPLOY_TOP, DEPLOYED_ROUNDS, DEPLOY_MEASURE_S = 2, 2, 1.0
IN_PLACE_TOP, IN_PLACE_ROUNDS, IN_PLACE_RUNS, IN_PLACE_S = 2, 16, 5, 150.0


def default_measure_option() -> dict:
    return make_measure_option(builder=LocalBuilder(), runner=LocalRunner(**RUNNER_OPTIONS))


# ------------------------------------------------------------------ plans ---
def spread_trials(tasks: list, trials: int) -> list[int]:
    """Trials per task, proportional to its share of the flops, at least one each, within each space."""
    out = [max(1, math.floor(trials * t.share)) for t in tasks]
    spare = trials - sum(out)
    for k in sorted(range(len(tasks)), key=lambda k: -tasks[k].share):
        if spare <= 0:
            break
        out[k] += 1
        spare -= 1
    return [min(n, len(t.config_space)) for n, t in zip(out, tasks)]


def read_log(path: str, target) -> list:
    """The records of ``path`` for ``target`` (none when it does not exist); a ``RecordError`` when
    it cannot be read or holds records for other targets only."""
    if not os.path.exists(path):
        return []
    records = load_records(path)
    key = target_key(target)
    targets = {target_key(inp.target) for inp, _ in records}
    others = sorted(targets - {key})
    if records and len(others) == len(targets):
        raise RecordError(f"log {path!r} holds records for target {others[0]!r}, not this one ({key!r}); "
                          f"use another log, or --target {others[0].split(' -mattr')[0]!r}")
    return [(inp, res) for inp, res in records if target_key(inp.target) == key]


def measured(records: list, task) -> list:
    """The search's and confirmations' records of ``task`` (timed warm)."""
    return [(inp, res) for inp, res in records if inp.task.workload == task.workload and res.warm]


def space_point(task, values: dict):
    """The point of ``task``'s space with the knob ``values``, or None where one is outside it."""
    space = task.config_space
    index = space.index_of({name: OtherOptionEntity(value) for name, value in values.items()})
    return None if index is None else space.get(index)


def rule_variants(task) -> list:
    """The rule's config of ``task`` in each other input block its channels allow
    (``tune.autotvm.choose.rule_variants``), as points of its space: in a graph the rule's config
    reads its data in the data's block, so these are the bar a record must clear."""
    if not has_rule(task.name) or rule_of(task.name).input_knob is None:
        return []
    points = (space_point(task, values) for values in variants_of(task.workload, task.target)[1:])
    return [cfg for cfg in points if cfg is not None]


# ----------------------------------------------------------------- search ---
def measure_again(task, configs: list, measure_option: dict, callbacks=(), batch=None) -> list:
    """One batch of ``configs`` of ``task`` measured again with ``CONFIRM_REPEAT`` repeats; the
    (input, result) pairs, passed to ``callbacks`` as a tuner's batch would be."""
    runner = measure_option["runner"]
    repeat = runner.repeat
    runner.repeat = max(repeat, CONFIRM_REPEAT)
    try:
        inputs = [MeasureInput(task.target, task, cfg) for cfg in configs]
        results = (batch or create_measure_batch(task, measure_option))(inputs)
    finally:
        runner.repeat = repeat
    for cb in callbacks:
        cb(None, inputs, results)
    return list(zip(inputs, results))


def confirm_best(task, records: list, measure_option: dict, callbacks=(), top: int = CONFIRM_TOP,
                 times: int = CONFIRM_TIMES, trials: int | None = None) -> list:
    """Measure ``times`` more times each of the ``top`` fastest configs of ``task`` in ``records``
    measured fewer than ``1 + times`` times, in turn; again while ``trials`` are left (default
    ``2 * top * times``): a confirmed config that read slower hands its place in the top to the
    next.  A task whose top is confirmed measures nothing (a resumed tune confirms nothing twice).
    Returns the new (input, result) pairs."""
    left = 2 * top * times if trials is None else trials
    mine = measured(records, task)
    batch, out = None, []
    while left >= times:
        counts = Counter(config_key(inp.config) for inp, res in mine + out if res.error_no == 0)
        ranked = [inp for inp, _ in next(iter(ranked_by_workload(mine + out).values()), [])]
        rows = [inp for inp in ranked[:top] if counts[config_key(inp.config)] < 1 + times][:left // times]
        if not rows:
            break
        batch = batch or create_measure_batch(task, measure_option)
        for _ in range(times):
            out += measure_again(task, [inp.config for inp in rows], measure_option, callbacks, batch)
        left -= times * len(rows)
    return out


class _BudgetSpent(Exception):
    pass


def tune_tasks(tasks: list, plan: list, log_path: str, tuner: str = "xgb", budget_s: float | None = None,
               records: list = (), measure_option: dict | None = None, stream=None, seed: int = 0) -> dict:
    """Tune each task to its planned trials (records already in the log count as done), then
    confirm its best (:func:`confirm_best`).  With ``budget_s`` a task may spend the rest of the
    budget times its share of the flops left, its search stopping where the rest of its time
    would not fit its confirmation.  Returns workload -> trials measured now."""
    option = measure_option or default_measure_option()
    end = None if budget_s is None else time.monotonic() + budget_s
    clock = {"start": 0.0, "trials": 0, "reserve": 0, "deadline": None}
    done: dict = {}

    def stop_at_deadline(_tuner, inputs, _results) -> None:
        if clock["deadline"] is None:
            return
        clock["trials"] += len(inputs)
        now = time.monotonic()
        per_trial = (now - clock["start"]) / max(clock["trials"], 1)
        if now + clock["reserve"] * per_trial > clock["deadline"]:
            raise _BudgetSpent

    share_left = sum(t.share for t, n in zip(tasks, plan) if n > len(measured(records, t))) or 1.0
    log = callback.log_to_file(log_path)
    for k, (task, n) in enumerate(zip(tasks, plan)):
        old = measured(records, task)
        left = n - len(old)
        done[task.workload] = 0
        prefix = "" if stream is None else f"[Task {k + 1:2d}/{len(tasks)}] {task.name} x{task.count} ({100 * task.share:.0f}%)"
        if left <= 0:  # tuned already: confirm what an older tune left unconfirmed
            if len(old) >= CONFIRMED_FROM:
                done[task.workload] = len(confirm_best(task, old, option, [log]))
            continue
        if end is not None:
            now = time.monotonic()
            clock["deadline"] = now + max(end - now, 0.0) * task.share / max(share_left, 1e-12)
            share_left -= task.share
        t = tuners.get_tuner(tuner, task, **({"seed": seed + k} if tuner in ("random", "xgb") else {}))
        if old:
            t.load_history(old)
        t.measure_first = rule_variants(task)
        callbacks = [log] + ([callback.progress_bar(left, prefix=prefix, stream=stream)] if stream else [])
        mon = callback.Monitor()
        confirm = CONFIRM_TRIALS if left >= CONFIRMED_FROM else 0
        clock.update(start=time.monotonic(), trials=0, reserve=confirm)
        try:
            t.tune(n_trial=left - confirm, measure_option=option, callbacks=[mon, *callbacks, stop_at_deadline])
        except _BudgetSpent:
            confirm = confirm if len(mon.records) >= confirm else 0
            if stream is not None:
                stream.write("\n")
        if confirm:
            mon.records += confirm_best(task, old + mon.records, option, [log], trials=confirm)
        done[task.workload] = len(mon.records)
    return done


def search_budget(budget_s: float | None, tasks: list) -> float | None:
    """The seconds of a whole tune's budget the search may spend: the rest (at most half) is kept
    for :func:`confirm_deployed` and :func:`confirm_in_place`."""
    if budget_s is None:
        return None
    reserve = len(tasks) * (DEPLOY_TOP + 1) * DEPLOYED_ROUNDS * DEPLOY_MEASURE_S + IN_PLACE_S
    return budget_s - min(reserve, budget_s / 2)


def tune_plan(tasks: list, plan: list, records: list) -> list[str]:
    """One line per task: what it is, its share, its space and its planned trials (and those in the log)."""
    lines = []
    for k, (t, n) in enumerate(zip(tasks, plan)):
        have = min(len(measured(records, t)), n)
        lines.append(f"task {k + 1}/{len(tasks)}: {t.name} {t.args} x{t.count}, {100 * t.share:.1f}% of flops, "
                     f"{len(t.config_space)} configs, {n} trials ({have} in the log)")
    return lines
