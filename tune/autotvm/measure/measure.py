"""Measurement records in memory: ``MeasureInput``, ``MeasureResult``, error numbers, ``measure_option``.

One trial = one build (in a builder worker) + one run (in the runner worker).
Every failure is one result with a classic error number; the tuner goes on.
"""

from __future__ import annotations

import time
from enum import IntEnum
from typing import NamedTuple


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


class MeasureResult(NamedTuple):
    """``costs``: seconds per call, one per repeat (on an error, one string: the message);
    ``all_cost``: wall seconds of the whole trial; ``timestamp``: when it ended."""

    costs: tuple
    error_no: int
    all_cost: float
    timestamp: float

    @property
    def error_msg(self) -> str:
        return "" if self.error_no == 0 else " ".join(str(c) for c in self.costs)


def error_result(error_no: int, message: str, all_cost: float) -> MeasureResult:
    return MeasureResult((message,), int(error_no), float(all_cost), time.time())


class BuildResult(NamedTuple):
    """A built candidate: its object code (``build`` dict, or None) or an error."""

    build: dict | None
    error_no: int
    error: str
    time_cost: float


def measure_option(builder="local", runner="local") -> dict:
    """``{"builder": ..., "runner": ...}``: ``"local"`` means ``LocalBuilder()`` / ``LocalRunner()``."""
    from tune.autotvm.measure.local import LocalBuilder, LocalRunner

    if isinstance(builder, str):
        if builder != "local":
            raise ValueError(f"measure_option: unknown builder {builder!r}; use 'local' or a LocalBuilder(...)")
        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise ValueError(f"measure_option: unknown runner {runner!r}; use 'local', a LocalRunner(...) "
                             f"or a DaskRunner(address)")
        runner = LocalRunner()
    return {"builder": builder, "runner": runner}


class MeasureBatch:
    """``measure_batch(inputs) -> results`` for one task: build them all, then run them one by one."""

    def __init__(self, task, option: dict):
        self.task = task
        self.builder, self.runner = option["builder"], option["runner"]
        self.builder.set_task(task)
        ref = None
        if getattr(self.runner, "check_correctness", False):
            ref = self.builder.build_reference(task)
        self.runner.set_task(task, ref)
        self.n_parallel = self.builder.n_parallel

    def __call__(self, inputs: list) -> list:
        builds = self.builder.build(inputs)
        return self.runner.run(inputs, builds)


def create_measure_batch(task, option: dict) -> MeasureBatch:
    return MeasureBatch(task, option)


__all__ = ["MeasureErrorNo", "MeasureInput", "MeasureResult", "BuildResult", "measure_option",
           "create_measure_batch", "MeasureBatch", "error_result"]
