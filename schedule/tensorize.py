"""Tensorize: the loops of a stage from one axis inwards become a tensor intrinsic's body.

``s[C].tensorize(yi, intrin)`` (``te.tensor_intrin``): the loops under ``yi`` must
cover a box of ``C`` (every loop of constant extent, no guard inside) whose shape,
and the shapes of the regions of its inputs they read, match the intrinsic's
declared compute (dimensions of extent 1 ignored).  The intrinsic's buffers are
then bound to those regions: ``buf.access_ptr(...)`` is the address of the
region's first element, ``buf.elem_offset`` its flat offset, ``buf.strides[k]``
the real strides, a buffer passed to ``call_packed`` an array over the region, and a
``Load``/``Store`` of the buffer (vector index ``ramp(k, 1, n)``: ``n`` contiguous elements
from ``k``) reads or writes the region::

    for (i, 0, 64)                               for (i, 0, 64)
      for (j.outer, 0, 4)          ->              for (j.outer, 0, 4)
        C[i, j.outer*16 + j.inner] = ...              vadd(&A[i, j.outer*16], &B[...], &C[...], 16)
                                                       // the 16 iterations of j.inner, in one call

A reduction whose reduce loops are all under the axis takes the intrinsic's
``body``; one with reduce loops outside takes ``reset`` (on their first
iteration) and ``update``.  An intrinsic that gives ``update`` and no ``reset``
(``(body, None, update)``) accumulates into an output that the reduction's identity
initialises, as an untensorized reduction's (zeros stored before the first reduce
loop): no branch on the first iteration inside the reduction, so a register tile
stays in registers (``topi.x86.int8_dot``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from schedule import stmt as S
from schedule.errors import ScheduleError
from te import expr as E
from te.extern import BufferRef
from te.simplify import simplify
from te.visitor import pre_order, substitute


def tensorized(st) -> tuple | None:
    """``(leaf position, intrinsic)`` of the stage's tensorized axis, or None."""
    for p, iv in enumerate(st.leaf_iter_vars):
        attrs = st.iter_var_attrs.get(iv)
        if attrs is not None and attrs.get("kind") == "tensorize":
            return p, attrs["intrin"]
    return None


class TensorCall(NamedTuple):
    """The statement of a tensorized region; ``identity_init``: the output must be initialised to
    the reduction's identity before the reduce loops outside (the intrinsic gave no reset)."""

    stmt: S.Stmt
    identity_init: bool = False


def tensorize_stmt(st, info, pos: int, intrin, body: tuple, root_index: dict, guard_levels: dict) -> TensorCall | None:
    """The intrinsic's statement for one iteration of the loops outside ``pos`` (None: the
    intrinsic has no body of its own, so the declared compute is lowered as loops)."""
    leaves = st.leaf_iter_vars
    inner, axis = leaves[pos:], leaves[pos]
    where = f"tensorize at axis '{axis.var.name}'"
    for iv in inner:
        if not isinstance(info.extent[iv], E.IntImm):
            raise ScheduleError(f"In schedule for stage '{st.name}': {where}: loop '{iv.var.name}' under it has "
                                f"extent {info.extent[iv]}, not a constant. Split with constant factors.")
    if any(guard_levels.get(p) for p in range(pos, len(leaves))):
        raise ScheduleError(f"In schedule for stage '{st.name}': {where}: the loops under it do not cover whole "
                            f"tiles (a split does not divide its axis), so one call would run past the tensor. "
                            f"Split by a factor that divides the extent.")
    zero = {iv.var: E.const(0) for iv in inner}
    top = {iv.var: E.const(info.extent[iv].value - 1) for iv in inner}

    def region(indices) -> tuple:
        starts = tuple(simplify(substitute(i, zero)) for i in indices)
        ext = []
        for i, s0 in zip(indices, starts):
            e = simplify(substitute(i, top) - s0 + 1)
            if not isinstance(e, E.IntImm):
                raise ScheduleError(f"In schedule for stage '{st.name}': {where}: the region it covers has a "
                                    f"dimension of extent {e}, not a constant")
            ext.append(e.value)
        return starts, tuple(ext)

    out_idx = tuple(root_index[iv.var] for iv in st.op.axis)
    red_idx = tuple(root_index[iv.var] for iv in st.op.reduce_axis)
    out_starts, out_ext = region(out_idx)
    _, red_ext = region(red_idx)
    covered = math.prod(e for e in out_ext + red_ext)
    if covered != math.prod(info.extent[iv].value for iv in inner):
        raise ScheduleError(f"In schedule for stage '{st.name}': {where}: the loops under it do not map one to one "
                            f"onto a box of the output and reduce axes (fused axes?). Tensorize at an axis whose "
                            f"inner loops are splits of the original axes.")
    reads = _reads(body, root_index)
    decl = intrin.op
    declared_out = tuple(int(d) for d in decl.output(0).shape)
    declared_red = tuple(int(iv.dom.extent) for iv in decl.reduce_axis)
    problems = []
    if _squeeze(out_ext) != _squeeze(declared_out):
        problems.append(f"output {st.name}{list(out_ext)} against {decl.name}{list(declared_out)}")
    if _squeeze(red_ext) != _squeeze(declared_red):
        problems.append(f"reduction over {list(red_ext)} against {list(declared_red)}")
    if len(reads) != len(intrin.inputs):
        problems.append(f"it reads {len(reads)} tensors ({[t.name for t, _ in reads]}), the intrinsic "
                        f"{len(intrin.inputs)} ({[t.name for t in intrin.inputs]})")
    bound = {}
    for (t, idx), decl_t in zip(reads, intrin.inputs):
        starts, ext = region(idx)
        want = tuple(int(d) for d in decl_t.shape)
        if _squeeze(ext) != _squeeze(want):
            problems.append(f"input {t.name}{list(ext)} against {decl_t.name}{list(want)}")
        bound[id(intrin.buffer(decl_t))] = (t, starts, ext)
    if problems:
        raise ScheduleError(f"In schedule for stage '{st.name}': {where}: the loops under it do not match tensor "
                            f"intrinsic '{intrin.name}': " + "; ".join(problems) +
                            f". Split so that the loops from '{axis.var.name}' inwards cover exactly the "
                            f"intrinsic's shapes.")
    out_tensor = st.op.output(0)
    bound[id(intrin.buffer(decl.output(0)))] = (out_tensor, out_starts, out_ext)
    made = intrin.body()
    if made is None:
        return None
    outer_reduce = [iv for iv in leaves[:pos] if iv.iter_type == E.COMM_REDUCE]
    buffers = list(intrin.buffers.values())
    if isinstance(made, tuple):
        full, reset, update = (tuple(made) + (None, None, None))[:3]
    else:
        full, reset, update = made, None, None
    if outer_reduce and reset is None and update is not None:
        return TensorCall(_bind(_stmt(update), buffers, bound), True)
    if outer_reduce or (full is None and update is not None):
        if reset is None or update is None:
            raise ScheduleError(f"In schedule for stage '{st.name}': {where}: reduce loops "
                                f"{[iv.var.name for iv in outer_reduce]} stay outside it, and intrinsic "
                                f"'{intrin.name}' gives no (body, reset, update) to accumulate over them. "
                                f"Tensorize outside the reduce loops or give reset and update.")
        first = E.const(True)
        for iv in outer_reduce:
            c = E.EQ(iv.var, E.const(0), "bool")
            first = c if _true(first) else E.And(first, c, "bool")
        stmt = S.seq(S.IfThenElse(first, _stmt(reset)), _stmt(update)) if outer_reduce else \
            S.seq(_stmt(reset), _stmt(update))
    else:
        stmt = _stmt(full)
    return TensorCall(_bind(stmt, buffers, bound))


def _true(c) -> bool:
    return isinstance(c, E.IntImm) and c.value == 1


def _squeeze(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def _reads(body: tuple, root_index: dict) -> list:
    """``[(tensor, indices in leaf variables)]``, one per tensor read, in order of first read."""
    out, seen = [], set()
    for b in body:
        for src in (b.source if isinstance(b, E.Reduce) else (b,)):
            def visit(x):
                if isinstance(x, E.TensorRead) and id(x.tensor.op) not in seen:
                    seen.add(id(x.tensor.op))
                    out.append((x.tensor, tuple(substitute(i, root_index) for i in x.indices)))
                return None
            pre_order(src, visit)
    return out


def _stmt(x) -> S.Stmt:
    if isinstance(x, S.Stmt):
        return x
    if isinstance(x, E.Expr):
        return S.Evaluate(x)
    raise TypeError(f"a tensor intrinsic's body must be a statement or a call, got {x!r}")


def _bind(stmt: S.Stmt, buffers: list, bound: dict) -> S.Stmt:
    """The intrinsic's buffers, offsets and strides replaced by those of the regions."""
    vmap = {}
    for buf in buffers:
        t, starts, ext = bound[id(buf)]
        first = E.TensorRead(t, starts, t.dtype)
        if isinstance(buf.elem_offset, E.Var):
            vmap[buf.elem_offset] = _index_of(first)
        dims = _dims(buf.shape, ext)
        for k, s in enumerate(buf.strides):
            if isinstance(s, E.Var):
                step = tuple(E.const(1) if d == dims[k] else E.const(0) for d in range(len(starts)))
                nxt = E.TensorRead(t, tuple(simplify(a + b) for a, b in zip(starts, step)), t.dtype)
                vmap[s] = _index_of(nxt) - _index_of(first)
    by_id = {id(b): b for b in buffers}

    def rule(x):
        if isinstance(x, E.Call) and x.name == "tvm_access_ptr" and isinstance(x.args[0], E.BufferPointer):
            buf = x.args[0].buffer
            if id(buf) in bound:
                t, starts, _ = bound[id(buf)]
                return E.Call("tvm_address_of", (E.TensorRead(t, starts, t.dtype), rule_sub(x.args[1])), "handle")
        if isinstance(x, BufferRef) and id(x.buffer) in by_id:
            t, starts, _ = bound[id(x.buffer)]
            return E.Call("tvm_stack_make_array", (E.TensorRead(t, starts, t.dtype), *x.buffer.shape), "handle")
        if isinstance(x, E.Load) and id(x.buffer) in bound:  # a vload of the region: its elements from k
            t, starts, _ = bound[id(x.buffer)]
            return E.Call("tvm_load_at", (E.TensorRead(t, starts, t.dtype), rule_sub(_first(x.index))), x.dtype)
        if isinstance(x, E.Var) and x in vmap:
            return vmap[x]
        return None

    def rule_sub(e):
        return pre_order(e, rule)

    def store(x):
        if isinstance(x, S.Store) and id(x.buffer) in bound:
            t, starts, _ = bound[id(x.buffer)]
            return S.Evaluate(E.Call("tvm_store_at", (E.TensorRead(t, starts, t.dtype), _first(x.index), x.value),
                                     "int32"))
        return None

    return S.transform(stmt, store, rule_sub)


def _first(index: E.Expr) -> E.Expr:
    """The first element a (vector) index addresses; a vector access must be contiguous."""
    if isinstance(index, E.Ramp):
        if not (isinstance(index.stride, E.IntImm) and index.stride.value == 1):
            raise ValueError(f"tensorize: a tensor intrinsic's vector access {index} must be contiguous")
        return index.base
    return index


def _index_of(read: E.TensorRead) -> E.Expr:
    return E.Call("tvm_index_of", (read,), "int32")


def _dims(decl_shape, ext) -> list:
    """The region dimension each declared dimension stands for: matched from the last, a
    region dimension of extent 1 that the declaration lacks skipped."""
    decl = [int(d) for d in decl_shape]
    out, r = [0] * len(decl), len(ext) - 1
    for k in reversed(range(len(decl))):
        while r > 0 and ext[r] == 1 and decl[k] != 1:
            r -= 1
        out[k] = max(r, 0)
        r -= 1
    return out


__all__ = ["tensorize_stmt", "tensorized"]
