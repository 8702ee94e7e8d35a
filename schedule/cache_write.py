"""``s.cache_write(C, scope)``: compute ``C`` into a new stage ``C.scope``; ``C`` becomes a copy.

On an unscheduled stage the cache has ``C``'s own shape::

    C[i] = sum(A[i, k])    ->   C.local[i] = sum(A[i, k])
                                C[i] = C.local[i]

On a stage already split, fused or reordered, the cache is laid out as ``C``'s loops
were (classic TVM's relayout): one dimension per data leaf axis, in leaf order, and
``C`` starts over as a plain copy reading it through the relations::

    xo, xi = s[C].split(x, 4); s[C].reorder(xo, y, xi); CC = s.cache_write(C, "global")

    CC[x.outer.c, y.c, x.inner.c] = A[x.outer.c*4 + x.inner.c, y.c] * ...
    C[x, y] = CC[x // 4, y, x % 4]

A split that does not divide its axis leaves points past the axis in the cache; they hold
the reduction's identity (or 0), never a value read out of bounds.  Reduce axes must still
be the operation's own (split them on the cache stage afterwards).  Halide: ``f.in()``.
"""

from __future__ import annotations

from dataclasses import replace

from te import expr as E
from te.simplify import simplify
from te.tensor import ComputeOp, Tensor
from te.visitor import collect_vars, substitute
from schedule.errors import ScheduleError
from schedule.relations import Fuse, Singleton, Split


def cache_write(sch, tensor, scope: str):
    from schedule.bound import LoopInfo, _pass_down, _pass_up
    from schedule.stage import Stage

    tensors = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
    stage = sch[tensors[0]]
    op = stage.op
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"cache_write: '{op.name}' is not a compute stage")
    _check_relayout(sch, stage)
    info = LoopInfo()
    for iv in list(op.axis) + list(op.reduce_axis):
        info.root_min[iv], info.extent[iv] = iv.dom.min, iv.dom.extent
    ranges: dict = {}
    _pass_down(stage, info, ranges)
    _pass_up(stage, info, ranges)
    leaves = [iv for iv in stage.leaf_iter_vars if not E.contains(op.reduce_axis, iv)]
    axis = tuple(E.IterVar(E.Range(E.const(0), info.extent[iv]), E.Var(iv.var.name + ".c")) for iv in leaves)
    to_cache = {iv.var: (E.const(0) if _is_one(info.extent[iv]) else new.var) for iv, new in zip(leaves, axis)}
    vmap = {iv.var: simplify(substitute(info.value[iv], to_cache)) for iv in op.axis}
    guard = _guard(stage, info, to_cache)
    body = _cache_body(op, vmap, guard)
    cache_op = ComputeOp(f"{op.name}.{scope}", op.tag, dict(op.attrs), axis, _reduce_axes(body), body)
    index = _leaf_indices(stage, info)
    copy_body = tuple(E.TensorRead(Tensor(cache_op, k), tuple(index[iv] for iv in leaves), b.dtype)
                      for k, b in enumerate(op.body))
    sch._swap_op(stage, ComputeOp(op.name, op.tag, dict(op.attrs), op.axis, (), copy_body))
    stage.all_iter_vars, stage.leaf_iter_vars, stage.relations = list(op.axis), list(op.axis), []
    stage.iter_var_attrs = {}
    cache_stage = Stage(cache_op, sch)
    cache_stage.scope = scope
    cache_stage.group = stage.group
    sch.stages.insert(sch.stages.index(stage), cache_stage)
    sch.stage_map[cache_op] = cache_stage
    outs = [Tensor(cache_op, k) for k in range(cache_op.num_outputs)]
    return outs if isinstance(tensor, (list, tuple)) else outs[0]


def _check_relayout(sch, stage) -> None:
    op = stage.op
    for iv in stage.leaf_iter_vars:
        if iv.iter_type == E.COMM_REDUCE and not E.contains(op.reduce_axis, iv):
            raise stage._error(
                f"cannot cache_write it, a reduce axis was split or fused into '{iv.var.name}'",
                "Call s.cache_write before scheduling the reduce axes, then split them on the cache stage.")
    for st in sch.stages:
        if st.attach_stage is stage and st.attach_ivar is not None and not E.contains(op.axis, st.attach_ivar):
            raise stage._error(
                f"cannot cache_write it, stage '{st.name}' is computed at its axis '{st.attach_ivar.var.name}'",
                f"Call s.cache_write before compute_at, or compute '{st.name}' at root first.")


def _is_one(ext) -> bool:
    return isinstance(ext, E.IntImm) and ext.value == 1


def _guard(stage, info, to_cache) -> E.Expr | None:
    """``parent < extent`` for each split that may overshoot, in the cache's axes."""
    cond = None
    for parent in info.guards:
        if parent.iter_type == E.COMM_REDUCE:
            continue
        c = E.LT(substitute(info.value[parent], to_cache), info.extent[parent], "bool")
        cond = c if cond is None else E.And(cond, c, "bool")
    return cond


def _cache_body(op: ComputeOp, vmap: dict, guard) -> tuple:
    """The operation's body over the cache's axes; loop-dependent reductions (a reducer or a
    reduce domain that uses the data axes) get their own reducer and axes over the new variables."""
    first = op.body[0]
    if not isinstance(first, E.Reduce):
        body = tuple(substitute(b, vmap) for b in op.body)
        if guard is None:
            return body
        return tuple(E.Select(guard, b, E.const(0, b.dtype), b.dtype) for b in body)
    combiner = first.combiner
    used = set(vmap)
    exprs = list(combiner.result) + list(combiner.identity)
    if any(collect_vars(e) & used for e in exprs):
        combiner = replace(combiner, result=tuple(substitute(e, vmap) for e in combiner.result),
                           identity=tuple(substitute(e, vmap) for e in combiner.identity))
    axes = tuple(_rebased_axis(iv, vmap, used) for iv in first.axis)
    amap = {old.var: new.var for old, new in zip(first.axis, axes) if old is not new}
    full = {**vmap, **amap}
    source = tuple(substitute(s, full) for s in first.source)
    cond = substitute(first.condition, full)
    if guard is not None:
        cond = guard if _true(cond) else E.And(cond, guard, "bool")
    return tuple(E.Reduce(combiner, source, axes, cond, b.value_index, b.dtype) for b in op.body)


def _rebased_axis(iv: E.IterVar, vmap: dict, used: set) -> E.IterVar:
    dom = iv.dom
    if not (collect_vars(dom.min) | collect_vars(dom.extent)) & used:
        return iv
    return E.IterVar(E.Range(substitute(dom.min, vmap), substitute(dom.extent, vmap)), E.Var(iv.var.name),
                     iv.iter_type)


def _reduce_axes(body: tuple) -> tuple:
    return body[0].axis if body and isinstance(body[0], E.Reduce) else ()


def _true(c) -> bool:
    return isinstance(c, E.IntImm) and c.value == 1


def _leaf_indices(stage, info) -> dict:
    """Each data leaf axis's value in the operation's root variables (relations read downward)."""
    value = {iv: iv.var for iv in stage.op.axis}
    for rel in stage.relations:
        if isinstance(rel, Split):
            f = rel.factor if rel.factor is not None else info.extent[rel.inner]
            p = value[rel.parent]
            value[rel.outer] = simplify(E.FloorDiv(p, f, "int32"))
            value[rel.inner] = simplify(E.FloorMod(p, f, "int32"))
        elif isinstance(rel, Fuse):
            value[rel.fused] = simplify(value[rel.outer] * info.extent[rel.inner] + value[rel.inner])
        elif isinstance(rel, Singleton):
            value[rel.iv] = E.const(0)
    return value


__all__ = ["cache_write"]
