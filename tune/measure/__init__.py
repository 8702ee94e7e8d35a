"""Measuring candidates: builders (compile in workers), runners (time in a separate process)."""

from tune.measure.local import LocalBuilder, LocalRunner
from tune.measure.measure import BuildResult, MeasureErrorNo, MeasureInput, MeasureResult
from tune.measure.option import create_measure_batch, measure_option


def __getattr__(name):
    if name == "DaskRunner":  # imported on use: dask is an optional extra
        from tune.measure.dask_runner import DaskRunner

        return DaskRunner
    raise AttributeError(f"module 'tune.measure' has no attribute {name!r}")


__all__ = [
    "BuildResult",
    "DaskRunner",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "create_measure_batch",
    "measure_option",
]
