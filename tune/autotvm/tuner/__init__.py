"""Tuners: ``RandomTuner``, ``GridSearchTuner``, ``GATuner``, ``XGBTuner`` (classic AutoTVM's four)."""

from tune.autotvm.errors import TunerNotFoundError
from tune.autotvm.tuner.ga_tuner import GATuner
from tune.autotvm.tuner.index_based import GridSearchTuner, RandomTuner
from tune.autotvm.tuner.tuner import Tuner
from tune.autotvm.tuner.xgb_tuner import XGBTuner

TUNERS = {
    "xgb": XGBTuner,
    "ga": GATuner,
    "random": RandomTuner,
    "grid": GridSearchTuner,
    "gridsearch": GridSearchTuner,
}


def get_tuner(name: str, task, **kwargs) -> Tuner:
    """A tuner by its command-line name: ``xgb``, ``ga``, ``random`` or ``grid``."""
    cls = TUNERS.get(str(name).lower())
    if cls is None:
        raise TunerNotFoundError(f"unknown tuner {name!r}; use one of: xgb, ga, random, grid")
    return cls(task, **kwargs)


__all__ = ["TUNERS", "GATuner", "GridSearchTuner", "RandomTuner", "Tuner", "XGBTuner", "get_tuner"]
