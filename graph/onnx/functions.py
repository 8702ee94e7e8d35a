"""Operators without a converter whose ONNX schema defines them as a function: inlined before import.

ONNX defines many newer operators (LinearAttention, CausalConvWithState...)
by a *function body*, a subgraph of older operators, fixed or built for the
node's attributes and input types (a context-dependent function).  A node of
such an operator that has neither a converter nor a host implementation is
replaced by its body, as the backend tests' ``_expanded`` models spell it::

    y = CausalConvWithState(x, w)      ->   %fn0/pad = Pad(x, ...)   ...   y = Slice(%fn0/conv, ...)

Every name inside the body (its subgraphs included) is prefixed with the
node's name, so two expansions never collide; the body's inputs and outputs
are the node's.  Input types come from ONNX shape inference of the model.
The same holds for the operators of the ``ai.onnx.preview`` domain
(FlexAttention, whose ``score_mod``/``prob_mod`` subgraphs the body calls), at
the version the model imports of that domain.  The random generators run on
the host (:mod:`graph.onnx.random_ops`, never their bodies), and the quantization
operators, which have converters of their own (issue 50), are never expanded.
"""

from __future__ import annotations

import onnx
import onnx.defs
from onnx import helper

from graph.onnx.host import is_host_op
from graph.onnx.loader import RANDOM_OPS
from graph.onnx.table import DEFAULT_DOMAINS, lookup

NOT_EXPANDED = RANDOM_OPS | {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
                             "ConvInteger", "QLinearConv", "QLinearMatMul"}
MAX_DEPTH = 4  # a body may use operators defined by functions in turn
PREVIEW = "ai.onnx.preview"  # a domain of operators defined by function bodies alone


def _schema_version(node: onnx.NodeProto, opset: int, versions: dict) -> tuple:
    """(schema domain, version) of ``node``'s operator: the default domain at ``opset``, the
    preview domain at the version the model imports; None for any other domain."""
    if node.domain in DEFAULT_DOMAINS:
        return "", opset
    if node.domain == PREVIEW and PREVIEW in versions:
        return PREVIEW, versions[PREVIEW]
    return None


def _candidates(g: onnx.GraphProto, opset: int, versions: dict) -> set:
    """The indices of the nodes of ``g`` to expand."""
    out = set()
    for k, node in enumerate(g.node):
        if not isinstance(node.op_type, str) or not isinstance(node.domain, str):
            continue  # not valid UTF-8: check_supported names it
        where = _schema_version(node, opset, versions)
        if where is None or node.op_type in NOT_EXPANDED:
            continue
        if node.domain in DEFAULT_DOMAINS and (lookup(node.op_type, opset) is not None
                                               or is_host_op(node.op_type, opset)):
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, where[1], where[0])
        except onnx.defs.SchemaError:
            continue
        if schema.has_function or schema.has_context_dependent_function:
            out.add(k)
    return out


def _types(model: onnx.ModelProto) -> dict:
    """name -> TypeProto of every value shape inference can type."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # noqa: BLE001 - an untypable model: its function nodes stay unexpanded
        inferred = model
    g = inferred.graph
    types = {v.name: v.type for v in list(g.value_info) + list(g.input) + list(g.output)}
    for t in g.initializer:
        types[t.name] = helper.make_tensor_type_proto(t.data_type, list(t.dims))
    return types


def _body(node: onnx.NodeProto, opset: int, versions: dict, types: dict) -> onnx.FunctionProto | None:
    domain, opset = _schema_version(node, opset, versions)
    schema = onnx.defs.get_schema(node.op_type, opset, domain)
    if schema.has_function:
        body = schema.get_function_with_opset_version(opset)
        if body is not None:
            return body if isinstance(body, onnx.FunctionProto) else onnx.FunctionProto.FromString(body)
    if not schema.has_context_dependent_function:
        return None
    if any(n and n not in types for n in node.input):
        return None
    arg_types = [types[n].SerializeToString() if n else onnx.TypeProto().SerializeToString() for n in node.input]
    data = schema.get_context_dependent_function_with_opset_version(opset, node.SerializeToString(), arg_types)
    if not data:
        return None
    return data if isinstance(data, onnx.FunctionProto) else onnx.FunctionProto.FromString(data)


def _renamed(name: str, names: dict, prefix: str) -> str:
    if not name:
        return name
    return names.get(name, f"{prefix}/{name}")


def _inline_graph(g: onnx.GraphProto, names: dict, prefix: str, attrs: dict) -> onnx.GraphProto:
    out = onnx.GraphProto()
    out.CopyFrom(g)
    for v in list(out.input) + list(out.output) + list(out.value_info):
        v.name = _renamed(v.name, names, prefix)
    for t in out.initializer:
        t.name = _renamed(t.name, names, prefix)
    nodes = [_inline_node(n, names, prefix, attrs) for n in g.node]
    del out.node[:]
    out.node.extend(n for n in nodes if n is not None)
    return out


def _inline_node(fn_node: onnx.NodeProto, names: dict, prefix: str, attrs: dict) -> onnx.NodeProto:
    node = onnx.NodeProto()
    node.CopyFrom(fn_node)
    node.name = f"{prefix}/{fn_node.name or fn_node.op_type}"
    del node.input[:], node.output[:], node.attribute[:]
    node.input.extend(_renamed(n, names, prefix) for n in fn_node.input)
    node.output.extend(_renamed(n, names, prefix) for n in fn_node.output)
    for a in fn_node.attribute:
        if a.ref_attr_name:
            if a.ref_attr_name not in attrs:
                continue  # the caller leaves it to its default
            bound = onnx.AttributeProto()
            bound.CopyFrom(attrs[a.ref_attr_name])
            bound.name = a.name
            node.attribute.append(bound)
            continue
        copy = onnx.AttributeProto()
        copy.CopyFrom(a)
        if copy.HasField("g"):
            copy.g.CopyFrom(_inline_graph(a.g, names, prefix, attrs))
        for k, sub in enumerate(a.graphs):
            copy.graphs[k].CopyFrom(_inline_graph(sub, names, prefix, attrs))
        node.attribute.append(copy)
    return node


def _inline(node: onnx.NodeProto, body: onnx.FunctionProto, prefix: str) -> list:
    names = {f: a for f, a in zip(body.input, node.input)}
    names.update({f: "" for f in list(body.input)[len(node.input):]})
    names.update({f: a for f, a in zip(body.output, node.output)})
    attrs = {a.name: a for a in body.attribute_proto}
    attrs.update({a.name: a for a in node.attribute})
    return [_inline_node(n, names, prefix, attrs) for n in body.node]


def expand_functions(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """``model`` with every node of an operator known only by its function body inlined
    (the same object when there is none)."""
    versions = {i.domain: i.version for i in model.opset_import}
    for depth in range(MAX_DEPTH):
        found = _candidates(model.graph, opset, versions)
        if not found:
            return model
        types = _types(model)
        expanded = onnx.ModelProto()
        expanded.CopyFrom(model)
        nodes = []
        for k, node in enumerate(model.graph.node):
            body = _body(node, opset, versions, types) if k in found else None
            if body is None:
                nodes.append(node)
            else:
                nodes.extend(_inline(node, body, f"{node.name or node.output[0]}/fn{depth}_{k}"))
        if len(nodes) == len(model.graph.node):
            return model
        del expanded.graph.node[:]
        expanded.graph.node.extend(nodes)
        known = {(i.domain, i.version) for i in expanded.opset_import}
        for node in nodes:
            if node.domain not in DEFAULT_DOMAINS and not any(d == node.domain for d, _ in known):
                expanded.opset_import.append(helper.make_opsetid(node.domain, 1))
        model = expanded
    return model
