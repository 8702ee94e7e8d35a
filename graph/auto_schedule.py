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
from collections import Counter

from codegen.target import create
from graph.build import bind_params, build, is_alias_group, optimize
from graph.compile import kernel_key, schedule_body
from graph.passes.context import BuildContext
from graph.schedule_traces import kernel_dag, task_name
from graph.tuning import _program
from tune import auto_scheduler
from tune.auto_scheduler.dispatcher import register_extractor


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



def tune_model(g, params, target, trials: int, log_path: str, options=None, seed: int = 0,
               budget_s: float | None = None, per_round: int = 16, verbose: int = 1):
    """Tune every kernel of ``g`` with the task scheduler to ``trials`` measured in all (those in
    ``log_path`` count: a tune resumes from its log); returns ``(scheduler, before, after)``, the
    builds without the records and with them (kernels without a record keep their schedules)."""
    target = create(target)
    tasks, weights = extract_tasks(g, params, target, options)
    resume = log_path if os.path.exists(log_path) else None
    sched = auto_scheduler.TaskScheduler(tasks, weights, load_log_file=resume, seed=seed)
    opts = auto_scheduler.TuningOptions(num_measure_trials=trials, num_measures_per_round=per_round,
                                        verbose=verbose, measure_callbacks=[auto_scheduler.RecordToFile(log_path)])
    sched.tune(opts, time_budget_s=budget_s)
    before = build(g, target=target, params=params, records=[], options=options)
    after = before
    if os.path.exists(log_path):
        after = build(g, target=target, params=params, records=auto_scheduler.ApplyHistoryBest(log_path),
                      options=options)
    return sched, before, after


__all__ = ["extract_tasks", "kernel_bodies", "tune_model"]
