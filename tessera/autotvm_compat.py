"""Classic AutoTVM modules that Tessera's tuner has no file of its own for.

``tvm.autotvm.database`` (an in-memory record database), ``tvm.autotvm.env``
(the global tuning scope), ``tvm.autotvm.measure.executor`` (the executor base
class), ``tvm.autotvm.tophub`` (``context``) and ``tvm.autotvm.utils``: each a thin adapter over ``tune``, reached
through ``tessera.modules``.
"""

from __future__ import annotations

from tune.measure.measure import MeasureInput, MeasureResult
from tune.record import decode, encode
from topi.utils import get_const_int, get_const_tuple  # noqa: F401  (autotvm.utils re-exports them)


# ------------------------------------------------------------------ env
class AutotvmGlobalScope:
    """``GLOBAL_SCOPE``: whether a tuner is measuring (``in_tuning``) and whether to log quietly."""

    current = None

    def __init__(self):
        self._old = AutotvmGlobalScope.current
        AutotvmGlobalScope.current = self
        self.cuda_target_arch = None
        self.in_tuning = False
        self.silent = False


GLOBAL_SCOPE = AutotvmGlobalScope()


# ------------------------------------------------------------------ database
def measure_str_key(inp: MeasureInput, include_config: bool = True) -> str:
    """A string that identifies a measured input: target, task, arguments (and config)."""
    key = f"{inp.target} {inp.task.name} {inp.task.args}"
    if include_config:
        key += f" {inp.config}"
    return key


class Database:
    """A store of measurements (``load``, ``save``, ``filter``)."""

    def load(self, inp: MeasureInput, get_all: bool = False):
        raise NotImplementedError

    def save(self, inp: MeasureInput, res: MeasureResult, extend: bool = False) -> None:
        raise NotImplementedError

    def filter(self, func) -> list:
        raise NotImplementedError


class DummyDatabase(Database):
    """The records in memory, keyed by :func:`measure_str_key` (TVM's ``DummyDatabase``)."""

    def __init__(self):
        self.db: dict = {}

    def load(self, inp: MeasureInput, get_all: bool = False):
        lines = self.db.get(measure_str_key(inp))
        if lines is None:
            return None
        results = [decode(line)[1] for line in lines]
        return results if get_all else max(results, key=lambda r: r.timestamp)

    def save(self, inp: MeasureInput, res: MeasureResult, extend: bool = False) -> None:
        key = measure_str_key(inp)
        line = encode(inp, res)
        if extend and key in self.db:
            self.db[key].append(line)
        else:
            self.db[key] = [line]

    def filter(self, func) -> list:
        """``[(input, [results])]`` for which ``func(input, results)`` holds."""
        out = []
        for lines in self.db.values():
            pairs = [decode(line) for line in lines]
            inp, ress = pairs[0][0], [r for _, r in pairs]
            if func(inp, ress):
                out.append((inp, ress))
        return out

    def flush(self) -> None:
        self.db.clear()


# ------------------------------------------------------------------ executor
class Executor:
    """Classic AutoTVM's executor base: ``submit(func, *args, **kwargs)`` returns a future-like
    object with ``get()``; Tessera's builder and runner keep their own worker processes."""

    def submit(self, func, *args, **kwargs):
        raise NotImplementedError


__all__ = ["AutotvmGlobalScope", "Database", "DummyDatabase", "Executor", "GLOBAL_SCOPE", "measure_str_key"]


# ------------------------------------------------------------------ tophub
def context(target, extra_files=None):
    """``autotvm.tophub.context(target)``: TVM downloaded pre-tuned configs for its schedules;
    Tessera's schedules choose by rules of their own (``tune.autotvm.config``), so the context is
    one of records read from ``extra_files`` (AutoTVM log files) when given, else the fallback
    context (each workload's rule default)."""
    from tune.autotvm import FallbackContext, apply_history_best

    return apply_history_best(list(extra_files)) if extra_files else FallbackContext()
