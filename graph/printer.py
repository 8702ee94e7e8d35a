"""Text form of a graph, one node a line (NNVM/Relay style)::

    graph main(%data: float32[1, 3, 32, 32]) {
      %w = constant float32[16, 3, 3, 3]
      %conv2d: float32[1, 16, 32, 32] = conv2d(%data, %w, padding=(1, 1, 1, 1))
      return %conv2d
    }
"""

from __future__ import annotations

import numpy as np

from tune.autotvm.space import ConfigEntity


def format_attr(value) -> str:
    if isinstance(value, np.ndarray):
        return f"array<{value.dtype}{list(value.shape)}>"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(format_attr(v) for v in value) + (",)" if len(value) == 1 else ")")
    if isinstance(value, ConfigEntity):
        return value.text()  # template and every knob value: two configs, two kernel keys
    if hasattr(value, "nodes") and hasattr(value, "outputs"):
        return "<" + ", ".join(n.op for n in value.nodes if n.op != "constant") + ">"
    if callable(value):
        return f"<{type(value).__name__}>"
    return repr(value)


def print_node(node) -> str:
    outs = ", ".join(f"%{v.name}: {v.type_str()}" for v in node.outputs)
    if node.op == "constant":
        return f"%{node.output.name} = constant {node.output.type_str()}"
    args = [f"%{v.name}" for v in node.inputs]
    args += [f"{k}={format_attr(v)}" for k, v in sorted(node.attrs.items()) if not k.startswith("_")]
    return f"{outs} = {node.op}({', '.join(args)})"


def print_graph(graph) -> str:
    params = ", ".join(f"%{v.name}: {v.type_str()}" for v in graph.inputs)
    lines = [f"graph {graph.name}({params}) {{"]
    lines += ["  " + print_node(n) for n in graph.nodes]
    lines.append("  return " + ", ".join(f"%{v.name}" for v in graph.outputs))
    lines.append("}")
    return "\n".join(lines)
