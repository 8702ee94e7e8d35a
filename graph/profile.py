"""Where a model's time goes: a per-kernel profile against the machine's limits.

::

    m = lib.create_executor(); m.run(data=x)
    print(m.profile())          # GraphModule.profile(): the same as profile_module(m)

Each kernel call is timed inside whole runs of the model (as deployed: its
weights come from memory, its input from whichever thread wrote it; the
median over ``number`` runs), as TVM's debug executor and onnxruntime's
profiler do.  Its work is counted on the compute definitions of its fused
body: arithmetic operations (``tune.autotvm.task.count_flop``) and the
bytes of its distinct inputs and outputs.  A kernel whose arithmetic
intensity (FLOPs per byte) is below the machine's ridge point (peak FLOP/s
over copy bandwidth) is memory-bound: it is rated in GB/s against the copy
bandwidth, the others in GFLOP/s against the FMA peak.  The two limits are
measured once per host, CPU and thread count (``machine_limits``) and cached
in ``$TESSERA_CACHE_DIR/machine.json``.

A library loaded from a ``.so`` carries no fused bodies: its profile has the
times and shares only.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class KernelTime:
    """One kernel call: its label, the ops it fuses, median seconds, FLOPs and bytes per call."""

    label: str
    ops: str
    seconds: float
    flops: float = 0.0
    nbytes: float = 0.0


@dataclass
class Profile:
    """Per-kernel times of one model with the machine's limits; ``str()`` is the report."""

    kernels: list
    run_seconds: float = 0.0  # the median over the runs of their kernels' seconds summed
    peak_gflops: float = 0.0
    copy_gbs: float = 0.0
    threads: int = 1
    notes: list = field(default_factory=list)

    @property
    def total(self) -> float:
        """Seconds of all kernel calls, summed."""
        return sum(k.seconds for k in self.kernels)

    def sorted(self) -> list:
        return sorted(self.kernels, key=lambda k: -k.seconds)

    def rate(self, k: KernelTime) -> tuple:
        """``(value, unit, fraction of the machine's limit)`` of one kernel; (None, "", None) when it
        took no measurable time or its work is unknown."""
        if k.seconds <= 0 or (k.flops <= 0 and k.nbytes <= 0):
            return None, "", None
        ridge = self.peak_gflops / self.copy_gbs if self.peak_gflops > 0 and self.copy_gbs > 0 else 10.0
        if k.flops > 0 and (k.nbytes <= 0 or k.flops / k.nbytes >= ridge):
            value = k.flops / k.seconds / 1e9
            return value, "GFLOP/s", value / self.peak_gflops if self.peak_gflops > 0 else None
        value = k.nbytes / k.seconds / 1e9
        return value, "GB/s", value / self.copy_gbs if self.copy_gbs > 0 else None

    def report(self, top: int | None = None) -> str:
        """The kernels sorted by time (the ``top`` slowest, then one line for the rest), each with
        its share of the total, its rate and its distance to the machine's limit; then the total."""
        if not self.kernels:
            return "profile: no kernel calls were timed (the model has no kernels, or it was never run)"
        total = self.total
        if total <= 0:
            return (f"profile: all {len(self.kernels)} kernel calls took no measurable time "
                    "(below the clock's resolution): nothing to rank")
        lines = [
            f"{'#':>3} {'time':>10} {'share':>6} {'cum':>5} {'rate':>16} {'of limit':>8}  kernel (ops)",
        ]
        rows = self.sorted()
        shown = rows if top is None else rows[:top]
        cum = 0.0
        for i, k in enumerate(shown, 1):
            cum += k.seconds
            value, unit, frac = self.rate(k)
            rate = f"{value:9.1f} {unit:7}" if value is not None else f"{'-':>9} {'':7}"
            limit = f"{frac:8.0%}" if frac is not None else f"{'-':>8}"
            lines.append(f"{i:3d} {_fmt(k.seconds):>10} {k.seconds / total:6.1%} {cum / total:5.0%} {rate:>16} "
                         f"{limit}  {k.label} ({k.ops})")
        rest = rows[len(shown):]
        if rest:
            secs = sum(k.seconds for k in rest)
            lines.append(f"{'':3} {_fmt(secs):>10} {secs / total:6.1%} {'100%':>5} {'':>16} {'':>8}  "
                         f"the other {len(rest)} calls")
        flops = sum(k.flops for k in self.kernels)
        whole = f" (a whole run: {_fmt(self.run_seconds)}, median)" if self.run_seconds > 0 else ""
        lines.append(f"total {_fmt(total)} in {len(self.kernels)} kernel calls, each call's median summed{whole}; "
                     f"{flops / 1e9:.2f} GFLOP, {flops / total / 1e9:.1f} GFLOP/s overall")
        if self.peak_gflops > 0:
            lines.append(f"limits ({self.threads} threads, measured once on this host): FMA peak "
                         f"{self.peak_gflops:.0f} GFLOP/s, copy {self.copy_gbs:.1f} GB/s; memory-bound "
                         f"kernels (below {self.peak_gflops / self.copy_gbs:.1f} FLOP/byte) rated in GB/s")
        lines.extend(self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report(top=25)


def _fmt(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


# ------------------------------------------------------------------ work
def kernel_work(body, target=None) -> tuple:
    """``(flops, bytes)`` of one call of a fused body: arithmetic operations on its compute
    definitions, and the bytes of its distinct inputs and outputs."""
    import te
    from codegen.target import create
    from graph.compile import body_to_te
    from tune.autotvm.task import count_flop

    t = create(target)
    with t:
        args, outs = body_to_te(body, t)
        flops = count_flop(te.create_schedule([o.op for o in outs]))
    seen, nbytes = set(), 0
    for v in (*body.inputs, *body.outputs):
        if id(v) not in seen:
            seen.add(id(v))
            nbytes += v.nbytes
    return float(flops), float(nbytes)


def body_ops(body) -> str:
    ops = [n.op for n in body.nodes if not n.is_constant]
    return "+".join(ops) if len(ops) <= 6 else "+".join(ops[:5]) + f"+...{len(ops) - 5}"


# ------------------------------------------------------------------ the machine
def limits_path() -> str:
    from codegen import service

    return os.path.join(service.cache_root(), "machine.json")


def machine_limits(threads: int | None = None, refresh: bool = False, repeat: int = 5) -> dict:
    """``{"peak_gflops", "copy_gbs"}`` of this host with ``threads`` threads (default: the
    pool's): the float32 FMA peak and the copy bandwidth (bytes read + written) that Tessera's own
    kernels reach (``topi.workloads.fma_peak``, ``copy``; the fastest of ``repeat`` batches),
    measured on first use and kept per CPU, target and thread count in ``machine.json``."""
    import codegen
    from codegen.target import Target

    threads = threads or codegen.get_num_threads()
    key = f"{Target('llvm')} threads={threads}"
    path = limits_path()
    try:
        with open(path) as fh:
            known = json.load(fh)
    except (OSError, ValueError):
        known = {}
    if not refresh and isinstance(known.get(key), dict):
        return known[key]
    known[key] = _measure_limits(threads, repeat)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(known, fh, indent=1)
    os.replace(tmp, path)
    return known[key]


def _measure_limits(threads: int, repeat: int) -> dict:
    """The fastest batch with ``threads`` threads (wall time); for the FMA peak, the better of that
    and one thread's rate in its own CPU time times ``threads`` (other processes' load delays a
    parallel launch in wall time, not a thread's CPU time; bandwidth does not scale that way)."""
    import codegen
    from codegen.timing import interleaved
    from topi import workloads as W

    before = codegen.get_num_threads()
    rates = {}
    try:
        for name, k in (("peak_gflops", W.fma_peak()), ("copy_gbs", W.copy())):
            ins = k.make_inputs()
            codegen.set_num_threads(threads)
            wall = min(interleaved({name: lambda: k.module(*ins)}, repeat=repeat, settle=0.05)[name])
            if name == "peak_gflops":
                codegen.set_num_threads(1)
                cpu = min(interleaved({name: lambda: k.module(*ins)}, repeat=repeat, settle=0.0,
                                      clock=time.thread_time)[name])
                wall = min(wall, cpu / threads)
            rates[name] = k.work / wall / 1e9
    finally:
        codegen.set_num_threads(before)
    return rates


# ------------------------------------------------------------------ profiling
def profile_module(m, number: int = 10, limits: dict | None = None) -> Profile:
    """The per-kernel profile of executor ``m`` (``graph.executor.GraphModule``), timed inside
    ``number`` whole runs; ``limits``: ``machine_limits()`` (measured or read from the cache) by default.

    Raises ``RuntimeError`` when ``m`` was never run: set its inputs and call ``run()`` first, so
    the kernels are timed on the data they will see.
    """
    import codegen

    if not getattr(m, "ran", True):
        raise RuntimeError("profile: the model was never run; set its inputs and call run() once "
                           "before profiling (m.set_input(...); m.run(); m.profile())")
    if number < 1:
        raise ValueError(f"profile: number must be >= 1, got {number}")
    labels = [c["label"] for c in m.plan["calls"]]
    runs = m.kernel_runs(number) if labels else np.zeros((number, 0))
    medians = np.median(runs, axis=0) if len(labels) else []
    bodies = _call_bodies(m)
    works: dict = {}
    kernels = []
    for i, (label, secs) in enumerate(zip(labels, medians)):
        body = bodies[i] if bodies is not None else None
        if body is None:
            kernels.append(KernelTime(label, "?", float(secs)))
            continue
        key = id(body)
        if key not in works:
            works[key] = kernel_work(body, getattr(m.lib, "target", None))
        kernels.append(KernelTime(label, body_ops(body), float(secs), *works[key]))
    limits = limits if limits is not None else machine_limits()
    notes = [] if bodies is not None else ["(a loaded library carries no fused bodies: no work or rates)"]
    return Profile(kernels, float(np.median(runs.sum(axis=1))), limits.get("peak_gflops", 0.0),
                   limits.get("copy_gbs", 0.0), codegen.get_num_threads(), notes)


def _call_bodies(m) -> list | None:
    """The fused body of each kernel call of ``m``, in plan order (None for a loaded library)."""
    steps = getattr(m.lib, "steps", None)
    if steps is None:
        return None
    return [node.attrs["body"] for node, key in steps if key is not None]


# ------------------------------------------------------------------ compile time
def compile_report(lib, import_seconds: float | None = None, top: int = 5) -> str:
    """Where a build's time went: the stages of ``graph.build`` (``lib.stage_seconds``), the
    compile stages summed over the kernels compiled now (lowering passes by name; seconds in the
    workers, which run in parallel), and the slowest kernels.  Kernels that came from the cache
    have no stages."""
    lines = [f"compile profile: built in {lib.build_seconds:.2f} s"
             + (f" after an import of {import_seconds:.2f} s" if import_seconds is not None else "")]
    for stage, secs in getattr(lib, "stage_seconds", {}).items():
        lines.append(f"  {stage:26} {secs:7.2f} s")
    compiled = [k for k in lib.kernels.values() if getattr(k, "stages", None)]
    cached = len(lib.kernels) - len(compiled)
    lines.append(f"  kernels: {len(compiled)} compiled now, {cached} from the cache")
    if not compiled:
        return "\n".join(lines)
    sums: dict = {}
    for k in compiled:
        for stage, secs in k.stages.items():
            sums[stage] = sums.get(stage, 0.0) + secs
    main = {s: v for s, v in sums.items() if "/" not in s}
    work = sum(main.values()) or 1e-30
    lines.append(f"  compile stages summed over those kernels ({work:.2f} s of worker time):")
    for stage, secs in sorted(main.items(), key=lambda kv: -kv[1]):
        sub = sorted(((s.split("/", 1)[1], v) for s, v in sums.items() if s.startswith(stage + "/")),
                     key=lambda kv: -kv[1])
        detail = ("  (" + ", ".join(f"{n} {v:.2f}" for n, v in sub[:5]) + ")") if sub else ""
        lines.append(f"    {stage:18} {secs:7.2f} s {secs / work:5.0%}{detail}")
    slow = sorted(compiled, key=lambda k: -sum(v for s, v in k.stages.items() if "/" not in s))[:top]
    lines.append("  slowest kernels: " + "; ".join(
        f"{k.label} {sum(v for s, v in k.stages.items() if '/' not in s):.2f} s" for k in slow))
    return "\n".join(lines)
