"""Build the first loop nest of a schedule (tensor-level, before flattening).

Every computed stage becomes ``Produce(name, loops)``, the loops taken from its
leaf axes in order.  A stage computed at a consumer's loop is placed, wrapped
in its ``Realize``, at the top of that loop's body.  A reduction gets an init
nest (``C[i] = identity``) just before its outermost reduce loop, with the data
loops inside that point copied as ``.init`` loops.
"""

from __future__ import annotations

from te import expr as E
from te.tensor import ComputeOp, Tensor
from te.simplify import simplify
from te.visitor import collect_vars, pre_order, substitute
from schedule import stmt as S
from schedule.bound import LoopInfo, guard_conditions, infer_bound
from schedule.errors import ScheduleError
from schedule.check_reads import check_reads
from schedule.relations import Fuse, Split
from schedule.opaque_ops import is_opaque, opaque_nest, opaque_realize, reads_scan_state
from schedule.tensorize import tensorize_stmt, tensorized
from schedule.thread_bind import bind_loop

_KIND = {"vectorize": S.VECTORIZED, "parallel": S.PARALLEL, "unroll": S.UNROLLED, "tensorize": S.SERIAL, None: S.SERIAL}


def inline_bodies(sch) -> dict:
    """Each computed, non-inlined stage -> its body with inlined stages substituted."""
    memo: dict = {}

    def expand(e: E.Expr) -> E.Expr:
        def rule(x):
            if isinstance(x, E.TensorRead):
                st = sch.stage_map.get(x.tensor.op)
                idx = tuple(expand(i) for i in x.indices)
                if st is not None and st.attach_type == "inline":
                    body = inlined(st)[x.tensor.value_index]
                    vmap = {iv.var: i for iv, i in zip(st.op.axis, idx)}
                    return substitute(body, vmap)
                if st is not None and x.tensor.op is not st.op:
                    return E.TensorRead(Tensor(st.op, x.tensor.value_index), idx, x.dtype)
                return E.TensorRead(x.tensor, idx, x.dtype)
            return None

        return pre_order(e, rule)

    def inlined(st) -> tuple:
        if st not in memo:
            out = []
            for b in st.op.body:
                if isinstance(b, E.Reduce):
                    out.append(b)
                else:
                    out.append(expand(b))
            if isinstance(st.op.body[0], E.Reduce):
                b0 = st.op.body[0]
                src = tuple(expand(s) for s in b0.source)
                cond = expand(b0.condition)
                out = [E.Reduce(b.combiner, src, b.axis, cond, b.value_index, b.dtype) for b in st.op.body]
            memo[st] = tuple(out)
        return memo[st]

    return {
        st: inlined(st)
        for st in sch.stages
        if isinstance(st.op, ComputeOp) and st.attach_type != "inline"
    }


class NestBuilder:
    def __init__(self, sch, args: set, scratch_outputs: bool = False, check: bool = True, init: bool = True):
        self.sch = sch
        self.with_init = init  # False: reductions without their initialisation (classic feature nests)
        self.scratch_outputs = scratch_outputs  # an output left out of args goes to a scratch buffer
        self.ranges: dict = {}
        for st in sch.stages:  # shape variables are extents: never negative
            for d in st.op.shape:
                for v in collect_vars(d):
                    self.ranges.setdefault(v, (0, None))
        self.bodies = inline_bodies(sch)
        for st, body in self.bodies.items():
            if check and not reads_scan_state(sch, body):  # s_state[t - 1] is valid only inside the scan
                check_reads(st, body)
        self.infos: dict[object, LoopInfo] = infer_bound(sch, self.bodies, self.ranges)
        self.args = args
        self.attached: dict = {}
        for st in sch.stages:
            if st.attach_type == "scope" and st in self.bodies:
                self.attached.setdefault((st.attach_stage, st.attach_ivar), []).append(st)

    def build(self) -> S.Stmt:
        roots = [st for st in self.sch.stages
                 if (st in self.bodies or is_opaque(st.op)) and st.attach_type == "root"]
        body = S.seq(*[self.stage_nest(st) for st in roots])
        for st in reversed(roots):
            passed = [k for k in range(st.op.num_outputs) if self.is_arg(st, k)]
            if st.is_output and not passed and not self.is_read(st) and not self.scratch_outputs:
                raise ScheduleError(
                    f"output stage '{st.name}' is not in the argument list; pass its tensor to "
                    f"lower/build"
                )
            if len(passed) < st.op.num_outputs:
                body = self.realize(st, body, skip=passed)
        return body

    def is_read(self, st) -> bool:
        """Whether another stage reads ``st`` (an output that is also an intermediate)."""
        return any(t.op in (st.op, st.origin_op) for other in self.sch.stages for t in other.op.input_tensors)

    def is_arg(self, st, k: int) -> bool:
        return (st.op, k) in self.args or (st.origin_op, k) in self.args

    def realize(self, st, body: S.Stmt, skip=()) -> S.Stmt:
        if is_opaque(st.op):  # extern and scan stages: their whole declared shapes
            return opaque_realize(st, body, skip)
        info = self.infos[st]
        for k in reversed(range(st.op.num_outputs)):
            if k in skip:
                continue
            bounds = tuple(
                E.Range(info.root_min[iv], info.alloc_extent[d]) for d, iv in enumerate(st.op.axis)
            )
            body = S.Realize(Tensor(st.op, k), bounds, st.scope, body)
        return body

    # one stage ------------------------------------------------------------
    def stage_nest(self, st) -> S.Stmt:
        if is_opaque(st.op):  # schedule.opaque_ops: extern calls and scans
            return opaque_nest(self, st)
        info = self.infos[st]
        body = self.bodies[st]
        leaves = st.leaf_iter_vars
        root_index = {iv.var: info.index(iv) for iv in list(st.op.axis) + list(st.op.reduce_axis)}
        is_reduce = isinstance(body[0], E.Reduce)
        levels = _guard_levels(guard_conditions(info, self.ranges, True, st), leaves)
        tensor_call = None
        if tensorized(st) is not None:  # schedule.tensorize: the loops from that axis are one call
            pos, intrin = tensorized(st)
            tensor_call = tensorize_stmt(st, info, pos, intrin, body, root_index, levels)
        if tensor_call is not None:  # the intrinsic initialises, or the reduction's identity does
            inner, leaves, is_reduce = tensor_call.stmt, leaves[:pos], tensor_call.identity_init
        elif is_reduce:
            inner = self.update_stmt(st, info, body, root_index)
        else:
            values = [substitute(b, root_index) for b in body]
            idx = tuple(root_index[iv.var] for iv in st.op.axis)
            inner = S.seq(*[S.Provide(Tensor(st.op, k), idx, v) for k, v in enumerate(values)])
        first_reduce = next((p for p, iv in enumerate(leaves) if iv.iter_type == E.COMM_REDUCE), None)
        nest = self.guard(inner, levels.get(len(leaves) - 1, []))
        nest = self.with_attached(st, leaves[-1], nest) if leaves else nest
        for p in reversed(range(len(leaves))):
            iv = leaves[p]
            nest = self.loop(st, iv, info, nest, index=root_index)
            if is_reduce and p == first_reduce and self.with_init:
                nest = S.seq(self.init_stmt(st, info, body, root_index, p), nest)
            if p > 0:
                nest = self.guard(nest, levels.get(p - 1, []))
                nest = self.with_attached(st, leaves[p - 1], nest)
        if is_reduce and first_reduce is None and self.with_init:
            nest = S.seq(self.init_stmt(st, info, body, root_index, len(leaves)), nest)
        nest = self.guard(nest, levels.get(-1, []))
        return S.Produce(st.name, nest)

    def leaf_loops(self, st, inner: S.Stmt) -> S.Stmt:
        """``inner`` inside the leaf loops of ``st`` (no reduction), each guard of an
        overshooting split just inside the innermost loop it names (a hybrid stage's nest)."""
        info, leaves = self.infos[st], st.leaf_iter_vars
        levels = _guard_levels(guard_conditions(info, self.ranges, True, st), leaves)
        nest = self.guard(inner, levels.get(len(leaves) - 1, []))
        for p in reversed(range(len(leaves))):
            nest = self.loop(st, leaves[p], info, nest)
            if p > 0:
                nest = self.guard(nest, levels.get(p - 1, []))
        return self.guard(nest, levels.get(-1, []))

    def with_attached(self, st, iv, body: S.Stmt) -> S.Stmt:
        """Producers computed at loop ``iv`` of ``st`` go first inside it."""
        producers = self.attached.get((st, iv), [])
        if not producers:
            return body
        out = S.seq(*[self.stage_nest(p) for p in producers], body)
        for p in reversed(producers):  # a producer passed as an argument writes there (TVM)
            out = self.realize(p, out, skip=[k for k in range(p.op.num_outputs) if self.is_arg(p, k)])
        return out

    def loop(self, st, iv, info: LoopInfo, body: S.Stmt, var=None, index=None) -> S.Stmt:
        """The loop of leaf ``iv``; an extent that names the stage's axes (a reduce axis whose
        extent depends on a data axis, ``k < indptr[i + 1] - indptr[i]``) reads them through
        ``index`` (axis -> its value from the leaf loops, after splits and fuses)."""
        attrs = st.iter_var_attrs.get(iv, {})
        extent = info.extent[iv] if index is None else simplify(substitute(info.extent[iv], index))
        if attrs.get("bind") is not None:  # schedule.thread_bind
            return bind_loop(attrs["bind"], iv.var if var is None else var, extent, body, self.ranges)
        kind = _KIND[attrs.get("kind")]
        pragmas = tuple(attrs.get("pragmas", ()))
        return S.For(iv.var if var is None else var, E.const(0), extent, kind, body, pragmas)

    def guard(self, body: S.Stmt, conds: list) -> S.Stmt:
        if not conds:
            return body
        cond = conds[0]
        for c in conds[1:]:
            cond = E.And(cond, c, "bool")
        return S.IfThenElse(E.likely(cond), body)

    # reductions ----------------------------------------------------------
    def update_stmt(self, st, info, body, root_index) -> S.Stmt:
        red = body[0]
        idx = tuple(root_index[iv.var] for iv in st.op.axis)
        outs = [Tensor(st.op, k) for k in range(len(body))]
        src = tuple(substitute(s, root_index) for s in red.source)
        olds = tuple(E.TensorRead(t, idx, t.dtype) for t in outs)
        new = red.combiner.combine(olds, src)
        if len(outs) == 1:
            upd: S.Stmt = S.Provide(outs[0], idx, new[0])
        else:
            tmps = [E.Var(f"{st.name}.reduce_temp{k}", t.dtype) for k, t in enumerate(outs)]
            upd = S.seq(*[S.Provide(t, idx, v) for t, v in zip(outs, tmps)])
            for v, e in reversed(list(zip(tmps, new))):
                upd = S.LetStmt(v, e, upd)
        cond = simplify(substitute(red.condition, root_index))
        if not (isinstance(cond, E.IntImm) and cond.value == 1):
            upd = S.IfThenElse(cond, upd)
        return upd

    def init_stmt(self, st, info, body, root_index, pos: int) -> S.Stmt:
        """``C[idx] = identity`` over the data loops inside position ``pos``."""
        red = body[0]
        data = _data_related(st)
        data_inside = [iv for iv in st.leaf_iter_vars[pos:] if id(iv) in data]
        init_vars = {iv.var: E.Var(iv.var.name + ".init") for iv in data_inside}
        idx = tuple(simplify(substitute(root_index[iv.var], init_vars)) for iv in st.op.axis)
        stmt = S.seq(*[
            S.Provide(Tensor(st.op, k), idx, ident) for k, ident in enumerate(red.combiner.identity)
        ])
        conds = [substitute(c, init_vars) for c in guard_conditions(info, self.ranges, False, st)]
        stmt = self.guard(stmt, conds)
        for iv in reversed(data_inside):
            nv = init_vars[iv.var]
            self.ranges[nv] = self.ranges.get(iv.var, (0, None))
            stmt = self.loop(st, iv, info, stmt, var=nv)
        return stmt


def _data_related(st) -> set:
    """Ids of the axes that carry a data axis's value: the data axes and all derived from them,
    a data axis fused with a reduce axis included (the init loops over those)."""
    out = {id(iv) for iv in st.op.axis}
    for rel in st.relations:
        if isinstance(rel, Split) and id(rel.parent) in out:
            out.update((id(rel.outer), id(rel.inner)))
        elif isinstance(rel, Fuse) and (id(rel.outer) in out or id(rel.inner) in out):
            out.add(id(rel.fused))
    return out


def _guard_levels(conds: list, leaves: list) -> dict:
    """Each guard goes just inside the innermost loop it names (TVM's placement).

    ::

        for (i.outer, ...) {                for (i.outer, ...) {
          for (i.inner, 0, 10) {              for (i.inner, 0, 10) {
            for (j, 0, n) {           ->        if (likely(i.outer*10 + i.inner < m)) {
              if (likely(i.outer*10             for (j, 0, n) { ... }
                   + i.inner < m)) ...

    Returns ``{leaf position: [conditions]}`` (``-1``: no loop named).
    """
    pos = {iv.var: p for p, iv in enumerate(leaves)}
    out: dict = {}
    for c in conds:
        level = max((pos[v] for v in collect_vars(c) if v in pos), default=-1)
        out.setdefault(level, []).append(c)
    return out


def schedule_ops(sch, args: set, scratch_outputs: bool = False, check: bool = True,
                 init: bool = True) -> tuple[S.Stmt, dict]:
    """The tensor-level loop nest and the constant ranges of its loop variables; an output
    stage not in ``args`` is refused, or with ``scratch_outputs`` computed into a scratch buffer.
    ``check=False`` skips the out-of-bounds read check (``check_reads``): for inspecting the nest
    of a schedule that is not compiled (classic ``ScheduleOps`` / ``InferBound``); ``lower``,
    which every build goes through, always checks.  ``init=False`` leaves reductions' initialisation
    out (the nest classic AutoTVM's features read)."""
    b = NestBuilder(sch, args, scratch_outputs, check, init)
    return b.build(), b.ranges
