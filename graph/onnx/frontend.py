"""``from_onnx``: an ONNX model -> (graph.ir.Graph, params).

The import runs in steps, each refusing what it cannot handle before the
next starts:

1. load and check the model (:mod:`graph.onnx.loader`);
2. inline the operators ONNX defines by a function body and that have no
   converter (:mod:`graph.onnx.functions`);
3. refuse every node without a converter or run-time implementation, all in
   one error;
4. a model whose shapes are all known converts to a static graph
   (:mod:`graph.onnx.importer`); any other becomes a
   :class:`graph.onnx.program.DynamicGraph`, converted per input signature
   when it runs.
"""

from __future__ import annotations

from graph.onnx.context import NeedsInputValue
from graph.onnx.functions import expand_functions
from graph.onnx.importer import import_model
from graph.onnx.loader import check_supported, default_opset, load_model
from graph.onnx.program import DynamicGraph, needs_program


def from_onnx(model, shape: dict | None = None, dtype="float32") -> tuple:
    """Import an ONNX model as a graph and its parameters (classic NNVM/TVM ``from_onnx``).

    Parameters
    ----------
    model : onnx.ModelProto, str, os.PathLike or bytes
        The model, a path to it, or its serialized bytes.
    shape : dict, optional
        Input name -> shape; overrides the declared shape (pins symbolic dimensions).
    dtype : str or dict, optional
        Element type of data inputs that declare none (a dict maps input names).

    Returns
    -------
    (Graph or DynamicGraph, dict)
        The graph, whose inputs are the data inputs and the initializers (in
        the order of the model), and ``params``: initializer name -> array.
        A model whose shapes are decided when it runs (symbolic input
        dimensions, shape inputs fed at run time, operators whose output
        size depends on data, control flow, sequences) imports as a
        :class:`graph.onnx.program.DynamicGraph` (and no params): ``graph.build``
        of it specialises the kernels per input signature on first use.

    Raises
    ------
    ValueError
        Naming the file for a malformed model, listing every unsupported
        operator with its opset, naming the node for an unsupported attribute
        or value.
    """
    proto, label = load_model(model)
    opset = default_opset(proto, label)
    domains = {imp.domain: imp.version for imp in proto.opset_import}
    proto = expand_functions(proto, opset)
    check_supported(proto.graph, opset, domains)
    shape = dict(shape or {})
    inits = {t.name for t in proto.graph.initializer}
    unknown = sorted(set(shape) - {v.name for v in proto.graph.input if v.name not in inits})
    if unknown:
        raise ValueError(f"from_onnx: shape= names {unknown}, which are not data inputs of {label}; "
                         f"data inputs: {[v.name for v in proto.graph.input if v.name not in inits]}")
    if needs_program(proto.graph, shape, opset):
        return DynamicGraph(proto, label, shape, dtype), {}
    try:
        return import_model(proto, label, shape, dtype)
    except NeedsInputValue:  # a shape operand fed as a graph input: read when the model runs
        return DynamicGraph(proto, label, shape, dtype), {}
