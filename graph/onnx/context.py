"""What a converter sees: the ONNX node (:class:`OnnxNode`) and the graph being built (:class:`Context`).

A converter reads attributes and inputs from the node, builds graph nodes
with ``ctx.op`` (names come fresh from the ONNX output name, e.g.
``conv1/conv2d``), asks ``ctx.value`` for inputs it needs as arrays, and
returns one value per ONNX output it supports.  The importer renames the
returned values to the ONNX tensor names.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from graph.ir import Value, constant_node, fresh_name, make_node
from graph.onnx.fold import NotFoldable, fold_value
from graph.ops import INJECTIVE, get_op
from topi import narrow


def onnx_dtype(elem_type: int) -> str | None:
    """The dtype the compiler uses for ONNX element type ``elem_type``; None for one it cannot
    represent (strings, complex).  bfloat16, float8, float4 and 4-/2-bit integers
    are storage-only types (:mod:`topi.narrow`, named as ml_dtypes names them): only
    :data:`NARROW_OPS` take them."""
    from te.dtype import SCALARS

    try:
        dtype = str(np.dtype(helper.tensor_dtype_to_np_dtype(int(elem_type))))
    except (KeyError, TypeError, ValueError):
        return None
    return dtype if dtype in SCALARS or (dtype in narrow.FORMATS and narrow.ml_dtypes) else None


# The ONNX operators that take (or make) a storage-only type (bfloat16, float8, int4...);
# any other operator on one is refused at import, naming the node and the type, but for
# elementwise and data-movement operators on bfloat16, computed in float32 (convert_node).
NARROW_OPS = frozenset({"Cast", "CastLike", "Identity"})
# Operators whose converters widen a storage-only input themselves (bfloat16 in float32).
WIDENING_OPS = frozenset({"Attention", "OneHot", "Softmax"})
# Operators beyond elementwise that onnx's reference computes on bfloat16 in float32 and rounds once
# (ml_dtypes' matmul accumulates in float32, Einsum promotes to float32; a max or min is exact), so
# they widen as elementwise ones.
ROUNDED_ONCE_OPS = frozenset({"MatMul", "Einsum", "ReduceMax", "ReduceMin"})


def check_narrow_inputs(node: OnnxNode) -> None:
    """Refuse ``node`` if it reads a storage-only type and is not one of :data:`NARROW_OPS`."""
    if node.op_type in NARROW_OPS or node.op_type in WIDENING_OPS:
        return
    for name, v in zip(node.input_names, node.inputs):
        if v is not None and narrow.is_narrow(v.dtype):
            raise node.error(f"input {name!r} is {v.dtype}, a storage-only type that only "
                             f"{', '.join(sorted(NARROW_OPS))} take; Cast it to float32 first")


def convert_node(ctx: Context, node: OnnxNode, fn) -> list:
    """``fn(ctx, node)``, the converter of ``node``, computing bfloat16 in float32.

    Any operator outside :data:`NARROW_OPS` and :data:`WIDENING_OPS` that reads bfloat16
    converts as if its bfloat16 inputs were float32 (each widened by a ``narrow_cast``), and
    its float32 outputs are rounded to bfloat16 once, as onnx's reference rounds each
    operator's result; a node that also reads float32, or names its output type (``to``,
    ``dtype``), keeps float32 outputs.  An output that is a widened input (Identity-like
    converters) is that input.  Only elementwise and data-movement operators (graph ops of
    pattern at most injective) and :data:`ROUNDED_ONCE_OPS` widen: any other reduction would
    round once where onnx's reference rounds every step (Softmax rounds each step itself,
    :func:`graph.onnx.reduce.stepwise_softmax`), and is refused, as are other storage-only
    inputs (float8, int4...).
    """
    widen = (node.op_type not in NARROW_OPS and node.op_type not in WIDENING_OPS
             and any(v is not None and v.dtype == "bfloat16" for v in node.inputs))
    if not widen:
        check_narrow_inputs(node)
        return list(fn(ctx, node))
    originals = list(node.inputs)
    widened: dict = {}
    for k, v in enumerate(originals):
        if v is not None and v.dtype == "bfloat16":
            node.inputs[k] = ctx.cast(v, "float32")
            widened[id(node.inputs[k])] = v
    start = ctx.node_count()
    try:
        check_narrow_inputs(node)
        outs = list(fn(ctx, node))
    finally:
        node.inputs = originals  # the node as the model wrote it, whatever the converter did
    heavy = sorted({n.op for n in ctx.created[start:]
                    if not n.is_constant and n.op != "shape_of" and get_op(n.op).pattern > INJECTIVE}
                   if node.op_type not in ROUNDED_ONCE_OPS else ())
    if heavy:
        name = next(n for n, v in zip(node.input_names, originals) if v is not None and v.dtype == "bfloat16")
        raise node.error(f"input {name!r} is bfloat16, computed in float32 only by elementwise and "
                         f"data-movement operators (this one makes {', '.join(heavy)}); "
                         f"Cast it to float32 first")
    keep = any(v is not None and v.dtype == "float32" for v in originals) or {"to", "dtype"} & set(node.attrs)
    rounded = []
    for v in outs:
        if v is not None and id(v) in widened:
            v = widened[id(v)]
        elif v is not None and v.dtype == "float32" and not keep:
            v = ctx.cast(v, "bfloat16")
        rounded.append(v)
    return rounded


def supported_types() -> list:
    from te.dtype import SCALARS

    return list(SCALARS) + [f"{name} (storage only)" for name in narrow.FORMATS if narrow.ml_dtypes]


def onnx_type_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(int(elem_type))
    except ValueError:
        return f"unknown type {elem_type}"


def refuse_type(what: str, elem_type: int) -> ValueError:
    """The error for a tensor whose ONNX element type the compiler cannot represent."""
    code = onnx_type_name(elem_type)
    narrow_codes = {f.onnx for f in narrow.FORMATS.values()}
    missing = " without the package ml_dtypes" if narrow.ml_dtypes is None and code in narrow_codes else ""
    return ValueError(f"from_onnx: {what} has element type {code}, which the compiler "
                      f"cannot represent{missing}; supported: {', '.join(supported_types())}")


# The bytes a process can address: 47-bit user space on 64-bit machines (x86-64, AArch64 with 4 KiB pages).
ADDRESSABLE_BYTES = 1 << 47 if sys.maxsize > 2**32 else 1 << 31


def check_tensor_size(what: str, shape: tuple, dtype: str) -> None:
    """Refuse a negative extent, or a tensor larger than the machine can address (ValueError naming it)."""
    if any(int(d) < 0 for d in shape):
        raise ValueError(f"from_onnx: {what} has the negative extent in shape {tuple(shape)}")
    nbytes = math.prod(int(d) for d in shape) * np.dtype(dtype).itemsize
    if nbytes > ADDRESSABLE_BYTES:
        raise ValueError(f"from_onnx: {what} of shape {tuple(shape)} {dtype} takes {nbytes} bytes, more than "
                         f"the {ADDRESSABLE_BYTES} bytes (2^{ADDRESSABLE_BYTES.bit_length() - 1}) this machine "
                         f"can address")


def attribute_value(attr: onnx.AttributeProto):
    """An ONNX attribute as Python: str for strings, np.ndarray for tensors, lists for repeated fields."""
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
    return value


class NeedsInputValue(ValueError):
    """A converter needs the value of a data input at import time (``input_name`` names it).

    Shapes are static, so a Reshape target, Pad widths or Resize scales fed
    as graph inputs cannot be compiled; the caller may turn the input into an
    initializer and import again.
    """

    def __init__(self, message: str, input_name: str):
        super().__init__(message)
        self.input_name = input_name


@dataclass
class OnnxNode:
    """One ONNX node with its inputs resolved to graph values (None for an omitted optional input)."""

    name: str
    op_type: str
    opset: int
    inputs: list
    input_names: list
    outputs: list
    attrs: dict = field(default_factory=dict)

    def attr(self, key: str, default=None):
        return self.attrs.get(key, default)

    def required(self, key: str):
        if key not in self.attrs:
            raise self.error(f"attribute {key} is required")
        return self.attrs[key]

    def error(self, message: str) -> ValueError:
        return ValueError(f"from_onnx: node {self.name!r} ({self.op_type}, opset {self.opset}): {message}")

    def input(self, k: int, what: str = "") -> Value:
        """Input ``k``, which must be present."""
        if k >= len(self.inputs) or self.inputs[k] is None:
            label = f" ({what})" if what else ""
            raise self.error(f"input {k}{label} is required but missing")
        return self.inputs[k]

    def has_input(self, k: int) -> bool:
        return k < len(self.inputs) and self.inputs[k] is not None


class Context:
    """The graph under construction: ONNX name -> Value, parameters, fresh names, import-time folding."""

    def __init__(self, reserved_names, opset: int):
        self.env: dict = {}
        self.known: dict = {}
        self.opset = opset
        self._names = set(reserved_names)
        self._count = 0
        self.node: OnnxNode | None = None
        self.created: list = []
        self.onnx_names: set = set()

    # ------------------------------------------------------------------ names
    def fresh(self, base: str) -> str:
        name, self._count = fresh_name(base, self._names, self._count)
        return name

    def _base(self, what: str) -> str:
        prefix = self.node.outputs[0] if self.node is not None and self.node.outputs else "onnx"
        return f"{prefix}/{what}"

    def node_count(self) -> int:
        return len(self.created)

    def created_since(self, node, start: int) -> bool:
        return any(n is node for n in self.created[start:])

    # ----------------------------------------------------------------- builders
    def op(self, op: str, inputs, attrs: dict | None = None, n_out: int = 1):
        """Build graph node ``op``; returns its Value (a tuple when ``n_out > 1``).

        Errors of shape inference name the ONNX node being converted.
        """
        try:
            node = make_node(op, inputs, attrs, self.fresh(self._base(op)))
        except ValueError as err:
            if self.node is None:
                raise
            raise self.node.error(str(err)) from None
        self.created.append(node)
        for v in node.outputs:
            try:
                check_tensor_size(f"the output {v.name!r} of graph op {op!r}", v.shape, v.dtype)
            except ValueError as err:
                raise (self.node.error(str(err).split(": ", 1)[1]) if self.node else err) from None
        if len(node.outputs) != n_out:
            raise AssertionError(f"{op} gave {len(node.outputs)} outputs, expected {n_out}")
        return node.outputs[0] if n_out == 1 else node.outputs

    def const(self, array, what: str = "const") -> Value:
        node = constant_node(np.asarray(array), self.fresh(self._base(what)))
        self.created.append(node)
        return node.output

    def scalar(self, value, dtype: str) -> Value:
        return self.const(np.array(value, dtype=dtype), "scalar")

    def reshape(self, v: Value, shape) -> Value:
        shape = tuple(int(d) for d in shape)
        return v if shape == v.shape else self.op("reshape", [v], {"newshape": shape})

    def transpose(self, v: Value, axes) -> Value:
        axes = tuple(int(a) for a in axes)
        return v if axes == tuple(range(len(v.shape))) else self.op("transpose", [v], {"axes": axes})

    def reverse(self, v: Value, axis: int) -> Value:
        """``v`` with axis ``axis`` reversed (a ``strided_slice`` of step -1)."""
        n = v.shape[axis]
        return self.op("strided_slice", [v], {"begin": (n - 1,), "end": (-n - 1,), "strides": (-1,), "axes": (axis,)})

    def cast(self, v: Value, dtype: str, saturate: bool = True, round_mode: str = "up") -> Value:
        """``v`` as ``dtype``; from or to a storage-only type (bfloat16, float8, int4...) it is a
        ``narrow_cast`` (through float32, ``saturate`` and ``round_mode`` as ONNX ``Cast``)."""
        dtype = dtype if narrow.is_narrow(dtype) else str(np.dtype(dtype))
        if v.dtype == dtype:
            return v
        if narrow.is_narrow(dtype) or narrow.is_narrow(v.dtype):
            attrs = {"from": v.dtype, "dtype": dtype, "saturate": bool(saturate)}
            if round_mode != "up":
                attrs["round_mode"] = round_mode
            return self.op("narrow_cast", [v], attrs)
        return self.op("cast", [v], {"dtype": dtype})

    # ------------------------------------------------------------------ values
    def param(self, v: Value, array: np.ndarray) -> None:
        """Record ``v`` (a graph input backed by an initializer) as known at import time."""
        self.known[id(v)] = array

    def value(self, node: OnnxNode, k: int, what: str) -> np.ndarray:
        """The array of input ``k`` of ``node``, folded at import time (ValueError if it cannot be)."""
        v = node.input(k, what)
        try:
            return fold_value(v, self.known)
        except NotFoldable as err:
            message = str(node.error(f"input {k} ({what}, {node.input_names[k]!r}) must be computable at "
                                     f"import time, but it depends on the graph input {err.input_name!r}"))
            raise NeedsInputValue(message, err.input_name) from None

    def optional_value(self, node: OnnxNode, k: int, what: str) -> np.ndarray | None:
        return self.value(node, k, what) if node.has_input(k) else None

    def ints(self, node: OnnxNode, k: int, what: str) -> list:
        return [int(i) for i in np.asarray(self.value(node, k, what)).reshape(-1)]
