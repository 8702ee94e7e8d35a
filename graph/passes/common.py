"""Small helpers shared by the graph passes."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, make_node


def const_array(v: Value) -> np.ndarray | None:
    """The array of ``v`` when a constant node produces it, else ``None``."""
    node = v.node
    if node is not None and node.is_constant:
        return node.attrs["value"]
    return None


def use_counts(graph: Graph) -> dict:
    """id(value) -> how many node inputs and graph outputs read it."""
    counts: dict = {}
    for node in graph.nodes:
        for v in node.inputs:
            counts[id(v)] = counts.get(id(v), 0) + 1
    for v in graph.outputs:
        counts[id(v)] = counts.get(id(v), 0) + 1
    return counts


def replace_node(node, op: str, inputs, attrs: dict | None = None) -> Value:
    """A new single-output node standing for ``node``: its node and output names are kept."""
    return make_node(op, inputs, attrs or {}, node.name, [v.name for v in node.outputs]).output
