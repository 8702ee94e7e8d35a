"""Per-target operator strategies: (graph operator, target key) -> compute, schedule, workload.

Classic TVM's ``OpStrategy``: the graph layer names an operator and a target;
a strategy says which topi compute builds it, which schedule schedules a fused
group anchored at it and which template workload its config is chosen for.
A target's ``keys`` (``Target("llvm").keys == ("cpu",)``; ``"llvm
-keys=mycpu,cpu"`` names more) are tried in order, so a new target registers
only what it does differently and falls back to ``"cpu"`` for the rest::

    register_strategy("conv2d", "mycpu", compute=my_conv2d, schedule=my_schedule)

The x86 strategies are one registration module, ``topi.x86.strategy``
(registered under ``"cpu"``).  Layout helpers the graph's layout passes use
(``register_layout_helpers``) are looked up the same way.

``compute(inputs, attrs) -> [tensors]``, ``schedule(outs, attrs, target) -> Schedule``
(the build's ``Target``, handed down), ``workload(values, attrs, out_shape) -> key | None``
(``values``: the node's inputs, with ``shape``, ``dtype`` and ``node``; ``out_shape()``
its output shape), as ``graph.ops.registry.OpDef`` documents.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace


@dataclass(frozen=True)
class OpStrategy:
    """How one target runs one operator (any part None: the operator's generic one)."""

    compute: Callable | None = None
    schedule: Callable | None = None
    workload: Callable | None = None


_STRATEGIES: dict = {}  # (op, key) -> OpStrategy
_HELPERS: dict = {}  # key -> {name: function}


def register_strategy(op: str, key: str, compute: Callable | None = None, schedule: Callable | None = None,
                      workload: Callable | None = None) -> OpStrategy:
    """Register (or replace) how targets with ``key`` run ``op``."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"register_strategy({op!r}): the target key must be a name such as 'cpu', got {key!r}")
    strategy = OpStrategy(compute, schedule, workload)
    _STRATEGIES[(op, key)] = strategy
    return strategy


def registered_keys() -> list:
    """Every target key some strategy is registered for."""
    return sorted({key for _, key in _STRATEGIES} | set(_HELPERS))


def strategy(op: str, target) -> OpStrategy | None:
    """The strategy of ``op`` for ``target``: the first of its keys that has one (None: none has)."""
    for key in target.keys:
        hit = _STRATEGIES.get((op, key))
        if hit is not None:
            return hit
    return None


def check_target_keys(target) -> None:
    """``ValueError`` when none of ``target``'s keys has any strategy registered (an unknown
    target kind), naming the keys that have."""
    if not any(key in registered_keys() for key in target.keys):
        raise ValueError(f"target {str(target)!r} has keys {list(target.keys)}, for which no operator strategy is "
                         f"registered; registered keys: {registered_keys()} (register one with "
                         f"topi.strategy.register_strategy, or add a known key: -keys=...,cpu)")


def register_layout_helpers(key: str, **helpers: Callable) -> None:
    """Functions the graph's layout passes call for targets with ``key`` (packing a kernel into
    the target's blocked layout, the workload of a blocked kernel ...)."""
    _HELPERS.setdefault(key, {}).update(helpers)


def layout_helpers(target) -> SimpleNamespace:
    """The layout helpers of ``target``: for each name, the first of its keys' registrations."""
    found: dict = {}
    for key in reversed(target.keys):
        found.update(_HELPERS.get(key, {}))
    return SimpleNamespace(**found)


__all__ = ["OpStrategy", "check_target_keys", "layout_helpers", "register_layout_helpers", "register_strategy",
           "registered_keys", "strategy"]
