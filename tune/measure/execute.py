"""What the worker processes do: build a candidate to object code, load and time it.

Both halves run in children (``Worker``), never in the tuner's process:

* ``build_candidate``: instantiate the template with the config, lower,
  emit LLVM IR, optimise, and emit relocatable object code (bytes);
* ``run_candidate``: add the object code to this process's JIT (which holds
  the thread-pool runtime the kernel calls), check the output against the
  reference (the fallback config's build, on the same random inputs), then
  time it as ``time_evaluator`` does (``number`` calls per repeat, repeats
  grown to ``min_repeat_ms``; with the cache flush, every call reads the
  inputs after the first from memory, as inside a model run).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import time

import numpy as np

from codegen.module import calls_lasting
from codegen.ndarray import aligned_copy, aligned_empty

CHECK_RTOL = 1e-3
# seconds of timings behind the yardstick's settled time (speed states last ~1-3 s); tests shorten it
SETTLE_S = float(os.environ.get("TESSERA_SETTLE_S", "4.0"))
# seconds of alternating timings behind a task reference's ratio to the yardstick (once per task
# and runner: 0.3 s left the ratio of a 3x3 conv 2-6% off between sessions); tests shorten it
PROBE_S = float(os.environ.get("TESSERA_PROBE_S", "1.0"))
# The probe runs in chunks of PROBE_CHUNK_S and keeps the chunks in which the yardstick ran within
# FAST_STATE of its fastest time in this process (quiet chunks read 1.00-1.07 of it): in a slow state (the two
# vCPUs on one core) the compute-bound yardstick slows more than a conv, so a ratio taken then sets the task's scale low.  Two ResNet-50
# 1x1 convs tuned in such a second recorded 0.52x and 0.69x of their time in every later session
# (the ratios between their configs agreed across sessions; only the scale was off).  At most
# PROBE_PATIENCE x PROBE_S of chunks are tried; then the fast ones count, or all if none was.
PROBE_CHUNK_S = min(0.25, PROBE_S)
FAST_STATE = 1.10
PROBE_PATIENCE = 4
# A chunk also counts only if the vCPUs were near before and after it (``vcpus``): apart, a
# reference that repacks its input across threads runs up to 1.9x its near time against the
# yardstick, which does not care.  Apart spells last up to tens of seconds: the probe waits up to
# PROBE_NEAR_WAIT_S for the near state (once per task and runner) before it takes what it gets.
PROBE_NEAR_WAIT_S = float(os.environ.get("TESSERA_PROBE_NEAR_WAIT_S", "30.0"))
REF_MS = 2.0  # shortest bracketing reference timing, ms
REJECT_FLOOR_S = 1e-3  # a first call shorter than this is never grounds to reject
SUB_MS = 5.0  # a normalized repeat alternates candidate and reference timings this long, ms
# A normalized repeat counts the ratios whose bracketing timings both ran within FAST_STATE of
# the bracket's fastest timing beside the same candidate, in this measurement and earlier ones of
# the same config in this process (the bracket's speed depends on the candidate, whose data
# evicts its own: a 256 @14 reference read 1.14 ms next to the yardstick and 1.4-2.0 ms between
# random candidates).  In this VM's slow spells kernels do not slow alike (a 64 @56 3x3 conv's
# best config read 1.055x its reference with the reference at speed and 0.93-0.95x with it
# 1.3-1.6x slower), so repeats that mixed states spread 5-15%, and a config that suffers less in
# them could win on a lucky reading.  While the runner's ``state_wait`` lasts a repeat alternates
# on until it has its count of fast ratios; one that found fewer than FEW_FAST counts every ratio.
FEW_FAST = 3
# with the cache flush, a kernel's inputs after the first (its weights) rotate through copies this
# large in all, past the last-level cache (32 MiB on this host), so that every call reads them from
# memory, as a call inside a model run does (every other layer's weights pass between two calls of
# one layer): classic TVM's cache_flush_cpu_non_first_arg, done by rotation instead of clflush
ROTATE_BYTES = 96 << 20
MAX_ROTATIONS = 1024


def warm_runner() -> None:
    """Worker init: the JIT's thread-pool runtime, so the first measurement pays nothing."""
    from codegen import jit

    jit.runtime_engine()


def warm_builder() -> None:
    from codegen import jit

    jit.target_machine()
    import schedule  # noqa: F401


def compile_object(sch, args, name: str, lowered=None, target=None) -> dict:
    """Lower and compile ``sch`` to object code: ``{"obj", "symbol", "specs", "name", "kernel"}``.

    Through ``codegen.service`` (lowered -> LLVM IR -> O3 -> object code for
    the target); ``kernel`` is its ``CompiledKernel``, which the runner loads.
    ``lowered``: already lowered (a template the worker cannot import).
    """
    from codegen import service
    from schedule.lower import lower

    if lowered is None:
        lowered = lower(sch, args, name=name)
    kernel = service.compile_lowered(lowered, target)
    return {
        "obj": kernel.obj,
        "symbol": kernel.symbol,
        "name": kernel.name,
        "kernel": kernel,
        "specs": [dataclasses.asdict(p) for p in kernel.params],
    }


def prepare_template(task) -> None:
    """Import the module of ``task``'s template in this worker (before any timed build)."""
    task.prepare()


def build_candidate(payload: dict) -> dict:
    """Instantiate ``payload["task"]`` with ``payload["config"]`` and compile it (in a builder worker)."""
    from tune.errors import TuneError
    from tune.measure.measure import MeasureErrorNo

    t0 = time.perf_counter()
    task, config, lowered = payload["task"], payload["config"], payload.get("lowered")
    sch = args = None
    layouts = payload.get("layouts")
    if lowered is None:
        try:
            sch, args, layouts = task.instantiate_with_layouts(config)
        except TuneError as err:
            return {
                "error_no": MeasureErrorNo.INSTANTIATION_ERROR,
                "error": str(err),
                "time": time.perf_counter() - t0,
            }
    try:
        with task.target:
            out = compile_object(sch, args, kernel_name(task.name), lowered, task.target)
    except Exception as err:
        return {
            "error_no": MeasureErrorNo.COMPILE_HOST,
            "error": f"{type(err).__name__}: {err}",
            "time": time.perf_counter() - t0,
        }
    out.update(error_no=0, error="", time=time.perf_counter() - t0, layouts=_aligned(layouts, out["specs"]))
    return out


def _aligned(layouts, specs: list) -> list:
    """One ``(layout, logical shape)`` or None per kernel parameter (all None when they do not line up)."""
    if not layouts or len(layouts) != len(specs):
        return [None] * len(specs)
    return [None if lay is None else [lay[0], list(lay[1])] for lay in layouts]


def lower_here(task, config) -> dict | None:
    """For a template defined in ``__main__`` (a script the workers cannot import): instantiate
    and lower in this process; the worker only compiles.  Returns an error dict, or None."""
    from schedule.lower import lower
    from tune.errors import TuneError
    from tune.measure.measure import MeasureErrorNo

    try:
        sch, args, layouts = task.instantiate_with_layouts(config)
    except TuneError as err:
        return {"error_no": MeasureErrorNo.INSTANTIATION_ERROR, "error": str(err)}
    try:
        with task.target:
            return {"lowered": lower(sch, args, name=kernel_name(task.name)), "layouts": layouts}
    except Exception as err:
        return {"error_no": MeasureErrorNo.COMPILE_HOST, "error": f"{type(err).__name__}: {err}"}


def kernel_name(task_name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in task_name) or "kernel"


# ------------------------------------------------------------------ runner --
_loaded: dict = {}  # (symbol, specs) -> Module (kernels stay loaded for the life of the worker)
_refs: dict = {}  # reference key -> (inputs, outputs)


def load_object(build: dict):
    """The ``codegen.Module`` of a built candidate, its object code linked into this process's JIT."""
    sym = (build["symbol"], repr(build["specs"]))  # one code may serve two signatures (shapes in the checks only)
    hit = _loaded.get(sym)
    if hit is not None:
        return hit
    if len(_loaded) >= 256:  # unload old candidates (the service frees a kernel with its last reference)
        _loaded.clear()
    from codegen import service

    mod = service.module(build["kernel"])
    _loaded[sym] = mod
    return mod


def random_arguments(specs: list, seed: int) -> list:
    """Inputs drawn from a seeded generator; outputs filled with NaN (or -7), so an unwritten element shows.
    Every array ``codegen.ndarray.ALIGN``-aligned, as the graph executor's buffers: a candidate is timed
    at the alignment it is deployed at (16-byte aligned weights cost a Winograd kernel 5-7%)."""
    rng = np.random.default_rng(seed)
    args = []
    for p in specs:
        if p["kind"] != "buffer" or any(not isinstance(d, int) for d in p["shape"]):
            raise ValueError(f"argument {p['name']!r} has no constant shape; tuning needs constant shapes")
        shape, dtype = tuple(p["shape"]), np.dtype(p["dtype"])
        a = aligned_empty(shape, dtype)
        if p["is_output"]:
            a.fill(np.nan if dtype.kind == "f" else -7)
        elif dtype.kind == "f":
            a[...] = rng.uniform(-1, 1, size=shape)
        else:
            a[...] = rng.integers(0, 4, size=shape)
        args.append(a)
    return args


def _layouts(build: dict) -> list:
    """Per parameter of a build: its declared ``[layout, logical shape]``, or None."""
    return build.get("layouts") or [None] * len(build["specs"])


def _logical_specs(build: dict) -> list:
    """The build's parameters as the template's logical tensors (a declared layout undone)."""
    return [p if lay is None else dict(p, shape=list(lay[1])) for p, lay in zip(build["specs"], _layouts(build))]


def _run_logical(build: dict, inputs: list) -> list:
    """Call the build on logical ``inputs`` (None at outputs), each stored in the build's own
    layout; its outputs, logical."""
    from tune.layout import to_blocked, to_logical

    args, outs = [], []
    for a, p, lay in zip(inputs, build["specs"], _layouts(build)):
        if p["is_output"]:
            (out,) = random_arguments([p], 0)
            outs.append((out, lay))
            args.append(out)
        else:
            args.append(a if lay is None else to_blocked(a, lay[0]))
    load_object(build)(*args)
    return [o if lay is None else to_logical(o, lay[0], lay[1]) for o, lay in outs]


def _reference(ref: dict) -> tuple:
    """``(logical inputs with None at outputs, logical outputs)`` of the reference build."""
    hit = _refs.get(ref["key"])
    if hit is None:
        specs = _logical_specs(ref)
        args = random_arguments(specs, ref.get("seed", 0))
        inputs = [None if p["is_output"] else a for a, p in zip(args, specs)]
        hit = _refs[ref["key"]] = (inputs, _run_logical(ref, inputs))
    return hit


def check_output(build: dict, ref: dict) -> str:
    """'' when the candidate computes the reference's outputs; else what differs.

    Both run on the same logical inputs, each stored in its own declared layout
    (``autotvm.layout``), and their outputs are compared in the logical form."""
    if [(p["dtype"], tuple(p["shape"])) for p in _logical_specs(build)] != [
        (p["dtype"], tuple(p["shape"])) for p in _logical_specs(ref)
    ]:
        return ""  # arguments that stand for different tensors: not comparable
    inputs, ref_outs = _reference(ref)
    outs = _run_logical(build, inputs)
    for k, (got, want) in enumerate(zip(outs, ref_outs)):
        tol = CHECK_RTOL * max(1.0, float(np.nanmax(np.abs(want))) if want.size else 1.0)
        if got.shape != want.shape or not np.allclose(got, want, rtol=CHECK_RTOL, atol=tol):
            bad = int(np.sum(~np.isclose(got, want, rtol=CHECK_RTOL, atol=tol)))
            return f"output {k} differs from the reference (fallback config) in {bad} of {want.size} elements"
    return ""


_ref_timers: dict = {}  # reference key (or "yardstick") -> _Timed


def rotating_call(mod, arrays: list, specs: list):
    """``(call, copies)``: a call of ``mod`` that takes its inputs after the first from the next of
    ``ROTATE_BYTES`` of copies of them each time (the first input, the activations a model's previous
    layer just wrote, and the outputs stay put); ``copies`` holds the arrays the call points into.
    Without inputs after the first, a plain call of ``arrays``."""
    fn = mod._fn
    rotated = {k for k, (a, p) in enumerate(zip(arrays, specs))
               if k > 0 and not p["is_output"] and isinstance(a, np.ndarray)}
    nbytes = sum(arrays[k].nbytes for k in rotated)
    count = min(MAX_ROTATIONS, -(-ROTATE_BYTES // nbytes)) if nbytes else 1
    copies = [arrays] + [[aligned_copy(a) if k in rotated else a for k, a in enumerate(arrays)] for _ in range(count - 1)]
    raws = itertools.cycle([mod._check(c) for c in copies])
    return (lambda: fn(*next(raws))), copies


def _bound(mod, arrays: list, specs: list, flush: bool) -> tuple:
    """``(fn, raw, held)``: the call ``fn(*raw)`` of ``mod`` on ``arrays`` and the arrays it points
    into; with ``flush`` its weights rotate (``rotating_call``)."""
    if flush:
        call, copies = rotating_call(mod, arrays, specs)
        return call, [], copies
    return mod._fn, mod._check(arrays), arrays


def _timed(fn, raw, number: int, min_ms: float) -> float:
    """Seconds per call of ``number`` calls or more, lasting ``min_ms``."""
    return calls_lasting(fn, raw, number, min_ms)[0]


def _alternations(timing, ref_timing, r_prev: float):
    """``(ratio, reference before, reference after)`` without end: ``timing()`` alternated with
    ``ref_timing()``, each over the mean of the reference timings either side of it (``r_prev``
    the one before the first)."""
    before = r_prev
    while True:
        mine = timing()
        after = ref_timing()
        yield mine / (0.5 * (before + after)), before, after
        before = after


def _alternate(timing, ref_timing, r_prev: float, until: float) -> tuple:
    """``(ratios, reference timings)`` of :func:`_alternations`, as many as end by ``until``
    (perf_counter), at least 5."""
    ratios, refs = [], []
    for ratio, _, after in _alternations(timing, ref_timing, r_prev):
        ratios.append(ratio)
        refs.append(after)
        if len(ratios) >= 5 and time.perf_counter() >= until:
            return ratios, refs


def _fast_alternation(timing, bracket: "_Timed", ref_ms: float, r_prev: float, count: int,
                      until: float = 0.0, base: list | None = None) -> tuple:
    """``(ratios, last bracket timing)`` of :func:`_alternations` with ``bracket``'s timings, until
    ``count`` ratios had both sides within ``FAST_STATE`` of ``base[0]``, the bracket's fastest
    timing beside this candidate (updated as it goes), or ``count`` alternations passed and
    ``until`` (perf_counter) too; the fast ratios, or every ratio when fewer than ``FEW_FAST`` (or
    ``count``, if less) were fast."""
    base = [r_prev] if base is None else base
    base[0] = min(base[0], r_prev)
    pairs = []  # (ratio, its slower bracketing timing)
    for ratio, before, after in _alternations(timing, lambda: bracket.time(ref_ms), r_prev):
        pairs.append((ratio, max(before, after)))
        base[0] = min(base[0], after)
        fast = [r for r, slowest in pairs if slowest <= FAST_STATE * base[0]]
        if len(fast) >= count or (len(pairs) >= count and time.perf_counter() >= until):
            break
    return (fast if len(fast) >= min(count, FEW_FAST) else [r for r, _ in pairs]), after


def _settle(fn, raw) -> float:
    """A kernel's time on an undisturbed machine: the 10th percentile of ``SETTLE_S`` seconds of
    short timings (this VM's speed states last 1-3 s)."""
    samples, t_end = [], time.perf_counter() + SETTLE_S
    while time.perf_counter() < t_end or len(samples) < 5:
        samples.append(_timed(fn, raw, 1, REF_MS))
    return float(np.percentile(samples, 10))


@dataclasses.dataclass
class _Timed:
    """A kernel timed in brackets around candidates: its module, ``fn(*raw)`` the call, the arrays
    it points into (held), and its settled seconds once known.

    ``settled`` is the records' scale (the yardstick's is stored per host and kept across sessions,
    whatever the host's speed today); ``fastest``, its fastest timing in this process, is the
    machine's fast state now, which the probe's fast chunks compare with (a host 27% faster than
    the stored yardstick passed every state up to 1.4x its fast time against ``settled``)."""

    mod: object
    arrays: list
    fn: object
    raw: list
    settled: float | None = None
    key: str = ""
    fastest: float = float("inf")

    def time(self, min_ms: float = REF_MS) -> float:
        t = _timed(self.fn, self.raw, 1, min_ms)
        self.fastest = min(self.fastest, t)
        return t


def _timer(key: str, build: dict, flush: bool = False) -> _Timed:
    """The kernel of ``build`` loaded once per process under ``key``; with ``flush`` its call
    rotates its weights (``rotating_call``)."""
    key = key + "/flush" if flush else key
    hit = _ref_timers.get(key)
    if hit is None:
        mod = load_object(build)
        fn, raw, held = _bound(mod, random_arguments(build["specs"], 0), build["specs"], flush)
        hit = _ref_timers[key] = _Timed(mod, held, fn, raw)
    return hit


def build_yardstick() -> dict:
    """The yardstick (``yardstick.py``) compiled for the host: a build dict like a candidate's."""
    from tune.measure import yardstick

    sch, args, host = yardstick.schedule()
    with host:
        return compile_object(sch, args, "tessera_yardstick", target=host)


def _yardstick() -> _Timed:
    """The yardstick (``yardstick.py``), built and loaded once per process; ``key`` set."""
    from tune.measure import yardstick

    hit = _ref_timers.get("yardstick")
    if hit is None:
        built = build_yardstick()
        hit = _timer("yardstick", built)
        hit.key = yardstick.key(built)
    return hit


def _yardstick_timer(settled: float | None) -> _Timed:
    """The yardstick with its settled seconds: ``settled`` (the runner's figure, kept across
    worker restarts), else the one stored for this host, else settled now and stored."""
    from tune.measure import yardstick

    hit = _yardstick()
    if settled:
        hit.settled = settled
    if hit.settled is None:
        hit.settled = yardstick.stored(hit.key, SETTLE_S)
    if hit.settled is None:
        hit.settled = _settle(hit.fn, hit.raw)
        yardstick.store(hit.key, hit.settled, SETTLE_S)
    return hit


def yardstick_call(settle: bool = False) -> tuple:
    """``(call, stored settled seconds)`` of the yardstick on this host, for timing other kernels on
    the records' scale outside a runner; ``(None, None)`` when no runner has settled it here,
    unless ``settle``: then it settles now (``SETTLE_S`` seconds) and stores the figure, as a
    runner would."""
    from tune.measure import yardstick

    hit = _yardstick()
    settled = yardstick.stored(hit.key, 0.0)
    if settled is None and settle:
        settled = _yardstick_timer(None).settled
    if settled is None:
        return None, None
    return (lambda: hit.fn(*hit.raw)), settled


def reference_call(ref: dict) -> tuple:
    """``(call, settled seconds)`` of a task's reference (``LocalBuilder.build_reference``): the
    kernel a runner brackets the task's candidates with, and its time on the records' scale (its
    ratio to the yardstick stored on this host times the yardstick's stored time), so that another
    kernel alternated with it is timed as the runner times a candidate; the seconds are None where
    no runner has stored that scale here."""
    from tune.measure import yardstick

    hit, yard = _timer(ref["key"], ref), _yardstick()
    ratio, yard_s = yardstick.stored(_scale_key(ref, yard), 0.0), yardstick.stored(yard.key, 0.0)
    return (lambda: hit.fn(*hit.raw)), (ratio * yard_s if ratio and yard_s else None)


QUIET_HOST = 1.15  # the yardstick's median over its settled time on a quiet host reads 1.00-1.10


def host_note(when: str = "now", seconds: float = 0.5) -> str:
    """One line on the host's state ``when``, to print beside a figure: the yardstick's median time
    over ``seconds`` of calls, timed as it was settled (2 ms batches back to back), against its
    stored settled time (on this VM 1.0-1.1 when quiet, 1.3-1.4 for hours when other tenants
    take the cores' time, onnxruntime's ResNet-50 then 59 against 46 ms; single calls after a
    pause read 2x that, the pool's wake-up included), and the vCPUs' state (``vcpus``)."""
    from tune.measure import vcpus

    call, settled = yardstick_call()
    if call is None:
        return f"host {when}: unknown (no runner has settled the yardstick here)"
    call()
    samples, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(samples) < 5:
        samples.append(_timed(call, [], 1, REF_MS))
    ratio = float(np.median(samples)) / settled
    near = vcpus.reading()[1]
    return (f"host {when}: the yardstick ran {ratio:.2f}x its settled time ({'quiet' if ratio <= QUIET_HOST else 'busy'}; "
            f"quiet <= {QUIET_HOST}x), the vCPUs {'near' if near else 'apart'}")


def _reference_timer(ref: dict, settled: float | None, yard: float | None = None) -> _Timed:
    """The reference kernel, timed in brackets around candidates, and its settled seconds.  It
    runs with its weights warm even when the candidates' rotate out of the caches (the flush):
    a cold candidate over a warm bracket, times the bracket's settled time, is the candidate's
    cold time on the records' scale.

    The settled time is the reference's time on an undisturbed machine: ``settled`` when the
    runner knows it already, else the yardstick's settled time (``yard`` or the host's stored
    one) times the ratio of the two kernels: stored for this host, or timed alternately for
    ``PROBE_S`` (a ratio the drift cancels out of), in chunks taken while the yardstick runs at
    its speed (:func:`probe_ratio`), and stored (:func:`_scale`).  The runner keeps each figure
    for its life, across worker restarts, and both are stored per host: records of every
    session share one scale.
    """
    hit = _timer(ref["key"], ref)
    if settled:
        hit.settled = settled
    if hit.settled is None:
        _scale([(ref, hit)], _yardstick_timer(yard), passes=1)
    return hit


def _scale_key(ref: dict, yard_timer: _Timed) -> str:
    """The key of a reference's stored ratio to the yardstick: the yardstick's key (host and its
    code) and a hash of the reference's object code."""
    from tune.measure import yardstick

    return f"{yard_timer.key} reference:{yardstick.code_hash(ref['obj'])}"


def _scale(pairs: list, yard_timer: _Timed, passes: int) -> None:
    """Set the settled seconds of each ``(ref, timer)`` of ``pairs``: its ratio to the yardstick
    (stored per host, or probed and stored) times the yardstick's settled time.

    The ratio between two kernels drifts on this VM by ~3% from one moment to the next (tens of
    seconds apart; a Winograd reference's read 9.0-17.8 in eight sessions), so one probe of
    ``PROBE_S`` sets a task's scale ~3% off, and every record of the task with it.  Probed
    ``passes`` times over all of ``pairs`` in turn (``PROBE_S / passes`` of fast chunks each),
    the chunks of a reference span as many moments.  Stored (``yardstick.store``, with
    ``PROBE_S``), the ratio is every later session's on this host: a resumed tune, a re-measure,
    share the scale of the records already written (probed per session, a task's scale moved by
    ~3%, up to 1.8x).  A ratio probed for less than the current ``PROBE_S`` is not trusted."""
    from tune.measure import yardstick

    todo = []
    for ref, hit in pairs:
        ratio = yardstick.stored(_scale_key(ref, yard_timer), PROBE_S)
        if ratio is None:
            todo.append((ref, hit, []))
        else:
            hit.settled = ratio * yard_timer.settled
    for _ in range(passes if todo else 0):
        for _, hit, chunks in todo:
            chunks += _probe_chunks(hit, yard_timer, PROBE_S / passes, PROBE_NEAR_WAIT_S / passes)
    for ref, hit, chunks in todo:
        ratio = probe_ratio(chunks, yard_timer.fastest)
        yardstick.store(_scale_key(ref, yard_timer), ratio, PROBE_S)
        hit.settled = ratio * yard_timer.settled


def calibrate(payload: dict) -> dict:
    """Settle the scale of several references at once (``LocalRunner.calibrate``): ``payload``'s
    ``refs`` probed in ``passes`` rounds (:func:`_scale`); ``{"ref_times": {reference key:
    settled seconds}, "yardstick": its settled seconds}``."""
    yard_timer = _yardstick_timer(payload.get("yardstick"))
    pairs = [(ref, _timer(ref["key"], ref)) for ref in payload["refs"]]
    _scale([(ref, hit) for ref, hit in pairs if hit.settled is None], yard_timer, payload.get("passes", 1))
    return {"ref_times": {ref["key"]: hit.settled for ref, hit in pairs}, "yardstick": yard_timer.settled}


def _probe_chunks(hit: _Timed, yard_timer: _Timed, seconds: float = PROBE_S,
                  near_wait: float = PROBE_NEAR_WAIT_S) -> list:
    """Chunks ``(ratios, yardstick times, near)`` of ``hit`` alternated with the yardstick, until
    ``seconds`` of them are fast (:func:`fast_chunks`) or ``PROBE_PATIENCE`` x ``seconds`` of
    timing has passed; while the vCPUs are apart it first waits for them (``near_wait`` in all)."""
    from tune.measure import vcpus

    chunks, yard_times, waited = [], [yard_timer.time()], 0.0
    start = time.perf_counter()
    near_before = vcpus.reading()[1]
    while (len(fast_chunks(chunks, yard_timer.fastest)) * PROBE_CHUNK_S < seconds
           and time.perf_counter() - start - waited < PROBE_PATIENCE * seconds):
        if not near_before and waited < near_wait:
            t0 = time.perf_counter()
            near_before = vcpus.wait_near(near_wait - waited)
            waited += time.perf_counter() - t0
            yard_times = [yard_timer.time()]
        ratios, yard_times = _alternate(hit.time, yard_timer.time, yard_times[-1],
                                        until=time.perf_counter() + PROBE_CHUNK_S)
        near_after = vcpus.reading()[1]
        chunks.append((ratios, yard_times, near_before and near_after))
        near_before = near_after
    return chunks


def fast_chunks(chunks: list, yard_fast: float) -> list:
    """The probe chunks ``(ratios, yardstick times, near)`` timed with the vCPUs near and the
    yardstick's median time within ``FAST_STATE`` of ``yard_fast``, its fastest time here."""
    return [c for c in chunks if c[2] and c[1] and float(np.median(c[1])) <= FAST_STATE * yard_fast]


def probe_ratio(chunks: list, yard_fast: float) -> float:
    """A reference's ratio to the yardstick from probe chunks: the median ratio of the fast
    chunks, or of all of them when none was."""
    kept = fast_chunks(chunks, yard_fast) or chunks
    return float(np.median([x for c in kept for x in c[0]]))


def run_candidate(payload: dict) -> dict:
    """Check and time one build; ``{"costs", "wrong"}`` (costs in seconds per call).

    A candidate whose first timed call exceeds ``payload["reject_above"]``
    (the runner's ``reject_factor`` times the best cost so far) and
    ``REJECT_FLOOR_S`` reports that one call instead of ``number * repeat`` more: a slow candidate would
    otherwise cost the most tuning time of all.

    With ``payload["normalize"]`` and a reference, every repeat is bracketed
    by timings of the reference kernel (the task's fallback config), and its
    cost is ``candidate / mean(bracketing references) * settled reference
    time``: this VM drifts between speed states for seconds at a time (the
    two vCPUs sharing one core, clock changes: 10-100% on every kernel
    alike), which a ratio taken within ~50 ms cancels.
    """
    build, ref = payload["build"], payload.get("ref")
    if ref is not None:
        wrong = check_output(build, ref)
        if wrong:
            return {"costs": [], "wrong": wrong}
    mod = load_object(build)
    args = random_arguments(build["specs"], 1)
    flush = bool(payload["flush"])  # every call reads the weights from memory
    fn, raw, args = _bound(mod, args, build["specs"], flush)
    fn(*raw)  # the first call pays for cold caches and pages: time the second
    t0 = time.perf_counter()
    fn(*raw)
    first = time.perf_counter() - t0
    reject = payload.get("reject_above")
    # far slower than the best so far: one call says enough (a call under REJECT_FLOOR_S costs
    # little to time in full, and one cold call of a microsecond kernel says nothing)
    if reject is not None and first > max(reject, REJECT_FLOOR_S):
        return {"costs": [first], "wrong": "", "rejected": True}
    number, min_ms = payload["number"], payload["min_repeat_ms"]
    timer = yard = None
    if payload.get("normalize") and ref is not None:
        timer = _reference_timer(ref, payload.get("ref_time"), payload.get("yardstick"))
        yard = _yardstick_timer(payload.get("yardstick"))
    if timer is None:
        costs = [_timed(fn, raw, number, min_ms) for _ in range(payload["repeat"])]
    else:
        costs = _bracketed(fn, raw, number, min_ms, payload["repeat"], timer, yard, payload.get("state_wait", 0.0),
                           f"{build['symbol']}{build['specs']!r}")
    out = {"costs": costs, "wrong": ""}
    if timer is not None:
        out["ref_time"] = timer.settled
        out["yardstick"] = yard.settled
    return out


_beside: dict = {}  # (candidate key, id(bracket)) -> [the bracket's fastest timing beside it]


def _bracketed(fn, raw, number: int, min_ms: float, repeat: int, ref: _Timed, yard: _Timed,
               state_wait: float = 0.0, key: str = "") -> list:
    """Seconds per call of ``repeat`` normalized repeats of ``fn(*raw)``: short candidate timings
    alternated with the reference's, each repeat's cost the median ratio times the reference's
    settled time, counting the ratios timed with the bracket at its fast speed beside this
    candidate (``key``: the same config measured again in this process starts from what its
    earlier measurements saw; :func:`_fast_alternation`).

    With the vCPUs apart (``vcpus``) the bracket is the yardstick instead: a reference that hands
    data between its threads runs up to 1.9x slower then, the yardstick not at all, so the cost
    is the candidate's honest time in that state (never below its near time); but first the
    measurement waits for the near state, and a repeat for the fast one, ``state_wait`` seconds in
    all (``LocalRunner``'s).  The state is read between repeats (once: one repeat's after is the
    next one's before); a repeat across a change of state is timed once more.  Each bracket's last timing opens its next alternation (none after a wait)."""
    from tune.measure import vcpus

    sub_ms, ref_ms = min(min_ms, SUB_MS), max(min(min_ms, SUB_MS), REF_MS)
    count = max(1, round(min_ms / SUB_MS))
    last: dict = {}  # id(bracket) -> its latest timing
    near, costs = vcpus.reading()[1], []
    wait_until = time.perf_counter() + state_wait
    for _ in range(repeat):
        for _ in range(2):
            if not near and time.perf_counter() < wait_until:
                near = vcpus.wait_near(wait_until - time.perf_counter())
                last.clear()
            bracket = ref if near else yard
            bid = id(bracket)
            if bid not in last:
                last[bid] = bracket.time(ref_ms)
            if len(_beside) > 4096:
                _beside.clear()
            base = _beside.setdefault((key, bid), [last[bid]])
            ratios, last[bid] = _fast_alternation(lambda: _timed(fn, raw, number, sub_ms), bracket, ref_ms,
                                                  last[bid], count, wait_until, base)
            after = vcpus.reading()[1]
            changed, near = after != near, after
            if not changed:
                break
        costs.append(float(np.median(ratios)) * bracket.settled)
    return costs


__all__ = [
    "build_candidate",
    "build_yardstick",
    "calibrate",
    "check_output",
    "compile_object",
    "load_object",
    "random_arguments",
    "run_candidate",
    "warm_builder",
    "warm_runner",
    "host_note",
    "reference_call",
    "yardstick_call",
]
