"""Classic AutoTVM: ``from tune import autotvm`` replaces ``from tvm import autotvm``.

Templates (``@autotvm.template``, ``get_config``), tasks (``autotvm.task.create``),
measurement (``measure_option``, ``LocalBuilder``, ``LocalRunner``, ``DaskRunner``),
tuners (``autotvm.tuner.XGBTuner`` ...), records (``autotvm.record``), callbacks
(``autotvm.callback``) and dispatch contexts (``apply_history_best``).
"""

from tune.autotvm import callback, errors, record, task, tuner
from tune.autotvm.dispatch import ApplyConfig, DispatchContext, FallbackContext
from tune.autotvm.history import ApplyHistoryBest, apply_history_best
from tune.autotvm.errors import (KnobError, MissingKnobError, RecordError, TemplateError, TemplateNotFoundError,
                                 TuneError, TunerNotFoundError)
from tune.autotvm.knobs import (AnnotateEntity, OtherOptionEntity, ReorderEntity, SplitEntity, get_factors)
from tune.autotvm.measure import (LocalBuilder, LocalRunner, MeasureErrorNo, MeasureInput, MeasureResult,
                                  measure_option)
from tune.autotvm.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from tune.autotvm.task import get_config, register_template, template


def __getattr__(name):
    if name == "DaskRunner":  # dask is an optional extra
        from tune.autotvm.measure.dask_runner import DaskRunner

        return DaskRunner
    raise AttributeError(f"module 'tune.autotvm' has no attribute {name!r}")


__all__ = ["template", "register_template", "get_config", "task", "tuner", "record", "callback", "errors",
           "measure_option", "LocalBuilder", "LocalRunner", "DaskRunner", "MeasureErrorNo", "MeasureInput",
           "MeasureResult", "apply_history_best", "ApplyHistoryBest", "ApplyConfig", "DispatchContext",
           "FallbackContext", "ConfigSpace", "ConfigEntity", "FallbackConfigEntity", "SplitEntity",
           "OtherOptionEntity", "ReorderEntity", "AnnotateEntity", "get_factors", "TuneError",
           "TemplateError", "TemplateNotFoundError", "KnobError", "MissingKnobError", "TunerNotFoundError",
           "RecordError"]
