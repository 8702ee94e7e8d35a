"""Compile fused groups to machine code: one kernel per distinct group.

A group's ``body`` graph becomes a topi compute over placeholders, is
scheduled by its anchor's x86 schedule (conv2d, dense, pool, softmax,
reduce) or as an injective kernel, lowered, emitted as LLVM IR, optimised
and turned into an object file.  Kernels are keyed by a canonical text of
their body (ops, attributes, shapes; not names), so the 16 identical
bottleneck blocks of a ResNet compile once.  Objects live in a disk cache
(``$TESSERA_CACHE_DIR``, default ``~/.cache/tessera``) keyed by that text and
a digest of the compiler's own sources; missing ones are compiled in
parallel worker processes.  Loading links a library's objects into one
shared object (kept in the cache too, named by a digest of its objects) and
opens it; it shares the process's thread pool and is closed with the last
reference to the library (``load_kernels``).

Everything goes through ``codegen.service`` (lower -> IR -> object for the
build's target; objects -> one loaded library).  A kernel's operators are
computed and scheduled by the strategy of the build's ``Target`` (parsed once
by ``graph.build`` and carried by the ``KernelSource``), inside ``with
target:`` for the schedules that read its vector width and register budget.
The cache key includes the target's text.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import te
from codegen.target import Target, create
from topi.narrow import as_storage, storage_dtype
from graph.ops import get_op
from graph.ops.registry import COMM_REDUCE, injective_schedule
from graph.printer import format_attr


@dataclass
class KernelSource:
    """What a worker needs to build one kernel (picklable)."""

    key: str
    symbol: str
    body: object  # graph.ir.Graph
    label: str
    target: Target  # the CPU the kernel is built for
    trace: object = None  # a schedule.trace.Trace (an auto_scheduler record's) replayed instead of the schedule
    folded: bool = False  # the trace's packed inputs are taken packed (the build folded them)


@dataclass
class Kernel:
    key: str
    symbol: str
    label: str
    params: list  # codegen.module.ParamSpec
    obj: bytes
    stages: dict = field(default_factory=dict)  # seconds per compile stage; empty when from the cache


# ------------------------------------------------------------------ keys ---
def canonical_text(body) -> str:
    """The body with names replaced by positions: equal text, equal kernel."""
    ids: dict = {}
    lines = []
    for k, v in enumerate(body.inputs):
        ids[id(v)] = f"%{k}"
        lines.append(f"in %{k}: {v.type_str()}")
    for node in body.nodes:
        for v in node.outputs:
            ids[id(v)] = f"%{len(ids)}"
        outs = ", ".join(f"{ids[id(v)]}: {v.type_str()}" for v in node.outputs)
        if node.is_constant:
            arr = node.attrs["value"]
            lines.append(f"{outs} = constant {arr.dtype} {arr.ravel().tolist()}")
            continue
        args = [ids[id(v)] for v in node.inputs]
        args += [f"{k}={format_attr(v)}" for k, v in sorted(node.attrs.items())]
        lines.append(f"{outs} = {node.op}({', '.join(args)})")
    lines.append("out " + ", ".join(ids[id(v)] for v in body.outputs))
    return "\n".join(lines)


_SOURCE_DIGEST: list = []


def compiler_digest(target=None) -> str:
    """A digest of the sources that shape a kernel (te, schedule, codegen, topi, graph.ops), the
    LLVM version and the target (``str(Target)``: CPU name and features) (cache validity)."""
    if not _SOURCE_DIGEST:
        import llvmlite

        h = hashlib.sha1()
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        for pkg in ("te", "schedule", "codegen", "topi", "graph/ops", "graph/compile.py"):
            path = os.path.join(root, pkg)
            walk = [(os.path.dirname(path), [], [os.path.basename(path)])] if pkg.endswith(".py") else os.walk(path)
            for dirpath, _, files in sorted(walk):
                for f in sorted(files):
                    if f.endswith(".py"):
                        with open(os.path.join(dirpath, f), "rb") as fh:
                            h.update(f.encode() + fh.read())
        h.update(llvmlite.__version__.encode())
        _SOURCE_DIGEST.append(h.hexdigest())
    return hashlib.sha1((_SOURCE_DIGEST[0] + str(create(target))).encode()).hexdigest()[:16]


def kernel_key(body, trace=None, folded: bool = False) -> str:
    """The key of a kernel: its body's canonical text, and the trace it is scheduled with (taking the
    inputs the trace packs packed, when ``folded``)."""
    text = canonical_text(body) + ("" if trace is None else "\ntrace " + trace.key()) + ("\nfolded" if folded else "")
    return hashlib.sha1(text.encode()).hexdigest()[:20]


# --------------------------------------------------------------- compute ---
def body_to_te(body, target: Target) -> tuple:
    """Placeholders for the body's inputs and the tensors of its outputs (``target``'s computes)."""
    tensors: dict = {}
    args = []
    for k, v in enumerate(body.inputs):
        t = te.placeholder(v.shape, dtype=storage_dtype(v.dtype), name=f"arg{k}")  # bfloat16: its bits
        tensors[id(v)] = t
        args.append(t)
    for node in body.nodes:
        if node.is_constant:
            value = as_storage(node.attrs["value"])
            imm = te.const(value.reshape(()).item() if value.size == 1 else 0, str(value.dtype))
            tensors[id(node.output)] = te.compute(node.output.shape, lambda *i, c=imm: c,
                                                  name=node.name, tag="elemwise")
            continue
        outs = get_op(node.op).compute_for([tensors[id(v)] for v in node.inputs], node.attrs, target)
        for v, t in zip(node.outputs, outs):
            tensors[id(v)] = t
    return args, [tensors[id(v)] for v in body.outputs]


def schedule_body(body, outs, target: Target):
    """The schedule of a fused body: its anchor's (``target``'s strategy), else an injective one."""
    anchor = next((n for n in body.nodes if not n.is_constant and get_op(n.op).pattern >= COMM_REDUCE), None)
    if anchor is None:
        return injective_schedule(outs, None, target)
    return get_op(anchor.op).schedule_for(outs, anchor.attrs, target)


def schedule_source(src: KernelSource, args, outs) -> tuple:
    """``(schedule, tensors)`` of a kernel: its trace replayed (an auto_scheduler record's; with
    ``folded``, its packed inputs taken packed), else ``schedule_body``."""
    if src.trace is None:
        return schedule_body(src.body, outs, src.target), args + outs
    sch = src.trace.apply(te.create_schedule([t.op for t in outs]))
    if not src.folded:
        return sch, args + outs
    from schedule.layout_rewrite import pre_transformed

    sch, tensors, _ = pre_transformed(sch, args + outs)
    return sch, tensors


def lower_source(src: KernelSource):
    """The lowered function of one kernel (what :func:`compile_source` compiles)."""
    from codegen.service import lower_for_build

    with src.target:
        args, outs = body_to_te(src.body, src.target)
        return lower_for_build(*schedule_source(src, args, outs), src.symbol)


def compile_source(src: KernelSource) -> Kernel:
    """Schedule, lower, emit, optimise and assemble one kernel inside ``with target:`` (runs in a
    worker); the kernel's ``stages`` hold the seconds of each step (``lower/<pass>`` per pass)."""
    from codegen import service

    target, clock, passes = src.target, time.perf_counter, {}
    with target:
        t0 = clock()
        args, outs = body_to_te(src.body, target)
        sch, tensors = schedule_source(src, args, outs)
        t1 = clock()
        lowered = service.lower_for_build(sch, tensors, src.symbol, timings=passes)
        t2 = clock()
        raw, symbol = service.emit_llvm(lowered, src.symbol)
        t3 = clock()
        _, obj = service.compile_ir(raw, target, keep_ll=False)
        t4 = clock()
    stages = {"compute+schedule": t1 - t0, "lower": t2 - t1, "emit IR": t3 - t2, "LLVM": t4 - t3}
    stages.update({f"lower/{k}": v for k, v in passes.items()})
    return Kernel(src.key, symbol, src.label, list(service.param_specs(lowered)), obj, stages)


# ----------------------------------------------------------------- cache ---
def cache_dir(target=None) -> str:
    """The kernel cache of this compiler and ``target``."""
    from codegen import service

    path = os.path.join(service.cache_root(), "kernels", compiler_digest(target))
    os.makedirs(path, exist_ok=True)
    return path


def _cache_paths(key: str, target: str) -> tuple:
    base = os.path.join(cache_dir(target), key)
    return base + ".o", base + ".json"


def load_cached(src: KernelSource) -> Kernel | None:
    from codegen.module import ParamSpec

    obj_path, meta_path = _cache_paths(src.key, src.target)
    try:
        with open(meta_path) as fh:
            meta = json.load(fh)
        with open(obj_path, "rb") as fh:
            obj = fh.read()
    except (OSError, ValueError):
        return None
    if meta.get("symbol") != src.symbol:
        return None
    params = [ParamSpec(p["kind"], p["name"], p["dtype"], tuple(p["shape"]), p["is_output"]) for p in meta["params"]]
    return Kernel(src.key, src.symbol, src.label, params, obj)


def store_cached(kernel: Kernel, target: str) -> None:
    obj_path, meta_path = _cache_paths(kernel.key, target)
    params = [{"kind": p.kind, "name": p.name, "dtype": p.dtype, "shape": list(p.shape), "is_output": p.is_output}
              for p in kernel.params]
    for path, data, mode in ((obj_path, kernel.obj, "wb"), (meta_path, json.dumps({"symbol": kernel.symbol,
                                                                                   "params": params}), "w")):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, mode) as fh:
            fh.write(data)
        os.replace(tmp, path)


# ------------------------------------------------------------ the driver ---
def _cost(src: KernelSource) -> float:
    """A rough compile-time estimate, to start the slowest kernels first."""
    heavy = ("conv2d", "conv2d_NCHWc", "dense", "batch_matmul")
    return sum(10.0 if n.op in heavy else 1.0 for n in src.body.nodes)


def compile_kernels(sources: list, jobs: int | None = None, progress=None) -> list:
    """Kernels for ``sources`` (distinct keys), from the cache or compiled in parallel."""
    kernels: dict = {}
    todo = []
    for src in sources:
        hit = load_cached(src)
        if hit is not None:
            kernels[src.key] = hit
        else:
            todo.append(src)
    targets = {src.key: src.target for src in todo}
    total, done, start = len(todo), 0, time.perf_counter()

    def finished(k: Kernel) -> None:
        nonlocal done
        done += 1
        store_cached(k, targets[k.key])
        kernels[k.key] = k
        if progress:
            progress(done, total, k.label, time.perf_counter() - start)

    jobs = jobs if jobs is not None else min(len(todo), os.cpu_count() or 1)
    todo.sort(key=_cost, reverse=True)
    if jobs <= 1 or len(todo) <= 1:
        for src in todo:
            finished(compile_source(src))
    else:
        import multiprocessing

        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            for k in pool.map(compile_source, todo):
                finished(k)
    return [kernels[src.key] for src in sources]


def print_progress(done: int, total: int, label: str, elapsed: float) -> None:
    sys.stderr.write(f"\r[{done}/{total}] compiled {label:<40.40s} {elapsed:6.1f} s")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def load_kernels(kernels: list, label: str, target: str):
    """The kernels' code as one loaded library (``codegen.jit.LoadedCode``: symbol -> address),
    linked once into the cache of ``target`` and closed with the last reference to it."""
    from codegen import service

    return service.load_library([k.obj for k in kernels], [k.symbol for k in kernels], label=label,
                                cache_dir=cache_dir(target))
