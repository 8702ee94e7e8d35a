"""Measuring candidates, for every tuner: a builder compiles them in worker processes, a runner
checks and times them in another.

``builder`` (``LocalBuilder``), ``runner`` (``LocalRunner``), ``dask_runner``
(``DaskRunner``: the same runs on a Dask cluster), ``measure`` (``MeasureInput``,
``MeasureResult``, classic error numbers), ``statistics`` (the median a result is
ranked by), ``worker`` (the child process both use), ``option`` (``measure_option``).
"""

from tune.measure.builder import LocalBuilder
from tune.measure.measure import BuildResult, MeasureErrorNo, MeasureInput, MeasureResult, Runner
from tune.measure.option import create_measure_batch, measure_option
from tune.measure.runner import LocalRunner


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
    "Runner",
    "create_measure_batch",
    "measure_option",
]
