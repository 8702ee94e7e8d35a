"""rfactor: split a reduction into a partial-reduction stage and a final one.

::

    C[i] = sum(A[i, k], k)                 C.rf[k.inner, i] = sum(A[i, k.outer*4 + k.inner],
    (k split into k.outer, k.inner by 4)  ->                      k.outer, where k < K)
                                           C[i] = sum(C.rf[k.inner.v, i], k.inner.v)

The factored axis becomes a data axis of ``C.rf``: it can be vectorized or
parallelised.  Halide: ``f.update().rfactor(ki, u)``; TVM: ``s.rfactor``.
"""

from __future__ import annotations

from te import expr as E
from te.simplify import simplify
from te.tensor import ComputeOp, Tensor
from te.visitor import substitute
from schedule.relations import Fuse, Split
from schedule.stage import Stage


def rfactor(sch, tensor: Tensor, axis: E.IterVar, factor_axis: int = 0):
    stage = sch[tensor]
    op = stage.op
    if not isinstance(op, ComputeOp) or not op.reduce_axis:
        raise stage._error("rfactor needs a reduction stage", "Call rfactor on a stage made with te.sum/max/min.")
    stage._check_leaf(axis, "rfactor")
    if axis.iter_type != E.COMM_REDUCE:
        raise stage._error(
            f"cannot rfactor data axis '{axis.var.name}'",
            "Pass a reduce axis (or an axis split from one).",
        )
    for rel in stage.relations:
        if isinstance(rel, Fuse) and rel.fused.iter_type == E.COMM_REDUCE:
            raise stage._error("cannot rfactor after fusing reduce axes", "Split reduce axes only, then rfactor.")
    if not 0 <= factor_axis <= len(op.axis):
        raise ValueError(f"rfactor of '{op.name}': factor_axis must be in [0, {len(op.axis)}], got {factor_axis}")
    reduce_leaves = [iv for iv in stage.leaf_iter_vars if iv.iter_type == E.COMM_REDUCE]
    for iv in reduce_leaves:
        if iv.dom is None:
            raise stage._error(f"reduce axis '{iv.var.name}' has no known extent", "")
    kf = E.IterVar(axis.dom, E.Var(axis.var.name), E.DATA_PAR)
    data = [E.IterVar(iv.dom, E.Var(iv.var.name), E.DATA_PAR) for iv in op.axis]
    # the other reduce leaves stay the same axes, the op's own untouched ones first, then those split
    # from one (classic TVM: rfactor on k1.inner of sum over (k1, k2) reduces over (k2, k1.outer))
    rest = [iv for iv in reduce_leaves if iv is not axis]
    new_reduce = {iv: iv for iv in sorted(rest, key=lambda iv: iv not in op.reduce_axis)}
    leaf_value = {axis: kf.var, **{iv: nv.var for iv, nv in new_reduce.items()}}
    values, guards = _reduce_values(stage, leaf_value)
    red = op.body[0]
    vmap = {old.var: new.var for old, new in zip(op.axis, data)}
    vmap.update({iv.var: values[iv] for iv in op.reduce_axis})
    src = tuple(substitute(s, vmap) for s in red.source)
    cond = substitute(red.condition, vmap)
    for g in guards:
        cond = E.And(cond, g, "bool") if not _is_true(cond) else g
    rf_axes = tuple(data[:factor_axis] + [kf] + data[factor_axis:])
    rf_reduce = tuple(new_reduce.values())
    rf_body = tuple(E.Reduce(red.combiner, src, rf_reduce, cond, k, s.dtype) for k, s in enumerate(src))
    if not rf_reduce:  # the factored axis was the only reduce leaf: a plain copy of the source
        rf_body = tuple(_identity_free(red, src, cond, k) for k in range(len(src)))
    rf_op = ComputeOp(f"{op.name}.rf", op.tag, dict(op.attrs), rf_axes, rf_reduce, rf_body)
    kv = E.IterVar(axis.dom, E.Var(axis.var.name + ".v"), E.COMM_REDUCE)
    reads = tuple(
        E.TensorRead(Tensor(rf_op, k), tuple(
            [iv.var for iv in op.axis[:factor_axis]] + [kv.var] + [iv.var for iv in op.axis[factor_axis:]]
        ), s.dtype)
        for k, s in enumerate(src)
    )
    new_body = tuple(E.Reduce(red.combiner, reads, (kv,), E.const(True), k, s.dtype) for k, s in enumerate(src))
    new_op = ComputeOp(op.name, op.tag, dict(op.attrs), op.axis, (kv,), new_body)
    sch._swap_op(stage, new_op)
    stage.all_iter_vars = list(op.axis) + [kv]
    stage.leaf_iter_vars = list(stage.all_iter_vars)
    stage.relations = []
    stage.iter_var_attrs = {}
    rf_stage = Stage(rf_op, sch)
    sch.stages.insert(sch.stages.index(stage), rf_stage)
    sch.stage_map[rf_op] = rf_stage
    outs = [Tensor(rf_op, k) for k in range(rf_op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs


def _is_true(c) -> bool:
    return isinstance(c, E.IntImm) and c.value == 1


def _identity_free(red, src, cond, k):
    if _is_true(cond):
        return src[k]
    return E.Select(cond, src[k], red.combiner.identity[k], src[k].dtype)


def _reduce_values(stage: Stage, leaf_value: dict):
    """Original reduce axes as expressions of the reduce leaves, plus split guards."""
    value = dict(leaf_value)
    guards = []
    for rel in reversed(stage.relations):
        if isinstance(rel, Split) and rel.parent.iter_type == E.COMM_REDUCE:
            f = rel.factor if rel.factor is not None else rel.inner.dom.extent
            value[rel.parent] = simplify(value[rel.outer] * f + value[rel.inner])
            covered = simplify(rel.outer.dom.extent * rel.inner.dom.extent)
            ext = rel.parent.dom.extent
            if not (isinstance(covered, E.IntImm) and isinstance(ext, E.IntImm) and covered.value == ext.value):
                guards.append(E.LT(value[rel.parent], ext, "bool"))
    out = {}
    for iv, v in value.items():
        if iv.dom is not None and iv in _roots(stage):
            v = simplify(v + iv.dom.min)
        out[iv] = v
    return out, guards


def _roots(stage: Stage) -> set:
    return set(stage.op.reduce_axis)
