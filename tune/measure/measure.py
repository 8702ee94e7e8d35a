"""Measurement records in memory: ``MeasureInput``, ``MeasureResult``, error numbers, ``measure_option``.

One trial = one build (in a builder worker) + one run (in the runner worker).
Every failure is one result with a classic error number; the tuner goes on.
"""

from __future__ import annotations

import statistics
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
    ``all_cost``: wall seconds of the whole trial; ``timestamp``: when it ended; ``flush``:
    timed with the weights out of the caches (the runner's ``enable_cpu_cache_flush``), as a
    model run calls the kernel; ``in_place``: timed inside whole runs of the model it was tuned
    for, one reading per round (``graph.tuning.confirm_in_place``; see
    ``record.ranked_by_workload``); ``scaled``: an in-place reading put on the records' scale
    (the call's seconds over the yardstick's timed beside it, times the yardstick's settled
    seconds, as the runner scales its own), so that readings minutes apart compare; without it
    (logs written before), raw seconds of the moment."""

    costs: tuple
    error_no: int
    all_cost: float
    timestamp: float
    flush: bool = False
    in_place: bool = False
    scaled: bool = False

    @property
    def cost(self) -> float:
        """Seconds per call: the median of the repeats, so one slow repeat of three does not move
        it (a ResNet-50 tune's rule config read 12% slow from one repeat of 0.659 ms among 0.489 and
        0.482, and lost its place to a config no faster).  Rankings, tuners and curves read this."""
        return float(statistics.median(self.costs))

    @property
    def warm(self) -> bool:
        """Timed by the runner with the kernel's data warm, as the search times every candidate
        (not with the flush, not inside whole runs of a model)."""
        return not (self.flush or self.in_place)

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


__all__ = ["BuildResult", "MeasureErrorNo", "MeasureInput", "MeasureResult", "error_result"]
