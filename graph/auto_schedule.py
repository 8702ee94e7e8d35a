"""The graph side of the auto_scheduler: a graph's fused kernels as search tasks, and the trace a
build compiles each with.

``auto_scheduler.extract_tasks(g, params, target)`` asks the extractor this
module registers on ``import graph``: the graph's pass table runs as
``graph.build`` runs it, and every distinct fused kernel becomes a
``SearchTask`` over its te computation (``graph.compile.body_to_te``), named
by the computation's digest, with its calls per run as weight; the model's
weights it reads may be packed in its tiles' layout.  At build,
``graph.schedule_traces.kernel_trace`` finds a kernel's best trace in the
build's records by the same digest, and ``fold_packed_weights`` packs the
weights such a trace packs once, at build.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter

import numpy as np

from codegen.target import create
from graph.build import bind_params, build, is_alias_group, optimize
from graph.compile import kernel_key, schedule_body
from graph.passes.context import BuildContext
from graph.schedule_traces import kernel_dag, task_name
from graph.tuning import _program, model_feed
from tune import auto_scheduler
from tune.auto_scheduler.dispatcher import register_extractor
from tune.auto_scheduler.measure_record import load_records, save_records
from tune.measure import MeasureResult
from tune.measure.runner import measuring_clock
from tune.network import IN_PLACE_ROUNDS, IN_PLACE_RUNS, IN_PLACE_TOP
from tune.record import ranked_by_workload, target_key


def kernel_bodies(g, params, target, options=None) -> list:
    """``[(label, body, calls per run, constant input positions)]`` of every distinct kernel a build
    of ``g`` compiles (the positions: of the inputs its first call takes from the model's weights)."""
    context = BuildContext.of(target, [], options)
    with context.target:
        fused = optimize(bind_params(g, params), context=context)
    consts = {id(n.output) for n in fused.nodes if n.is_constant}
    counts, first = Counter(), {}
    for node in fused.nodes:
        if node.op != "fused" or is_alias_group(node):
            continue
        key = kernel_key(node.attrs["body"])
        counts[key] += 1
        first.setdefault(key, (node.name, node.attrs["body"],
                               tuple(k for k, v in enumerate(node.inputs) if id(v) in consts)))
    return [(first[k][0], first[k][1], counts[k], first[k][2]) for k in first]


def own_schedule(body, dag, target):
    """The kernel's own schedule (its operator's, as ``graph.build`` schedules it without records) as
    a State, measured first so that a trace is only deployed where it beats it; None where the
    schedule used a primitive a trace does not replay."""
    with target:
        sch = schedule_body(body, dag.outputs, target)
    return None if sch.trace.unrecorded else auto_scheduler.State(sch.trace, own=True)


def extract_tasks(program, params, target, options=None) -> tuple | None:
    """The registered extractor: ``(tasks, weights)``, heaviest first."""
    got = _program(program, params)
    if got is None:
        return None
    g, params = got
    target = create(target)
    tasks, weights = [], []
    for label, body, count, constants in kernel_bodies(g, params, target, options):
        dag = kernel_dag(body, target, constants)
        # a program that packs the weights is measured taking them packed: the build folds the packing
        tasks.append(auto_scheduler.SearchTask(compute_dag=dag, workload_key=task_name(dag), target=target,
                                               desc=label, baseline=own_schedule(body, dag, target),
                                               layout_rewrite_option=auto_scheduler.LayoutRewriteOption
                                               .REWRITE_FOR_PRE_TRANSFORMED))
        weights.append(count)
    order = sorted(range(len(tasks)), key=lambda k: -tasks[k].flop * weights[k])
    return [tasks[k] for k in order], [weights[k] for k in order]


register_extractor(extract_tasks)


def in_place_candidates(tasks, log_path, target, top: int = IN_PLACE_TOP, records=None) -> dict:
    """``{workload: [MeasureInput, ...]}``: the traces of each task of ``tasks`` a build may deploy,
    :func:`confirm_in_place` times: its ``top`` fastest by the search's readings and its own
    schedule, for the tasks where that leaves a choice.  ``records``: the log's, if already read."""
    key, wanted = target_key(target), {t.workload for t in tasks}
    rows: dict = {}
    for inp, res in load_records(log_path) if records is None else records:
        if inp.task.workload in wanted and target_key(inp.target) == key:
            rows.setdefault(inp.task.workload, []).append((inp, res))
    out = {}
    for workload, mine in rows.items():
        ranked = next(iter(ranked_by_workload([row for row in mine if not row[1].in_place]).values()), [])
        picks = {inp.config.key(): inp for inp, _ in ranked[:top]}
        own = next((inp for inp, _ in mine if inp.config.own), None)
        if own is not None:
            picks.setdefault(own.config.key(), own)
        if len(picks) > 1:
            out[workload] = list(picks.values())
    return out


def confirm_in_place(g, params, target, log_path, tasks, options=None, top: int = IN_PLACE_TOP,
                     rounds: int = IN_PLACE_ROUNDS, runs: int = IN_PLACE_RUNS, clock: str = "wall",
                     stream=None) -> int:
    """Time the traces the tuned model may deploy inside whole runs of it, as AutoTVM's configs are
    (``tune.deployed.confirm_in_place``): a search times a kernel warm, called in a loop, where a
    model streams its weights from memory and runs other kernels in between (ShuffleNet-v2's
    blocked convs ran up to 1.3x their warm ranking's time in place).  Each task's
    :func:`in_place_candidates`, in builds that each take the k-th candidate of every task,
    alternated in ``rounds`` rounds of ``runs`` runs; every candidate gets a record with
    ``in_place``, one reading a round (the median of its calls), and those alone then rank the
    task (``tune.record.ranked_by_workload``).  Nothing is timed when every candidate has such a
    record (a resumed tune).  ``clock``: ``"wall"``, or ``"thread_cpu"``: the runs on this thread
    alone, each call read by its CPU time (``tune.measure.runner.measuring_clock``), as the records
    say.  Returns the records written."""
    target = create(target)
    records = load_records(log_path)
    picks = in_place_candidates(tasks, log_path, target, top, records)
    timed = {(inp.task.workload, inp.config.key()) for inp, res in records
             if res.in_place and res.error_no == 0}
    if all((w, inp.config.key()) in timed for w, cands in picks.items() for inp in cands):
        return 0
    width = max(map(len, picks.values()))
    names: dict = {}  # base kernel key -> its task's workload

    def workload_of(node):
        base = kernel_key(node.attrs["body"])
        if base not in names:
            names[base] = (task_name(kernel_dag(node.attrs["body"], target)),)
        return names[base]

    variants = []
    for k in range(width):
        chosen = [cands[k % len(cands)] for cands in picks.values()]
        try:
            lib = build(g, target=target, params=params, options=options,
                        records=[(inp, MeasureResult((1.0,), 0, 0.0, 0.0)) for inp in chosen])
        except Exception as err:  # noqa: BLE001 - a refused build costs its candidates' readings, not the tune
            if stream is not None:
                stream.write(f"a build with the {k}-th candidates failed ({err}); they go untimed in place\n")
            continue
        m = lib.create_executor()
        m.set_input(**model_feed(lib))
        calls = [workload_of(node) for node, key in lib.steps if key is not None]
        variants.append((m, calls, {inp.task.workload: inp for inp in chosen}))
    if stream is not None:
        stream.write(f"timing {sum(map(len, picks.values()))} traces the model may deploy inside whole "
                     f"runs of it: {len(variants)} builds alternated in {rounds} rounds\n")
    readings: dict = {}  # (workload, trace key) -> (input, [[seconds of its calls] per round])
    start = time.perf_counter()
    with measuring_clock(clock) as clock_fn:
        for r in range(rounds):
            for k in range(len(variants)):
                m, calls, chosen = variants[(k + r) % len(variants)]  # each round starts with another build
                seconds = np.median(m.kernel_runs(runs, clock=clock_fn), axis=0)
                for s, workload in zip(seconds, calls):
                    inp = chosen.get(workload)
                    if inp is not None:
                        entry = readings.setdefault((workload, inp.config.key()),
                                                    (inp, [[] for _ in range(rounds)]))
                        entry[1][r].append(float(s))
    spent, now = time.perf_counter() - start, time.time()
    rows = [(inp, MeasureResult(tuple(float(np.median(s)) for s in per_round if s), 0,
                                spent / max(len(readings), 1), now, in_place=True, clock=clock))
            for inp, per_round in readings.values()]
    save_records(log_path, [i for i, _ in rows], [r for _, r in rows])
    return len(rows)



def tune_model(g, params, target, trials: int, log_path: str, options=None, seed: int = 0,
               budget_s: float | None = None, per_round: int = 16, verbose: int = 1, runner=None,
               clock: str | None = None):
    """Tune every kernel of ``g`` with the task scheduler to ``trials`` measured in all (those in
    ``log_path`` count: a tune resumes from its log; ``runner``: ``TuningOptions``'s, by default a
    ``LocalRunner`` with the cache flush, as classic TVM advises for networks: a model's kernels
    read their weights from memory, and traces ranked warm lost in place to the kernels' own
    schedules, encoder4's denses 1.02-1.14x), then time the
    traces it may deploy inside whole runs of the model (:func:`confirm_in_place`, by ``clock``:
    ``"wall"`` or ``"thread_cpu"``, the runner's by default); returns ``(scheduler, before, after)``,
    the builds without the records and with them (kernels without a record keep their schedules)."""
    target = create(target)
    tasks, weights = extract_tasks(g, params, target, options)
    resume = log_path if os.path.exists(log_path) else None
    runner = runner or auto_scheduler.LocalRunner(enable_cpu_cache_flush=True)
    sched = auto_scheduler.TaskScheduler(tasks, weights, load_log_file=resume, seed=seed)
    opts = auto_scheduler.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                                        verbose=verbose, measure_callbacks=[auto_scheduler.RecordToFile(log_path)],
                                        runner=runner)
    sched.tune(opts, time_budget_s=budget_s)
    if os.path.exists(log_path):
        clock = clock or getattr(opts.runner, "clock", "wall")
        confirm_in_place(g, params, target, log_path, tasks, options, clock=clock,
                         stream=sys.stdout if verbose else None)
    before = build(g, target=target, params=params, records=[], options=options)
    after = before
    if os.path.exists(log_path):
        after = build(g, target=target, params=params, records=auto_scheduler.ApplyHistoryBest(log_path),
                      options=options)
    return sched, before, after


__all__ = ["confirm_in_place", "extract_tasks", "in_place_candidates", "kernel_bodies", "tune_model"]
