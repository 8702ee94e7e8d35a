"""``LocalBuilder`` (parallel worker processes) and ``LocalRunner`` (one measuring process).

A batch is built first, ``n_parallel`` candidates at a time, then run one at
a time: no measurement ever shares the CPU with a build.  A failure costs its
trial only (an error number in its result); a dead or hung worker is killed
and a fresh one started for the next candidate.
"""

from __future__ import annotations

import os
import queue
import time
from concurrent.futures import ThreadPoolExecutor

from tune.measure.measure import BuildResult, MeasureErrorNo, MeasureResult, error_result
from tune.measure.worker import STARTUP_TIMEOUT, Worker

_EXEC = "tune.measure.execute"
# rounds over all tasks' references in which ``LocalRunner.calibrate`` probes their scale (the
# ratio of two kernels drifts ~3% between moments tens of seconds apart; four moments halve that)
CALIBRATE_PASSES = 4


class LocalBuilder:
    """Compiles candidates in ``n_parallel`` worker processes (default: the CPUs of this process)."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_func: str = "default"):
        if build_func not in ("default", "object"):
            raise ValueError(
                f"LocalBuilder: unknown build_func {build_func!r}; this builder emits object code"
            )
        self.timeout = float(timeout)
        self.n_parallel = int(n_parallel or len(os.sched_getaffinity(0)))
        self._idle: queue.Queue = queue.Queue()
        self._workers = [Worker(f"{_EXEC}:warm_builder", f"tune-builder-{k}") for k in range(self.n_parallel)]
        for w in self._workers:
            self._idle.put(w)
        self._pool = ThreadPoolExecutor(self.n_parallel, thread_name_prefix="tune-build")
        self.task = None
        self._refs: dict = {}
        self._done: dict = {}  # builds made already (the reference), by (target, workload, config)

    def set_task(self, task) -> None:
        """Start the workers and import the task's template in each (outside any build's timeout)."""
        self.task = task
        if task.module in (None, "__main__"):
            return

        def prepare(_):
            worker = self._idle.get()
            try:
                worker.call(f"{_EXEC}:prepare_template", task, STARTUP_TIMEOUT)
            except RuntimeError:
                pass  # reported by the first build
            finally:
                self._idle.put(worker)

        list(self._pool.map(prepare, range(self.n_parallel)))

    def build(self, measure_inputs: list) -> list[BuildResult]:
        return list(self._pool.map(self._build_one, measure_inputs))

    def _build_one(self, inp) -> BuildResult:
        done = self._done.pop((inp.task.target_key, inp.task.workload, inp.config.key()), None)
        if done is not None:
            return done
        t0 = time.perf_counter()
        payload = {"task": inp.task, "config": inp.config}
        if inp.task.module in (None, "__main__"):  # not importable in a worker: lower here
            from tune.measure.execute import lower_here

            here = lower_here(inp.task, inp.config)
            if "error_no" in here:
                return BuildResult(None, here["error_no"], here["error"], time.perf_counter() - t0)
            payload.update(here)
        worker = self._idle.get()
        try:
            if not worker.alive and inp.task.module not in (None, "__main__"):  # restarted: import first
                worker.call(f"{_EXEC}:prepare_template", inp.task, STARTUP_TIMEOUT)
            status, value = worker.call(f"{_EXEC}:build_candidate", payload, self.timeout)
        except RuntimeError as err:  # the worker cannot start at all
            status, value = "error", str(err)
        finally:
            self._idle.put(worker)
        dt = time.perf_counter() - t0
        if status == "ok":
            if value["error_no"]:
                return BuildResult(None, value["error_no"], value["error"], dt)
            return BuildResult(value, 0, "", dt)
        if status == "timeout":
            return BuildResult(None, MeasureErrorNo.BUILD_TIMEOUT, f"build exceeded {self.timeout:g} s", dt)
        return BuildResult(None, MeasureErrorNo.COMPILE_HOST, f"builder: {value}", dt)

    def build_reference(self, task) -> dict | None:
        """The build of ``task``'s fallback config: the answer every candidate is checked against."""
        from tune.measure.measure import MeasureInput

        key = (task.target_key, task.workload)
        if key not in self._refs:
            default = task.default_config()
            res = self._build_one(MeasureInput(task.target, task, default))
            ref = None
            if res.build is not None:
                ref = dict(res.build, key=repr(key), seed=0)
                self._done[key + (default.key(),)] = res  # measuring the default reuses this build
            self._refs[key] = ref
        return self._refs[key]

    def close(self) -> None:
        for w in self._workers:
            w.close()
        self._pool.shutdown(wait=False)


def run_result(status: str, value, build: BuildResult, t_run: float, timeout: float) -> MeasureResult:
    """A runner worker's answer as a MeasureResult (shared by LocalRunner and DaskRunner)."""
    all_cost = build.time_cost + t_run
    if status == "ok":
        if value["wrong"]:
            return error_result(MeasureErrorNo.WRONG_ANSWER, value["wrong"], all_cost)
        return MeasureResult(tuple(value["costs"]), 0, all_cost, time.time())
    if status == "timeout":
        return error_result(MeasureErrorNo.RUN_TIMEOUT, f"run exceeded {timeout:g} s", all_cost)
    return error_result(MeasureErrorNo.RUNTIME_DEVICE, f"runner: {value}", all_cost)


class LocalRunner:
    """Times candidates in one separate process, one at a time.

    Parameters follow classic AutoTVM: ``number`` calls per repeat, ``repeat``
    repeats (one cost each), repeats lengthened to at least ``min_repeat_ms``,
    ``timeout`` seconds per candidate, ``cooldown_interval`` seconds of rest
    between candidates, ``enable_cpu_cache_flush`` (every call reads the
    kernel's inputs after the first, its weights, from memory, as a call inside
    a model run does: classic TVM's ``cache_flush_cpu_non_first_arg``, done
    here by rotating copies of them past the last-level cache, so it holds for
    every call of a repeat and costs no time between calls).  ``check_correctness`` compares each candidate's output with
    the fallback config's on random inputs (a mismatch: ``WRONG_ANSWER``).
    ``reject_factor``: a candidate whose first call is slower than this many
    times the best so far is timed by that one call (``None``: never).
    ``normalize`` (with ``check_correctness``): each repeat is bracketed by
    timings of the fallback kernel and reported as ``candidate / reference x
    the reference's settled time`` (its time on an undisturbed machine: the
    reference's ratio to the yardstick, taken with the vCPUs near and stored
    per host, times the yardstick's settled time; ``calibrate`` takes several
    tasks' ratios at once, before their tuning).  On a VM that drifts between speed states for seconds at
    a time this cuts the spread of re-measurements from 5-30% to a few
    percent.  A repeat timed while the host holds the two vCPUs apart
    (``measure.vcpus``) is bracketed by the yardstick instead (the reference
    may slow up to 1.9x then, the yardstick not).  ``state_wait``: seconds a
    normalized measurement may wait in all for the machine's good state: for
    the vCPUs to be near before a repeat, and within a repeat for the
    reference to run at its fast speed (in a slow spell kernels do not slow
    alike: a conv's ratio to its reference read 10-16% low).  The search's
    default, none, keeps a trial cheap (its repeats still count only their
    fast ratios); ``tessera tune``'s confirmations of the best configs, whose
    figures are the records, wait (``graph.tuning.CONFIRM_STATE_WAIT_S``).
    ``normalize=False`` reports raw seconds, as classic AutoTVM did.
    """

    def __init__(
        self,
        timeout: float = 10,
        number: int = 4,
        repeat: int = 3,
        min_repeat_ms: float = 0,
        cooldown_interval: float = 0.0,
        enable_cpu_cache_flush: bool = False,
        check_correctness: bool = True,
        reject_factor: float | None = 5.0,
        normalize: bool = True,
        state_wait: float = 0.0,
    ):
        if number < 1 or repeat < 1:
            raise ValueError(f"LocalRunner: number and repeat must be >= 1, got {number}, {repeat}")
        self.timeout = float(timeout)
        self.number, self.repeat, self.min_repeat_ms = int(number), int(repeat), float(min_repeat_ms)
        self.cooldown_interval = float(cooldown_interval)
        self.enable_cpu_cache_flush = bool(enable_cpu_cache_flush)
        self.check_correctness = bool(check_correctness)
        self.reject_factor = reject_factor
        self.normalize = bool(normalize)
        self.state_wait = float(state_wait)
        self.ref_time = None  # the reference kernel's settled seconds, fixed for the task
        self._ref_times: dict = {}  # reference key -> settled seconds, for the runner's life
        self.yardstick = None  # the yardstick's settled seconds (yardstick.py): the scale of every reference
        self.best_cost = float("inf")
        self.worker = Worker(f"{_EXEC}:warm_runner", "tune-runner")
        self.task = None
        self.ref = None

    def set_task(self, task, reference: dict | None = None) -> None:
        self.task, self.ref = task, reference
        self.best_cost = float("inf")
        self.ref_time = self._ref_times.get(reference["key"]) if reference else None

    def calibrate(self, references: list, passes: int = CALIBRATE_PASSES) -> None:
        """Settle the scale of several tasks at once, before their tuning (``tessera tune``):
        each reference's ratio to the yardstick probed in ``passes`` rounds over all of them, so
        that its chunks span as many moments of this VM's drift, or read from the host's store
        (``execute._scale``).  ``references``: ``LocalBuilder.build_reference`` of each task
        (None skipped).  A failure here leaves the tasks to settle at their first measurement."""
        from tune.measure import execute

        todo = list({r["key"]: r for r in references if r and r["key"] not in self._ref_times}.values())
        if not (self.normalize and self.check_correctness and todo):
            return
        try:
            self.worker.start()
        except RuntimeError:
            return
        per_ref = execute.PROBE_PATIENCE * execute.PROBE_S + execute.PROBE_NEAR_WAIT_S + 5 * self.timeout
        status, value = self.worker.call(f"{_EXEC}:calibrate",
                                         {"refs": todo, "yardstick": self.yardstick, "passes": passes},
                                         60 + len(todo) * per_ref)
        if status == "ok":
            self._ref_times.update(value["ref_times"])
            self.yardstick = self.yardstick or value["yardstick"]

    def payload(self, build: dict) -> dict:
        return {
            "build": build,
            "ref": self.ref,
            "number": self.number,
            "repeat": self.repeat,
            "min_repeat_ms": self.min_repeat_ms,
            "flush": self.enable_cpu_cache_flush,
            "normalize": self.normalize,
            "state_wait": self.state_wait,
            "ref_time": self.ref_time,
            "yardstick": self.yardstick,
            "reject_above": self.reject_factor * self.best_cost
            if self.reject_factor and self.best_cost < float("inf")
            else None,
        }

    def note(self, result: MeasureResult, value=None) -> MeasureResult:
        """Track the best cost of the task (the bar for rejecting slow candidates early)
        and the reference's settled time the measuring process found; a reading timed with
        the flush is marked so (``MeasureResult.flush``)."""
        if isinstance(value, dict) and value.get("ref_time") and self.ref_time is None:
            self.ref_time = self._ref_times[self.ref["key"]] = value["ref_time"]
        if isinstance(value, dict) and value.get("yardstick") and self.yardstick is None:
            self.yardstick = value["yardstick"]
        if result.error_no == 0 and result.costs:
            self.best_cost = min(self.best_cost, result.cost)
            if self.enable_cpu_cache_flush:
                result = result._replace(flush=True)
        return result

    def run(self, measure_inputs: list, build_results: list) -> list[MeasureResult]:
        out = []
        for k, (inp, build) in enumerate(zip(measure_inputs, build_results)):
            if build.build is None:
                out.append(error_result(build.error_no, build.error, build.time_cost))
                continue
            if k and self.cooldown_interval > 0:
                time.sleep(self.cooldown_interval)
            try:
                self.worker.start()
            except RuntimeError as err:
                out.append(error_result(MeasureErrorNo.RUNTIME_DEVICE, str(err), build.time_cost))
                continue
            t0 = time.perf_counter()
            status, value = self.worker.call(
                f"{_EXEC}:run_candidate", self.payload(build.build), self.timeout
            )
            out.append(self.note(run_result(status, value, build, time.perf_counter() - t0, self.timeout), value))
        return out

    def close(self) -> None:
        self.worker.close()


__all__ = ["LocalBuilder", "LocalRunner", "run_result"]
