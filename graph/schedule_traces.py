"""A fused kernel's auto_scheduler trace: found in a build's records by its computation's digest.

``graph.build`` asks :func:`kernel_trace` for each distinct kernel; with one,
``graph.compile`` replays the trace instead of the operator's schedule and the
kernel cache keys the trace too.  ``graph.auto_schedule`` names the tasks it
extracts the same way (:func:`task_name`).  A trace that packs the model's
weights in its tiles' layout (``rewrite_layout``) gets them packed once, at
build (:func:`fold_packed_weights`), not in each call.
"""

from __future__ import annotations

import json

from graph.compile import body_to_te, kernel_key
from graph.ir import Graph, constant_node
from schedule.layout_rewrite import pre_transformed
from tune import auto_scheduler
from tune.auto_scheduler.dispatcher import best_trace, has_traces
from tune.layout import to_blocked


def kernel_dag(body, target, constants=()) -> auto_scheduler.ComputeDAG:
    """The te computation of a fused kernel on ``target``; the reductions that read the inputs at
    positions ``constants`` (a model's weights) may pack them (``layout_free_placeholders``: a
    trace's ``rewrite_layout``, which a build folds, :func:`packed_inputs`)."""
    with target:
        args, outs = body_to_te(body, target)
    free = [args[k] for k in constants]
    dag = auto_scheduler.ComputeDAG(args + outs)
    for op in dag.ops:  # fresh ops of this kernel: annotated in place
        if getattr(op, "reduce_axis", ()) and free:
            read = [t for t in free if t in op.input_tensors]
            if read:
                op.attrs["layout_free_placeholders"] = read
    return dag


def packed_inputs(dag, trace) -> dict:
    """``{input position: layout}`` of the kernel inputs ``trace`` packs (``rewrite_layout`` copies
    that a build may fold: the kernel then takes the input packed, ``tune.layout.to_blocked``)."""
    if not any(step.kind == "rewrite_layout" for step in trace):
        return {}
    sch = trace.apply(dag.schedule())
    _, args, packs = pre_transformed(sch, dag.tensors)
    return {k: packs[a].op.attrs["layout"] for k, a in enumerate(args) if a in packs}


def task_name(dag) -> str:
    return f"dag_{dag.key}"


def kernel_trace(body, target, records):
    """The best auto_scheduler trace of this kernel in ``records`` (a ``tune.autotvm.Records``), or
    None: no record, or the best is the kernel's own schedule (built as it is, same code and key)."""
    if not has_traces(records):
        return None
    state = best_trace(records, target, task_name(kernel_dag(body, target)))
    return None if state is None or state.own else state.trace


def fold_packed_weights(fused, target, records, traces: dict):
    """``fused`` (a build's fused graph) with every kernel whose best trace packs inputs that are
    constants reading them packed: a constant of each packed copy, made here once per constant and
    layout, in place of the original (dropped where nothing else reads it), and ``folded`` set in the
    kernel node's attributes (``graph.compile`` builds it to take them packed).  Without this the
    kernel would repack its weights on every call.  ``traces``: base kernel key -> trace or None, the
    build's lookups (filled here)."""
    if not has_traces(records):
        return fused
    consts = {id(n.output): n for n in fused.nodes if n.is_constant}
    layouts, made, nodes = {}, {}, []
    for node in fused.nodes:
        if node.op == "fused":
            body = node.attrs["body"]
            base = kernel_key(body)
            if base not in traces:
                traces[base] = kernel_trace(body, target, records)
            trace = traces[base]
            if trace is not None and (base, trace.key()) not in layouts:
                layouts[base, trace.key()] = packed_inputs(kernel_dag(body, target), trace)
            packed = {} if trace is None else layouts[base, trace.key()]
            if packed and all(id(node.inputs[k]) in consts for k in packed):
                inputs = list(node.inputs)
                for k, layout in packed.items():
                    src = consts[id(inputs[k])]
                    memo = (id(src), json.dumps(layout, sort_keys=True))
                    if memo not in made:
                        made[memo] = constant_node(to_blocked(src.attrs["value"], layout), f"{src.name}.packed")
                        nodes.append(made[memo])
                    inputs[k] = made[memo].output
                node.inputs, node.attrs = tuple(inputs), {**node.attrs, "folded": True}  # this build's node
        nodes.append(node)
    if not made:
        return fused
    read = {id(v) for n in nodes for v in n.inputs} | {id(v) for v in fused.outputs}
    return Graph(fused.inputs, [n for n in nodes if not n.is_constant or id(n.output) in read], fused.outputs,
                 fused.name)


__all__ = ["fold_packed_weights", "kernel_dag", "kernel_trace", "packed_inputs", "task_name"]
