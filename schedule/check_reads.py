"""Reject computes that read a tensor outside its shape, whatever the schedule.

Every read that is not protected by a condition (an ``if_then_else`` branch
or a reduction's ``where=``) and whose indices are sums of axes is bounded
over the stage's whole domain; a bound that provably leaves the tensor's
shape is an error at ``lower``, naming the stage, the tensor and the
dimension.  Reads the analysis cannot bound exactly are left alone.
"""

from __future__ import annotations

from te import expr as E
from te.simplify import simplify
from te.visitor import children, unsafe_select_loads
from schedule.interval import interval_of
from schedule.opaque_ops import SCAN_STEP


def unguarded_reads(e: E.Expr) -> list:
    out: list = []
    seen: set = set()

    def visit(x):
        if id(x) in seen:
            return
        seen.add(id(x))
        if isinstance(x, E.TensorRead):
            out.append(x)
        if isinstance(x, E.Select) and unsafe_select_loads(x):
            visit(x.cond)
            return
        for c in children(x):
            visit(c)

    visit(e)
    return out


def _monotone(e: E.Expr, seen: set) -> bool:
    """Sums of distinct axes, scaled and floor-divided by constants: intervals are exact."""
    if isinstance(e, E.IntImm):
        return True
    if isinstance(e, E.Var):
        if e in seen:
            return False
        seen.add(e)
        return True
    if isinstance(e, (E.Add, E.Sub)):
        return _monotone(e.a, seen) and _monotone(e.b, seen)
    if isinstance(e, (E.Mul, E.FloorDiv)) and isinstance(e.b, E.IntImm) and e.b.value > 0:
        return _monotone(e.a, seen)
    if isinstance(e, E.Mul) and isinstance(e.a, E.IntImm):
        return _monotone(e.b, seen)
    return False


def check_reads(stage, body: tuple) -> None:
    op = stage.op
    ranged = {iv.var: (E.const(0), simplify(iv.dom.extent - 1)) for iv in op.axis}
    scan = getattr(stage.attach_stage, "op", None) if stage.attach_type == SCAN_STEP else None
    if scan is not None and op.axis:  # a scan's step runs only for the steps after the init rows
        ranged[op.axis[0].var] = (scan.scan_axis.dom.min, ranged[op.axis[0].var][1])
    exprs = []
    for b in body:
        if isinstance(b, E.Reduce):
            if not (isinstance(b.condition, E.IntImm) and b.condition.value == 1):
                continue
            for iv in b.axis:
                ranged[iv.var] = (iv.dom.min, simplify(iv.dom.min + iv.dom.extent - 1))
            exprs.extend(b.source)
        else:
            exprs.append(b)
    for e in exprs:
        for read in unguarded_reads(e):
            for d, (idx, size) in enumerate(zip(read.indices, read.tensor.shape)):
                if not _monotone(idx, set()):
                    continue
                iv = interval_of(idx, ranged)
                if iv is None:
                    continue
                lo, hi = iv
                over = simplify(hi - (size - 1))
                if (isinstance(lo, E.IntImm) and lo.value < 0) or (isinstance(over, E.IntImm) and over.value > 0):
                    raise ValueError(
                        f"compute '{op.name}' reads {read.tensor.name}[...] at dimension {d} with index "
                        f"{idx}, which ranges over [{lo}, {hi}] but the tensor's extent there is {size}; "
                        f"shrink the compute's shape, pad the input, or guard the read with te.if_then_else"
                    )
