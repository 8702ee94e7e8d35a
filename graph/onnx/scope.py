"""The names an ONNX node or subgraph reads from the scope around it."""

from __future__ import annotations

import onnx


def subgraphs(node: onnx.NodeProto) -> list:
    """The graphs of ``node``'s attributes (If branches, Loop and Scan bodies)."""
    out = []
    for attr in node.attribute:
        out += [attr.g] if attr.HasField("g") else list(attr.graphs)
    return out


def reads(node: onnx.NodeProto) -> set:
    """The names ``node`` reads: its inputs and what its subgraphs read from outside them."""
    names = {n for n in node.input if n}
    for sub in subgraphs(node):
        names |= outer_reads(sub)
    return names


def outer_reads(g: onnx.GraphProto) -> set:
    """The names a subgraph reads from the scope around it."""
    defined = {v.name for v in g.input} | {t.name for t in g.initializer}
    names: set = set()
    for node in g.node:
        names |= {n for n in reads(node) if n not in defined}
        defined.update(node.output)
    names |= {o.name for o in g.output if o.name not in defined}
    return names
