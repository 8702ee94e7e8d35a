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
- ``workload(values, attrs) -> tuple | None`` names the schedule template
  workload of a node (``topi.config``), for which the ``choose_configs``
  pass stores a config in ``attrs["config"]``; ``compute`` and ``schedule``
  read only that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import te

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

    def workload(self, values, attrs: dict) -> tuple | None:
        """The topi workload key of a node with input ``values``, None if it has no template."""
        return None if self.workload_fn is None else self.workload_fn(values, attrs)

    def infer(self, values, attrs: dict) -> list:
        if self.infer_fn is not None:
            return self.infer_fn(values, attrs)
        if self.compute is None:
            raise ValueError(f"operator {self.name!r} has no shape function")
        outs = self.compute([te.placeholder(v.shape, dtype=v.dtype, name=f"in{k}")
                             for k, v in enumerate(values)], attrs)
        return [(tuple(int(d) for d in t.shape), t.dtype) for t in outs]

    def evaluate(self, arrays: list, attrs: dict) -> list:
        if self.evaluate_fn is not None:
            return [np.asarray(a) for a in self.evaluate_fn(arrays, attrs)]
        return evaluate_compiled(self, arrays, attrs)


_REGISTRY: dict = {}


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
    outs = opdef.compute(args, attrs)
    sch = (opdef.schedule or default_schedule)(outs, attrs)
    f = codegen.build(sch, args + list(outs), name=f"fold_{opdef.name}")
    results = [np.empty(tuple(int(d) for d in t.shape), t.dtype) for t in outs]
    f(*[np.ascontiguousarray(a) for a in arrays], *results)
    return results


def default_schedule(outs, attrs=None):
    import topi

    return topi.generic.default_schedule(outs)


def injective_schedule(outs, attrs=None):
    import topi

    return topi.x86.schedule_injective(outs)
