"""``LocalRunner``: built candidates checked and timed, one at a time, in one measuring process.

Timing is classic AutoTVM's, as ``Module.time_evaluator`` times a kernel::

    for each of `repeat` repeats:            # one cost each (seconds per call)
        call `number` times, more until the calls last `min_repeat_ms`
    sleep `cooldown_interval` between candidates

With ``enable_cpu_cache_flush`` every call reads the kernel's inputs after the
first (its weights) from memory, as a call inside a model run does (classic
TVM's ``cache_flush_cpu_non_first_arg``): the call rotates through copies of
them larger than the last-level cache, so the flush costs no time between
calls.  Before timing, ``check_correctness`` compares the candidate's outputs
with the task's default config's on the same random inputs (a mismatch:
``WRONG_ANSWER``), each tensor stored in the layout its template declared
(``tune.layout``).  A candidate whose first call is ``reject_factor`` times
slower than the task's best so far is timed by that one call, and with
``stop_factor`` one whose first calls (``STOP_PROBE_MS`` of them) average that
many times the best is timed by those calls: a slow candidate would otherwise cost
the most tuning time of all.  The reading that ranks a
candidate is the median of its repeats (``tune.measure.statistics``).

``clock`` says what a cost is (``tune.measure.measure.CLOCKS``; each result and
record carries it): ``"wall"``, wall seconds of calls that run on every thread of
the pool; ``"thread_cpu"``, the measuring thread's CPU seconds (``time.thread_time``)
of calls that run on it alone, the pool at one thread.  On a machine that other
processes load, a wall reading measures the load as much as the kernel; the
thread's CPU time does not count the time it waits for a core, so candidates
compare as on an idle machine (at one thread's speed: a tune for a machine that
runs kernels on several threads ranks by single-thread speed).

As classic AutoTVM's runners: ``runner.ref_input`` (arrays, one per input argument) are the inputs
timed instead of random ones, and each candidate goes through ``runner.executor.submit(fn, ...,
ref_input=...)`` (a future's ``result()``; default: measured at once in the measuring process).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import time

import numpy as np

from codegen.module import calls_lasting, timed_calls
from codegen.ndarray import ALIGN, aligned_copy, aligned_empty
from tune.layout import to_blocked, to_logical
from tune.measure.measure import MeasureErrorNo, MeasureResult, Runner, check_clock, error_result
from tune.measure.worker import Worker

_HERE = "tune.measure.runner"
CHECK_RTOL = 1e-3
REJECT_FLOOR_S = 1e-3  # a first call shorter than this is never grounds to reject
STOP_PROBE_MS = 5.0  # calls lasting this long show a candidate far slower than the best (stop_factor)
# With the cache flush the inputs after the first rotate through copies this large in all: past
# the last-level cache of the CPUs this targets (32 MiB on a Zen 3 CCX)
ROTATE_BYTES = 96 << 20
MAX_ROTATIONS = 1024


def run_result(status: str, value, build, t_run: float, timeout: float) -> MeasureResult:
    """A measuring worker's answer as a MeasureResult (LocalRunner's and DaskRunner's)."""
    all_cost = build.time_cost + t_run
    if status == "ok":
        if value["wrong"]:
            return error_result(MeasureErrorNo.WRONG_ANSWER, value["wrong"], all_cost)
        return MeasureResult(tuple(value["costs"]), 0, all_cost, time.time(), bool(value.get("flush")),
                             clock=value.get("clock", "wall"))
    if status == "timeout":
        return error_result(MeasureErrorNo.RUN_TIMEOUT, f"run exceeded {timeout:g} s", all_cost)
    return error_result(MeasureErrorNo.RUNTIME_DEVICE, f"runner: {value}", all_cost)


class LocalRunner(Runner):
    """Times candidates in one separate process (see the module doc for the parameters, which are
    classic AutoTVM's; ``timeout``: seconds per candidate; ``clock``: ``"wall"`` or ``"thread_cpu"``)."""

    def __init__(self, timeout: float = 10, number: int = 4, repeat: int = 3, min_repeat_ms: float = 0,
                 cooldown_interval: float = 0.0, enable_cpu_cache_flush: bool = False,
                 check_correctness: bool = True, reject_factor: float | None = 5.0, clock: str = "wall",
                 stop_factor: float | None = None, same_code_once: bool = False):
        if number < 1 or repeat < 1:
            raise ValueError(f"LocalRunner: number and repeat must be >= 1, got {number}, {repeat}")
        if min_repeat_ms < 0 or cooldown_interval < 0 or timeout <= 0:
            raise ValueError(f"LocalRunner: min_repeat_ms and cooldown_interval must be >= 0 and timeout > 0, "
                             f"got {min_repeat_ms}, {cooldown_interval}, {timeout}")
        self.timeout = float(timeout)
        self.number, self.repeat, self.min_repeat_ms = int(number), int(repeat), float(min_repeat_ms)
        self.cooldown_interval = float(cooldown_interval)
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)
        self.check_correctness = bool(check_correctness)
        self.reject_factor = reject_factor
        self.stop_factor = stop_factor
        self.same_code_once = bool(same_code_once)
        self._by_code: dict = {}  # with same_code_once: code key -> the result of its first measurement
        self.clock = check_clock(clock)
        self.best_cost = float("inf")
        self.worker = Worker(f"{_HERE}:warm_runner", "tune-runner")
        self.task = None
        self.ref = None
        self.ref_input = None
        self.executor = InlineExecutor()

    def set_task(self, task, reference: dict | None = None) -> None:
        self.task, self.ref = task, reference
        self.best_cost = float("inf")
        self._by_code = {}

    def payload(self, build: dict, ref_input=None) -> dict:
        """What the measuring process needs for one candidate (``ref_input``: the runner's, by default)."""
        ref_input = self.ref_input if ref_input is None else ref_input
        known = self.best_cost < float("inf")
        reject = self.reject_factor * self.best_cost if self.reject_factor and known else None
        stop = self.stop_factor * self.best_cost if self.stop_factor and known else None
        return {"build": build, "ref": self.ref if self.check_correctness else None, "number": self.number,
                "repeat": self.repeat, "min_repeat_ms": self.min_repeat_ms, "flush": self.enable_cpu_cache_flush,
                "reject_above": reject, "stop_above": stop, "clock": self.clock,
                "inputs": None if ref_input is None else [np.asarray(a) for a in ref_input]}

    @property
    def overlaps_builds(self) -> bool:
        """Whether candidates may run while others build (``MeasureBatch``): on the ``"thread_cpu"``
        clock, in this runner's own process (a subclass that runs elsewhere keeps batches)."""
        return self.clock == "thread_cpu" and type(self).run is LocalRunner.run

    def note(self, result: MeasureResult) -> MeasureResult:
        """Track the task's best cost: the bar for rejecting slow candidates early."""
        if result.error_no == 0 and result.costs:
            self.best_cost = min(self.best_cost, result.cost)
        return result

    def run(self, measure_inputs: list, build_results) -> list[MeasureResult]:
        """``build_results``: a list, or an iterator that yields each build when it is done."""
        out = []
        for k, (inp, build) in enumerate(zip(measure_inputs, build_results)):
            if k and self.cooldown_interval > 0 and build is not None and build.build is not None:
                time.sleep(self.cooldown_interval)
            res = self.executor.submit(self.measure, inp, build, ref_input=self.ref_input).result()
            if not isinstance(res, MeasureResult):
                res = error_result(MeasureErrorNo.RUNTIME_DEVICE, f"runner: the executor returned {res!r}", 0.0)
            out.append(res)
        return out

    def measure(self, measure_input, build, ref_input=None) -> MeasureResult:
        """Check and time one built candidate (``ref_input``: the input arrays, else random ones)."""
        if build is None:
            return error_result(MeasureErrorNo.RUNTIME_DEVICE, f"runner: no build result for {measure_input}", 0.0)
        if build.build is None:
            return error_result(build.error_no, build.error, build.time_cost)
        code = code_key(build.build) if self.same_code_once else None
        if code in self._by_code:
            first = self._by_code[code]
            return MeasureResult(first.costs, first.error_no, build.time_cost, time.time(), first.flush,
                                 clock=first.clock)
        try:
            self.worker.start()
        except RuntimeError as err:
            return error_result(MeasureErrorNo.RUNTIME_DEVICE, str(err), build.time_cost)
        payload = self.payload(build.build, ref_input)
        t0 = time.perf_counter()
        status, value = self.worker.call(f"{_HERE}:run_candidate", payload, self.timeout)
        result = self.note(run_result(status, value, build, time.perf_counter() - t0, self.timeout))
        if code is not None and result.error_no in (MeasureErrorNo.NO_ERROR, MeasureErrorNo.WRONG_ANSWER):
            self._by_code[code] = result
        return result

    def close(self) -> None:
        self.worker.close()


def code_key(build: dict) -> tuple:
    """What makes two builds the same kernel: the symbol (named by a digest of its LLVM IR), the
    parameters and the layouts the arguments are stored in."""
    return build["symbol"], repr(build["specs"]), repr(build.get("layouts"))


class InlineExecutor:
    """Runs each submitted measurement at once (the runner's own worker process does the timing);
    ``submit`` returns a finished ``concurrent.futures.Future``, as classic AutoTVM's executors do."""

    def submit(self, fn, *args, **kwargs) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 (the caller reads it from the future, as from a pool's)
            fut.set_exception(err)
        return fut


# ---------------------------------------------------- in the worker process --
_loaded: dict = {}  # (symbol, specs) -> Module (kernels stay loaded for the life of the worker)
_refs: dict = {}  # reference key -> (inputs, outputs)


def warm_runner() -> None:
    """Worker start-up: the JIT's thread-pool runtime, so the first measurement pays nothing."""
    from codegen import jit

    jit.runtime_engine()


def load_object(build: dict):
    """The ``codegen.Module`` of a built candidate, its object code linked into this process's JIT."""
    from codegen import service

    sym = (build["symbol"], repr(build["specs"]))  # one code may serve two signatures (shapes in the checks only)
    hit = _loaded.get(sym)
    if hit is None:
        if len(_loaded) >= 256:  # unload old candidates (the service frees a kernel with its last reference)
            _loaded.clear()
        hit = _loaded[sym] = service.module(build["kernel"])
    return hit


def random_arguments(specs: list, seed: int) -> list:
    """Inputs drawn from a seeded generator, outputs filled with NaN (or -7) so an unwritten element
    shows; every array ``codegen.ndarray.ALIGN``-aligned, as the graph executor's buffers are."""
    rng = np.random.default_rng(seed)
    args = []
    for p in specs:
        if p["kind"] != "buffer" or any(not isinstance(d, int) for d in p["shape"]):
            raise ValueError(f"argument {p['name']!r} has no constant shape; tuning needs constant shapes")
        shape, dtype = tuple(p["shape"]), np.dtype(p["dtype"])
        a = aligned_empty(shape, dtype)
        if p["is_output"]:
            a.fill(np.nan if dtype.kind == "f" else np.array(-7).astype(dtype))  # unsigned: wrapped
        elif dtype.kind == "f":
            a[...] = rng.uniform(-1, 1, size=shape)
        else:
            a[...] = rng.integers(0, 4, size=shape)
        args.append(a)
    return args


def _layouts(build: dict) -> list:
    return build.get("layouts") or [None] * len(build["specs"])


def _logical_specs(build: dict) -> list:
    """The build's parameters as the template's logical tensors (a declared layout undone)."""
    return [p if lay is None else dict(p, shape=list(lay[1])) for p, lay in zip(build["specs"], _layouts(build))]


def _run_logical(build: dict, inputs: list) -> list:
    """Call the build on logical ``inputs`` (None at outputs), each stored in the build's own
    layout; its outputs, logical."""
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


def check_output(build: dict, ref: dict) -> str:
    """'' when the candidate computes the reference's outputs on the same logical inputs; else what differs."""
    if [(p["dtype"], tuple(p["shape"])) for p in _logical_specs(build)] != [
            (p["dtype"], tuple(p["shape"])) for p in _logical_specs(ref)]:
        return ""  # arguments that stand for different tensors: not comparable
    hit = _refs.get(ref["key"])
    if hit is None:
        specs = _logical_specs(ref)
        args = random_arguments(specs, ref.get("seed", 0))
        inputs = [None if p["is_output"] else a for a, p in zip(args, specs)]
        hit = _refs[ref["key"]] = (inputs, _run_logical(ref, inputs))
    inputs, want_outs = hit
    for k, (got, want) in enumerate(zip(_run_logical(build, inputs), want_outs)):
        tol = CHECK_RTOL * max(1.0, float(np.nanmax(np.abs(want))) if want.size else 1.0)
        if got.shape != want.shape or not np.allclose(got, want, rtol=CHECK_RTOL, atol=tol):
            bad = int(np.sum(~np.isclose(got, want, rtol=CHECK_RTOL, atol=tol)))
            return f"output {k} differs from the reference (default config) in {bad} of {want.size} elements"
    return ""


def with_inputs(args: list, specs: list, inputs) -> list:
    """``args`` with the input arguments replaced by ``inputs`` (the runner's ``ref_input``: one
    array per input, in order, each of its argument's shape; the dtype converted)."""
    if inputs is None:
        return args
    slots = [k for k, p in enumerate(specs) if p["kind"] == "buffer" and not p["is_output"]]
    if len(inputs) != len(slots):
        raise ValueError(f"ref_input: {len(inputs)} arrays for {len(slots)} input arguments "
                         f"({', '.join(specs[k]['name'] for k in slots)})")
    out = list(args)
    for k, a in zip(slots, inputs):
        if tuple(a.shape) != tuple(out[k].shape):
            raise ValueError(f"ref_input: the array for {specs[k]['name']!r} has shape {tuple(a.shape)}, "
                             f"the argument {tuple(out[k].shape)}")
        out[k] = aligned_copy(a.astype(out[k].dtype, copy=False))
    return out


_pool: list = [np.empty(0, np.uint8)]  # the measuring process's memory for rotated copies, reused


def _pooled(nbytes: int) -> np.ndarray:
    """``nbytes`` of this process's rotation memory (grown when short, kept for later candidates:
    96 MiB of fresh pages cost each candidate ten times the copying)."""
    if _pool[0].nbytes < nbytes:
        _pool[0] = np.empty(0, np.uint8)  # free the old one first
        _pool[0] = aligned_empty(nbytes, np.uint8)
    return _pool[0]


def rotating_call(mod, arrays: list, specs: list):
    """``(call, copies)``: a call of ``mod`` that takes its inputs after the first from the next of
    ``ROTATE_BYTES`` of copies of them each time (the first input, the activations a model's previous
    layer just wrote, and the outputs stay put); ``copies`` holds the arrays the call points into.
    The copies live in memory this process reuses: the next ``rotating_call`` overwrites them."""
    fn = mod._fn
    rotated = [k for k, (a, p) in enumerate(zip(arrays, specs))
               if k > 0 and not p["is_output"] and isinstance(a, np.ndarray)]
    nbytes = sum(arrays[k].nbytes for k in rotated)
    count = min(MAX_ROTATIONS, -(-ROTATE_BYTES // nbytes)) if nbytes else 1
    slot = lambda a: -(-a.nbytes // ALIGN) * ALIGN  # noqa: E731 (each copy starts on an ALIGN boundary)
    pool = _pooled((count - 1) * sum(slot(arrays[k]) for k in rotated))
    copies, at = [arrays], 0
    for _ in range(count - 1):
        copy = list(arrays)
        for k in rotated:
            a = arrays[k]
            copy[k] = pool[at:at + a.nbytes].view(a.dtype).reshape(a.shape)
            np.copyto(copy[k], a)
            at += slot(a)
        copies.append(copy)
    raws = itertools.cycle([mod._check(c) for c in copies])
    return (lambda: fn(*next(raws))), copies


CLOCK_FUNCTIONS = {"wall": time.perf_counter, "thread_cpu": time.thread_time}
_pool_threads: list = [0]  # what this measuring process last set the thread pool to


def pool_for(clock: str) -> None:
    """The thread pool of this process as ``clock`` reads it: one thread (every call runs on the
    calling thread) for ``"thread_cpu"``, all of the process's CPUs for ``"wall"``."""
    want = 1 if clock == "thread_cpu" else 0
    if _pool_threads[0] != want:
        import codegen

        codegen.set_num_threads(want)
        _pool_threads[0] = want


@contextlib.contextmanager
def measuring_clock(clock: str):
    """Time in this process by ``clock``: yields its function; for ``"thread_cpu"`` the thread
    pool runs at one thread inside (every call on the calling thread), as before after."""
    check_clock(clock)
    if clock == "wall":
        yield CLOCK_FUNCTIONS[clock]
        return
    import codegen

    before = codegen.get_num_threads()
    codegen.set_num_threads(1)
    try:
        yield CLOCK_FUNCTIONS[clock]
    finally:
        codegen.set_num_threads(before)


def run_candidate(payload: dict) -> dict:
    """Check and time one build (module doc): ``{"costs": seconds per call per repeat, "wrong", "flush",
    "clock"}``."""
    build, ref = payload["build"], payload.get("ref")
    clock_name = check_clock(payload.get("clock", "wall"))
    clock = CLOCK_FUNCTIONS[clock_name]
    pool_for(clock_name)
    if ref is not None:
        wrong = check_output(build, ref)
        if wrong:
            return {"costs": [], "wrong": wrong}
    mod = load_object(build)
    args = with_inputs(random_arguments(build["specs"], 1), build["specs"], payload.get("inputs"))
    flush = bool(payload["flush"])
    if flush:
        call, args = rotating_call(mod, args, build["specs"])
        fn, raw = (lambda: call()), []
    else:
        fn, raw = mod._fn, mod._check(args)
    fn(*raw)  # the first call pays for cold caches and pages: time the second
    t0 = clock()
    fn(*raw)
    first = clock() - t0
    reject = payload.get("reject_above")
    if reject is not None and first > max(reject, REJECT_FLOOR_S):
        return {"costs": [first], "wrong": "", "rejected": True, "flush": flush, "clock": clock_name}
    stop = payload.get("stop_above")
    cost, stopped = calls_or_stop(fn, raw, payload["number"], payload["min_repeat_ms"], clock, stop)
    if stopped:
        return {"costs": [cost], "wrong": "", "stopped": True, "flush": flush, "clock": clock_name}
    costs = [cost] + [calls_lasting(fn, raw, payload["number"], payload["min_repeat_ms"], clock)[0]
                      for _ in range(payload["repeat"] - 1)]
    return {"costs": costs, "wrong": "", "flush": flush, "clock": clock_name}


def calls_or_stop(fn, raw: list, n: int, min_ms: float, clock, stop_above: float | None) -> tuple:
    """``(seconds per call, stopped)``: ``codegen.module.calls_lasting``'s reading (``n`` calls, more
    until they last ``min_ms``), unless a batch of calls lasting ``STOP_PROBE_MS`` (the first batch,
    or one scaled up to it) already averages above ``stop_above`` seconds: then that batch's mean,
    and no more repeats (a candidate that slow cannot be the best; the rest of its window and
    repeats would be most of its trial's time)."""
    per_call, _, stopped = timed_calls(fn, raw, n, min_ms, clock, stop_above, STOP_PROBE_MS)
    return per_call, stopped


__all__ = ["CLOCK_FUNCTIONS", "InlineExecutor", "LocalRunner", "calls_or_stop", "check_output", "code_key",
           "load_object", "measuring_clock", "pool_for", "random_arguments", "rotating_call", "run_candidate",
           "run_result", "warm_runner", "with_inputs"]
