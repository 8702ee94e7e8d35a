"""Tensor intrinsics: a compute declared once and a body that performs it (classic ``te.decl_tensor_intrin``).

A tensor intrinsic says "this small computation (an 8x16 GEMM update, a vector add)
can be done by this code": an external C function (``tir.call_extern``), a packed
function (``tir.call_packed``), or nothing (``fcompute`` returning None: the declared
compute is lowered in place, as loops).  ``s[C].tensorize(axis, intrin)`` replaces the
loops of ``C`` from ``axis`` inwards by the intrinsic's body, with the intrinsic's
buffers bound to the regions those loops cover (``schedule.tensorize``)::

    for (i.outer, 0, 8)                         for (i.outer, 0, 8)
      for (j.outer, 0, 4)          tensorize       for (j.outer, 0, 4)
        for (i.inner, 0, 16)        (i.inner)        gemm_update(&C[i.outer*16, j.outer*8],
          for (j.inner, 0, 8) ...     ->                         &A[...], &B[...], ...)

``fcompute(ins, outs)`` receives the buffers (``binds`` or compact ones) and returns a
statement or call; for a reduction it may return ``(body, reset, update)``: ``body``
computes the whole result, ``reset`` zeroes the output, ``update`` accumulates into it
(used when reduce loops stay outside the tensorized region).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from te import expr as E
from te.extern import decl_buffer
from te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor


@dataclass(eq=False)
class TensorIntrin:
    """A declared compute ``op`` and the ``fcompute`` that performs it on buffers."""

    name: str
    op: ComputeOp
    fcompute: object
    inputs: list  # the declared compute's input tensors, in the order fcompute's ins come
    buffers: dict = field(default_factory=dict)  # id(Tensor of the declaration) -> Buffer
    scalar_params: list = field(default_factory=list)

    def buffer(self, t: Tensor) -> E.Buffer:
        return self.buffers[_key(t)]

    def body(self, scalar_values=None):
        """``fcompute(ins, outs)`` (with the scalar parameters' values, if any), as returned."""
        ins = [self.buffer(t) for t in self.inputs]
        outs = [self.buffer(self.op.output(k)) for k in range(self.op.num_outputs)]
        if self.scalar_params:
            return self.fcompute(ins, outs, list(scalar_values or self.scalar_params))
        return self.fcompute(ins, outs)

    def __call__(self, *regions, reduce_axis=None, scalar_inputs=None) -> "TensorIntrinCall":
        """``intrin(A[i, 0:16], B[i, 0:16])`` inside a compute lambda: the intrinsic applied to those
        regions (``te.tensor_compute``); ``reduce_axis``: loops around it whose iterations it
        accumulates over (its reset/update); ``scalar_inputs``: values of its scalar parameters."""
        if len(regions) != len(self.inputs):
            raise TypeError(f"tensor intrinsic '{self.name}' takes {len(self.inputs)} regions "
                            f"({[t.name for t in self.inputs]}), got {len(regions)}")
        axes = () if reduce_axis is None else (reduce_axis,) if isinstance(reduce_axis, E.IterVar) else tuple(reduce_axis)
        for a in axes:
            if not isinstance(a, E.IterVar) or a.iter_type != E.COMM_REDUCE:
                raise TypeError(f"tensor intrinsic '{self.name}': reduce_axis takes te.reduce_axis axes, got {a!r}")
        return TensorIntrinCall(self, tuple(regions), axes, tuple(scalar_inputs or ()))

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name}, {self.op.name}{tuple(int(d) for d in self.op.output(0).shape)})"


@dataclass(eq=False)
class TensorIntrinCall:
    """A tensor intrinsic applied to tensor regions (what a compute lambda returns to make a
    ``TensorComputeOp``)."""

    intrin: TensorIntrin
    regions: tuple  # Tensor or TensorSlice per intrinsic input
    reduce_axis: tuple
    scalar_inputs: tuple


def _key(t: Tensor) -> tuple:
    return (id(t.op), t.value_index)


def decl_tensor_intrin(op: Operation, fcompute, name: str = "tensor_intrin", binds: dict | None = None,
                       scalar_params=None, default_buffer_params: dict | None = None) -> TensorIntrin:
    """Declare a tensor intrinsic computing ``op`` (a ``te.compute`` over placeholders) by ``fcompute``.

    ``binds``: tensor -> buffer (``te.decl_buffer``, with strides or an offset that tensorizing
    fills in); tensors without one get a compact buffer.  ``scalar_params``: variables the body
    takes, given values at ``tensorize``."""
    if isinstance(op, Tensor):
        op = op.op
    if not isinstance(op, ComputeOp):
        raise TypeError(f"decl_tensor_intrin '{name}': op must be a te.compute operation, got {type(op).__name__}")
    if not callable(fcompute):
        raise TypeError(f"decl_tensor_intrin '{name}': fcompute must be a function of (ins, outs)")
    inputs = list(op.input_tensors)
    for t in inputs:
        if not isinstance(t.op, PlaceholderOp):
            raise ValueError(f"decl_tensor_intrin '{name}': the declared compute must read placeholders only; "
                             f"'{t.name}' is computed")
    binds = dict(binds or {})
    buffers = {}
    for t in inputs + [op.output(k) for k in range(op.num_outputs)]:
        buf = next((b for tt, b in binds.items() if tt.op is t.op and tt.value_index == t.value_index), None)
        if buf is None:
            buf = decl_buffer(t.shape, t.dtype, t.name, **(default_buffer_params or {}))
        elif len(buf.shape) != len(t.shape):
            raise ValueError(f"decl_tensor_intrin '{name}': buffer '{buf.name}' has {len(buf.shape)} dimensions, "
                             f"tensor '{t.name}' {len(t.shape)}")
        buffers[_key(t)] = buf
    return TensorIntrin(name, op, fcompute, inputs, buffers, list(scalar_params or []))


__all__ = ["TensorIntrin", "TensorIntrinCall", "decl_tensor_intrin"]
