"""Classic AutoTVM: ``from tune import autotvm`` replaces ``from tvm import autotvm``.

This package holds templates, config spaces, tuners and dispatch contexts; what
every tuner shares lives one level up and is named here as classic TVM named
it: ``autotvm.measure`` (``tune.measure``), ``autotvm.record`` (``tune.record``).

Templates (``@autotvm.template``, ``get_config``), tasks (``autotvm.task.create``),
measurement (``measure_option``, ``LocalBuilder``, ``LocalRunner``, ``DaskRunner``),
tuners (``autotvm.tuner.XGBTuner`` ...), records (``autotvm.record``), callbacks
(``autotvm.callback``) and dispatch contexts (``apply_history_best``).
"""

from tune import layout, measure, record
from tune.autotvm import callback, errors, task, tuner
from tune.autotvm.dispatch import ApplyChoices, ApplyConfig, DispatchContext, FallbackContext
from tune.autotvm.errors import (
    KnobError,
    MissingKnobError,
    RecordError,
    TemplateError,
    TemplateNotFoundError,
    TuneError,
    TunerNotFoundError,
)
from tune.autotvm.history import ApplyHistoryBest, Records, apply_history_best, lookup_ranked, lookup_values
from tune.autotvm.knobs import AnnotateEntity, OtherOptionEntity, ReorderEntity, SplitEntity, get_factors
from tune.measure import (
    LocalBuilder,
    LocalRunner,
    MeasureErrorNo,
    MeasureInput,
    MeasureResult,
    measure_option,
)
from tune.autotvm.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from tune.autotvm.task import get_config, register_template, template


def __getattr__(name):
    if name == "DaskRunner":  # dask is an optional extra
        from tune.measure.dask_runner import DaskRunner

        return DaskRunner
    raise AttributeError(f"module 'tune.autotvm' has no attribute {name!r}")


__all__ = [
    "AnnotateEntity",
    "ApplyChoices",
    "ApplyConfig",
    "ApplyHistoryBest",
    "ConfigEntity",
    "ConfigSpace",
    "DaskRunner",
    "DispatchContext",
    "FallbackConfigEntity",
    "FallbackContext",
    "KnobError",
    "LocalBuilder",
    "LocalRunner",
    "MeasureErrorNo",
    "MeasureInput",
    "MeasureResult",
    "MissingKnobError",
    "OtherOptionEntity",
    "RecordError",
    "Records",
    "ReorderEntity",
    "SplitEntity",
    "TemplateError",
    "TemplateNotFoundError",
    "TuneError",
    "TunerNotFoundError",
    "apply_history_best",
    "callback",
    "errors",
    "get_config",
    "get_factors",
    "lookup_ranked",
    "lookup_values",
    "layout",
    "measure",
    "measure_option",
    "record",
    "register_template",
    "task",
    "template",
    "tuner",
]
