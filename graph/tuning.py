"""Whole-model tuning, the graph side: tasks of a graph, and ``tessera tune``.

``autotvm.task.extract_from_program(g, params, target)`` (``tune`` sits below
``graph`` and imports none of it) asks the extractor this module registers on
``import graph``.  It runs the graph's pass table as ``graph.build`` would, so
the workloads are the kernels a build compiles (after layout rewrites), and
returns one task per distinct workload whose template AutoTVM knows, each with
``count`` (calls per run of the model) and ``share`` (its part of the model's
flops, the weight by which ``tessera tune`` spreads trials).  A 3x3 stride-1
conv has two implementations: its task list holds both the direct
(``conv2d_NCHWc.x86``) and the Winograd (``conv2d_winograd.x86``) workload,
whichever the build chose without records, so that under
``apply_history_best`` the faster record decides per layer
(``tune.autotvm.choose.choose``; both carry the conv's count)::

    tasks = autotvm.task.extract_from_program(g, params=params, target="llvm")
    for t in tasks: tuner = autotvm.tuner.XGBTuner(t); tuner.tune(...)
    with autotvm.apply_history_best("model.jsonl"):
        lib = graph.build(g, target="llvm", params=params)   # choose_configs reads the records

``tessera tune model.onnx --trials N --log model.jsonl`` (``graph.cli.cmd_tune``) tunes
every task, appending each measured batch to the log; run again, it loads the
log (``tuner.load_history``) and measures only what is missing, so a killed
run loses at most the batch in flight.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter

import numpy as np

from tune import autotvm
from tune.autotvm.errors import TemplateNotFoundError


# ------------------------------------------------------------- extraction ---
def _program(program, params):
    """``(Graph, params)`` of a Graph or an ONNX ModelProto; None for anything else."""
    from graph.ir import Graph

    if isinstance(program, Graph):
        return program, dict(params or {})
    if type(program).__name__ == "ModelProto" and type(program).__module__.startswith("onnx"):
        from graph.onnx import from_onnx

        g, p = from_onnx(program)
        return g, {**p, **dict(params or {})}
    return None


def graph_workloads(g, params=None, target="llvm") -> Counter:
    """Workload key -> kernel calls per run, of every node with a config after the pass table."""
    from codegen import service
    from graph.build import bind_params, optimize

    counts: Counter = Counter()

    def walk(graph) -> None:
        for node in graph.nodes:
            body = node.attrs.get("body")
            if body is not None and hasattr(body, "nodes"):
                walk(body)
            cfg = node.attrs.get("config")
            if cfg is not None:
                counts[cfg.workload] += 1

    with service.check_target(target):
        walk(optimize(bind_params(g, params)))
    return counts


def conv_alternatives(workload: tuple) -> list:
    """The other implementations' workloads of a kernel that has two (direct <-> Winograd) worth
    tuning beside it (``tune.autotvm.choose.tuning_alternatives``), or []."""
    from tune.autotvm.choose import tuning_alternatives
    from tune.autotvm.config import has_rule

    return tuning_alternatives(workload) if has_rule(workload[0]) else []


def extract_tasks(program, params=None, target="llvm") -> list | None:
    """The registered extractor: one task per distinct tunable workload, heaviest first."""
    got = _program(program, params)
    if got is None:
        return None


    g, params = got
    tasks = []
    counts = graph_workloads(g, params, target)
    for wl, count in list(counts.items()):
        for alt in conv_alternatives(wl):
            counts[alt] = max(counts.get(alt, 0), count)
    for wl, count in counts.items():
        try:
            autotvm.task.lookup(wl[0])
        except TemplateNotFoundError:
            continue  # a schedule with a rule but no AutoTVM template (pooling, reductions)
        task = autotvm.task.create(wl[0], wl[1:], target=target)
        task.count = count
        tasks.append(task)
    total = sum(t.flop * t.count for t in tasks) or 1.0
    for t in tasks:
        t.share = t.flop * t.count / total
    return sorted(tasks, key=lambda t: (-t.share, str(t.workload)))


autotvm.task.register_extractor(extract_tasks)


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
    """The records of ``path`` (none when it does not exist); a named error when it cannot be
    read or holds records for another target only."""
    from tune.record import target_key
    from tune.record import load_records

    if not os.path.exists(path):
        return []
    records = load_records(path)
    key = target_key(target)
    others = sorted({target_key(inp.target) for inp, _ in records} - {key})
    if records and len(others) == len({target_key(inp.target) for inp, _ in records}):
        raise autotvm.RecordError(
            f"log {path!r} holds records for target {others[0]!r}, not this one ({key!r}); "
            f"use another log, or --target {others[0].split(' -mattr')[0]!r}"
        )
    return [(inp, res) for inp, res in records if target_key(inp.target) == key]


def measured(records: list, task) -> list:
    """The search's and confirmations' records of ``task`` (timed warm), not the measurements
    taken as deployed (``flush``: :func:`confirm_deployed`; ``in_place``: :func:`confirm_in_place`)."""
    return [(inp, res) for inp, res in records if inp.task.workload == task.workload and res.warm]


# The runner of ``tessera tune``: each repeat alternates >= 40 ms of the candidate with the reference
# (about 8 ratio samples); re-measuring a best config 5 times then varies by 0.4-3.4% (median 0.7%,
# 12 ResNet-50 layers) where 20 ms gave 0.7-11.9% (median 3.9%) in the same hour.
RUNNER_OPTIONS = {"number": 3, "repeat": 3, "min_repeat_ms": 40}


class _BudgetSpent(Exception):
    pass


# After a task's search, its CONFIRM_TOP fastest configs are measured CONFIRM_TIMES more times each
# and count at their median (``record.ranked_by_workload``): the fastest of a few hundred noisy
# measurements is biased low (a ResNet-50 Winograd task's best record read 0.489 ms; its config
# re-measured 5 times read 0.738 on average), so a lucky reading would win the records and promise
# a speed the deployed model never sees.  A confirmed config that read slower hands its place in
# the top to the next, measured CONFIRM_TIMES more too (a 512 @7 log was won by a single reading).
# The CONFIRM_TRIALS come out of the task's trials (a task planned fewer than 4x as many is not
# confirmed); under a budget they come out of the task's time: its search stops when what is left
# would not fit them at its seconds per trial so far.  The configs the model then deploys are
# measured again in rounds over all of them (:func:`confirm_deployed`).
CONFIRM_TOP, CONFIRM_TIMES = 3, 2
CONFIRM_TRIALS = (CONFIRM_TOP + 1) * CONFIRM_TIMES
CONFIRMED_FROM = 4 * CONFIRM_TRIALS  # a task with fewer trials (planned, or recorded) is not confirmed
# Seconds a task's confirmation waits in all for the vCPUs to be near (``tune.measure.vcpus``)
# before its batches: the records it leaves are the ones deployment is compared with, and the runner
# times a repeat taken with the vCPUs apart in that state's honest (slower) time.
CONFIRM_NEAR_WAIT_S = float(os.environ.get("TESSERA_CONFIRM_NEAR_WAIT_S", "15.0"))  # tests shorten it
# The runner's ``state_wait`` while confirming: a confirmation may wait this long for the machine's
# good state (slow spells last a second or more), the search's trials only the runner's own.
CONFIRM_STATE_WAIT_S = 1.5
# A confirmation's repeats (the search's: RUNNER_OPTIONS), whose median is its reading: one repeat
# caught in a slow spell moves a median of 5 less than one of 3.  The best configs of 8 ResNet-50
# conv tasks re-measured 5 times (benchmarks/tune_noise.py, two runs each, alternated, one busy
# hour): with 3 repeats CV <= 3% on 5/8 and 4/8 (median 2.1%, 2.9%; max 9.1%, 19.7%), with 5 on
# 6/8 and 6/8 (median 1.5%, 1.9%; max 4.9%, 5.0%).
CONFIRM_REPEAT = 5


def rule_variants(task) -> list:
    """The rule's config of a conv task in each other input block its channels allow
    (``choose_configs.rule_variants``), as points of the task's space.  In a graph the rule's
    config reads its data in the data's block, so these are what the rule runs as there, and the
    bar a record must clear (``choose_configs.record_candidates``): measured in its own block
    alone, ResNet-50's 256 @14 Winograd rule read 0.612 ms and a record 0.530, which then ran
    0.95 ms in place against the rule's 0.86 in the 16-channel block its data had."""
    from tune.autotvm.choose import rule_variants as variants_of
    from tune.autotvm.config import has_rule, rule_of

    if not has_rule(task.name) or rule_of(task.name).input_knob is None:
        return []
    points = (space_point(task, values) for values in variants_of(task.workload, task.target)[1:])
    return [cfg for cfg in points if cfg is not None]


def space_point(task, values: dict):
    """The point of ``task``'s space with the knob ``values``, or None where one is outside it."""
    from tune.autotvm.space import FallbackConfigEntity

    point = FallbackConfigEntity()
    for name, value in values.items():
        point[name] = value
    index = point.to_entity(task.config_space).index
    return task.config_space.get(index) if index >= 0 else None


def patient(runner, batch, inputs: list) -> list:
    """``batch(inputs)`` with the runner's ``state_wait`` raised to ``CONFIRM_STATE_WAIT_S`` and its
    ``repeat`` to ``CONFIRM_REPEAT``."""
    before = getattr(runner, "state_wait", None)
    if before is None:
        return batch(inputs)
    repeat = runner.repeat
    runner.state_wait, runner.repeat = max(before, CONFIRM_STATE_WAIT_S), max(repeat, CONFIRM_REPEAT)
    try:
        return batch(inputs)
    finally:
        runner.state_wait, runner.repeat = before, repeat


def measure_again(task, configs: list, measure_option, callbacks, wait_until: float, batch=None) -> list:
    """One batch of ``configs`` of ``task`` measured again, as a confirmation measures: after
    waiting for the vCPUs to be near (until ``wait_until``, monotonic), each measurement patient
    for the machine's good state (:func:`patient`); the (input, result) pairs, passed to
    ``callbacks`` as a tuner's batch would be."""
    from tune.measure import vcpus
    from tune.measure.measure import MeasureInput
    from tune.measure.option import create_measure_batch

    vcpus.wait_near(max(0.0, wait_until - time.monotonic()))
    inputs = [MeasureInput(task.target, task, cfg) for cfg in configs]
    results = patient(measure_option["runner"], batch or create_measure_batch(task, measure_option), inputs)
    for callback in callbacks:
        callback(None, inputs, results)
    return list(zip(inputs, results))


def confirm_best(task, records: list, measure_option, callbacks=(), top: int = CONFIRM_TOP,
                 times: int = CONFIRM_TIMES, trials: int | None = None) -> list:
    """Measure ``times`` more times each of the ``top`` fastest configs of ``task`` in
    ``records`` measured fewer than ``1 + times`` times, in turn, so a spell of the machine's
    noise does not fall on one config; again while ``trials`` are left (default: ``2 * top *
    times``): a confirmed config that read slower hands its place in the top to the next, whose
    one reading must not stand unconfirmed.  A task with all of those confirmed measures nothing (a
    resumed tune confirms what an older one left unconfirmed, and nothing twice).  Each batch
    waits for the vCPUs to be near first (``CONFIRM_NEAR_WAIT_S`` in all), and each measurement
    may wait longer than a search's for the machine's good state (:func:`patient`).  Returns the
    new (input, result) pairs, each batch passed to ``callbacks`` as a tuner's would be."""
    from tune.measure.option import create_measure_batch
    from tune.record import ranked_by_workload
    from tune.autotvm.tuner.tuner import config_key

    left = 2 * top * times if trials is None else trials
    mine = measured(records, task)
    batch, out = None, []
    wait_until = time.monotonic() + CONFIRM_NEAR_WAIT_S
    while left >= times:
        counts = Counter(config_key(inp.config) for inp, res in mine + out if res.error_no == 0)
        ranked = [inp for inp, _ in next(iter(ranked_by_workload(mine + out).values()), [])]
        rows = [inp for inp in ranked[:top] if counts[config_key(inp.config)] < 1 + times][:left // times]
        if not rows:
            break
        batch = batch or create_measure_batch(task, measure_option)
        for _ in range(times):
            out += measure_again(task, [inp.config for inp in rows], measure_option, callbacks, wait_until, batch)
        left -= times * len(rows)
    return out


def calibrate(measure_option, tasks: list) -> None:
    """Settle the scale of every task to tune before the first (``LocalRunner.calibrate``):
    each reference probed in rounds over all of them, not once at its task's first measurement."""
    builder, runner = measure_option["builder"], measure_option["runner"]
    if not (hasattr(runner, "calibrate") and getattr(runner, "check_correctness", False)):
        return
    refs = []
    for task in tasks:
        builder.set_task(task)
        refs.append(builder.build_reference(task))
    runner.calibrate(refs)


def tune_tasks(tasks: list, plan: list, log_path: str, tuner: str = "xgb", budget_s: float | None = None,
               records: list = (), measure_option=None, stream=None, seed: int = 0) -> dict:
    """Tune each task to its planned trials (records already in the log count as done).
    With ``budget_s``, a task may spend the rest of the budget times its share of the flops
    left (what an earlier task left unspent goes to the later ones); a task's search stops at
    the first batch boundary where the rest of its time would not fit its confirmation (at its
    seconds per trial so far), and the confirmation runs.  A task tuned already (a resumed
    tune) only has what its records leave unconfirmed confirmed (:func:`confirm_best`).
    Returns workload -> trials measured now."""
    measure_option = measure_option or autotvm.measure_option(
        builder="local", runner=autotvm.LocalRunner(**RUNNER_OPTIONS))
    end = None if budget_s is None else time.monotonic() + budget_s
    deadline = [None]
    clock = {"start": 0.0, "trials": 0, "reserve": 0}  # this task's search so far; trials kept for confirming
    done: dict = {}

    def stop_at_deadline(_tuner, inputs, _results) -> None:
        # the search stops early enough that the confirmation still fits the task's time, at the
        # seconds per trial the task has taken so far
        if deadline[0] is None:
            return
        clock["trials"] += len(inputs)
        now = time.monotonic()
        per_trial = (now - clock["start"]) / max(clock["trials"], 1)
        if now + clock["reserve"] * per_trial > deadline[0]:
            raise _BudgetSpent

    pending = [t for t, n in zip(tasks, plan) if n > len(measured(records, t))]
    share_left = sum(t.share for t in pending) or 1.0
    calibrate(measure_option, pending)
    for k, (task, n) in enumerate(zip(tasks, plan)):
        old = measured(records, task)
        left = n - len(old)
        done[task.workload] = 0
        prefix = ("" if stream is None else  # tasks made by hand have no count
                  f"[Task {k + 1:2d}/{len(tasks)}] {task.name} x{task.count} ({100 * task.share:.0f}%)")
        if left <= 0:  # tuned already: confirm what an older tune left unconfirmed
            if len(old) >= CONFIRMED_FROM:
                done[task.workload] = len(confirm_best(task, old, measure_option,
                                                       [autotvm.callback.log_to_file(log_path)]))
            if stream is not None and done[task.workload]:
                stream.write(f"{prefix} tuned already; {done[task.workload]} confirming measurements\n")
            continue
        if end is not None:
            now = time.monotonic()
            deadline[0] = now + max(end - now, 0.0) * task.share / max(share_left, 1e-12)
            share_left -= task.share
        kwargs = {"seed": seed + k} if tuner in ("random", "xgb") else {}
        t = autotvm.tuner.get_tuner(tuner, task, **kwargs)
        if old:
            t.load_history(old)
        t.measure_first = rule_variants(task)
        callbacks = [autotvm.callback.log_to_file(log_path)]
        if stream is not None:
            callbacks.append(autotvm.callback.progress_bar(left, prefix=prefix, stream=stream))
        callbacks.append(stop_at_deadline)
        mon = autotvm.callback.Monitor()
        confirm = CONFIRM_TRIALS if left >= CONFIRMED_FROM else 0
        clock.update(start=time.monotonic(), trials=0, reserve=confirm)
        try:
            t.tune(n_trial=left - confirm, measure_option=measure_option, callbacks=[mon, *callbacks])
        except _BudgetSpent:
            # its search time is up; the confirmation had its time kept, once there is something
            # to confirm (a task cut after 82 trials, each read once, deployed at 1.98x its record)
            confirm = confirm if len(mon.records) >= confirm else 0
            if stream is not None:
                stream.write("\n")
        if confirm:
            again = confirm_best(task, old + mon.records, measure_option,
                                 [autotvm.callback.log_to_file(log_path)], trials=confirm)
            mon.records += again
        done[task.workload] = len(mon.records)
    return done


# After the search, the configs a model may deploy are measured DEPLOYED_ROUNDS times as a model
# run calls them: with their weights out of the caches (the runner's ``enable_cpu_cache_flush``),
# in rounds over all of them (:func:`confirm_deployed`); those readings alone then rank their
# workload (``record.ranked_by_workload``).  The search times candidates warm, where a model
# streams every layer's weights from memory, and the two orders differ: ResNet-50's 256 @14
# Winograd record with tiles of 4 ran 2.3x slower cold, and its tiles of 2 won; re-ranking each
# task's 5 best configs cold built a model 0.975x and 0.986x the time of the warm log's.  And a
# task's readings come from one moment, where on this VM the speed of one kernel against another
# moves ~3% between moments tens of seconds apart and up to ~15% in a noisy minute.  The
# candidates: each task's DEPLOY_TOP fastest configs, the rule's config and whatever the build
# deploys (the rule's in its data's block, a slower record whose output block spares a layout
# transform, ``tune_layouts``).  Each such measurement waits for the machine's good state as a
# confirmation does, about 2.4 s on a busy host: ResNet-50's 29 tasks, each task's 3 fastest and
# the rule's config in every input block, made 199 configs, 3 rounds 24 minutes; as kept, 82
# configs in 2 rounds, 7.3 minutes.
DEPLOYED_ROUNDS = 2
DEPLOY_TOP = 2
DEPLOY_MEASURE_S = 2.5  # seconds a measurement of confirm_deployed takes (it waits as a confirmation)


def search_budget(budget_s: float | None, tasks: list) -> float | None:
    """The seconds of a whole tune's budget that the search and its confirmations may spend: the
    rest is kept for :func:`confirm_deployed` (each task's ``DEPLOY_TOP`` configs and the rule's,
    ``DEPLOYED_ROUNDS`` times, ``DEPLOY_MEASURE_S`` each; ResNet-50's 29 tasks 7 minutes) and
    :func:`confirm_in_place` (``IN_PLACE_S``), at most half of it."""
    if budget_s is None:
        return None
    reserve = len(tasks) * (DEPLOY_TOP + 1) * DEPLOYED_ROUNDS * DEPLOY_MEASURE_S + IN_PLACE_S
    return budget_s - min(reserve, budget_s / 2)


def node_configs(node) -> list:
    """The configs ``node`` holds: its own, or those of the nodes inside a fused group."""
    body = node.attrs.get("body")
    if body is not None and hasattr(body, "nodes"):
        return [cfg for n in body.nodes for cfg in node_configs(n)]
    cfg = node.attrs.get("config")
    return [] if cfg is None else [cfg]


def records_changed(before, after) -> tuple:
    """``(changed, kernels)``: of the configs the built model ``after`` runs, how many are not
    among those ``before`` (the rule's build) runs.  0 changed: the two builds run the same
    kernels, so any difference timed between them is the machine's.  (The graph keeps a rule
    config unless a record beats it by ``RECORD_MARGIN``: a tuned ResNet-50 often keeps them all.)"""
    def configs(lib):  # a Config compares by its workload and values
        return Counter(cfg for node in lib.graph.nodes for cfg in node_configs(node))

    mine = configs(after)
    return sum((mine - configs(before)).values()), sum(mine.values())


def records_changed_note(before, after) -> str:
    """One line on what the records changed in the built model (:func:`records_changed`)."""
    from tune.autotvm.choose import RECORD_MARGIN

    changed, kernels = records_changed(before, after)
    if changed == 0:
        return (f"the records changed none of the {kernels} kernels' configs (no record beats the "
                f"rule's config by {RECORD_MARGIN:.0%}): both builds are the same code, and the difference "
                f"timed between them is the machine's")
    return f"the records changed {changed} of the {kernels} kernels' configs (the rest keep the rule's)"


def deployed(lib, tasks: list) -> list:
    """``[(task, config)]``: each distinct config of ``tasks`` that the built model ``lib`` runs,
    as a point of its task's space."""
    by_args = {(t.name, tuple(t.args)): t for t in tasks}
    out: dict = {}
    for cfg in (cfg for node in lib.graph.nodes for cfg in node_configs(node)):
        task = by_args.get((cfg.template, tuple(cfg.workload[1:])))
        point = None if task is None else space_point(task, cfg.values)
        if point is not None:
            out[(task.workload, point.index)] = (task, point)
    return list(out.values())


def deploy_candidates(task, records: list) -> list:
    """The configs of ``task`` that :func:`confirm_deployed` times as deployed: its
    ``DEPLOY_TOP`` fastest in ``records`` (timed warm) and the rule's config."""
    from tune.record import ranked_by_workload

    ranked = next(iter(ranked_by_workload(measured(records, task)).values()), [])
    return [inp.config for inp, _ in ranked[:DEPLOY_TOP]] + [task.default_config()]


def confirm_deployed(g, params, target, log_path: str, tasks: list, measure_option=None,
                     rounds: int = DEPLOYED_ROUNDS, stream=None) -> tuple:
    """Measure the configs of ``tasks`` that the model ``g`` may deploy ``rounds`` times each as a
    model run calls them, their weights out of the caches (see ``DEPLOYED_ROUNDS``): each task's
    :func:`deploy_candidates` and what the model built with the records of ``log_path`` runs,
    in rounds over all of them, so that each config's readings span as many moments (each round
    may wait ``CONFIRM_NEAR_WAIT_S`` in all for the vCPUs to be near, each measurement for the
    machine's good state, as :func:`confirm_best`'s do).  Those readings then rank their tasks.
    Only tasks with ``CONFIRMED_FROM`` records or more (tuned far enough to be confirmed, as
    :func:`tune_tasks` confirms them); a config read so ``rounds`` times already is left alone: a
    resumed tune measures nothing twice.  The build may then deploy a config not yet measured
    so; built again, those are measured the same way (once more at most).  A runner without the
    flush measures warm, and the ranking stays the search's.
    Returns ``(the model built with the records, measurements taken)``."""
    from tune.autotvm.tuner.tuner import config_key

    measure_option = measure_option or autotvm.measure_option(
        builder="local", runner=autotvm.LocalRunner(**RUNNER_OPTIONS))
    records = read_log(log_path, target)
    counts = Counter((inp.task.workload, config_key(inp.config)) for inp, res in records
                     if res.error_no == 0 and res.flush)
    tasks = [task for task in tasks if len(measured(records, task)) >= CONFIRMED_FROM]
    log = autotvm.callback.log_to_file(log_path)
    runner = measure_option["runner"]
    warm = getattr(runner, "enable_cpu_cache_flush", None)
    if warm is not None:
        runner.enable_cpu_cache_flush = True
    taken, seen = 0, set()
    try:
        for first in (True, False):
            lib = build_with_records(g, params, target, log_path)
            pairs = deployed(lib, tasks)
            if first:
                pairs = [(task, cfg) for task in tasks for cfg in deploy_candidates(task, records)] + pairs
            todo = {}
            for task, cfg in pairs:
                key = (task.workload, config_key(cfg))
                if key not in seen and counts[key] < rounds:
                    todo[key] = (task, cfg)
            seen |= set(todo)
            if not todo:
                return lib, taken
            if stream is not None:
                stream.write(f"measuring {len(todo)} configs the model may deploy {rounds} times each, "
                             f"their weights out of the caches, in rounds\n")
            for _ in range(rounds):
                wait_until = time.monotonic() + CONFIRM_NEAR_WAIT_S
                for key, (task, cfg) in todo.items():
                    ((_, res),) = measure_again(task, [cfg], measure_option, [log], wait_until)
                    counts[key] += res.error_no == 0
                    taken += 1
    finally:
        if warm is not None:
            runner.enable_cpu_cache_flush = warm
    return build_with_records(g, params, target, log_path), taken


# Then the configs the model may deploy are timed where they run: inside whole runs of the model
# (:func:`confirm_in_place`).  Neither the warm nor the cold (flush) readings hold there: on a
# ResNet-50 tune's log the kernels summed 1.12-1.16x their time called in a row, Winograd's up to
# 1.8x, and 8 deployed convs took 1.19x their cold records in place (median; none within 5%).  Each variant of the model is
# built with one candidate per operator (the k-th of each), the rule's build is one more, and the
# variants run alternated in rounds, so each config's reading shares its moments with its rivals'.
# Those readings then rank their tasks (``record.ranked_by_workload``): deployment is compared
# with what the model itself measured.  A whole run is cheap (ResNet-50: ~50 ms); the builds cost.
IN_PLACE_TOP = 2  # per task: its fastest by the ranking so far (cold) and by the warm readings
IN_PLACE_ROUNDS = 16
IN_PLACE_RUNS = 5  # whole runs of a variant per round; a call's median over them is the round's reading
IN_PLACE_S = 150.0  # seconds search_budget keeps for confirm_in_place (ResNet-50: 7 builds, 16 rounds, ~60 s)


def in_place_groups(tasks: list, records: list) -> list:
    """``[[(task, config), ...], ...]``: the candidates :func:`confirm_in_place` times, one list per
    operator (a conv's direct and Winograd tasks share one: a model runs one of them): each
    task's ``IN_PLACE_TOP`` fastest by its records' ranking and by its warm readings, those the
    graph runs as measured."""
    from tune.autotvm.choose import alternatives, deployable
    from tune.autotvm.config import has_rule
    from tune.record import ranked_by_workload
    from tune.autotvm.tuner.tuner import config_key

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


def forced_build(g, params, target, choice: dict):
    """The model built with the knob values of ``choice`` (``(template, args) -> values``) and the
    rule's configs elsewhere (a conv chosen Winograd names only its Winograd workload)."""
    from graph.build import build
    from tune.autotvm.config import recorded_values
    from tune.autotvm.dispatch import ApplyChoices

    def chosen(workload, _target):
        values = choice.get((workload[0], tuple(workload[1:])))
        return None if values is None else recorded_values(workload, values)

    with ApplyChoices(chosen):
        return build(g, target=target, params=params)


def task_calls(lib, tasks: list) -> list:
    """``[(call index, task, config)]``: each kernel call of ``lib`` that runs one config of
    ``tasks`` (a fused call with two is nobody's alone, and left out), the config as a point of
    its task's space (a call whose config lies outside it is left out too)."""
    by_args = {(t.name, tuple(t.args)): t for t in tasks}
    out = []
    for k, node in enumerate(node for node, key in lib.steps if key is not None):
        hits = [(by_args[(c.template, tuple(c.workload[1:]))], c.values) for c in node_configs(node)
                if (c.template, tuple(c.workload[1:])) in by_args]
        if len(hits) == 1:
            task, values = hits[0]
            cfg = space_point(task, values)
            if cfg is not None:
                out.append((k, task, cfg))
    return out


def model_feed(lib, seed: int = 0) -> dict:
    """Inputs of a built model: standard normal floats, zeros of any other type (the timing needs
    no more; ``graph.cli.random_inputs`` lives above this module, which the CLI imports)."""
    rng = np.random.default_rng(seed)
    return {v.name: (rng.standard_normal(tuple(v.shape)).astype(v.dtype) if np.dtype(v.dtype).kind == "f"
                     else np.zeros(tuple(v.shape), v.dtype)) for v in lib.graph.inputs}


YARD_WINDOW_S = 0.005  # the yardstick's window after each whole run of an in-place reading


def window_seconds(call, seconds: float) -> float:
    """Seconds per call of ``call`` over one window of ``seconds`` of calls back to back."""
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        call()
        n += 1
    return (time.perf_counter() - t0) / n


def scaled_kernel_runs(m, number: int, yard: tuple) -> tuple:
    """``(each kernel call's median seconds over number whole runs of executor m, the factor to
    the records' scale)``: the yardstick's settled seconds (``yard``: ``execute.yardstick_call()``)
    over the median of its times in windows of ``YARD_WINDOW_S`` timed after each run, as the
    runner scales its readings.  This VM's speed moves 10-30% between moments minutes apart
    (ResNet-50's run, medians of 30 at 8 moments 20 s apart: 51-61 ms, CV 5.1%); over the
    yardstick beside it, CV 3.1%, and its 20 largest calls' CV 5.1% -> 3.6%."""
    call, settled = yard
    windows: list = []

    def window() -> None:
        call()  # its data back in the caches after the model's run
        windows.append(window_seconds(call, YARD_WINDOW_S))

    runs = m.kernel_runs(number, between=window)
    return np.median(runs, axis=0), settled / float(np.median(windows))


def confirm_in_place(g, params, target, log_path: str, tasks: list, rounds: int = IN_PLACE_ROUNDS,
                     stream=None) -> tuple:
    """Time the configs the model ``g`` may deploy inside whole runs of it (see ``IN_PLACE_TOP``):
    the :func:`in_place_groups` candidates of every task with records (a build times them all at
    once, so a task measured a few times costs nothing more), in builds that each take the k-th
    candidate of every operator, and the rule's build, alternated in ``rounds`` rounds.  Each
    config's record (``in_place``, ``scaled``) holds one reading a round: the median of its calls
    in that round's runs on the records' scale (:func:`scaled_kernel_runs`; the yardstick is
    settled first where no runner has here), so that readings of two tunes, or of a tune and a
    later check, compare.  A resumed tune whose candidates and rule's configs all have such
    records times nothing; a rule changed since the log was written (or a log of another
    version, or raw in-place readings) has its new configs timed against the candidates.
    Returns ``(the model built with the records, configs timed)``."""
    from tune.measure import execute
    from tune.measure.measure import MeasureInput, MeasureResult
    from tune.autotvm.tuner.tuner import config_key

    records = read_log(log_path, target)
    tasks = [task for task in tasks if measured(records, task)]
    groups = in_place_groups(tasks, records)
    timed = {(inp.task.workload, config_key(inp.config)) for inp, res in records
             if res.error_no == 0 and res.in_place and res.scaled}
    rule = forced_build(g, params, target, {})  # what the rule deploys now (changed since the log?)
    wanted = [pair for group in groups for pair in group]
    wanted += [(task, cfg) for _, task, cfg in task_calls(rule, tasks)]
    if all((task.workload, config_key(cfg)) in timed for task, cfg in wanted):
        return build_with_records(g, params, target, log_path), 0
    width = max(map(len, groups))
    choices = [{}] + [{(task.name, tuple(task.args)): cfg.knob_values()
                       for task, cfg in (group[k % len(group)] for group in groups)} for k in range(width)]
    if stream is not None:
        stream.write(f"timing {sum(map(len, groups))} configs the model may deploy inside whole runs of it: "
                     f"{len(choices)} builds (the rule's and {width} of candidates) alternated in {rounds} rounds\n")
    start, variants = time.perf_counter(), []
    for choice in choices:
        try:
            lib = forced_build(g, params, target, choice) if choice else rule
        except Exception as err:  # noqa: BLE001 - one refused build costs its candidates' readings, not the tune
            if stream is not None:
                stream.write(f"a build with candidates {sorted(choice.values(), key=str)} failed ({err}); "
                             f"its candidates go untimed in place\n")
            continue
        m = lib.create_executor()
        m.set_input(**model_feed(lib))
        variants.append((m, task_calls(lib, tasks)))
    yard = execute.yardstick_call(settle=True)
    readings: dict = {}  # (workload, config key) -> (task, config, [[seconds of its calls] per round])
    for r in range(rounds):
        for k in range(len(variants)):
            m, calls = variants[(k + r) % len(variants)]  # each round starts with another build
            medians, scale = scaled_kernel_runs(m, IN_PLACE_RUNS, yard)
            seconds = medians * scale
            for i, task, cfg in calls:
                entry = readings.setdefault((task.workload, config_key(cfg)), (task, cfg, [[] for _ in range(rounds)]))
                entry[2][r].append(float(seconds[i]))
    spent, now = time.perf_counter() - start, time.time()
    rows = [(MeasureInput(task.target, task, cfg),
             MeasureResult(tuple(float(np.median(s)) for s in per_round if s), 0, spent / max(len(readings), 1), now,
                           in_place=True, scaled=True))
            for task, cfg, per_round in readings.values()]
    autotvm.callback.log_to_file(log_path)(None, [i for i, _ in rows], [r for _, r in rows])
    return build_with_records(g, params, target, log_path), len(rows)


# ---------------------------------------------------------------- builds ---
def build_with_records(g, params, target, log_path: str | None):
    """``graph.build`` with the rule defaults (``log_path`` None) or under ``apply_history_best``."""
    from graph.build import build

    if log_path is None:
        return build(g, target=target, params=params)
    with autotvm.apply_history_best(log_path):
        return build(g, target=target, params=params)


def tune_plan(tasks: list, plan: list, records: list) -> list[str]:
    """One line per task: what it is, its share, its space and its planned trials (and those in the log)."""
    lines = []
    for k, (t, n) in enumerate(zip(tasks, plan)):
        have = min(len(measured(records, t)), n)
        lines.append(f"task {k + 1}/{len(tasks)}: {t.name} {t.args} x{t.count}, {100 * t.share:.1f}% of flops, "
                     f"{len(t.config_space)} configs, {n} trials ({have} in the log)")
    return lines


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


def plot_tuning(log_path: str, tasks: list, out: str, target) -> None:
    """Best GFLOP/s against trials, one line per task (the picture that says whether to tune longer)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    for k, (t, curve) in enumerate(best_curves(log_path, tasks, target).items()):
        if curve:
            ax.plot(range(1, len(curve) + 1), curve, label=f"{k + 1}: {t.name} x{t.count}")
    ax.set_xlabel("trials")
    ax.set_ylabel("best GFLOP/s")
    ax.set_title(f"tuning {os.path.basename(log_path)}")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


__all__ = ["RUNNER_OPTIONS", "best_curves", "build_with_records", "conv_alternatives", "extract_tasks", "graph_workloads", "plot_tuning", "read_log",
           "spread_trials", "tune_plan", "tune_tasks"]
