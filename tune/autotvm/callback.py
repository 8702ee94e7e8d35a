"""Tuner callbacks: ``callback(tuner, inputs, results)`` after every measured batch."""

from __future__ import annotations

import os
import sys
import time

from tune import record


def log_to_file(file_out, protocol: str = "json"):
    """Append each measurement to ``file_out`` as a JSON line, flushed at once (a crash loses nothing measured)."""
    if protocol != "json":
        raise ValueError(f"log_to_file: unknown protocol {protocol!r}; records are JSON lines")
    path = os.fspath(file_out) if not hasattr(file_out, "write") else None

    def _callback(_tuner, inputs, results) -> None:
        lines = "".join(record.encode(inp, res) + "\n" for inp, res in zip(inputs, results))
        if path is None:
            file_out.write(lines)
            file_out.flush()
            return
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(lines)
            fh.flush()

    _callback.path = path
    return _callback


class Monitor:
    """Keeps every (input, result) for inspection (classic ``callback.Monitor``)."""

    def __init__(self):
        self.records: list = []

    def __call__(self, _tuner, inputs, results) -> None:
        self.records.extend(zip(inputs, results))

    def trial_scores(self) -> list:
        return [
            inp.task.flop / r.cost if r.error_no == 0 else 0.0
            for inp, r in self.records
        ]


def progress_bar(total: int, prefix: str = "", si_prefix: str = "G", stream=None):
    """A live line: ``[Task] Current/Best: 12.3/45.6 GFLOPS | Progress: (8/20) | 3.1 s``."""
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(si_prefix)
    if scale is None:
        raise ValueError(f"progress_bar: unknown si_prefix {si_prefix!r}; use '', K, M, G or T")
    state = {"ct": 0, "best": 0.0, "cur": 0.0, "start": time.time()}
    out = stream or sys.stdout

    def _callback(tuner, inputs, results) -> None:
        for inp, res in zip(inputs, results):
            state["ct"] += 1
            flops = 0.0
            if res.error_no == 0 and res.costs:
                flops = inp.task.flop / res.cost
            state["cur"] = flops
            state["best"] = max(state["best"], flops)
        done = state["ct"] >= total or getattr(tuner, "ttl", 1) <= 0
        out.write(
            f"\r{prefix} Current/Best: {state['cur'] / scale:7.2f}/{state['best'] / scale:7.2f} "
            f"{si_prefix}FLOPS | Progress: ({state['ct']}/{total}) | {time.time() - state['start']:.2f} s"
            + ("\n" if done else "")
        )
        out.flush()

    _callback.state = state
    return _callback


__all__ = ["Monitor", "log_to_file", "progress_bar"]
