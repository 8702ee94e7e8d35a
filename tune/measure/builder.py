"""``LocalBuilder``: candidates compiled to object code in ``n_parallel`` worker processes.

A candidate is a ``MeasureInput`` whose task can make its schedule: the
task has ``name``, ``target``, ``workload``, ``target_key``,
``instantiate_with_layouts(config) -> (schedule, tensors, layouts)``,
``default_config()`` (the reference every candidate is checked against),
``prepare()`` (make it callable in a fresh process) and ``source``
(``(module name, file path)`` of its definition); its config has ``key()``.
AutoTVM's ``Task`` is one; every tuner's tasks can be.

Where a worker can rebuild the candidate (the template's module imports by
name, or else from its file: a pytest module, a package on the parent's
``sys.path``) it instantiates, lowers and compiles it; where it cannot (a
script's ``__main__``, code run through ``exec`` as a notebook cell runs it)
this process instantiates and lowers it and the worker only compiles.  A
failure costs its trial only (an error number in its result); a dead or hung
worker is killed and a fresh one started for the next candidate.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import queue
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from tune.errors import TuneError
from tune.measure.measure import BuildResult, MeasureErrorNo, MeasureInput
from tune.measure.worker import STARTUP_TIMEOUT, Worker

_HERE = "tune.measure.builder"


def rebuilt_in_worker(task) -> bool:
    """Whether a worker process can make ``task``'s schedules itself (see the module doc)."""
    module, path = getattr(task, "source", (None, None))
    return module not in (None, "__main__") and path is not None


class LocalBuilder:
    """Compiles candidates in ``n_parallel`` worker processes (default: the CPUs of this process)."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None, build_func: str = "default"):
        if build_func not in ("default", "object"):
            raise ValueError(f"LocalBuilder: unknown build_func {build_func!r}; this builder emits object code")
        self.timeout = float(timeout)
        self.n_parallel = int(n_parallel or len(os.sched_getaffinity(0)))
        self._idle: queue.Queue = queue.Queue()
        self._workers = [Worker(f"{_HERE}:warm_builder", f"tune-builder-{k}") for k in range(self.n_parallel)]
        for w in self._workers:
            self._idle.put(w)
        self._pool = ThreadPoolExecutor(self.n_parallel, thread_name_prefix="tune-build")
        self.task = None
        self._refs: dict = {}
        self._done: dict = {}  # builds made already (the reference), by (target, workload, config)

    def set_task(self, task) -> None:
        """Make the task's schedules in each worker once (outside any build's timeout)."""
        self.task = task
        if not rebuilt_in_worker(task):
            return

        def prepare(_):
            worker = self._idle.get()
            try:
                worker.call(f"{_HERE}:prepare_task", task, STARTUP_TIMEOUT)
            except RuntimeError:
                pass  # reported by the first build
            finally:
                self._idle.put(worker)

        list(self._pool.map(prepare, range(self.n_parallel)))

    def build(self, measure_inputs: list) -> list[BuildResult]:
        return list(self.build_each(measure_inputs))

    def build_each(self, measure_inputs: list):
        """The builds of ``measure_inputs``, all started at once, yielded in order as each is done."""
        return self._pool.map(self._build_one, measure_inputs)

    def _build_one(self, inp) -> BuildResult:
        done = self._done.pop((inp.task.target_key, inp.task.workload, inp.config.key()), None)
        if done is not None:
            return done
        t0 = time.perf_counter()
        payload = {"task": inp.task, "config": inp.config}
        portable = rebuilt_in_worker(inp.task)
        if not portable:  # the worker cannot make the schedule: lower here, compile there
            here = lower_here(inp.task, inp.config)
            if "error_no" in here:
                return BuildResult(None, here["error_no"], here["error"], time.perf_counter() - t0)
            payload.update(here)
        worker = self._idle.get()
        try:
            if not worker.alive and portable:  # restarted: prepare first
                worker.call(f"{_HERE}:prepare_task", inp.task, STARTUP_TIMEOUT)
            status, value = worker.call(f"{_HERE}:build_candidate", payload, self.timeout)
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

    def map_calls(self, path: str, payloads: list, timeout: float = STARTUP_TIMEOUT) -> list:
        """``worker.call(path, payload)`` of each payload on the idle workers (all at once): each a
        ``(status, value)`` of ``tune.measure.worker`` (the search realises and scores its programs
        here while the workers have nothing to build)."""

        def one(payload):
            worker = self._idle.get()
            try:
                return worker.call(path, payload, timeout)
            except RuntimeError as err:  # the worker cannot start at all
                return "error", str(err)
            finally:
                self._idle.put(worker)

        return list(self._pool.map(one, payloads))

    def build_reference(self, task) -> dict | None:
        """The build of ``task``'s default config: the answer every candidate is checked against."""
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


def defining_file(module: str | None) -> str | None:
    """The source file of ``module`` (None: none, such as code run through ``exec``)."""
    path = getattr(sys.modules.get(module), "__file__", None) if module else None
    return os.path.abspath(path) if path and os.path.exists(path) else None


def load_by_path(module: str, path: str) -> None:
    """Run the file that defined a template (or any task's definition) under a private module
    name, in a process that cannot import ``module`` by name (a pytest test module, a script
    beside the parent's working directory)."""
    name = f"_tessera_template_{abs(hash((module, path)))}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise


# ---------------------------------------------------- in the worker process --
def warm_builder() -> None:
    """Worker start-up: LLVM's target machine and the schedule package, before any timed build."""
    from codegen import jit

    jit.target_machine()
    import schedule  # noqa: F401


def prepare_task(task) -> None:
    """Make ``task``'s template callable here (import its module, by name or from its file)."""
    task.prepare()


def kernel_name(task_name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in task_name) or "kernel"


_objects: dict = {}  # in a builder worker: (symbol, target) -> object code compiled here already


def compile_object(sch, args, name: str, lowered=None, target=None) -> dict:
    """Lower and compile ``sch`` to object code through ``codegen.service``:
    ``{"obj", "symbol", "name", "kernel", "specs"}`` (``kernel``: the ``CompiledKernel`` the runner
    loads; ``lowered``: lowered already, by a process that could make the schedule).  LLVM IR this
    process compiled before (the symbol names a digest of it) takes that object code: a search's
    candidates differ at times only in choices that change no code."""
    from codegen import service
    from codegen.target import create

    if lowered is None:
        lowered = service.lower_for_build(sch, args, name)
    t = create(target)
    raw, symbol = service.emit_llvm(lowered)
    done = _objects.get((symbol, str(t)))
    if done is None:
        if len(_objects) >= 64:
            _objects.clear()
        done = _objects[(symbol, str(t))] = service.compile_ir(raw, t)
    ll, obj = done
    kernel = service.CompiledKernel(lowered.name, symbol, tuple(service.param_specs(lowered)), obj, ll, str(t))
    return {"obj": kernel.obj, "symbol": kernel.symbol, "name": kernel.name, "kernel": kernel,
            "specs": [dataclasses.asdict(p) for p in kernel.params]}


def build_candidate(payload: dict) -> dict:
    """Instantiate ``payload["task"]`` with ``payload["config"]`` (unless it came lowered) and compile it."""
    t0 = time.perf_counter()
    task, config, lowered = payload["task"], payload["config"], payload.get("lowered")
    sch = args = None
    layouts = payload.get("layouts")
    if lowered is None:
        try:
            sch, args, layouts = task.instantiate_with_layouts(config)
        except TuneError as err:
            return {"error_no": MeasureErrorNo.INSTANTIATION_ERROR, "error": str(err),
                    "time": time.perf_counter() - t0}
    try:
        with task.target:
            out = compile_object(sch, args, kernel_name(task.name), lowered, task.target)
    except Exception as err:
        return {"error_no": MeasureErrorNo.COMPILE_HOST, "error": f"{type(err).__name__}: {err}",
                "time": time.perf_counter() - t0}
    out.update(error_no=0, error="", time=time.perf_counter() - t0, layouts=_aligned(layouts, out["specs"]))
    return out


def _aligned(layouts, specs: list) -> list:
    """One ``(layout, logical shape)`` or None per kernel parameter (all None when they do not line up)."""
    if not layouts or len(layouts) != len(specs):
        return [None] * len(specs)
    return [None if lay is None else [lay[0], list(lay[1])] for lay in layouts]


def lower_here(task, config) -> dict:
    """For a task a worker cannot rebuild: instantiate and lower in this process; the worker only
    compiles.  ``{"lowered", "layouts"}`` or ``{"error_no", "error"}``."""
    from codegen.service import lower_for_build

    try:
        sch, args, layouts = task.instantiate_with_layouts(config)
    except TuneError as err:
        return {"error_no": MeasureErrorNo.INSTANTIATION_ERROR, "error": str(err)}
    try:
        with task.target:
            return {"lowered": lower_for_build(sch, args, kernel_name(task.name)), "layouts": layouts}
    except Exception as err:
        return {"error_no": MeasureErrorNo.COMPILE_HOST, "error": f"{type(err).__name__}: {err}"}


__all__ = ["LocalBuilder", "build_candidate", "compile_object", "defining_file", "load_by_path", "lower_here",
           "rebuilt_in_worker", "warm_builder"]
