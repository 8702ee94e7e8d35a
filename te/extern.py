"""Extern operations: a stage computed by opaque code, usually a packed function.

``te.extern(shape, inputs, fcompute)`` declares a stage whose outputs are
written by whatever ``fcompute(ins, outs)`` returns, typically
``tir.call_packed("name", ins[0], outs[0], ...)``: a call, at run time, of
the function registered under ``name`` (``codegen.register_func``).  The
lambda receives declared buffers (``ins`` for the inputs, ``outs`` for the
outputs), not tensors: an extern stage reads and writes whole buffers.

Scheduling treats it as classic TVM does: it has no loops of its own (nothing
can be computed at it), it cannot be inlined, and its bounds are its declared
shapes.  Lowered, it is one statement::

    produce C {
      tvm_call_packed("tvm.contrib.cblas.matmul", tvm_stack_make_array(A[0], 1024, 128), ...)
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from te import dtype as dt
from te import expr as E
from te.tensor import Operation, Tensor, shape_exprs


@E.node
class BufferRef(E.Expr):
    """A declared buffer used as an argument of ``call_packed`` (a DLTensor in TVM)."""

    buffer: E.Buffer
    dtype: str = "handle"


def decl_buffer(shape, dtype: str = "float32", name: str = "buffer", data=None, strides=None,
                elem_offset=None, scope: str = "", data_alignment: int = -1, offset_factor: int = 0,
                buffer_type: str = "", axis_separators=None) -> E.Buffer:
    """A buffer of ``shape`` and ``dtype`` (classic ``tvm.tir.decl_buffer``).

    For a tensor intrinsic (``te.decl_tensor_intrin(binds=...)``): ``strides`` (default: compact)
    and ``elem_offset`` may be ``te.var``s, and ``offset_factor != 0`` makes the offset a variable;
    tensorizing binds them to the strides and the offset of the region the intrinsic covers, so
    its body can pass ``buf.strides[0]`` or ``buf.elem_offset`` to the call it makes."""
    shape = shape_exprs(shape)
    if strides is None or len(strides) == 0:
        strides = ()
    elif len(strides) != len(shape):
        raise ValueError(f"decl_buffer '{name}': {len(strides)} strides for a shape of {len(shape)} dimensions")
    else:
        strides = tuple(E.as_expr(x) for x in strides)
    if elem_offset is None and offset_factor:
        elem_offset = E.Var(f"{name}_elem_offset")
    elem_offset = None if elem_offset is None else E.as_expr(elem_offset)
    return E.Buffer(name, dt.normalize(dtype), shape, scope or "global", strides, elem_offset, int(offset_factor))


def call_packed(name: str, *args) -> E.Call:
    """Call the packed function registered as ``name`` on buffers and scalars.

    Buffers (``ins[k]``/``outs[k]`` of an extern lambda) are passed as arrays,
    integer expressions as ints and float expressions as floats.
    """
    if not isinstance(name, str):
        raise TypeError(f"call_packed: the first argument must be the function's name, got {name!r}")
    out = [E.StringImm(name)]
    for k, a in enumerate(args):
        if isinstance(a, E.Buffer):
            out.append(BufferRef(a))
        elif isinstance(a, Tensor):
            raise TypeError(
                f"call_packed('{name}'): argument {k} is the tensor '{a.name}'; inside te.extern "
                f"pass the lambda's buffers (ins[i], outs[i]) instead"
            )
        else:
            out.append(E.as_expr(a))
    return E.Call("tvm_call_packed", tuple(out), "int32")


@dataclass(eq=False, repr=False)
class ExternOp(Operation):
    """Outputs written by opaque code (``body``) from whole input buffers."""

    name: str
    tag: str
    attrs: dict
    inputs: tuple  # Tensors read
    input_placeholders: tuple  # Buffers the body names for them
    output_placeholders: tuple  # Buffers the body names for the outputs
    body: E.Expr

    @property
    def shape(self) -> tuple:
        return self.output_placeholders[0].shape

    @property
    def output_shapes(self) -> tuple:
        return tuple(b.shape for b in self.output_placeholders)

    @property
    def dtypes(self) -> tuple:
        return tuple(b.dtype for b in self.output_placeholders)

    @property
    def num_outputs(self) -> int:  # type: ignore[override]
        return len(self.output_placeholders)

    @property
    def input_tensors(self) -> list[Tensor]:
        return list(self.inputs)


def extern(
    shape,
    inputs,
    fcompute,
    name: str = "extern",
    dtype=None,
    in_buffers=None,
    out_buffers=None,
    tag: str = "",
    attrs: dict | None = None,
):
    """A stage whose outputs ``fcompute(ins, outs)`` writes (classic ``te.extern``).

    ``shape`` is one shape or a list of shapes (one per output); ``dtype``
    one dtype or a list (default: the first input's, else float32).  Returns
    a tensor, or a list of tensors for several outputs.
    """
    inputs = list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"extern '{name}': input {k} must be a Tensor, got {t!r}")
    multi = isinstance(shape, (list, tuple)) and len(shape) > 0 and isinstance(shape[0], (list, tuple))
    shapes = [shape_exprs(s) for s in shape] if multi else [shape_exprs(shape)]
    if dtype is None:
        dtype = inputs[0].dtype if inputs else "float32"
    dtypes = (
        [dt.normalize(d) for d in dtype]
        if isinstance(dtype, (list, tuple))
        else [dt.normalize(dtype)] * len(shapes)
    )
    if len(dtypes) != len(shapes):
        raise ValueError(f"extern '{name}': {len(shapes)} output shapes but {len(dtypes)} dtypes")
    ins = (
        list(in_buffers)
        if in_buffers is not None
        else [decl_buffer(t.shape, t.dtype, t.op.name) for t in inputs]
    )
    outs = (
        list(out_buffers)
        if out_buffers is not None
        else [decl_buffer(s, d, name) for s, d in zip(shapes, dtypes)]
    )
    if len(ins) != len(inputs) or len(outs) != len(shapes):
        raise ValueError(
            f"extern '{name}': give one buffer per input ({len(inputs)}) and per output ({len(shapes)})"
        )
    body = fcompute(ins, outs)
    if not isinstance(body, E.Expr):
        raise TypeError(
            f"extern '{name}': the lambda must return an expression such as "
            f"tir.call_packed(...), got {body!r}"
        )
    op = ExternOp(name, tag, dict(attrs or {}), tuple(inputs), tuple(ins), tuple(outs), body)
    tensors = [Tensor(op, k) for k in range(len(outs))]
    return tensors if multi else tensors[0]


def thread_axis(dom=None, tag: str = "", name: str = "") -> E.IterVar:
    """A GPU thread axis (``te.thread_axis("blockIdx.x")``) for ``s[C].bind``.

    Bound loops lower to ``// attr [iter_var(blockIdx.x, ...)] thread_extent``;
    only a GPU target could run them in parallel (this build has none).
    """
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise ValueError("thread_axis: give the thread tag, e.g. te.thread_axis('threadIdx.x')")
    rng = None
    if dom is not None:
        lo, hi = dom if isinstance(dom, (list, tuple)) else (0, dom)
        rng = E.Range(E.as_expr(lo), E.as_expr(hi) - E.as_expr(lo))
    return E.IterVar(rng, E.Var(name or tag), THREAD_INDEX)


THREAD_INDEX = 1  # classic TVM's kThreadIndex, between DATA_PAR (0) and COMM_REDUCE (2)

__all__ = ["THREAD_INDEX", "BufferRef", "ExternOp", "call_packed", "decl_buffer", "extern", "thread_axis"]
