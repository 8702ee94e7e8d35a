"""Helpers of the pattern-rewriting passes (layer norm, activations, attention).

A pattern spans several nodes, so a rewrite must see the *rewritten* version
of values deep inside it (an earlier rewrite may have replaced the input
of the pattern).  ``rebuild_remapped`` is ``graph.ir.rebuild`` with the
remapping handed to the rewrite::

    def rewrite(node, ins, new):   # new(v): the value standing for original value v now
        ...
"""

from __future__ import annotations

from graph.ir import Graph, Value, copy_node


def rebuild_remapped(graph: Graph, rewrite) -> Graph:
    """Map every node through ``rewrite(node, new_inputs, new) -> tuple[Value] | None``."""
    remap: dict = {}
    changed = False

    def new(v: Value) -> Value:
        return remap.get(id(v), v)

    for node in graph.nodes:
        ins = tuple(new(v) for v in node.inputs)
        out = rewrite(node, ins, new)
        if out is None:
            if all(a is b for a, b in zip(ins, node.inputs)):
                continue
            out = copy_node(node, ins).outputs
        out = tuple(out)
        if len(out) != len(node.outputs):
            raise ValueError(
                f"rewrite of node {node.name!r} ({node.op}) returned {len(out)} outputs, "
                f"expected {len(node.outputs)}"
            )
        for old, v in zip(node.outputs, out):
            if v is not old:
                remap[id(old)] = v
                changed = True
    if not changed:
        return graph
    return Graph.from_outputs(graph.inputs, [new(v) for v in graph.outputs], graph.name)


def producer(v: Value, op: str):
    """``v``'s node when it applies ``op``, else None."""
    return v.node if v.node is not None and v.node.op == op else None


def scalar(v: Value) -> float | None:
    """The value of a one-element constant, else None."""
    node = v.node
    if node is None or not node.is_constant or node.attrs["value"].size != 1:
        return None
    return float(node.attrs["value"].reshape(()))
