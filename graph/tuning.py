"""Whole-model tuning, the graph side: the kernels of a graph, and builds with given choices.

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

The tuning itself (search, confirmation, timing as deployed) is
``tune.network`` and ``tune.deployed``; they see a graph through
:class:`GraphProgram`.  ``tessera tune model.onnx --trials N --log model.jsonl``
(``graph.cli``) runs it all.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from tune import autotvm
from tune.autotvm.choose import Options, tuning_alternatives
from tune.autotvm.config import has_rule
from tune.autotvm.dispatch import ApplyChoices
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


def graph_workloads(g, params=None, target="llvm", options=None) -> Counter:
    """Workload key -> kernel calls per run, of every node with a config after the pass table
    (with the build ``options``, and the records of the user's ``apply_history_best``, if any)."""
    from graph.build import bind_params, optimize
    from graph.passes.context import BuildContext

    counts: Counter = Counter()

    def walk(graph) -> None:
        for node in graph.nodes:
            body = node.attrs.get("body")
            if body is not None and hasattr(body, "nodes"):
                walk(body)
            cfg = node.attrs.get("config")
            if cfg is not None:
                counts[cfg.workload] += 1

    context = BuildContext.of(target, options=options)
    with context.target:
        walk(optimize(bind_params(g, params), context=context))
    return counts


def conv_alternatives(workload: tuple, options=None) -> list:
    """The other implementations' workloads of a kernel that has two (direct <-> Winograd) worth
    tuning beside it (``tune.autotvm.choose.tuning_alternatives``), or []."""
    return tuning_alternatives(workload, Options.of(options)) if has_rule(workload[0]) else []


def extract_tasks(program, params=None, target="llvm", options=None) -> list | None:
    """The registered extractor: one task per distinct tunable workload, heaviest first (with the
    build ``options``: ``{"winograd": False}`` offers no Winograd task)."""
    got = _program(program, params)
    if got is None:
        return None
    g, params = got
    tasks = []
    counts = graph_workloads(g, params, target, options)
    for wl, count in list(counts.items()):
        for alt in conv_alternatives(wl, options):
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


def node_configs(node) -> list:
    """The configs ``node`` holds: its own, or those of the nodes inside a fused group."""
    body = node.attrs.get("body")
    if body is not None and hasattr(body, "nodes"):
        return [cfg for n in body.nodes for cfg in node_configs(n)]
    cfg = node.attrs.get("config")
    return [] if cfg is None else [cfg]


class GraphProgram:
    """A graph as whole-model tuning sees it (``tune.network``'s program): built with the best
    records of a log or with given choices, its kernel calls' configs, and their times inside
    whole runs."""

    def __init__(self, g, params, target, options=None):
        from codegen.target import create

        self.graph, self.params, self.target, self.options = g, params, create(target), options

    def build(self, records=None, choices=None):
        """``graph.build`` with ``records`` (a log path) or ``choices`` (``fn(workload, target)`` ->
        knob values, taken as they are), the rule's configs elsewhere."""
        from graph.build import build

        if choices is not None:
            records = ApplyChoices(choices)
        return build(self.graph, target=self.target, params=self.params, records=records or [],
                     options=self.options)

    @staticmethod
    def configs(lib) -> list:
        """The configs of each kernel call of a built model, in execution order."""
        return [node_configs(node) for node, key in lib.steps if key is not None]

    @staticmethod
    def kernel_runs(lib, number: int, clock=None) -> np.ndarray:
        """Seconds of each kernel call (columns) in ``number`` whole runs (rows), after one untimed
        (``clock``: the executor's ``kernel_runs``'s, wall time by default)."""
        m = lib.create_executor()
        m.set_input(**model_feed(lib))
        return m.kernel_runs(number, clock=clock)


def tune_model(g, params, target, trials: int, log_path: str, tuner: str = "xgb", options=None, seed: int = 0,
               budget_s: float | None = None, records=None, stream=None, log=None, measure_option=None) -> tuple:
    """AutoTVM over every tunable kernel of ``g`` (``tune.network``): ``trials`` spread by the tasks'
    shares of the flops (those in ``log_path`` count: a tune resumes from its log), the best configs
    confirmed and timed as deployed.  Returns ``(tasks, before, after, note)``: the builds with the
    rule defaults and with the log's records, and a summary of what was measured.  ``records``: the
    log as ``tune.network.read_log`` read it (read here when None); ``log``: a callable for progress
    lines; ``measure_option``: the builder and runner, ``tune.network``'s by default (a runner's
    ``clock`` times the in-place runs too)."""
    import os
    import time

    from tune import deployed, network

    log = log or (lambda line: None)
    if records is None:
        records = network.read_log(log_path, target)
    tasks = extract_tasks(g, params, target, options)
    if not tasks:
        raise ValueError("no tunable kernels (convolutions, dense layers, softmax)")
    plan = network.spread_trials(tasks, trials)
    for line in network.tune_plan(tasks, plan, records):
        log(line)
    program = GraphProgram(g, params, target, options)
    log("building with the rule defaults ...")
    before = program.build()
    start = time.perf_counter()
    option = measure_option or network.default_measure_option()
    done = network.tune_tasks(tasks, plan, log_path, tuner, network.search_budget(budget_s, tasks), records,
                              measure_option=option, stream=stream, seed=seed)
    after, again, placed = before, 0, 0
    if os.path.exists(log_path):
        after, again = deployed.confirm_deployed(program, log_path, tasks, option, stream=stream)
        after, placed = deployed.confirm_in_place(program, log_path, tasks, stream=stream,
                                                  clock=getattr(option["runner"], "clock", "wall"))
    note = (f"tuned {len(tasks)} tasks: {sum(done.values()) + again} trials measured now ({again} timing the "
            f"configs the model may deploy, weights out of the caches; {placed} configs timed inside whole runs "
            f"of the model) in {time.perf_counter() - start:.1f} s, log {log_path}\n"
            + deployed.records_changed_note(program, before, after))
    return tasks, before, after, note


def model_feed(lib, seed: int = 0) -> dict:
    """Inputs of a built model: standard normal floats, zeros of any other type."""
    rng = np.random.default_rng(seed)
    return {v.name: (rng.standard_normal(tuple(v.shape)).astype(v.dtype) if np.dtype(v.dtype).kind == "f"
                     else np.zeros(tuple(v.shape), v.dtype)) for v in lib.graph.inputs}


__all__ = ["GraphProgram", "conv_alternatives", "extract_tasks", "graph_workloads", "model_feed", "node_configs", "tune_model"]
