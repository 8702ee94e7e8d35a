"""Timing several systems against each other on one noisy machine.

One home for "interleaved timing", used by ``Module.time_evaluator``'s users,
the command line, the tuner's whole-model checks, the tutorials and every
benchmark.  Two rules make a comparison on a shared or virtual machine
trustworthy:

* **Interleave.**  The machine drifts (clock changes, another process, two
  threads landing on one core), so time the contenders in alternating batches
  and compare medians, or per-round ratios, from one run.
* **Pause between batches.**  onnxruntime's and OpenBLAS's worker threads spin
  for a while after a call and would steal the cores from whoever runs next;
  every batch starts after ``settle`` seconds of sleep.

``interleaved`` gives seconds per call of each contender per batch;
``paired`` gives, per round, each contender's fastest of a few calls, so that
a ratio taken inside a round cancels the drift between rounds (``paired_ratio``).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

SETTLE_S = 0.25  # OpenBLAS's threads spin about 0.2 s after a call
PAIR_SETTLE_S = 0.05

Clock = Callable[[], float]


def calls_per_batch(fn: Callable[[], object], budget: float, clock: Clock = time.perf_counter) -> int:
    """How many back-to-back calls of ``fn`` fill ``budget`` seconds (1 to 1000), after a warm-up call."""
    fn()
    t0 = clock()
    fn()
    once = max(clock() - t0, 1e-7)
    return max(1, min(1000, int(budget / once)))


def interleaved(
    fns: dict[str, Callable[[], object]],
    repeat: int = 7,
    number: int | None = None,
    settle: float = SETTLE_S,
    budget: float = 0.1,
    clock: Clock = time.perf_counter,
) -> dict[str, list[float]]:
    """Seconds per call of each function, in ``repeat`` rounds of one batch per function.

    Parameters
    ----------
    fns : dict
        name -> a function of no arguments (``lambda: f(a, b, c)``).
    repeat : int
        Rounds; each round times one batch of every function in turn.
    number : int, optional
        Calls per batch; by default as many as fill ``budget`` seconds (1 to 1000).
    settle : float
        Seconds of sleep before every batch (other runtimes' threads spin after a call).
    clock : callable
        ``time.perf_counter`` (wall time, the default) or ``time.thread_time`` (the calling
        thread's CPU time: steadier under load, for single-threaded kernels only).

    Returns
    -------
    dict
        name -> ``repeat`` samples of seconds per call.
    """
    if not fns:
        raise ValueError("interleaved: give at least one function to time")
    if repeat < 1:
        raise ValueError(f"interleaved: repeat must be >= 1, got {repeat}")
    counts = {name: number or calls_per_batch(fn, budget, clock) for name, fn in fns.items()}
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            if settle > 0:
                time.sleep(settle)
            t0 = clock()
            for _ in range(counts[name]):
                fn()
            samples[name].append((clock() - t0) / counts[name])
    return samples


def paired(
    fns: dict[str, Callable[[], object]], seconds: float, times: int = 3, settle: float = PAIR_SETTLE_S
) -> dict[str, list[float]]:
    """Paired rounds for ``seconds`` (one round at least): each round times every function as the
    fastest of ``times`` calls, each function after a ``settle`` pause.  Returns name -> [seconds per
    round]; a ratio taken within one round cancels the drift between rounds (``paired_ratio``)."""
    if not fns:
        raise ValueError("paired: give at least one function to time")
    for fn in fns.values():
        fn()  # warm-up
    rounds: dict[str, list[float]] = {name: [] for name in fns}
    first = next(iter(fns))
    end = time.perf_counter() + seconds
    while not rounds[first] or time.perf_counter() < end:
        for name, fn in fns.items():
            if settle > 0:
                time.sleep(settle)
            best = float("inf")
            for _ in range(times):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            rounds[name].append(best)
    return rounds


@dataclass(frozen=True)
class Ratio:
    """The median of per-round ratios ``name / base`` with its quartiles."""

    median: float
    p25: float
    p75: float
    rounds: int

    def __iter__(self):  # unpacks as (median, p25, p75, rounds)
        return iter((self.median, self.p25, self.p75, self.rounds))


def paired_ratio(rounds: dict[str, list[float]], name: str, base: str) -> Ratio:
    """``name``'s time over ``base``'s, per round of ``paired`` or ``interleaved``: median and quartiles."""
    r = [a / b for a, b in zip(rounds[name], rounds[base]) if b > 0]
    if not r:
        raise ValueError(f"paired_ratio: no round with a positive time of {base!r}")
    q = np.percentile(r, [50, 25, 75])
    return Ratio(float(q[0]), float(q[1]), float(q[2]), len(r))


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def spread(samples: list[float]) -> float:
    """(max - min) / median of ``samples``: how far one batch can sit from another."""
    med = statistics.median(samples)
    return (max(samples) - min(samples)) / med if med > 0 else 0.0


def summary(samples: dict[str, list[float]]) -> dict:
    """Per name of ``interleaved``'s result: ``name`` its median, ``name_best`` its fastest batch and
    ``name_spread`` its spread (the row a benchmark prints and saves)."""
    row = {}
    for key, s in samples.items():
        row[key], row[key + "_best"], row[key + "_spread"] = median(s), min(s), spread(s)
    return row


def format_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def format_samples(samples: list[float]) -> str:
    """``1.23 ms median (min ..., max ..., spread 12%, 7 batches)``."""
    return (
        f"{format_time(median(samples))} median (min {format_time(min(samples))}, "
        f"max {format_time(max(samples))}, spread {spread(samples):.0%}, {len(samples)} batches)"
    )
