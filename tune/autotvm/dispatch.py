"""Dispatch contexts: which config a template gets when it asks ``autotvm.get_config()``.

One stack per thread, innermost first.  ``ApplyConfig(cfg)`` answers every
query with ``cfg`` (task creation, tuning); ``ApplyChoices(fn)`` gives knob
templates the values ``fn`` picks (whole-model tuning builds variants so); ``ApplyHistoryBest(records)``
(``tune.autotvm.history``) answers with the best record for the same workload *and* target (a record
measured on another CPU is never applied); with no answer the template gets a
``FallbackConfigEntity`` (its own defaults, ``cfg.is_fallback`` true).
``tune.autotvm.history.Records`` is what the stack says, read once and passed
down (the graph layer never reads the stack itself).

>>> with autotvm.apply_history_best("matmul.log"):
...     s, args = matmul(512, 512, 512, "float32")   # the best record's config
"""

from __future__ import annotations

import logging
import threading

from tune.autotvm.space import ConfigSpace, FallbackConfigEntity
from tune.record import target_key

logger = logging.getLogger("autotvm")
_local = threading.local()


def stack() -> list:
    """This thread's contexts, outermost first."""
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


class DispatchContext:
    """Base: ``query(target, workload)`` returns a config or None (ask the next context)."""

    def query(self, target, workload) -> ConfigSpace | None:
        raise NotImplementedError

    def __enter__(self):
        stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        stack().remove(self)

    @staticmethod
    def current() -> DispatchContext | None:
        st = stack()
        return st[-1] if st else None


def query(target, workload) -> ConfigSpace:
    """The config for ``workload`` on ``target``: the innermost context that answers, else a fallback."""
    for ctx in reversed(stack()):
        cfg = ctx.query(target, workload)
        if cfg is not None:
            return cfg
    return FallbackConfigEntity()


class ApplyConfig(DispatchContext):
    """Answers every query with one config."""

    def __init__(self, config: ConfigSpace):
        self._config = config

    def query(self, target, workload) -> ConfigSpace:
        return self._config


class ApplyChoices(DispatchContext):
    """Chooses knob templates' configs by a function: ``with ApplyChoices(fn): ...`` where
    ``fn(workload, target)`` returns knob values (a dict or a config) or None (ask the next
    context).  Its answers are taken as they are (no record margin); classic templates, which
    ask :func:`query`, see nothing of it."""

    def __init__(self, fn):
        self.fn = fn

    def choose(self, workload, target):
        return self.fn(tuple(workload), target)

    def query(self, target, workload) -> None:
        return None


class FallbackContext(DispatchContext):
    """Answers with fallback configs, one per (target, workload), so a template's defaults stick."""

    def __init__(self):
        self.memory: dict = {}

    def query(self, target, workload) -> ConfigSpace:
        key = (target_key(target), workload)
        if key not in self.memory:
            self.memory[key] = FallbackConfigEntity()
        return self.memory[key]


__all__ = ["ApplyChoices", "ApplyConfig", "DispatchContext", "FallbackContext", "query", "target_key"]
