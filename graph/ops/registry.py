"""The operator registry: name -> how to infer, compute, schedule, fold and fuse.

Each graph operator is one ``OpDef``:

- ``compute(inputs, attrs) -> list[te.Tensor]`` builds its topi compute over
  input tensors (placeholders or the outputs of fused producers);
- ``infer(values, attrs) -> [(shape, dtype), ...]`` gives output types
  (default: build ``compute`` over placeholders and read the shapes);
- ``evaluate(arrays, attrs) -> list[np.ndarray]`` is the numpy twin used by
  constant folding (default: compile ``compute`` with its schedule and run it);
- ``schedule(outs, attrs)`` schedules a fused group anchored at this op;
- ``pattern`` is TVM's OpPatternKind, which drives operator fusion;
- ``workload(values, attrs, out_shape) -> tuple | None`` names the schedule template
  workload of a node (``tune.autotvm.config``), for which the ``choose_configs``
  pass stores a config in ``attrs["config"]``; ``compute`` and ``schedule``
  read only that.

``compute``, ``schedule`` and ``workload`` given here are the operator's
generic ones; a target's strategy (``topi.strategy``, the x86 one in
``topi.x86.strategy``) overrides them per target key, so this package names
no target's topi module.  ``OpDef.implementation(target)`` says which apply.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import te
from codegen.target import create
from topi.strategy import OpStrategy, strategy

# TVM's OpPatternKind: lower kinds fuse more freely.
ELEMWISE = 0
BROADCAST = 1
INJECTIVE = 2
COMM_REDUCE = 3
OUT_ELEMWISE_FUSABLE = 4
OPAQUE = 8

PATTERN_NAMES = {ELEMWISE: "elemwise", BROADCAST: "broadcast", INJECTIVE: "injective",
                 COMM_REDUCE: "comm_reduce", OUT_ELEMWISE_FUSABLE: "out_elemwise_fusable",
                 OPAQUE: "opaque"}


@dataclass(eq=False)
class OpDef:
    name: str
    compute: Callable | None
    pattern: int
    schedule: Callable | None = None
    infer_fn: Callable | None = None
    evaluate_fn: Callable | None = None
    doc: str = ""
    workload_fn: Callable | None = None

    def implementation(self, target=None) -> OpStrategy:
        """The compute, schedule and workload functions ``target`` (None: the current one) runs this
        operator with: its strategy's, where it registered one, else the generic ones here (a
        generic schedule is called as ``schedule(outs, attrs)``; a strategy's also gets the target)."""
        target = create(target)
        found = strategy(self.name, target) or OpStrategy()
        schedule = self.schedule
        if found.schedule is not None:
            schedule = functools.partial(_with_target, found.schedule, target)
        return OpStrategy(found.compute or self.compute, schedule, found.workload or self.workload_fn)

    def compute_for(self, inputs: list, attrs: dict, target=None) -> list:
        compute = self.implementation(target).compute
        if compute is None:
            raise ValueError(f"operator {self.name!r} has no compute for target {str(create(target))!r}")
        return compute(inputs, attrs)

    def schedule_for(self, outs: list, attrs: dict, target=None):
        schedule = self.implementation(target).schedule
        if schedule is None:
            raise ValueError(f"operator {self.name!r} has no schedule for target {str(create(target))!r} "
                             f"and cannot be compiled")
        if schedule is injective_schedule:
            return injective_schedule(outs, attrs, target)
        return schedule(outs, attrs)

    def workload(self, values, attrs: dict, target=None) -> tuple | None:
        """The topi workload key of a node with input ``values`` on ``target``, None if it has no
        template (``fn(values, attrs, out_shape)``: ``out_shape()`` is the node's output shape)."""
        fn = self.implementation(target).workload
        return None if fn is None else fn(values, attrs, lambda: tuple(self.infer(values, attrs)[0][0]))

    def infer(self, values, attrs: dict) -> list:
        if self.infer_fn is not None:
            return self.infer_fn(values, attrs)
        outs = self.compute_for([te.placeholder(v.shape, dtype=v.dtype, name=f"in{k}")
                                 for k, v in enumerate(values)], attrs)
        return [(tuple(int(d) for d in t.shape), t.dtype) for t in outs]

    def evaluate(self, arrays: list, attrs: dict) -> list:
        if self.evaluate_fn is not None:
            return [np.asarray(a) for a in self.evaluate_fn(arrays, attrs)]
        return evaluate_compiled(self, arrays, attrs)


_REGISTRY: dict = {}


def _with_target(schedule, target, outs, attrs):
    return schedule(outs, attrs, target)


def register(name: str, compute=None, pattern: int = OPAQUE, schedule=None, infer=None,
             evaluate=None, doc: str = "", workload=None) -> OpDef:
    if name in _REGISTRY:
        raise ValueError(f"operator {name!r} is registered twice")
    opdef = OpDef(name, compute, pattern, schedule, infer, evaluate, doc, workload)
    _REGISTRY[name] = opdef
    return opdef


def get_op(name: str) -> OpDef:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown graph operator {name!r}; registered: {sorted(_REGISTRY)}") from None


def registered_ops() -> list:
    return sorted(_REGISTRY)


def evaluate_compiled(opdef: OpDef, arrays: list, attrs: dict) -> list:
    """Run one operator on numpy arrays by compiling its compute (constant folding fallback)."""
    import codegen

    args = [te.placeholder(a.shape, dtype=str(a.dtype), name=f"in{k}") for k, a in enumerate(arrays)]
    outs = opdef.compute_for(args, attrs)
    sch = (opdef.implementation().schedule or default_schedule)(outs, attrs)
    f = codegen.build(sch, args + list(outs), name=f"fold_{opdef.name}")
    results = [np.empty(tuple(int(d) for d in t.shape), t.dtype) for t in outs]
    f(*[np.ascontiguousarray(a) for a in arrays], *results)
    return results


def default_schedule(outs, attrs=None):
    import topi

    return topi.generic.default_schedule(outs)


def injective_schedule(outs, attrs=None, target=None):
    """The schedule of a group of injective ops: the target's ``"injective"`` strategy, else
    ``topi.generic.schedule_injective``."""
    import topi

    target = create(target)
    found = strategy("injective", target)
    if found is not None and found.schedule is not None:
        return found.schedule(outs, attrs, target)
    return topi.generic.schedule_injective(outs)
