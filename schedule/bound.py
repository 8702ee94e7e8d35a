"""Bounds inference: how much of each stage to compute, and where.

For every stage, from the outputs back to the inputs:

* a stage computed at root covers its whole domain;
* a stage computed at loop ``a`` of a consumer covers the union of the
  regions the consumer reads during one iteration of ``a`` (outer loops fixed,
  inner loops over their ranges), clamped to its own domain.  A stencil read
  ``B[i - 1] .. B[i + 1]`` inside ``for (x.inner, 0, 8)`` asks for 10 points of
  ``B`` (the halo).

Then the extents of the derived axes follow the relations downward (a split
by ``f`` has an inner extent ``f`` and an outer extent ``ceil(ext / f)``) and
the value of every axis follows them upward (``parent = outer * f + inner``).
A split that may overshoot its parent yields a guard ``parent < extent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from te import expr as E
from te.simplify import can_prove, const_bounds, simplify, upper_key
from te.visitor import collect_reads, substitute
from schedule.errors import ScheduleError
from schedule.interval import interval_of, union
from schedule.hybrid.op import HybridOp, hybrid_region
from schedule.opaque_ops import SCAN_INIT, SCAN_STEP, scan_region
from schedule.relations import Fuse, Singleton, Split


@dataclass
class LoopInfo:
    """What bounds inference decided for one stage."""

    root_min: dict = field(default_factory=dict)  # root IterVar -> Expr (actual index of 0)
    extent: dict = field(default_factory=dict)  # any IterVar -> Expr (rebased, from 0)
    value: dict = field(default_factory=dict)  # any IterVar -> Expr in leaf loop vars
    guards: list = field(default_factory=list)  # (IterVar parent, cond) for overshooting splits
    alloc_extent: tuple = ()  # per output dimension, a bound usable for storage

    def index(self, root_iv: E.IterVar) -> E.Expr:
        """The actual index of a root axis inside the stage's loop nest."""
        return simplify(self.root_min[root_iv] + self.value[root_iv])


def infer_bound(sch, bodies: dict, ranges: dict) -> dict:
    """Return ``{stage: LoopInfo}``.

    ``bodies`` maps each computed stage to its body with inlined stages
    substituted; ``ranges`` collects constant bounds of every loop variable
    (filled in here, used by simplification later).
    """
    infos: dict = {}
    for stage in reversed(sch.stages):
        op = stage.op
        if stage not in bodies and not isinstance(op, HybridOp):
            continue
        info = LoopInfo()
        if isinstance(op, HybridOp):  # its loops run whole; it is computed at root
            region = hybrid_region(op)
        elif stage.attach_type == "scope":
            region = _required_region(sch, stage, bodies, infos, ranges)
        elif stage.attach_type in (SCAN_INIT, SCAN_STEP):
            region = scan_region(stage, ranges)
        else:
            region = [(E.const(0), s, s) for s in op.shape]
        for iv, (lo, ext, _) in zip(op.axis, region):
            info.root_min[iv] = lo
            info.extent[iv] = ext
        info.alloc_extent = tuple(alloc for _, _, alloc in region)
        for iv in op.reduce_axis:
            info.root_min[iv] = iv.dom.min
            info.extent[iv] = iv.dom.extent
        _pass_down(stage, info, ranges)
        _pass_up(stage, info, ranges)
        infos[stage] = info
    return infos


def _pass_down(stage, info: LoopInfo, ranges: dict) -> None:
    """Extents of derived axes, and guards for splits that overshoot."""
    for rel in stage.relations:
        if isinstance(rel, Split):
            ext = info.extent[rel.parent]
            if rel.factor is not None:
                f = rel.factor
                info.extent[rel.inner] = _tight(f, ext, ranges)
                info.extent[rel.outer] = simplify(E.FloorDiv(ext + f - 1, f, "int32"), ranges)
                covered = simplify(info.extent[rel.outer] * info.extent[rel.inner], ranges)
            else:
                p = rel.nparts
                inner = simplify(E.FloorDiv(ext + p - 1, p, "int32"), ranges)
                info.extent[rel.outer] = _tight(p, ext, ranges)
                info.extent[rel.inner] = inner
                covered = simplify(inner * info.extent[rel.outer], ranges)
            if not can_prove(E.LE(covered, ext, "bool"), ranges):
                info.guards.append(rel.parent)
        elif isinstance(rel, Fuse):
            info.extent[rel.fused] = simplify(info.extent[rel.outer] * info.extent[rel.inner], ranges)
        elif isinstance(rel, Singleton):
            info.extent[rel.iv] = E.const(1)
    for iv in stage.leaf_iter_vars:
        ext = info.extent[iv]
        last = simplify(ext - 1, ranges)
        hi = const_bounds(last, ranges)[1]
        ranges[iv.var] = (0, hi)
        if hi is None:
            ranges[upper_key(iv.var)] = last


def _tight(part: E.Expr, ext: E.Expr, ranges: dict) -> E.Expr:
    """A split part never exceeds its parent: an extent-8 axis split by 32 has inner 8 (TVM)."""
    return ext if can_prove(E.LE(ext, part, "bool"), ranges) else part


def _pass_up(stage, info: LoopInfo, ranges: dict) -> None:
    """Value of every axis in terms of the leaf loop variables."""
    for iv in stage.leaf_iter_vars:
        info.value[iv] = iv.var
    for rel in reversed(stage.relations):
        if isinstance(rel, Split):
            f = rel.factor if rel.factor is not None else info.extent[rel.inner]
            info.value[rel.parent] = simplify(info.value[rel.outer] * f + info.value[rel.inner], ranges)
        elif isinstance(rel, Fuse):
            ie = info.extent[rel.inner]
            fv = info.value[rel.fused]
            info.value[rel.outer] = simplify(E.FloorDiv(fv, ie, "int32"), ranges)
            info.value[rel.inner] = simplify(E.FloorMod(fv, ie, "int32"), ranges)


def guard_conditions(info: LoopInfo, ranges: dict, include_reduce: bool, stage) -> list:
    """``parent_value < parent_extent`` for every overshooting split."""
    out = []
    for parent in info.guards:
        if parent.iter_type == E.COMM_REDUCE and not include_reduce:
            continue
        cond = simplify(E.LT(info.value[parent], info.extent[parent], "bool"), ranges)
        if not (isinstance(cond, E.IntImm) and cond.value == 1):
            out.append(cond)
    return out


def _required_region(sch, stage, bodies, infos, ranges) -> list:
    """Per dimension ``(min, extent, alloc_extent)`` needed by the attach stage."""
    consumer, axis = stage.attach_stage, stage.attach_ivar
    if consumer not in infos:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': it is computed at stage "
            f"'{consumer.name}', which is itself inlined or not computed. "
            f"Attach '{stage.name}' to a stage that has loops."
        )
    if not E.contains(consumer.leaf_iter_vars, axis):
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': compute_at axis '{axis.var.name}' of "
            f"stage '{consumer.name}' is no longer a leaf axis (it was split or fused "
            f"after compute_at). Leaf axes of {consumer.name}: "
            f"[{', '.join(iv.var.name for iv in consumer.leaf_iter_vars)}]. "
            f"Call compute_at with one of those."
        )
    region = None
    readers = [c for c in sch.stages if c in infos and _reads_of(bodies[c], stage, sch)]
    if not readers:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': compute_at stage '{consumer.name}', but "
            f"no stage computed inside it reads '{stage.name}'. Attach it to one of its "
            f"consumers ({[s.name for s in sch.consumers(stage)]})."
        )
    for reader in readers:
        ranged = _relaxed_loops(stage, reader, infos, ranges)
        cinfo = infos[reader]
        actual = {}
        for iv in list(reader.op.axis) + list(reader.op.reduce_axis):
            actual[iv.var] = _relax(cinfo.root_min[iv] + cinfo.value[iv], ranged, ranges)
        exact = _axis_values(reader, cinfo, ranges)
        for read in _reads_of(bodies[reader], stage, sch):
            box = [_index_interval(idx, actual, ranges) for idx in read.indices]
            if exact is not None:
                box = [_tighter(iv, _relax(simplify(substitute(idx, exact), ranges), ranged, ranges), ranges)
                       for idx, iv in zip(read.indices, box)]
            region = box if region is None else [union(a, b, ranges) for a, b in zip(region, box)]
    return _clamped(stage, region, ranges)


def _axis_values(reader, cinfo: LoopInfo, ranges: dict) -> dict | None:
    """Where ``reader`` split or fused axes: each of its axes as an expression of its loop
    variables (None otherwise).  A fused loop gives its parts as ``f // W`` and ``f % W``, whose
    intervals taken apart are a box of whole rows; a read of ``y * W + x``, substituted
    and simplified, is ``f`` again, and its interval is the tile's (a 1x1 conv computed
    over the flattened plane reads ``ow_bn`` points per tile, not two rows); a read of
    ``(n % 128) // 2`` with ``n = no*128 + ni*32 + nii`` is ``ni*16 + nii // 2``, 16 rows
    per ``ni``, where the interval of ``n % 128`` alone is the whole [0, 127]."""
    if not reader.relations:
        return None
    return {iv.var: simplify(cinfo.root_min[iv] + cinfo.value[iv], ranges)
            for iv in list(reader.op.axis) + list(reader.op.reduce_axis)}


def _tighter(box, exact, ranges: dict):
    """Of two sound intervals of one index, ``exact`` where its extent is a constant smaller
    than ``box``'s bound (or ``box`` has none); else ``box``."""
    if box is None or exact is None:
        return box or exact
    ext = simplify(exact[1] - exact[0] + 1, ranges)
    if not isinstance(ext, E.IntImm):
        return box
    hi = const_bounds(simplify(box[1] - box[0] + 1, ranges), ranges)[1]
    return exact if hi is None or ext.value < hi else box


def _clamped(stage, region: list, ranges: dict) -> list:
    """The region clamped to the stage's shape: ``(min, extent, alloc_extent)`` per dimension."""
    out = []
    for d, shape_d in enumerate(stage.op.shape):
        iv = region[d]
        if iv is None:
            out.append((E.const(0), shape_d, shape_d))
            continue
        lo, hi = iv
        raw_ext = simplify(hi - lo + 1, ranges)
        clo = simplify(E.Max(lo, E.const(0), "int32"), ranges)
        chi = simplify(E.Min(hi, shape_d - 1, "int32"), ranges)
        ext = simplify(chi - clo + 1, ranges)
        alloc = raw_ext if isinstance(raw_ext, E.IntImm) else _bound_of(ext, ranges, shape_d)
        out.append((clo, ext, alloc))
    return out


def _relaxed_loops(stage, reader, infos, ranges) -> dict:
    """Loops that run within one iteration of ``stage``'s attach loop, around ``reader``.

    ``reader`` is the attach stage itself (its loops inside the attach axis
    vary) or a stage attached, directly or through others, at or inside that
    axis (all of its loops, and those of the stages between, vary too): TVM's
    rule for ``s[AA].compute_at(s[B], xo)`` when ``B.local`` reads ``AA``.
    """
    target, axis = stage.attach_stage, stage.attach_ivar
    ranged: dict = {}
    cur, inner_axis = reader, None
    while cur is not target:
        if cur.attach_type != "scope":
            raise ScheduleError(
                f"In schedule for stage '{stage.name}': it is computed at loop "
                f"'{axis.var.name}' of stage '{target.name}', but its consumer "
                f"'{reader.name}' is computed outside that loop ({_where(reader)}). "
                f"Attach '{reader.name}' inside '{target.name}' at '{axis.var.name}' or deeper, "
                f"or attach '{stage.name}' to '{reader.name}'."
            )
        for iv in cur.leaf_iter_vars:
            ranged[iv.var] = (E.const(0), simplify(infos[cur].extent[iv] - 1, ranges))
        cur, inner_axis = cur.attach_stage, cur.attach_ivar
    pos = E.index_of(target.leaf_iter_vars, axis)
    if inner_axis is not None and E.index_of(target.leaf_iter_vars, inner_axis) < pos:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': it is computed at loop '{axis.var.name}' of "
            f"stage '{target.name}', but its consumer '{reader.name}' is computed outside that "
            f"loop (at '{inner_axis.var.name}'). Attach '{stage.name}' at "
            f"'{inner_axis.var.name}' or further out."
        )
    for iv in target.leaf_iter_vars[pos + 1:]:
        ranged[iv.var] = (E.const(0), simplify(infos[target].extent[iv] - 1, ranges))
    outer, at = target, pos
    while outer is not None:  # threads around the attach point that share the stage's memory
        for iv in outer.leaf_iter_vars[: at + 1]:
            bound = outer.iter_var_attrs.get(iv, {}).get("bind")
            if bound is not None and _shares_memory(bound.var.name, stage.scope):
                ranged[iv.var] = (E.const(0), simplify(infos[outer].extent[iv] - 1, ranges))
        if outer.attach_type != "scope":
            break
        outer, at = outer.attach_stage, E.index_of(outer.attach_stage.leaf_iter_vars, outer.attach_ivar)
    return ranged


_SCOPE_RANK = {"global": 0, "shared": 1, "warp": 2, "local": 3}


def _shares_memory(thread_tag: str, scope: str) -> bool:
    """Whether the threads of ``thread_tag`` all see one copy of memory of ``scope`` (classic TVM's
    ``NeedRelax``): a stage in shared memory computed inside a loop bound to ``threadIdx`` covers
    what all the block's threads read, one in global memory what all threads read; local memory
    is each thread's own.  In warp memory ``threadIdx.x`` is the lane, which the warp shares."""
    rank = _SCOPE_RANK.get(scope.split(".")[0], 0)
    thread_rank = 0 if thread_tag.startswith("blockIdx") else 1
    if rank == 2 and thread_tag == "threadIdx.x":
        return True
    return rank <= thread_rank


def _where(st) -> str:
    if st.attach_type == "scope":
        return f"at loop '{st.attach_ivar.var.name}' of stage '{st.attach_stage.name}'"
    return "at root"


def _relax(e: E.Expr, ranged: dict, ranges: dict):
    """Interval of ``e`` over ``ranged``, repeated while bounds still name a ranged loop."""
    from te.visitor import collect_vars

    iv = interval_of(e, ranged, ranges)
    for _ in range(4):
        if iv is None or not any(v in ranged for v in collect_vars(iv[0]) | collect_vars(iv[1])):
            return iv
        lo, hi = interval_of(iv[0], ranged, ranges), interval_of(iv[1], ranged, ranges)
        iv = None if lo is None or hi is None else (lo[0], hi[1])
    return None


def _index_interval(idx, actual: dict, ranges: dict):
    from te.visitor import collect_vars

    ranged = {v: actual[v] for v in collect_vars(idx) if v in actual}
    if any(r is None for r in ranged.values()):
        return None
    return interval_of(idx, ranged, ranges)


def _bound_of(ext, ranges, shape_d):
    hi = const_bounds(ext, ranges)[1]
    if hi is not None:
        return E.const(hi)
    return shape_d


def _reads_of(body: tuple, stage, sch) -> list:
    out = []
    for b in body:
        exprs = list(b.source) + [b.condition] if isinstance(b, E.Reduce) else [b]
        for e in exprs:
            for r in collect_reads(e):
                if sch.stage_map.get(r.tensor.op) is stage:
                    out.append(r)
    return out
