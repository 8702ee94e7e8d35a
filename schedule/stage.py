"""``Stage``: the schedule of one operation.  Primitives validate and record.

A stage holds its leaf axes (the loops, outermost first), the relations that
derived them from the operation's axes, per-axis annotations and where the
stage is computed (root, inline, or at an axis of a consumer).  No primitive
touches the loop AST: bounds inference and ``schedule_ops`` interpret the
record.
"""

from __future__ import annotations

from te import dtype as dt
from te import expr as E
from te.simplify import simplify
from te.tensor import ComputeOp, PlaceholderOp
from te.tensor_compute import TensorComputeOp
from te.tensor_intrin import TensorIntrin
from schedule.errors import ScheduleError
from schedule.relations import Fuse, Singleton, Split
from schedule.thread_bind import check_bind
from schedule.trace import recorded

KNOWN_PRAGMAS = ("auto_unroll_max_step", "unroll_explicit", "parallel_launch_point")


# Classic TVM's memory scopes; on a CPU they all name ordinary memory (GPU code would tell them apart).
STORAGE_SCOPES = ("global", "local", "shared", "shared.dyn", "warp")


class _Text(str):
    """A string with classic TVM's ``.value``."""

    @property
    def value(self) -> str:
        return str(self)


class AttachType(str):
    """Where a stage is computed: ``"root"``, ``"inline"``, ``"scope"`` (at a consumer's axis), or a
    te.scan's ``"scan_init"`` / ``"scan_step"``.  Also equal to classic TVM's ``AttachType`` codes
    (``s[T].attach_type == 1``: kGroupRoot 1, kInline 2, kScope 4, kScanUpdate 5)."""

    CODES = {"root": 1, "inline": 2, "scope": 4, "scan_init": 5, "scan_step": 5}

    def __eq__(self, other) -> bool:
        if isinstance(other, int) and not isinstance(other, bool):
            return self.CODES.get(str(self)) == other
        return str.__eq__(self, other)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


class IterVarAttr(dict):
    """The annotations of one loop axis: ``{"kind": "vectorize" | "unroll" | ..., "pragmas":
    [(key, value)], "bind": thread axis}``; read as classic TVM's ``IterVarAttr``
    (``iter_type``, ``pragma_keys``, ``pragma_values``, ``bind_thread``) too."""

    _TYPES = {"unroll": E.IterVar.Unrolled, "vectorize": E.IterVar.Vectorized,
              "parallel": E.IterVar.Parallelized, "tensorize": E.IterVar.Tensorized}

    def __init__(self):
        super().__init__(kind=None, pragmas=[])

    @property
    def iter_type(self) -> int:
        return self._TYPES.get(self["kind"], E.IterVar.DataPar)

    @property
    def pragma_keys(self) -> list:
        return [_Text(k) for k, _ in self["pragmas"]]

    @property
    def pragma_values(self) -> list:
        return [v for _, v in self["pragmas"]]

    @property
    def bind_thread(self):
        return self.get("bind")

class Stage:
    """The schedule of one operation (classic TVM's ``s[C]``)."""

    def __init__(self, op, schedule):
        self.op = op
        self.origin_op = op
        self.schedule = schedule
        axes = list(getattr(op, "axis", ())) + list(getattr(op, "reduce_axis", ()))
        self.all_iter_vars: list[E.IterVar] = list(axes)
        self.leaf_iter_vars: list[E.IterVar] = list(axes)
        self.relations: list = []
        self.group = None  # the schedule group it belongs to (schedule.group), if any
        self.iter_var_attrs: dict = {}  # IterVar -> IterVarAttr
        self.attach_type = "root"  # root | inline | scope
        self.attach_ivar: E.IterVar | None = None
        self.attach_stage: Stage | None = None
        self.is_output = False
        self.scope = "global"
        self.storage_aligns: dict = {}  # dimension -> (factor, offset)
        self.storage_order: tuple | None = None  # the dimensions outermost first in memory (reorder_storage)
        if isinstance(op, TensorComputeOp):  # the intrinsic's loops innermost, tensorized (te.tensor_compute)
            self.all_iter_vars = op.leaf_order()
            self.leaf_iter_vars = op.leaf_order()
            attr = self.iter_var_attrs[op.tensorized_axis] = IterVarAttr()
            attr["kind"], attr["intrin"] = "tensorize", op.intrin

    @property
    def attach_type(self) -> AttachType:
        return self._attach_type

    @attach_type.setter
    def attach_type(self, kind: str) -> None:
        self._attach_type = AttachType(kind)

    def is_scheduled(self) -> bool:
        """Whether any primitive changed the stage's loops or placement (classic TVM's)."""
        reordered = list(map(id, self.leaf_iter_vars)) != list(map(id, self.all_iter_vars))
        return bool(self.relations) or self.attach_type != "root" or reordered or any(
            a.get("kind") or a.get("pragmas") or a.get("bind") for a in self.iter_var_attrs.values())

    # naming and errors ----------------------------------------------------
    @property
    def name(self) -> str:
        return self.op.name

    def _leaf_names(self) -> str:
        return "[" + ", ".join(iv.var.name for iv in self.leaf_iter_vars) + "]"

    def _error(self, what: str, fix: str) -> ScheduleError:
        return ScheduleError(
            f"In schedule for stage '{self.name}': {what}. "
            f"Leaf axes of {self.name}: {self._leaf_names()}. {fix}"
        )

    def _check_leaf(self, iv, primitive: str) -> E.IterVar:
        if not isinstance(iv, E.IterVar):
            raise TypeError(f"{primitive}: expected an IterVar of stage '{self.name}', got {iv!r}")
        if not E.contains(self.all_iter_vars, iv):
            owner = self.schedule.owner_of(iv)
            where = f"it belongs to stage '{owner.name}'" if owner else "it belongs to no stage of this schedule"
            raise self._error(
                f"cannot {primitive} axis '{iv.var.name}', {where}",
                f"Use the axes of {self.name} (s[{self.name}].op.axis, s[{self.name}].leaf_iter_vars).",
            )
        if not E.contains(self.leaf_iter_vars, iv):
            rel = next(
                (r for r in self.relations
                 if (isinstance(r, Split) and r.parent is iv)
                 or (isinstance(r, Fuse) and E.contains((r.outer, r.inner), iv))),
                None,
            )
            if isinstance(rel, Split):
                state = f"it was already split into ({rel.outer.var.name}, {rel.inner.var.name})"
            elif isinstance(rel, Fuse):
                state = f"it was already fused into {rel.fused.var.name}"
            else:
                state = "it is not a leaf axis"
            raise self._error(
                f"cannot {primitive} axis '{iv.var.name}', {state}",
                f"{primitive.capitalize()} one of the leaf axes instead.",
            )
        return iv

    # loop transformations ---------------------------------------------------
    @recorded("split")
    def split(self, parent, factor=None, nparts=None):
        """Split ``parent`` into ``(outer, inner)``; ``inner`` has extent ``factor``.

        ::

            for (x, 0, 100)          ->   for (x.outer, 0, 4)
              C[x] = ...                    for (x.inner, 0, 32)
                                              if (likely(x.outer*32 + x.inner < 100))
                                                C[x.outer*32 + x.inner] = ...

        The guard only exists for a non-dividing factor; lowering peels it into
        a tail so the main loop carries none.  Halide: ``f.split(x, xo, xi, 32)``.
        """
        self._check_leaf(parent, "split")
        if (factor is None) == (nparts is None):
            raise ValueError(
                f"split of '{parent.var.name}' in stage '{self.name}': give exactly one of "
                f"factor= and nparts=, got factor={factor!r}, nparts={nparts!r}"
            )
        value = _split_factor(factor if factor is not None else nparts, self, parent)
        ext = _extent(parent)
        # never wider than the parent
        short = isinstance(ext, E.IntImm) and isinstance(value, E.IntImm) and ext.value < value.value
        if factor is not None:
            outer_ext = None if ext is None else simplify(E.FloorDiv(ext + (value - 1), value, "int32"))
            inner_ext = ext if short else value
        else:
            outer_ext = ext if short else value
            inner_ext = None if ext is None else simplify(E.FloorDiv(ext + (value - 1), value, "int32"))
        outer = _derived(parent, ".outer", outer_ext)
        inner = _derived(parent, ".inner", inner_ext)
        rel = Split(parent, outer, inner, value if factor is not None else None, value if nparts is not None else None)
        self._replace_leaf([parent], [outer, inner], rel)
        return outer, inner

    @recorded("tile")
    def tile(self, x_parent, y_parent, x_factor, y_factor):
        """Split two axes and reorder to ``(x.outer, y.outer, x.inner, y.inner)``."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    @recorded("fuse")
    def fuse(self, *args):
        """Fuse adjacent leaf axes (outer first) into one: ``x.y.fused``.

        ::

            for (x, 0, 4)                   ->  for (x.y.fused, 0, 32)
              for (y, 0, 8)                       C[x.y.fused / 8, x.y.fused % 8] = ...
        """
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        if not args:  # TVM: a new outermost axis of extent 1 (a 0-d stage gets one loop)
            single = E.IterVar(E.Range(E.const(0), E.const(1)), E.Var("singleton"))
            self.leaf_iter_vars.insert(0, single)
            self.all_iter_vars.append(single)
            self.relations.append(Singleton(single))
            return single
        fused = self._check_leaf(args[0], "fuse")
        for iv in args[1:]:
            fused = self._fuse_pair(fused, self._check_leaf(iv, "fuse"))
        return fused

    def _fuse_pair(self, outer, inner):
        pos_o = E.index_of(self.leaf_iter_vars, outer)
        pos_i = E.index_of(self.leaf_iter_vars, inner)
        if pos_i != pos_o + 1:
            raise self._error(
                f"cannot fuse '{outer.var.name}' and '{inner.var.name}', they are not adjacent "
                f"with '{outer.var.name}' directly outside '{inner.var.name}'",
                "Reorder them next to each other first, outer axis first.",
            )
        eo, ei = _extent(outer), _extent(inner)
        ext = None if eo is None or ei is None else simplify(eo * ei)
        # a data axis fused with a reduce axis is a reduce loop (TVM): the init runs over it too
        kind = E.COMM_REDUCE if E.COMM_REDUCE in (outer.iter_type, inner.iter_type) else outer.iter_type
        fused = E.IterVar(
            E.Range(E.const(0), ext) if ext is not None else None,
            E.Var(f"{outer.var.name}.{inner.var.name}.fused"),
            kind,
        )
        self._replace_leaf([outer, inner], [fused], Fuse(outer, inner, fused))
        return fused

    @recorded("reorder")
    def reorder(self, *args):
        """Put the given leaf axes in this order, in the slots they occupy."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        for iv in args:
            self._check_leaf(iv, "reorder")
        if len(set(map(id, args))) != len(args):
            names = [iv.var.name for iv in args]
            raise self._error(f"reorder got a repeated axis in {names}", "Name each axis once.")
        slots = sorted(E.index_of(self.leaf_iter_vars, iv) for iv in args)
        for slot, iv in zip(slots, args):
            self.leaf_iter_vars[slot] = iv

    def _replace_leaf(self, old: list, new: list, rel) -> None:
        pos = E.index_of(self.leaf_iter_vars, old[0])
        for iv in old:
            del self.leaf_iter_vars[E.index_of(self.leaf_iter_vars, iv)]
        self.leaf_iter_vars[pos:pos] = new
        self.all_iter_vars.extend(new)
        self.relations.append(rel)
        # a stage computed at a replaced axis moves to the axis that iterates as often: the inner
        # part of a split, the fused axis (classic TVM's LegalizeInvalidAttach)
        moved = new[-1]
        for st in getattr(self.schedule, "stages", ()):
            if st.attach_stage is self and st.attach_ivar is not None and E.contains(old, st.attach_ivar):
                st.attach_ivar = moved

    # annotations -------------------------------------------------------------
    def _annotate(self, iv, kind: str) -> None:
        self._check_leaf(iv, kind)
        if kind in ("vectorize", "parallel") and iv.iter_type == E.COMM_REDUCE:
            raise self._error(
                f"cannot {kind} reduce axis '{iv.var.name}'",
                f"Use s.rfactor({self.name}, {iv.var.name}) to turn it into a data axis of a "
                f"new stage, then {kind} that axis.",
            )
        self.iter_var_attrs.setdefault(iv, IterVarAttr())["kind"] = kind

    @recorded("vectorize")
    def vectorize(self, iv) -> None:
        """Emit the loop as SIMD vector instructions (Halide ``f.vectorize(x)``)."""
        self._annotate(iv, "vectorize")

    @recorded("parallel")
    def parallel(self, iv) -> None:
        """Run the loop's iterations on the thread pool (Halide ``f.parallel(x)``)."""
        self._annotate(iv, "parallel")

    @recorded("unroll")
    def unroll(self, iv) -> None:
        """Replicate the loop body once per iteration (Halide ``f.unroll(x)``)."""
        self._annotate(iv, "unroll")

    def tensorize(self, iv, intrin) -> None:
        """Replace the loops from ``iv`` inwards by the tensor intrinsic ``intrin``
        (``te.decl_tensor_intrin``); see ``schedule.tensorize`` for the rewrite.  The region is
        checked against the intrinsic's declared shapes when the schedule is lowered."""
        if not isinstance(intrin, TensorIntrin):
            raise TypeError(f"tensorize of stage '{self.name}': expected a te.decl_tensor_intrin, got {intrin!r}")
        self._check_leaf(iv, "tensorize")
        if not isinstance(self.op, ComputeOp):
            raise self._error("cannot tensorize it, it is not a compute stage", "Tensorize compute stages.")
        if any(a.get("kind") == "tensorize" for a in self.iter_var_attrs.values()):
            raise self._error("it is tensorized already", "Tensorize one axis per stage.")
        self.schedule.trace.unrecorded.append("tensorize")
        self.iter_var_attrs.setdefault(iv, IterVarAttr())["kind"] = "tensorize"
        self.iter_var_attrs[iv]["intrin"] = intrin

    @recorded("bind")
    def bind(self, ivar, thread_ivar) -> None:
        """Run loop ``ivar`` as GPU thread axis ``thread_ivar`` (see ``schedule.thread_bind``)."""
        check_bind(self, ivar, thread_ivar)
        self.iter_var_attrs.setdefault(ivar, IterVarAttr())["bind"] = thread_ivar

    def set_store_predicate(self, predicate) -> None:
        """Record a store predicate (TVM's cross-thread reductions; used by GPU targets only)."""
        self.schedule.trace.unrecorded.append("set_store_predicate")
        self.store_predicate = predicate

    @recorded("pragma")
    def pragma(self, iv, key: str, value=None) -> None:
        """Attach a pragma to a loop.  The CPU code generator acts on ``KNOWN_PRAGMAS``
        (``auto_unroll_max_step``: unroll inner loops up to that many steps; ``unroll_explicit``;
        ``parallel_launch_point``); any other name is kept on the loop (printed as
        ``// pragma key = value``) and ignored by code generation."""
        self._check_leaf(iv, "pragma")
        if not isinstance(key, str) or not key:
            raise TypeError(f"pragma on stage '{self.name}': the key must be a non-empty string, got {key!r}")
        if key in ("unroll", "vectorize", "parallel"):  # classic TVM: the annotation itself
            self._annotate(iv, key)
            return
        self.iter_var_attrs.setdefault(iv, IterVarAttr())["pragmas"].append((key, value))

    @recorded("storage_align")
    def storage_align(self, axis, factor: int, offset: int) -> None:
        """Pad the stride of ``axis``'s dimension to ``offset`` modulo ``factor``."""
        if not E.contains(getattr(self.op, "axis", ()), axis):
            raise self._error(
                f"storage_align needs one of the operation's own axes, got "
                f"'{getattr(axis, 'name', axis)}'",
                f"Pass an element of s[{self.name}].op.axis.",
            )
        factor = int(factor)
        if factor <= 0:
            raise ValueError(f"storage_align of stage '{self.name}': factor must be > 0, got {factor}")
        self.storage_aligns[E.index_of(self.op.axis, axis)] = (factor, int(offset) % factor)

    @recorded("reorder_storage")
    def reorder_storage(self, *args) -> None:
        """Lay the stage's buffer out with its dimensions in this order, outermost first (Halide's
        ``Func::reorder_storage``): a register tile whose channel axis is its vector loop keeps
        that axis contiguous.  The loops are unchanged; a buffer the kernel takes as an argument
        keeps the argument's row-major layout, so lowering refuses it there."""
        if len(args) == 1 and isinstance(args[0], (list, tuple)):
            args = tuple(args[0])
        axes = list(getattr(self.op, "axis", ()))
        if len(args) != len(axes) or not all(E.contains(axes, a) for a in args) or len(set(map(id, args))) != len(args):
            raise self._error(
                f"reorder_storage needs each of the operation's own axes once, got "
                f"{[getattr(a, 'name', getattr(getattr(a, 'var', None), 'name', a)) for a in args]}",
                f"Pass a permutation of s[{self.name}].op.axis: {[iv.var.name for iv in axes]}.",
            )
        order = tuple(E.index_of(axes, a) for a in args)
        self.storage_order = None if order == tuple(range(len(axes))) else order

    @recorded("set_scope")
    def set_scope(self, scope: str) -> None:
        """Where the stage's buffer lives (classic TVM's memory scopes).  On a CPU every scope is
        memory of the same kind; the name is kept in the loop nest (``A.shared``)."""
        if scope not in STORAGE_SCOPES:
            raise ValueError(f"stage '{self.name}': unknown scope {scope!r}; use one of {STORAGE_SCOPES}")
        self.scope = scope

    # where the stage is computed ------------------------------------------
    @recorded("compute_at")
    def compute_at(self, parent, axis) -> None:
        """Compute this stage inside loop ``axis`` of consumer stage ``parent``.

        Only the region the consumer needs in one iteration of ``axis`` is
        computed there (Halide ``f.compute_at(g, x)``).
        """
        if not isinstance(parent, Stage):
            raise TypeError(f"compute_at of '{self.name}': the first argument must be a stage, s[T]")
        if parent is self:
            raise self._error("cannot compute_at itself", "Attach it to a stage that reads it.")
        if self.group is not None and not self.schedule.placing_group and not self.group.contains(parent):
            raise self._error(
                f"cannot compute_at stage '{parent.name}', which is outside its group {self.group.name}",
                f"Attach it to a stage of the group, or place the whole group with "
                f"g.compute_at(s[{parent.name}], axis).",
            )
        self._check_placeable("compute_at")
        if not isinstance(parent.op, ComputeOp):  # te.extern / te.scan: no loops to attach to
            raise self._error(
                f"cannot compute_at stage '{parent.name}' ({type(parent.op).__name__}), it has no loops",
                f"Compute '{self.name}' at root (s[{self.name}].compute_root()) or at a compute stage.",
            )
        if not isinstance(axis, E.IterVar) or not E.contains(parent.all_iter_vars, axis):
            raise ScheduleError(
                f"In schedule for stage '{self.name}': compute_at axis "
                f"'{getattr(axis, 'name', axis)}' is not an axis of stage '{parent.name}'. "
                f"Leaf axes of {parent.name}: {parent._leaf_names()}. Pick one of them."
            )
        if not E.contains(parent.leaf_iter_vars, axis):
            raise ScheduleError(
                f"In schedule for stage '{self.name}': cannot compute_at axis '{axis.var.name}' of "
                f"stage '{parent.name}', it is not a leaf axis (it was split or fused). "
                f"Leaf axes of {parent.name}: {parent._leaf_names()}. Pick one of them."
            )
        if not self.schedule.reads_transitively(parent, self):
            raise self._error(
                f"cannot compute_at stage '{parent.name}', which does not read "
                f"'{self.name}'",
                "Attach a stage only to one of its consumers.",
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, axis

    @recorded("compute_inline")
    def compute_inline(self) -> None:
        """Substitute this stage's expression into every consumer."""
        self._check_placeable("compute_inline")
        self._check_scan("compute_inline", ("init", "update"))
        if self.op.reduce_axis:
            raise self._error(
                "cannot compute_inline a reduction",
                "Keep it as a stage (compute_root or compute_at a consumer).",
            )
        if self.is_output:
            raise self._error(
                "cannot compute_inline an output of the schedule", "Only intermediate stages inline."
            )
        self.attach_type, self.attach_stage, self.attach_ivar = "inline", None, None

    @recorded("compute_root")
    def compute_root(self) -> None:
        """Compute the whole stage at the top level (the default)."""
        self._check_placeable("compute_root")
        self._check_scan("compute_root", ("init", "update", "step"))
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def _check_scan(self, primitive: str, refused: tuple) -> None:
        """Init and update stages of a te.scan write the scan's rows; its steps run per row."""
        from schedule.opaque_ops import scan_role

        role = scan_role(self.schedule, self)
        if role in refused:
            raise self._error(
                f"cannot {primitive} it, it is the {role} of a te.scan and runs inside the scan",
                "Schedule its loops (split, reorder, vectorize) or compute_at another step stage.",
            )

    def _check_placeable(self, primitive: str) -> None:
        if isinstance(self.op, PlaceholderOp):
            raise self._error(f"cannot {primitive} a placeholder", "Schedule computed stages only.")
        if not isinstance(self.op, ComputeOp):  # te.extern, te.scan: whole-buffer stages at root
            raise self._error(
                f"cannot {primitive} a {type(self.op).__name__} stage, it computes whole buffers",
                "Schedule the compute stages around it instead.",
            )

    def __repr__(self) -> str:
        return f"stage({self.name}, {self._leaf_names()})"


def _extent(iv: E.IterVar):
    return None if iv.dom is None else iv.dom.extent


def _derived(parent: E.IterVar, suffix: str, ext) -> E.IterVar:
    dom = E.Range(E.const(0), ext) if ext is not None else None
    return E.IterVar(dom, E.Var(parent.var.name + suffix), parent.iter_type)


def _split_factor(v, stage: Stage, iv) -> E.Expr:
    """A split factor: a positive int, or an integer expression of shape variables (``te.var``),
    which must then be an argument of the build and positive at run time."""
    if isinstance(v, E.Expr) and not isinstance(v, E.IntImm):
        if not dt.is_int(v.dtype):
            raise TypeError(f"split of '{iv.var.name}' in stage '{stage.name}': a symbolic factor must be an "
                            f"integer expression, got {v} of dtype {v.dtype}")
        return v
    if isinstance(v, E.IntImm):
        v = v.value
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(
            f"split of '{iv.var.name}' in stage '{stage.name}': the factor must be a positive "
            f"Python int or an integer te.var, got {v!r}"
        )
    if v <= 0:
        raise ValueError(
            f"split of '{iv.var.name}' in stage '{stage.name}': the factor must be > 0, got {v}"
        )
    return E.const(v)
