"""Measurement records in memory: ``MeasureInput``, ``MeasureResult``, error numbers, ``measure_option``.

One trial = one build (in a builder worker) + one run (in the runner worker).
Every failure is one result with a classic error number; the tuner goes on.
"""

from __future__ import annotations

import time
from enum import IntEnum
from typing import NamedTuple

from tune.measure.statistics import robust_cost


# How a runner reads a candidate's time: "wall", the wall time of calls on all the thread pool's
# threads; "thread_cpu", the CPU time of the measuring thread, the pool at one thread so that the
# whole call runs on it (time the thread spends descheduled while other processes hold the cores does
# not count; stalls on caches and memory that they share still do).
CLOCKS = ("wall", "thread_cpu")


def check_clock(clock: str) -> str:
    if clock not in CLOCKS:
        raise ValueError(f"unknown clock {clock!r}; use one of {CLOCKS}")
    return clock


class MeasureErrorNo(IntEnum):
    """Classic AutoTVM's error numbers (``MeasureResult.error_no``)."""

    NO_ERROR = 0
    INSTANTIATION_ERROR = 1  # the template raised with this config
    COMPILE_HOST = 2  # lowering or LLVM failed
    COMPILE_DEVICE = 3  # unused on CPUs
    RUNTIME_DEVICE = 4  # the kernel crashed the measuring process, or raised
    WRONG_ANSWER = 5  # output differs from the fallback config's
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


class MeasureInput(NamedTuple):
    """What was measured: target, task and config."""

    target: object
    task: object
    config: object


class _Result(NamedTuple):
    costs: tuple
    error_no: int
    all_cost: float
    timestamp: float


class MeasureResult(_Result):
    """``costs``: seconds per call, one per repeat (on an error, one string: the message);
    ``all_cost``: wall seconds of the whole trial; ``timestamp``: when it ended.  How it was
    timed: ``flush``, with the kernel's inputs after the first out of the caches (the runner's
    ``enable_cpu_cache_flush``); ``in_place``, inside whole runs of a model that calls the
    kernel among others, each cost one round's reading; neither: the kernel called in a loop,
    its data warm.  ``clock``: ``"wall"`` (wall time, the kernel on all the pool's threads) or
    ``"thread_cpu"`` (the CPU time of the one thread that ran it: the runner's ``clock``).  The
    tuple is classic TVM's four fields (``MeasureResult(*list(res))`` round-trips, as its tests
    do); how it was timed rides along as attributes."""

    flush = False
    in_place = False
    clock = "wall"

    def __new__(cls, costs, error_no, all_cost, timestamp, flush: bool = False, in_place: bool = False,
                clock: str = "wall"):
        self = super().__new__(cls, costs, error_no, all_cost, timestamp)
        if flush:
            self.flush = True
        if in_place:
            self.in_place = True
        if clock != "wall":
            self.clock = check_clock(clock)
        return self

    def __getnewargs__(self):
        return (*self, self.flush, self.in_place, self.clock)

    def __repr__(self) -> str:
        how = "".join(f", {k}=True" for k in ("flush", "in_place") if getattr(self, k))
        how += f", clock={self.clock!r}" if self.clock != "wall" else ""
        return f"{super().__repr__()[:-1]}{how})"

    @property
    def cost(self) -> float:
        """Seconds per call: :func:`tune.measure.statistics.robust_cost` of the repeats."""
        return robust_cost(self.costs)

    @property
    def warm(self) -> bool:
        """Timed with the kernel's data warm (not with the flush, not inside whole runs of a model)."""
        return not (self.flush or self.in_place)

    @property
    def error_msg(self) -> str:
        return "" if self.error_no == 0 else " ".join(str(c) for c in self.costs)


def error_result(error_no: int, message: str, all_cost: float) -> MeasureResult:
    return MeasureResult((message,), int(error_no), float(all_cost), time.time())


class Runner:
    """What the measuring loop asks of a runner (classic ``autotvm.measure.Runner``): ``set_task``
    once per task, ``run(inputs, build results) -> [MeasureResult]`` per batch, ``close``."""

    def __init__(self, timeout: float = 10, n_parallel: int | None = None):
        self.timeout, self.n_parallel = timeout, n_parallel
        self.task = None

    def set_task(self, task, reference: dict | None = None) -> None:
        self.task = task

    def get_build_kwargs(self) -> dict:
        return {}

    def run(self, measure_inputs: list, build_results: list) -> list:
        raise NotImplementedError(f"{type(self).__name__}.run")

    def close(self) -> None:
        """Release what the runner holds (worker processes)."""


class BuildResult(NamedTuple):
    """A built candidate: its object code (``build`` dict, or None) or an error."""

    build: dict | None
    error_no: int
    error: str
    time_cost: float


__all__ = ["CLOCKS", "BuildResult", "MeasureErrorNo", "MeasureInput", "MeasureResult", "Runner", "check_clock", "error_result"]
