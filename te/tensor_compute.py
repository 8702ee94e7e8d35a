"""A compute whose inner dimensions are a tensor intrinsic's output (classic ``TensorComputeOp``).

::

    gemv = te.decl_tensor_intrin(z.op, ...)       # z[s] = sum(w[s, r] * x[r], r): 16 x 16
    k = te.reduce_axis((0, L // 16), "k")
    C = te.compute((N, M // 16, 16),
                   lambda i, j: gemv(A[i, k, 0:16, 0:16], B[j, k, 0:16], reduce_axis=k))

is ``C[i, j, s] = sum(A[i, k, s, r] * B[j, k, r], (k, r))``: the intrinsic's declared compute
over the regions (each slice's start added to the intrinsic's index), with the call's
``reduce_axis`` around it.  The lambda's axes (``i``, ``j``) and ``k`` are scheduled as usual;
the intrinsic's own loops (``s``, ``r``) stay innermost and are tensorized
(``schedule.tensorize``): one call of the intrinsic per ``(i, j, k)``, its buffers bound to the
regions, its ``reset`` at ``k == 0`` and its ``update`` after (or, with no body of its own, the
declared compute lowered in place)::

    for (i, 0, N)
      for (j, 0, M / 16)
        for (k, 0, L / 16)
          if (k == 0) fill_zero(&C[i, j, 0], 16)
          gemv_add(&A[i, k, 0, 0], &B[j, k, 0], &C[i, j, 0], 16, 16)
"""

from __future__ import annotations

from dataclasses import dataclass

from te import expr as E
from te.simplify import simplify
from te.tensor import ComputeOp, Tensor, TensorSlice
from te.tensor_intrin import TensorIntrinCall
from te.visitor import pre_order, substitute


@dataclass(eq=False, repr=False)
class TensorComputeOp(ComputeOp):
    """A ``ComputeOp`` whose last dimensions (and innermost reductions) are ``intrin``'s."""

    intrin: object = None
    schedulable_ndim: int = 0
    call_reduce_axis: tuple = ()

    def leaf_order(self) -> list:
        """The initial loops: the lambda's axes, the call's reduce axes, then the intrinsic's."""
        n = self.schedulable_ndim
        inner_reduce = [iv for iv in self.reduce_axis if not E.contains(self.call_reduce_axis, iv)]
        return list(self.axis[:n]) + list(self.call_reduce_axis) + list(self.axis[n:]) + inner_reduce

    @property
    def tensorized_axis(self) -> E.IterVar:
        """The outermost of the intrinsic's loops: where the stage is tensorized."""
        return self.leaf_order()[self.schedulable_ndim + len(self.call_reduce_axis)]


def tensor_compute(shape: tuple, axis: tuple, call: TensorIntrinCall, name: str, tag: str, attrs: dict) -> Tensor:
    """``te.compute(shape, lambda *axis: intrin(regions...))`` (module doc)."""
    intrin, decl = call.intrin, call.intrin.op
    where = f"compute '{name}': tensor intrinsic '{intrin.name}'"
    if decl.num_outputs != 1:
        raise ValueError(f"{where} has {decl.num_outputs} outputs; a tensor compute takes one")
    if call.scalar_inputs:
        raise ValueError(f"{where}: scalar_inputs are not supported in a tensor compute; tensorize a stage instead")
    n = len(axis)
    inner_shape = tuple(decl.output(0).shape)
    if not _same_shape(shape[n:], inner_shape):
        raise ValueError(f"{where}: the shape's last {len(shape) - n} dimensions {tuple(shape[n:])} must be the "
                         f"intrinsic's output shape {inner_shape} (one lambda parameter per other dimension)")
    sub = tuple(E.IterVar(E.Range(E.const(0), d), E.Var(iv.var.name)) for iv, d in zip(decl.axis, shape[n:]))
    inner_red = tuple(E.IterVar(iv.dom, E.Var(iv.var.name), E.COMM_REDUCE) for iv in decl.reduce_axis)
    vmap = {iv.var: s.var for iv, s in zip(decl.axis, sub)}
    vmap.update({iv.var: r.var for iv, r in zip(decl.reduce_axis, inner_red)})
    reads = {id(p.op): _region(r, p, where) for r, p in zip(call.regions, intrin.inputs)}

    def rule(x):
        if isinstance(x, E.TensorRead) and id(x.tensor.op) in reads:
            tensor, fixed, starts = reads[id(x.tensor.op)]
            inner = iter(substitute(i, vmap) for i in x.indices)
            idx = tuple(f if s is None else simplify(s + next(inner)) for f, s in zip(fixed, starts))
            return E.TensorRead(tensor, idx, x.dtype)
        if isinstance(x, E.Var) and x in vmap:
            return vmap[x]
        return None

    body = decl.body[0]
    if isinstance(body, E.Reduce):
        source = tuple(pre_order(s, rule) for s in body.source)
        cond = pre_order(body.condition, rule)
        axes = call.reduce_axis + inner_red
        new = E.Reduce(body.combiner, source, axes, cond, body.value_index, body.dtype)
    elif call.reduce_axis:
        raise ValueError(f"{where} declares no reduction, so reduce_axis has nothing to accumulate")
    else:
        new, axes = pre_order(body, rule), ()
    op = TensorComputeOp(name, tag, attrs, tuple(axis) + sub, axes, (new,), intrin=intrin, schedulable_ndim=n,
                         call_reduce_axis=call.reduce_axis)
    return Tensor(op, 0)


def _region(region, placeholder: Tensor, where: str) -> tuple:
    """``(tensor, fixed index per dimension or None, slice start per dimension or None)``."""
    if isinstance(region, Tensor):
        tensor, idx = region, ()
    elif isinstance(region, TensorSlice):
        tensor, idx = region.tensor, tuple(region.indices)
    else:
        raise TypeError(f"{where}: a region is a tensor or a slice of one (A[i, 0:16]), got {region!r}")
    idx = idx + (slice(None),) * (len(tensor.shape) - len(idx))
    fixed, starts, extents = [], [], []
    for d, i in enumerate(idx):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise ValueError(f"{where}: region {region!r} has a step; regions are contiguous")
            lo = E.as_expr(0 if i.start is None else i.start)
            hi = E.as_expr(tensor.shape[d] if i.stop is None else i.stop)
            fixed.append(None)
            starts.append(lo)
            extents.append(simplify(hi - lo))
        else:
            fixed.append(E.as_expr(i))
            starts.append(None)
    if not _same_shape(extents, tuple(placeholder.shape)):
        shown = ", ".join(f"{'' if i.start is None else i.start}:{'' if i.stop is None else i.stop}"
                          if isinstance(i, slice) else str(i) for i in idx)
        raise ValueError(f"{where}: region {tensor.name}[{shown}] has extents {[str(e) for e in extents]}, "
                         f"the intrinsic's input '{placeholder.name}' shape {tuple(placeholder.shape)}")
    return tensor, fixed, starts


def _same_shape(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = simplify(E.as_expr(x)), simplify(E.as_expr(y))
        if not (x is y or (isinstance(x, E.IntImm) and isinstance(y, E.IntImm) and x.value == y.value)):
            return False
    return True


__all__ = ["TensorComputeOp", "tensor_compute"]
