"""``graph.build``: bind params, optimise, fuse, compile, plan memory.

::

    g, params = graph.from_onnx(model)
    lib = graph.build(g, target="llvm", params=params)
    m = lib.create_executor()
    m.run(data=x); y = m.get_output(0)

The result, a :class:`GraphLibrary`, holds the fused graph, one compiled
kernel per distinct group, the folded constants and the memory plan; the
executor (``graph.executor.GraphModule``) turns it into a list of prebound
native calls.
"""

from __future__ import annotations

import time

import numpy as np

from codegen.ndarray import aligned
from graph.compile import KernelSource, compile_kernels, kernel_key, print_progress
from graph.fuse import fuse_ops
from graph.ir import Graph, constant_node, rebuild
from graph.memory import MemoryPlan, concat_view, plan_memory
from graph.schedule_traces import fold_packed_weights, kernel_trace


def bind_params(graph: Graph, params: dict | None) -> Graph:
    """Turn the graph inputs named in ``params`` into constants."""
    if not params:
        return graph
    names = {v.name for v in graph.inputs}
    unknown = sorted(set(params) - names)
    if unknown:
        raise ValueError(f"build: params {unknown} are not inputs of the graph; inputs: {sorted(names)}")
    consts: dict = {}
    keep = []
    for v in graph.inputs:
        if v.name not in params:
            keep.append(v)
            continue
        arr = np.asarray(params[v.name])
        if tuple(arr.shape) != v.shape:
            raise ValueError(f"build: param {v.name!r} has shape {arr.shape}, the graph expects {v.shape}")
        if str(arr.dtype) != v.dtype:
            arr = arr.astype(v.dtype)
        consts[id(v)] = constant_node(arr, v.name).output

    def swap(node, ins):
        if any(id(v) in consts for v in ins):
            from graph.ir import copy_node

            return copy_node(node, [consts.get(id(v), v) for v in ins]).outputs
        return None

    outputs = [consts.get(id(v), v) for v in graph.outputs]
    bound = Graph(keep, graph.nodes, outputs, graph.name)
    out = rebuild(bound, swap)
    return Graph.from_outputs(keep, out.outputs, graph.name)


def optimize(graph: Graph, opt_level: int = 2, include=(), exclude=(), profile=None, context=None) -> Graph:
    """The pass table of ``graph.passes`` (fusion included at opt_level >= 1), choosing configs
    with ``context`` (a ``BuildContext``; default: the current target and records).

    Whatever the table left unfused (opt_level 0, or ``exclude=("fusion",)``)
    becomes one kernel per node.
    """
    from graph import passes

    graph = passes.optimize(graph, opt_level=opt_level, include=include, exclude=exclude, profile=profile,
                            context=context)
    return fuse_ops(graph, singletons=True)


class GraphLibrary:
    """A built graph: fused graph, kernels, constants and memory plan."""

    def __init__(self, graph: Graph, kernels: dict, steps: list, plan: MemoryPlan, alias: dict,
                 build_seconds: float = 0.0, target: str = "llvm"):
        self.graph = graph
        self.target = target  # str(codegen.target.Target) the kernels were built for
        self.kernels = kernels  # key -> Kernel
        self.steps = steps  # [(fused node, kernel key, or None for an alias or an in-place concatenation)]
        self.plan = plan
        self.alias = alias
        self.build_seconds = build_seconds
        self.stage_seconds: dict = {}  # build stage -> seconds (graph.profile.compile_report)
        self._addresses: dict | None = None
        self._loaded = None  # codegen.jit.LoadedCode: the kernels' code, freed with this library
        self.params: dict = {}

    def bound_params(self) -> dict:
        return self.params

    def check_param(self, name: str, array) -> None:
        """``set_input`` of a param bound at build: accepted when it is the bound value."""
        bound = self.params[name]
        array = np.asarray(array)
        if array is bound or (array.shape == bound.shape and np.array_equal(array, bound)):
            return
        raise ValueError(f"set_input: param {name!r} was bound at build time and folded into constants; "
                         f"rebuild with graph.build(g, params={{...{name!r}: new value}}) to change it")

    def addresses(self) -> dict:
        """symbol -> native address (the kernels linked into one shared object and opened once;
        closed with this object and the executors made from it)."""
        if self._addresses is None:
            from graph.compile import load_kernels

            label = f"graph {self.graph.name or ''}".strip()
            self._loaded = load_kernels(list(self.kernels.values()), label, self.target)
            self._addresses = dict(self._loaded.addresses)
        return self._addresses

    def create_executor(self):
        from graph.executor import GraphModule

        return GraphModule(self.execution_plan(), self.constants(), self.addresses(), self)

    def kernel_nodes(self) -> list:
        """The operator nodes the kernels compute: each fused group's body nodes, or the node
        itself where it runs alone (constants excluded)."""
        out = []
        for node in self.graph.nodes:
            if node.is_constant:
                continue
            body = node.attrs.get("body")
            out += body.nodes if body is not None else [node]
        return out

    def constants(self) -> list:
        """The folded constants, in plan order, each ``codegen.ndarray.ALIGN``-aligned (a copy is
        made once, and kept in the node in place of the original)."""
        out = []
        for n in self.graph.nodes:
            if n.is_constant:
                value = n.attrs["value"] = aligned(np.asarray(n.attrs["value"], order="C"))
                out.append(value)
        return out

    def execution_plan(self) -> dict:
        """The flat plan the executor runs: buffer slots and kernel calls (JSON-able)."""
        slots, slot_of = [], {}

        def add(v, kind, **extra) -> int:
            slot_of[id(v)] = len(slots)
            slots.append({"kind": kind, "name": v.name, "shape": list(v.shape), "dtype": v.dtype, **extra})
            return slot_of[id(v)]

        for v in self.graph.inputs:
            add(v, "input")
        k = 0
        for node in self.graph.nodes:
            if node.is_constant:
                add(node.output, "const", index=k)
                k += 1
        outputs = {id(v) for v in self.graph.outputs}
        calls = []
        for node, key in self.steps:
            for v in node.outputs:
                if id(v) in self.alias:
                    add(v, "alias", of=slot_of[id(self.alias[id(v)])])
                elif id(v) in outputs:
                    add(v, "output")
                else:
                    add(v, "arena", offset=self.plan.offsets[id(v)])
            if key is not None:
                calls.append({"symbol": self.kernels[key].symbol, "label": node.name,
                              "args": [slot_of[id(v)] for v in (*node.inputs, *node.outputs)]})
        return {"slots": slots, "calls": calls, "arena_bytes": self.plan.arena_bytes,
                "inputs": [slot_of[id(v)] for v in self.graph.inputs],
                "outputs": [slot_of[id(v)] for v in self.graph.outputs],
                "params": sorted(self.params)}

    def export_library(self, path: str, target=None) -> None:
        """One shared library: kernels, runtime, plan and constants (load with ``graph.load_library``).

        ``target`` must be the one the graph was built for (the default): the
        kernels are already object code for it."""
        from graph.export import export_library

        export_library(self, path, target)

    @property
    def input_names(self) -> list:
        return [v.name for v in self.graph.inputs]

    def summary(self) -> str:
        n_const = sum(1 for n in self.graph.nodes if n.is_constant)
        const_bytes = sum(n.output.nbytes for n in self.graph.nodes if n.is_constant)
        return (f"{len(self.steps)} kernel calls, {len(self.kernels)} distinct kernels, {n_const} constants "
                f"({const_bytes / 2**20:.1f} MiB); {self.plan.report()}")


def is_alias_group(node) -> bool:
    """A fused group that is only reshapes: its output is its input's buffer."""
    body = node.attrs["body"]
    return len(node.inputs) == 1 and all(n.op == "reshape" for n in body.nodes)


def concat_inputs(node) -> tuple | None:
    """(axis, the outer values it joins in order) of a fused group that is one concatenation;
    else None."""
    body = node.attrs["body"]
    if len(body.nodes) != 1 or body.nodes[0].op != "concatenate" or len(body.outputs) != 1:
        return None
    outer = {id(b): v for b, v in zip(body.inputs, node.inputs)}
    concat = body.nodes[0]
    if not all(id(v) in outer for v in concat.inputs):
        return None
    return concat.attrs.get("axis", 0), [outer[id(v)] for v in concat.inputs]


def build(graph: Graph, target=None, params: dict | None = None, opt_level: int = 2,
          include=(), exclude=(), profile=None, jobs: int | None = None, verbose: bool = False,
          records=None, options=None) -> GraphLibrary:
    """Compile ``graph`` (classic ``nnvm.compiler.build`` / ``relay.build``).

    ``target``: ``"llvm"`` (the host), ``"llvm -mcpu=NAME"``, ``"llvm -mattr=+avx2,-avx512f"``, a
    ``Target``, or None for the current one (``with Target(...)``; the host outside any).
    ``records``: tuning records the kernels' configs are chosen with (a path, (input, result)
    pairs or ``autotvm.apply_history_best(...)``); None takes those of the enclosing
    ``with autotvm.apply_history_best(...)``, read once here.  ``options``: build options
    (``{"winograd": False}`` keeps every conv direct; ``tune.autotvm.choose.Options``).
    The target is parsed once and passed down; the passes, the schedules and the kernel
    compiler run inside ``with target:`` for schedules that read it.
    """
    from graph.passes.context import BuildContext

    if getattr(graph, "is_dynamic", False):  # graph.onnx.program.DynamicGraph: built per signature as it runs
        return graph.build(target, params, opt_level=opt_level, include=include, exclude=exclude, profile=profile,
                           jobs=jobs, verbose=verbose, records=records, options=options)
    context = BuildContext.of(target, records, options)
    with context.target:
        return _build(graph, context, params, opt_level, include, exclude, profile, jobs, verbose)


def _build(graph, context, params, opt_level, include, exclude, profile, jobs, verbose) -> GraphLibrary:
    t = context.target
    start = time.perf_counter()
    fused = optimize(bind_params(graph, params), opt_level, include, exclude, profile, context)
    traces: dict = {}  # an auto_scheduler record's trace per distinct kernel, looked up once
    fused = fold_packed_weights(fused, t, context.records, traces)
    passes_done = time.perf_counter()
    const_ids = {id(n.output) for n in fused.nodes if n.is_constant}
    input_ids = {id(v) for v in fused.inputs}
    output_ids = {id(v) for v in fused.outputs}
    steps, sources, alias, views = [], {}, {}, {}
    written = set()  # ids of the values a step writes itself (a kernel or an in-place concatenation)

    def placeable(v) -> bool:
        return id(v) in written and id(v) not in views and id(v) not in output_ids

    for node in fused.nodes:
        if node.op != "fused":
            continue
        src = node.inputs[0] if node.inputs else None
        if (is_alias_group(node) and id(src) not in const_ids and id(src) not in input_ids
                and id(src) not in output_ids and id(node.output) not in output_ids):
            alias[id(node.output)] = src
            steps.append((node, None))
            continue
        joined = concat_inputs(node) if id(node.output) not in output_ids else None
        placed = concat_view(node.output, *joined, placeable) if joined else {}
        written.update(id(v) for v in node.outputs)
        if placed:  # its inputs' kernels write into its output: no kernel
            views.update(placed)
            steps.append((node, None))
            continue
        base = kernel_key(node.attrs["body"])
        if base not in traces:
            traces[base] = kernel_trace(node.attrs["body"], t, context.records)
        folded = bool(node.attrs.get("folded"))
        key = base if traces[base] is None else kernel_key(node.attrs["body"], traces[base], folded)
        if key not in sources:
            sources[key] = KernelSource(key, f"tessera_{node.name}_{key}", node.attrs["body"], node.name, t,
                                        traces[base], folded)
        steps.append((node, key))
    kernels = compile_kernels(list(sources.values()), jobs=jobs, progress=print_progress if verbose else None)
    compiled = time.perf_counter()
    intermediates = {id(v) for node, _ in steps for v in node.outputs} - output_ids
    plan = plan_memory([(n.inputs, n.outputs) for n, _ in steps], intermediates, alias, views)
    lib = GraphLibrary(fused, {k.key: k for k in kernels}, steps, plan, alias, time.perf_counter() - start, str(t))
    lib.params = dict(params or {})
    linking = time.perf_counter()
    lib.addresses()
    done = time.perf_counter()
    lib.build_seconds = done - start
    lib.stage_seconds = {"graph passes and fusion": passes_done - start, "kernels": compiled - passes_done,
                         "memory plan": linking - compiled, "link and load": done - linking}
    return lib
