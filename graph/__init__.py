"""graph: the thin graph layer of NNVM (IR, ONNX import, passes, fusion, memory planning, executor)."""

from graph.ir import Graph, GraphBuilder, Node, Value, make_node  # noqa: F401
