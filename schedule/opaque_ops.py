"""Loop nests of the stages that are not compute lambdas: extern calls and scans.

``schedule_ops`` hands these stages here (a hybrid script's: ``schedule.hybrid.op``).  An extern stage is one statement,
its packed call with each declared buffer replaced by the array of the
tensor it stands for::

    produce C {
      tvm_call_packed("name", tvm_stack_make_array(A[0, 0], n, l), tvm_stack_make_array(C[0, 0], n, m))
    }

(``storage_flatten`` turns ``A[0, 0]`` into the buffer's first element,
whose address codegen passes.)  A scan stage runs its init stages, then a
loop over the scan axis with its step stages inside; the init and update
stages and the state placeholders all name the scan's own output::

    produce scan {                            // s_init: (1, n), s_update: (m, n)
      s_init nest writing scan[0, i]
      for (scan.idx, 0, (m - 1)) {
        s_update nest for row scan.idx + 1, reading scan[scan.idx, i] for s_state[t - 1, i]
      }
    }

The step stages are attached to the scan when the schedule is made
(``attach_scan_groups``): bounds inference gives each of them one row of
the time axis per step (``scan_region``).
"""

from __future__ import annotations

from schedule import stmt as S
from schedule.errors import ScheduleError
from schedule.group import Group
from schedule.hybrid.op import HybridOp, hybrid_nest
from te import expr as E
from te.extern import BufferRef, ExternOp
from te.scan import ScanOp
from te.simplify import const_bounds, simplify
from te.tensor import Tensor
from te.visitor import collect_reads, pre_order

SCAN_INIT, SCAN_STEP = "scan_init", "scan_step"


def is_opaque(op) -> bool:
    return isinstance(op, (ExternOp, ScanOp, HybridOp))


# scheduling -----------------------------------------------------------------
def attach_scan_groups(sch) -> None:
    """Attach each scan's init stages and the stages of its step to the scan stage; the step's
    stages form a group (``schedule.group``), as in classic TVM."""
    for st in sch.stages:
        if not isinstance(st.op, ScanOp):
            continue
        for t in st.op.init:
            init = sch[t]
            init.attach_type, init.attach_stage, init.attach_ivar = SCAN_INIT, st, None
        group = Group(sch, f"scan {st.name}")
        sch.groups.append(group)
        for op in scan_body_ops(st.op):
            step = sch[op]
            step.attach_type, step.attach_stage, step.attach_ivar = SCAN_STEP, st, st.op.scan_axis
            step.group = group


def scan_body_ops(scan: ScanOp) -> list:
    """Operations between the state placeholders (and ``inputs``) and the updates, producers first."""
    boundary = {id(t.op) for t in list(scan.state_placeholder) + list(scan.inputs)}
    reaches: dict = {}

    def depends(op) -> bool:
        if id(op) in boundary:
            return True
        if id(op) not in reaches:
            reaches[id(op)] = any([depends(t.op) for t in op.input_tensors])  # noqa: C419 (visit all)
        return reaches[id(op)]

    order: list = []
    seen: set = set()

    def visit(op) -> None:
        if id(op) in seen or id(op) in boundary:
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        if depends(op):
            order.append(op)

    for t in scan.update:
        visit(t.op)
        if t.op not in order:
            order.append(t.op)
    return order


def scan_region(stage, ranges: dict) -> list:
    """Per dimension ``(min, extent, alloc)``: init stages whole, step stages one row per step."""
    shape = stage.op.shape
    full = [(E.const(0), s, s) for s in shape]
    if stage.attach_type == SCAN_INIT:
        return full
    scan = stage.attach_stage.op
    axis = scan.scan_axis
    ext = simplify(axis.dom.extent)
    ranges[axis.var] = (0, const_bounds(simplify(ext - 1, ranges), ranges)[1])
    if not shape:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': it is a step of scan '{scan.name}' but has no "
            f"time axis; every stage of a scan's step must have the time axis first"
        )
    row = simplify(axis.var + axis.dom.min, ranges)
    return [(row, E.const(1), E.const(1))] + full[1:]


def scan_role(sch, stage) -> str | None:
    """``"init"``, ``"update"`` or ``"step"`` (a stage between the state and the updates) of a
    scan in ``sch``, else None: such stages live inside the scan and cannot go to the root."""
    for st in sch.stages:
        if not isinstance(st.op, ScanOp):
            continue
        ops = (stage.op, stage.origin_op)
        if any(t.op in ops for t in st.op.init):
            return "init"
        if any(t.op in ops for t in st.op.update):
            return "update"
        if any(op in ops for op in scan_body_ops(st.op)):
            return "step"
    return None


def reads_scan_state(sch, body: tuple) -> bool:
    """A body that reads a scan's state (``s_state[t - 1]``): indices only valid inside the scan."""
    states = {id(t.op) for st in sch.stages if isinstance(st.op, ScanOp) for t in st.op.state_placeholder}
    if not states:
        return False
    for b in body:
        exprs = list(b.source) + [b.condition] if isinstance(b, E.Reduce) else [b]
        if any(id(r.tensor.op) in states for e in exprs for r in collect_reads(e)):
            return True
    return False


# loop nests -------------------------------------------------------------------
def opaque_nest(builder, st) -> S.Stmt:
    if isinstance(st.op, ExternOp):
        return _extern_nest(builder, st)
    if isinstance(st.op, HybridOp):
        return hybrid_nest(builder, st)
    return _scan_nest(builder, st)


def opaque_realize(st, body: S.Stmt, skip=()) -> S.Stmt:
    """Storage for the outputs of an extern or scan stage: their whole declared shapes."""
    for k in reversed(range(st.op.num_outputs)):
        if k in skip:
            continue
        t = Tensor(st.op, k)
        bounds = tuple(E.Range(E.const(0), d) for d in t.shape)
        body = S.Realize(t, bounds, st.scope, body)
    return body


def _current(sch, t: Tensor) -> Tensor:
    st = sch.stage_map.get(t.op)
    return t if st is None or st.op is t.op else Tensor(st.op, t.value_index)


def _extern_nest(builder, st) -> S.Stmt:
    op, sch = st.op, builder.sch
    tensors: dict = {}
    for buf, t in zip(op.input_placeholders, op.inputs):
        producer = sch.stage_map.get(t.op)
        if producer is not None and producer.attach_type == "inline":
            raise ScheduleError(
                f"In schedule for stage '{producer.name}': it is inlined, but extern stage "
                f"'{st.name}' reads its whole buffer. Keep '{producer.name}' as a stage "
                f"(compute_root)."
            )
        tensors[id(buf)] = _current(sch, t)
    for k, buf in enumerate(op.output_placeholders):
        tensors[id(buf)] = Tensor(op, k)

    def rule(x):
        if isinstance(x, BufferRef):
            t = tensors.get(id(x.buffer))
            if t is None:
                raise ValueError(
                    f"extern '{op.name}': the call names buffer '{x.buffer.name}', which is none of "
                    f"the lambda's ins/outs"
                )
            first = E.TensorRead(t, tuple(E.const(0) for _ in t.shape), t.dtype)
            # the callee sees the declared buffer's shape (a decl_buffer may view the tensor reshaped)
            return E.Call("tvm_stack_make_array", (first, *x.buffer.shape), "handle")
        return None

    return S.Produce(st.name, S.Evaluate(pre_order(op.body, rule)))


def _scan_nest(builder, st) -> S.Stmt:
    op, sch = st.op, builder.sch
    group = [s for s in sch.stages if s.attach_stage is st and s.attach_type in (SCAN_INIT, SCAN_STEP)]
    aliased = {id(t.op) for t in op.update}
    steps = [s for s in group if s.attach_type == SCAN_STEP]
    body = S.seq(*[builder.stage_nest(s) for s in steps])
    for s in reversed(steps):
        if id(s.op) not in aliased and id(s.origin_op) not in aliased:
            body = builder.realize(s, body)
    axis = op.scan_axis
    loop = S.For(axis.var, E.const(0), axis.dom.extent, S.SERIAL, body)
    inits = [builder.stage_nest(s) for s in group if s.attach_type == SCAN_INIT]
    return S.Produce(st.name, _alias_to_scan(S.seq(*inits, loop), op, sch))


def _alias_to_scan(nest: S.Stmt, op: ScanOp, sch) -> S.Stmt:
    """Init, update and state tensors all name output ``k`` of the scan."""
    tmap: dict = {}
    for k in range(op.num_outputs):
        for t in (op.init[k], op.update[k], op.state_placeholder[k]):
            tmap[(id(t.op), t.value_index)] = Tensor(op, k)
            cur = _current(sch, t)
            tmap[(id(cur.op), cur.value_index)] = Tensor(op, k)
    return S.rename_tensors(nest, tmap)


__all__ = [
    "SCAN_INIT",
    "SCAN_STEP",
    "attach_scan_groups",
    "is_opaque",
    "opaque_nest",
    "opaque_realize",
    "reads_scan_state",
    "scan_body_ops",
    "scan_region",
    "scan_role",
]
