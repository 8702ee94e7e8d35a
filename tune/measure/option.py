"""``measure_option`` and the per-task measuring loop (build a batch, then run it)."""

from __future__ import annotations

from tune.measure.builder import LocalBuilder
from tune.measure.runner import LocalRunner


def measure_option(builder="local", runner="local") -> dict:
    """``{"builder": ..., "runner": ...}``: ``"local"`` means ``LocalBuilder()`` / ``LocalRunner()``."""
    if isinstance(builder, str):
        if builder != "local":
            raise ValueError(
                f"measure_option: unknown builder {builder!r}; use 'local' or a LocalBuilder(...)"
            )
        builder = LocalBuilder()
    if isinstance(runner, str):
        if runner != "local":
            raise ValueError(
                f"measure_option: unknown runner {runner!r}; use 'local', a LocalRunner(...) "
                f"or a DaskRunner(address)"
            )
        runner = LocalRunner()
    return {"builder": builder, "runner": runner}


class MeasureBatch:
    """``measure_batch(inputs) -> results`` for one task: build them all, then run them one by one;
    with a runner that reads one thread's CPU time (``overlaps_builds``), each candidate runs as soon
    as its build is done while the next ones build (that clock does not count the time the builds
    take the cores from it)."""

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
        if getattr(self.runner, "overlaps_builds", False) and hasattr(self.builder, "build_each"):
            return self.runner.run(inputs, self.builder.build_each(inputs))
        builds = self.builder.build(inputs)
        return self.runner.run(inputs, builds)


def create_measure_batch(task, option: dict) -> MeasureBatch:
    return MeasureBatch(task, option)


__all__ = ["MeasureBatch", "create_measure_batch", "measure_option"]
