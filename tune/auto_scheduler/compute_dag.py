"""``ComputeDAG``: the te computation a search task schedules, and what the sketch rules read of it.

Printed as classic TVM's auto_scheduler prints it (``print(task.compute_dag)``)::

    A = PLACEHOLDER [1024, 1024]
    B = PLACEHOLDER [1024, 1024]
    matmul(i, j) += (A[i, k] * B[k, j])
    C = PLACEHOLDER [1024, 1024]
    out(i, j) = (matmul[i, j] + C[i, j])

Its ``key`` (a hash of that text, which names every shape, dtype and
expression) identifies the computation across processes: records of a graph's
fused kernels are found by it.
"""

from __future__ import annotations

import hashlib
import math

from te import expr as E
from te.printer import expr_str
from te.tensor import ComputeOp, PlaceholderOp, Tensor
from te.visitor import walk
from schedule import Schedule, create_schedule

_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max, E.Call)


class ComputeDAG:
    """The operations that compute ``tensors``' outputs from their placeholders."""

    def __init__(self, tensors):
        tensors = list(tensors)
        if not tensors or not all(isinstance(t, Tensor) for t in tensors):
            raise TypeError("ComputeDAG takes a list of te tensors (the placeholders and the outputs)")
        self.tensors = tensors
        self.outputs = [t for t in tensors if not isinstance(t.op, PlaceholderOp)]
        if not self.outputs:
            raise ValueError(f"ComputeDAG: no computed tensor among {[t.name for t in tensors]}")
        self.ops = [st.op for st in self.schedule().stages]  # every op, producers first
        self.flop_ct = float(flop_count(self.ops))

    def schedule(self) -> Schedule:
        """A fresh default schedule of the outputs."""
        return create_schedule([t.op for t in self.outputs])

    def apply_steps_from_state(self, state, layout_rewrite=None):
        """``(schedule, tensors)`` of ``state``'s trace replayed on a fresh schedule (classic name)."""
        return state.trace.apply(self.schedule()), list(self.tensors)

    def print_python_code_from_state(self, state) -> str:
        sch = state.trace.apply(self.schedule())
        return str(sch.trace)

    def structure(self) -> tuple:
        """The computation without its shapes: tasks with equal structure are "similar" (the task
        scheduler compares their speeds)."""
        return tuple((type(op).__name__, op.name if isinstance(op, ComputeOp) else "", getattr(op, "tag", ""),
                      len(getattr(op, "axis", ())), len(getattr(op, "reduce_axis", ()))) for op in self.ops)

    @property
    def key(self) -> str:
        return hashlib.sha1(str(self).encode()).hexdigest()[:20]

    def __str__(self) -> str:
        lines = []
        for op in self.ops:
            if isinstance(op, PlaceholderOp):
                lines.append(f"{op.name} = PLACEHOLDER {list(_ints(op.shape))}")
            elif isinstance(op, ComputeOp):
                idx = ", ".join(iv.var.name for iv in op.axis)
                for k, b in enumerate(op.body):
                    name = op.name if op.num_outputs == 1 else f"{op.name}.v{k}"
                    if isinstance(b, E.Reduce):
                        src = " ".join(expr_str(s) for s in b.source)
                        cond = "" if _true(b.condition) else f" where {expr_str(b.condition)}"
                        lines.append(f"{name}({idx}) {_REDUCE_OPS.get(b.combiner.name, b.combiner.name + '=')} "
                                     f"{src}{cond}")
                    else:
                        lines.append(f"{name}({idx}) = {expr_str(b)}")
            else:
                lines.append(f"{op.name} = {type(op).__name__}")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"ComputeDAG({[t.name for t in self.tensors]})"


_REDUCE_OPS = {"sum": "+=", "max": "max=", "min": "min="}


def _true(c) -> bool:
    return isinstance(c, E.IntImm) and c.value == 1


def _ints(shape) -> tuple:
    return tuple(d.value if isinstance(d, E.IntImm) else d for d in shape)


def extent(iv) -> int:
    """The constant extent of an axis (1 where it is not constant)."""
    try:
        return int(iv.dom.extent.value)
    except AttributeError:
        return 1


def flop_count(ops) -> float:
    """Float operations of one call, counted on the compute definitions."""
    total = 0.0
    for op in ops:
        if not isinstance(op, ComputeOp):
            continue
        count = [0]

        def visit(x):
            if isinstance(x, _ARITH) and str(x.dtype).startswith(("float", "bfloat")):
                count[0] += 1
            if isinstance(x, E.Reduce):
                count[0] += len(x.source)

        for b in op.body:
            walk(b, visit)
        total += math.prod(extent(iv) for iv in tuple(op.axis) + tuple(op.reduce_axis)) * max(count[0], 1)
    return total


__all__ = ["ComputeDAG", "extent", "flop_count"]
