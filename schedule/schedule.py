"""``Schedule``: the stages of a dataflow graph and the primitives that add stages.

``cache_read``, ``cache_write`` and ``rfactor`` rewrite the dataflow (they
create operations); everything else lives on ``Stage``.
"""

from __future__ import annotations

import copy
import sys

from te import expr as E
from te.operation import compute
from te.tensor import ComputeOp, Operation, Tensor
from te.visitor import pre_order, substitute
from schedule.errors import ScheduleError
from schedule.group import create_group
from schedule.relations import Fuse, Split
from schedule.stage import STORAGE_SCOPES, Stage
from schedule.trace import Trace, recorded, snapshot_roots


class Schedule:
    """All stages of the graph that produces ``outputs``, inputs first."""

    def __init__(self, outputs: list[Operation], keep_record: bool = False):
        self.outputs = list(outputs)
        # with keep_record, a copy of the schedule after each elementary primitive and its name
        # (classic TVM's te.keep_schedule_record), the untouched schedule first, as "vanilla"
        self.schedule_record: list = []
        self.primitive_record: list = []
        self.keep_record = keep_record
        self.target: str | None = None  # the target its choices read, where a schedule recorded one
        self.stages: list[Stage] = []
        self.stage_map: dict = {}  # op -> Stage (original and current ops)
        self.trace = Trace()  # every primitive applied, as replayable data (schedule.trace)
        self.groups: list = []  # schedule.group.Group, in creation order
        self.placing_group = False  # a group's compute_at is placing its members
        for op in _post_order(self.outputs):
            self._add_stage(Stage(op, self))
        for op in self.outputs:
            self.stage_map[op].is_output = True
        from schedule.opaque_ops import attach_scan_groups

        attach_scan_groups(self)
        snapshot_roots(self)
        self.keep_state("vanilla")

    def keep_state(self, primitive: str) -> None:
        """Append a copy of the schedule to ``schedule_record`` (when it keeps one)."""
        if self.keep_record:
            self.schedule_record.append(self.copy())
            self.primitive_record.append(primitive)

    def copy(self) -> "Schedule":
        """A schedule in this one's state that later primitives on either do not share (classic
        TVM's ``s.copy()``); operations and axes are shared, stages and groups copied."""
        from schedule.stage import IterVarAttr

        new = copy.copy(self)
        smap = {id(st): copy.copy(st) for st in self.stages}
        gmap = {id(g): copy.copy(g) for g in self.groups}
        for c in list(smap.values()) + list(gmap.values()):
            c.schedule = new
            c.attach_stage = smap.get(id(c.attach_stage), c.attach_stage)
            c.group = gmap.get(id(c.group), c.group)
        for c in smap.values():
            c.all_iter_vars, c.leaf_iter_vars, c.relations = list(c.all_iter_vars), list(c.leaf_iter_vars), list(
                c.relations)
            c.storage_aligns = dict(c.storage_aligns)
            c.iter_var_attrs = {iv: _copy_attr(a, IterVarAttr) for iv, a in c.iter_var_attrs.items()}
        new.stages = [smap[id(st)] for st in self.stages]
        new.stage_map = {op: smap[id(st)] for op, st in self.stage_map.items()}
        new.groups = [gmap[id(g)] for g in self.groups]
        new.trace = Trace(self.trace.steps)
        new.trace.unrecorded, new.trace._roots = list(self.trace.unrecorded), list(self.trace._roots)
        new.keep_record, new.schedule_record, new.primitive_record = False, [], []
        return new

    def _add_stage(self, stage: Stage, after: Stage | None = None) -> Stage:
        if after is None:
            self.stages.append(stage)
        else:
            self.stages.insert(self.stages.index(after) + 1, stage)
        self.stage_map[stage.op] = stage
        return stage

    def __getitem__(self, key) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        stage = self.stage_map.get(op)
        if stage is None:
            name = getattr(op, "name", key)
            raise ScheduleError(
                f"tensor '{name}' is not part of this schedule; its stages are "
                f"{[s.name for s in self.stages]}. Create the schedule from the final "
                f"outputs (te.create_schedule([out.op]))."
            )
        return stage

    def __contains__(self, key) -> bool:
        op = key.op if isinstance(key, Tensor) else key
        return op in self.stage_map

    def owner_of(self, iv) -> Stage | None:
        return next((s for s in self.stages if E.contains(s.all_iter_vars, iv)), None)

    def stage_of_tensor(self, t: Tensor) -> Stage:
        return self[t.op]

    def reads(self, consumer: Stage) -> list[Stage]:
        """Stages read directly by ``consumer``'s current operation."""
        out: list = []
        for t in consumer.op.input_tensors:
            s = self.stage_map.get(t.op)
            if s is not None and s not in out:
                out.append(s)
        return out

    def reads_transitively(self, consumer: Stage, producer: Stage) -> bool:
        todo, seen = [consumer], set()
        while todo:
            s = todo.pop()
            for p in self.reads(s):
                if p is producer:
                    return True
                if id(p) not in seen:
                    seen.add(id(p))
                    todo.append(p)
        return False

    def create_group(self, outputs, inputs, include_inputs: bool = False):
        """The stages that compute ``outputs`` from ``inputs`` as one group (``schedule.group``);
        ``g.compute_at(s[C], axis)`` then places them together.  Not recorded in the trace: a
        trace replays the member placements the group made."""
        self.trace.unrecorded.append("create_group")
        return create_group(self, outputs, inputs, include_inputs)

    # dataflow rewriting ------------------------------------------------------
    @recorded("cache_read")
    def cache_read(self, tensor: Tensor, scope: str, readers) -> Tensor:
        """Copy ``tensor`` into a new stage ``tensor.scope`` read by ``readers``.

        ::

            C[i] = A[i] * 2       ->   A.local[i] = A[i]
                                       C[i] = A.local[i] * 2
        """
        _check_scope(scope)
        if isinstance(readers, (Tensor, Operation)):
            readers = [readers]
        src_stage = self[tensor]
        reader_stages = [self[r] for r in readers]
        for rs in reader_stages:
            if src_stage not in self.reads(rs):
                raise ScheduleError(
                    f"cache_read of '{tensor.name}': stage '{rs.name}' does not read it. "
                    f"Readers of {tensor.name}: {[s.name for s in self.consumers(src_stage)]}."
                )
        cache = compute(tensor.shape, lambda *i: tensor(*i), name=f"{tensor.name}.{scope}")
        for rs in reader_stages:
            new_op = _replace_reads(rs.op, {tensor: cache})
            self._swap_op(rs, new_op)
        stage = self._add_stage(Stage(cache.op, self), after=src_stage)
        stage.scope = scope
        return cache

    @recorded("cache_write")
    def cache_write(self, tensor, scope: str):
        """Compute ``tensor`` into a new stage ``C.scope``; ``C`` becomes a copy of it.

        ::

            C[i] = sum(A[i, k])    ->   C.local[i] = sum(A[i, k])
                                        C[i] = C.local[i]

        On a stage already split or fused the cache takes the layout of its loops
        (``schedule.cache_write``).  Halide: ``f.in()``.
        """
        _check_scope(scope)
        from schedule.cache_write import cache_write

        return cache_write(self, tensor, scope)

    @recorded("rfactor")
    def rfactor(self, tensor: Tensor, axis, factor_axis: int = 0):
        """Factor a reduction over leaf axis ``axis`` into a new stage ``C.rf``.

        ::

            C[i] = sum(A[i, k])          ->  C.rf[ki, i] = sum(A[i, ko*4 + ki], ko)
            (k split into ko, ki by 4)        C[i] = sum(C.rf[k.v, i], k.v)

        The factored axis becomes a data axis of ``C.rf`` (vectorizable, parallelizable).
        Halide: ``f.update().rfactor(ki, u)``.
        """
        from schedule.rfactor import rfactor

        return rfactor(self, tensor, axis, factor_axis)

    @recorded("rewrite_layout")
    def rewrite_layout(self, tensor: Tensor, reader, lengths, order) -> Tensor:
        """Copy ``tensor`` into the layout ``reader``'s loops read it in (``schedule.layout_rewrite``)."""
        from schedule.layout_rewrite import rewrite_layout

        return rewrite_layout(self, tensor, reader, lengths, order)

    def _swap_op(self, stage: Stage, new_op: ComputeOp) -> None:
        stage.op = new_op
        self.stage_map[new_op] = stage

    def consumers(self, producer: Stage) -> list[Stage]:
        return [s for s in self.stages if producer in self.reads(s)]

    def normalize(self) -> "Schedule":
        return self

    def __repr__(self) -> str:
        return "schedule(" + ", ".join(s.name for s in self.stages) + ")"


def _copy_attr(attr, cls):
    out = cls()
    out.update(attr)
    out["pragmas"] = list(attr["pragmas"])
    return out


def _check_scope(scope: str) -> None:
    if scope not in STORAGE_SCOPES:
        raise ValueError(f"unknown storage scope {scope!r}; use one of {STORAGE_SCOPES}")


def _replace_reads(op: ComputeOp, tmap: dict) -> ComputeOp:
    def rule(x):
        if isinstance(x, E.TensorRead) and x.tensor in tmap:
            new = tmap[x.tensor]
            return E.TensorRead(new, tuple(_rewrite(i, tmap) for i in x.indices), x.dtype)
        return None

    def _rewrite(e, m):
        return pre_order(e, rule)

    body = []
    for b in op.body:
        if isinstance(b, E.Reduce):
            src = tuple(pre_order(s, rule) for s in b.source)
            cond = pre_order(b.condition, rule)
            body.append((b, src, cond))
        else:
            body.append(pre_order(b, rule))
    if body and isinstance(body[0], tuple):
        b0, src, cond = body[0]
        body = [E.Reduce(b.combiner, src, b.axis, cond, b.value_index, b.dtype) for b, _, _ in body]
    return ComputeOp(op.name, op.tag, dict(op.attrs), op.axis, op.reduce_axis, tuple(body))


def _post_order(outputs: list[Operation]) -> list[Operation]:
    order: list = []
    seen: set = set()

    def visit(op):
        if id(op) in seen:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def create_schedule(ops, keep_record: bool | None = None) -> Schedule:
    """A default schedule (every stage at root, loops in axis order) for ``ops``.

    ``keep_record``: keep a copy of the schedule after each primitive (``s.schedule_record``,
    ``s.primitive_record``); by default as the enclosing ``PassContext``'s
    ``"te.keep_schedule_record"`` option says (classic TVM)."""
    if isinstance(ops, (Operation, Tensor)):
        ops = [ops]
    out = []
    for op in ops:
        if isinstance(op, Tensor):
            op = op.op
        if not isinstance(op, Operation):
            raise TypeError(f"create_schedule expects operations (C.op), got {op!r}")
        out.append(op)
    return Schedule(out, _pass_option("te.keep_schedule_record") if keep_record is None else bool(keep_record))


def _pass_option(name: str) -> bool:
    """An option of the innermost ``tessera.transform.PassContext`` (none is open unless the facade
    is loaded; the facade sits above this package, so it is looked up, not imported)."""
    transform = sys.modules.get("tessera.transform")
    return bool(transform.PassContext.current().config.get(name, False)) if transform else False


__all__ = ["Schedule", "Stage", "create_schedule", "Split", "Fuse"]
