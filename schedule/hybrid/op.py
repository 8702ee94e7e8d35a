"""The operation a hybrid script makes, and its loop nest under a schedule.

A :class:`HybridOp` holds the parsed body (the loop AST of :mod:`schedule.stmt`) written
over placeholders of its outputs.  Its outermost perfectly nested serial loops, whose
extents do not depend on one another, are its ``axis``: a schedule splits, fuses, reorders
and annotates them as a compute stage's, and the body below them is put inside the leaf
loops with each axis variable replaced by its value::

    op.axis = [i, j]; s[c].split(i, 4)          for (i.outer, 0, 16) {
                                        ->        for (i.inner, 0, 4) {
    for (i, 0, 64) { for (j, 0, 64) {               for (j, 0, 64) {
      c[i, j] = a[i]*b[j] } }                         c[i.outer*4 + i.inner, j] = ...

Like an extern stage, it reads and writes whole buffers: its outputs are realized at
root over their declared shapes, and nothing is computed at its loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from te import expr as E
from te.tensor import Operation, Tensor
from te.visitor import collect_vars, substitute
from schedule import stmt as S
from schedule.errors import ScheduleError


@dataclass(eq=False, repr=False)
class HybridOp(Operation):
    """Outputs written by a hybrid script's loop nest (classic ``tvm.te.HybridOp``)."""

    name: str
    tag: str
    attrs: dict
    inputs: tuple  # tensors the body reads or writes that are not its own
    outputs: tuple  # placeholders the body writes for the outputs, in return order
    axis: list  # IterVars of the outer loops a schedule may transform
    body: S.Stmt

    reduce_axis = ()

    @property
    def shape(self) -> tuple:
        return tuple(self.outputs[0].shape)

    @property
    def output_shapes(self) -> tuple:
        return tuple(tuple(t.shape) for t in self.outputs)

    @property
    def dtypes(self) -> tuple:
        return tuple(t.dtype for t in self.outputs)

    @property
    def num_outputs(self) -> int:  # type: ignore[override]
        return len(self.outputs)

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self.inputs)


def outer_axes(body: S.Stmt) -> list:
    """The IterVars of ``body``'s outer perfectly nested serial loops (their extents free of
    the loops' own variables)."""
    axes: list = []
    s = body
    while isinstance(s, S.For) and s.kind == S.SERIAL and not s.pragmas:
        if any(E.contains([iv.var for iv in axes], v) for v in collect_vars(s.extent)):
            break
        axes.append(E.IterVar(E.Range(s.min, s.extent), s.loop_var, E.DATA_PAR))
        s = s.body
    return axes


def hybrid_region(op: HybridOp) -> list:
    """``(min, extent, alloc)`` of each axis, for bounds inference: its whole loop."""
    return [(iv.dom.min, iv.dom.extent, iv.dom.extent) for iv in op.axis]


def hybrid_nest(builder, st) -> S.Stmt:
    """``Produce(name, leaf loops { body below the axes })``, the outputs renamed to the op's."""
    op, sch = st.op, builder.sch
    attached = [p.name for (target, _), ps in builder.attached.items() if target is st for p in ps]
    if attached:
        raise ScheduleError(
            f"In schedule for stage '{attached[0]}': it is computed at a loop of hybrid stage "
            f"'{st.name}', which reads whole buffers. Compute '{attached[0]}' at root.")
    nest = op.body
    if op.axis:
        for _ in op.axis:
            nest = nest.body
        info = builder.infos[st]
        index = {iv.var: info.index(iv) for iv in op.axis}
        nest = builder.leaf_loops(st, S.map_stmt_exprs(nest, lambda e: substitute(e, index)))
    return S.Produce(st.name, _rename_io(nest, op, sch))


def _rename_io(nest: S.Stmt, op: HybridOp, sch) -> S.Stmt:
    """The output placeholders become the op's outputs; inputs the schedule replaced (a cache
    read) become their replacements."""
    tmap = {(id(t.op), t.value_index): Tensor(op, k) for k, t in enumerate(op.outputs)}
    for t in op.inputs:
        st = sch.stage_map.get(t.op)
        if st is not None and st.attach_type == "inline":
            raise ScheduleError(
                f"In schedule for stage '{st.name}': it is inlined, but hybrid stage "
                f"'{op.name}' reads its whole buffer. Keep '{st.name}' as a stage (compute_root).")
        if st is not None and st.op is not t.op:
            tmap[(id(t.op), t.value_index)] = Tensor(st.op, t.value_index)
    return S.rename_tensors(nest, tmap)


__all__ = ["HybridOp", "hybrid_nest", "hybrid_region", "outer_axes"]
