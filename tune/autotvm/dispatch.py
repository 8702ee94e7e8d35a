"""Dispatch contexts: which config a template gets when it asks ``autotvm.get_config()``.

A stack per thread, innermost first.  ``ApplyConfig(cfg)`` answers every
query with ``cfg`` (task creation, tuning); ``ApplyHistoryBest(records)``
(``tune.autotvm.history``) answers with the best record for the same workload *and* target (a record
measured on another CPU is never applied); with no answer the template gets a
``FallbackConfigEntity`` (its own defaults, ``cfg.is_fallback`` true).

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


def _stack() -> list:
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


class DispatchContext:
    """Base: ``query(target, workload)`` returns a config or None (ask the next context)."""

    def query(self, target, workload) -> ConfigSpace | None:
        raise NotImplementedError

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        _stack().remove(self)

    @staticmethod
    def current() -> DispatchContext | None:
        st = _stack()
        return st[-1] if st else None


def query(target, workload) -> ConfigSpace:
    """The config for ``workload`` on ``target``: the innermost context that answers, else a fallback."""
    for ctx in reversed(_stack()):
        cfg = ctx.query(target, workload)
        if cfg is not None:
            return cfg
    return FallbackConfigEntity()


def lookup_values(workload, target=None) -> dict | None:
    """Knob -> value that the innermost workload-specific context (``apply_history_best``) gives
    ``workload`` on ``target`` (default: the current target); None when none does.

    The hook for a layer above whose configs are plain knob dicts (topi's
    ``choose_config``): ``ApplyConfig``, which answers any workload, is skipped.
    """
    from codegen.target import Target

    target = target if target is not None else Target.current()
    workload = tuple(workload)
    for ctx in reversed(_stack()):
        if not getattr(ctx, "workload_specific", False):
            continue
        cfg = ctx.query(target, workload)
        if cfg is not None and not cfg.is_fallback:
            return cfg.knob_values()
    return None


def lookup_ranked(workload, target=None) -> list:
    """``[(knob -> value, mean seconds), ...]``, fastest first: every measured config of
    ``workload`` on ``target`` that the innermost records context holds (``[]`` if none does)."""
    from codegen.target import Target

    target = target if target is not None else Target.current()
    workload = tuple(workload)
    for ctx in reversed(_stack()):
        ranked = getattr(ctx, "query_ranked", None)
        if ranked is None:
            continue
        rows = ranked(target, workload)
        if rows:
            return [({k: getattr(e, "val", e) for k, e in cfg._entity_map.items()}, cost) for cfg, cost in rows]
    return []


class ApplyConfig(DispatchContext):
    """Answers every query with one config."""

    def __init__(self, config: ConfigSpace):
        self._config = config

    def query(self, target, workload) -> ConfigSpace:
        return self._config


class FallbackContext(DispatchContext):
    """Answers with fallback configs, one per (target, workload), so a template's defaults stick."""

    def __init__(self):
        self.memory: dict = {}

    def query(self, target, workload) -> ConfigSpace:
        key = (target_key(target), workload)
        if key not in self.memory:
            self.memory[key] = FallbackConfigEntity()
        return self.memory[key]


__all__ = ["ApplyConfig", "DispatchContext", "FallbackContext", "lookup_ranked", "lookup_values", "query", "target_key"]
