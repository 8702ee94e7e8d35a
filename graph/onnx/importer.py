"""Converting an ONNX graph whose every shape is known into a graph.ir.Graph.

:func:`import_model` makes the graph inputs (the data inputs with static
shapes, declared or pinned, and one input per initializer or frozen input,
whose array goes to ``params``), converts the nodes in order, one converter
per ONNX operator (:mod:`graph.onnx.table`), and names the graph outputs as
ONNX does.  :func:`graph.onnx.frontend.from_onnx` calls it for a static model;
:mod:`graph.onnx.program` calls it per input signature for the segments of a
model whose shapes are decided at run time.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from graph.ir import Graph, Value, make_node
from graph.onnx.context import (Context, OnnxNode, attribute_value, check_tensor_size, convert_node,
                                onnx_dtype, refuse_type)
from graph.onnx.loader import default_opset
from graph.onnx.table import lookup, table_name


def import_model(proto: onnx.ModelProto, label: str, shape: dict, dtype, frozen: dict | None = None) -> tuple:
    """(Graph, params) of ``proto`` with every shape static: ``shape`` pins input extents and
    ``frozen`` (input name -> array) makes data inputs known, as initializers are (raises
    :class:`NeedsInputValue` naming an input whose value a converter needs)."""
    opset = default_opset(proto, label)
    g = proto.graph
    ctx = Context(_tensor_names(g), opset)
    inputs, params = _make_inputs(ctx, g, shape, dtype, label, dict(frozen or {}))
    used = {name for node in g.node for name in node.input} | {o.name for o in g.output}
    for node in g.node:
        _convert(ctx, node, used, label)
    outputs = [_graph_output(ctx, o.name, label) for o in g.output]
    return Graph.from_outputs(inputs, outputs, g.name or "main"), params


def _tensor_names(g: onnx.GraphProto) -> set:
    names = {v.name for v in g.input} | {t.name for t in g.initializer} | {o.name for o in g.output}
    for node in g.node:
        names.update(node.output)
    return names - {""}


# ------------------------------------------------------------------ inputs
def _make_inputs(ctx: Context, g: onnx.GraphProto, shape: dict, dtype, label: str, frozen: dict) -> tuple:
    """Graph inputs in the model's order (declared inputs, then undeclared initializers) and params
    (initializers and the ``frozen`` data inputs)."""
    inits = {t.name: t for t in g.initializer}
    data = [v for v in g.input if v.name not in inits]
    unknown = sorted(set(shape) - {v.name for v in data})
    if unknown:
        raise ValueError(f"from_onnx: shape= names {unknown}, which are not data inputs of {label}; "
                         f"data inputs: {[v.name for v in data]}")
    inputs, params = [], {}
    by_name = {v.name: v for v in g.input}
    for name in dict.fromkeys([v.name for v in g.input] + list(inits)):  # the model's order, no repeats
        if name in inits or name in frozen:
            array = np.array(frozen[name], order="C") if name in frozen else _initializer_array(inits[name], label)
            v = Value(name, tuple(int(d) for d in array.shape), str(array.dtype))
            params[name] = array
            ctx.param(v, array)
        else:
            v = _data_input(by_name[name], shape, dtype, label)
        ctx.env[name] = v
        ctx.onnx_names.add(name)
        inputs.append(v)
    return inputs, params


def _initializer_array(tensor: onnx.TensorProto, label: str) -> np.ndarray:
    if onnx_dtype(tensor.data_type) is None:
        raise refuse_type(f"initializer {tensor.name!r} of {label}", tensor.data_type)
    check_tensor_size(f"initializer {tensor.name!r} of {label}", tuple(tensor.dims), onnx_dtype(tensor.data_type))
    try:
        return np.array(numpy_helper.to_array(tensor), order="C")  # (ascontiguousarray makes 0-d 1-d)
    except (ValueError, TypeError, KeyError, OSError, RuntimeError, MemoryError) as err:  # truncated data
        raise ValueError(f"from_onnx: initializer {tensor.name!r} of {label} cannot be read "
                         f"({type(err).__name__}: {err})") from None


def _data_input(info: onnx.ValueInfoProto, shape: dict, dtype, label: str) -> Value:
    name = info.name
    kind = info.type.WhichOneof("value")
    if kind not in (None, "tensor_type") or (kind is None and name not in shape):
        raise ValueError(f"from_onnx: input {name!r} of {label} is not a tensor ({kind})")
    ttype = info.type.tensor_type
    if name in shape:
        dims = tuple(int(d) for d in shape[name])
    else:
        dims = _declared_shape(name, ttype, label)
    if isinstance(dtype, dict) and name in dtype:
        elem = str(np.dtype(dtype[name]))
    elif ttype.elem_type:
        elem = onnx_dtype(ttype.elem_type)
        if elem is None:
            raise refuse_type(f"input {name!r} of {label}", ttype.elem_type)
    else:
        elem = str(np.dtype(dtype if isinstance(dtype, str) else "float32"))
    check_tensor_size(f"input {name!r} of {label}", dims, elem)
    return Value(name, dims, elem)


def _declared_shape(name: str, ttype, label: str) -> tuple:
    if not ttype.HasField("shape"):
        raise ValueError(f"from_onnx: input {name!r} of {label} declares no shape; "
                         f"pass shape={{{name!r}: (...)}}")
    dims = []
    for d in ttype.shape.dim:
        dims.append(d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or "?"))
    if any(isinstance(d, str) for d in dims):
        raise ValueError(f"from_onnx: input {name!r} of {label} has unknown dimensions {dims}; "
                         f"pass shape={{{name!r}: (...)}} with static extents")
    return tuple(int(d) for d in dims)


# ------------------------------------------------------------------ nodes
def _convert(ctx: Context, proto: onnx.NodeProto, used: set, label: str) -> None:
    node = OnnxNode(proto.name or (proto.output[0] if proto.output else proto.op_type), proto.op_type, ctx.opset, [], list(proto.input),
                    list(proto.output), {a.name: attribute_value(a) for a in proto.attribute})
    for name in proto.input:
        if name and name not in ctx.env:
            raise node.error(f"reads {name!r}, which no earlier node, graph input or initializer of "
                             f"{label} defines")
        node.inputs.append(ctx.env[name] if name else None)
    ctx.node = node
    before = ctx.node_count()
    try:
        outs = convert_node(ctx, node, lookup(table_name(proto.op_type, proto.domain), ctx.opset).fn)  # bfloat16 in float32
    except (IndexError, KeyError, TypeError, ZeroDivisionError) as err:  # malformed attributes or ranks
        raise node.error(f"cannot be converted ({type(err).__name__}: {err}); check its attributes and "
                         f"input shapes {[None if v is None else v.shape for v in node.inputs]}") from err
    for k, name in enumerate(proto.output):
        if not name:
            continue
        if k >= len(outs) or outs[k] is None:
            if name in used:
                raise node.error(f"output {k} ({name!r}) is used, but only the first {len(outs)} "
                                 f"output(s) of {proto.op_type} are supported")
            continue
        ctx.env[name] = _adopt_name(ctx, outs[k], name, before)
    ctx.node = None


def convert_subgraph_nodes(ctx: Context, g: onnx.GraphProto) -> None:
    """Convert the nodes of a subgraph inlined into the graph being built (an If branch)."""
    used = {name for node in g.node for name in node.input} | {o.name for o in g.output}
    for node in g.node:
        _convert(ctx, node, used, f"subgraph {g.name!r}")


def _adopt_name(ctx: Context, v: Value, name: str, before: int) -> Value:
    """Give a value made for this node its ONNX tensor name (aliases keep theirs)."""
    if v.node is not None and ctx.created_since(v.node, before) and v.name not in ctx.onnx_names:
        v.name = name
        if len(v.node.outputs) == 1:
            v.node.name = name
        ctx.onnx_names.add(name)
    return v


def _graph_output(ctx: Context, name: str, label: str) -> Value:
    if name not in ctx.env:
        raise ValueError(f"from_onnx: graph output {name!r} of {label} is not produced by any node")
    v = ctx.env[name]
    if v.name != name:
        v = make_node("identity", [v], {}, name, [name]).output
    return v
