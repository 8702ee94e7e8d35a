"""Operator fusion by TVM's pattern rules: ``fuse_ops``.

Every non-constant node is given to a group, in topological order.  A node
joins the group of a producer when that producer's only consumer is the node
and the rule of the two patterns allows it:

=========================  ==========================================  =====
producer group             node                                        fuse?
=========================  ==========================================  =====
injective (elemwise,       elemwise, broadcast, injective              yes
broadcast, injective)      comm_reduce (takes its injective inputs)    yes
out_elemwise_fusable       elemwise, broadcast (conv/dense epilogue)   yes
(conv2d, dense, pool)      anything else                               no
comm_reduce, opaque        anything                                    no
=========================  ==========================================  =====

A node may merge several injective producer groups (``add(relu(a), relu(b))``)
but at most one anchor (out_elemwise_fusable or comm_reduce) per group.
Each group becomes one node of op ``"fused"`` whose ``body`` attribute is the
group as a small graph over its own inputs, so the compiler schedules it as
one kernel::

    before:  %c = conv2d(%x, %w)   %a = add(%c, %b)   %r = relu(%a)
    after:   %r = fused(%x, %w, %b, body=<conv2d, add, relu>, anchor='conv2d')
"""

from __future__ import annotations

from graph.ir import Graph, Node, Value, constant_node
from graph.ops import get_op
from graph.ops.registry import (
    BROADCAST,
    COMM_REDUCE,
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    PATTERN_NAMES,
    register,
)

# Small constants are folded into the kernel as immediates instead of arguments.
INLINE_CONSTANT_ELEMENTS = 1


class _Group:
    __slots__ = ("anchor", "nodes", "pattern")

    def __init__(self, node: Node, pattern: int):
        self.nodes = [node]
        self.anchor = node if pattern in (OUT_ELEMWISE_FUSABLE, COMM_REDUCE, OPAQUE) else None
        self.pattern = pattern


def _can_absorb(group: _Group, pattern: int, node: Node) -> bool:
    """May ``node`` (of ``pattern``) join ``group`` (its single consumer)?

    Besides TVM's rules, a blocked conv takes the ``layout_transform`` back
    to NCHW after it: its schedule writes NCHW straight from the register tile;
    and an anchor takes no epilogue larger than its output (squeeze-excite's
    ``x * gate(conv(pool(x)))`` broadcasts the conv's [N, C, 1, 1] over x: fused,
    the kernel would recompute the conv for every pixel).
    """
    if group.pattern <= INJECTIVE:
        return pattern <= INJECTIVE or pattern == COMM_REDUCE
    if group.pattern == OUT_ELEMWISE_FUSABLE:
        if group.anchor is not None and node.output.size > group.anchor.output.size:
            return False  # the epilogue would broadcast the anchor's values: it would recompute them
        return pattern <= BROADCAST or _unblocks_conv(group, node)
    return False


def _unblocks_conv(group: _Group, node: Node) -> bool:
    return (node.op == "layout_transform" and node.attrs.get("dst_layout") == "NCHW"
            and group.anchor is not None and group.anchor.op == "conv2d_NCHWc"
            and not any(n.op == "layout_transform" for n in group.nodes))


def partition(graph: Graph, singletons: bool = False) -> list:
    """The fusion groups of ``graph`` (lists of nodes in topological order).

    ``singletons``: every node its own group (no fusion, opt_level 0)."""
    users = graph.consumers()
    out_ids = {id(v) for v in graph.outputs}
    group_of: dict = {}
    groups: list = []
    for node in graph.nodes:
        if node.is_constant:
            continue
        pattern = get_op(node.op).pattern
        mergeable = []
        if len(node.outputs) == 1 and pattern <= COMM_REDUCE and not singletons:
            for v in node.inputs:
                g = group_of.get(id(v.node)) if v.node is not None else None
                if (g is None or g in mergeable or v.node is not g.nodes[-1] or len(v.node.outputs) != 1
                        or len({id(n) for n, _ in users.get(id(v), ())}) != 1 or id(v) in out_ids
                        or not _can_absorb(g, pattern, node)):
                    continue
                mergeable.append(g)
        anchors = [g for g in mergeable if g.anchor is not None]
        mergeable = [g for g in mergeable if g.anchor is None]
        if anchors and pattern != COMM_REDUCE:
            mergeable = anchors[:1] + mergeable
        if not mergeable:
            group = _Group(node, pattern)
            groups.append(group)
        else:
            group = mergeable[0]
            for other in mergeable[1:]:
                group.nodes.extend(other.nodes)
                if other.anchor is not None:
                    group.anchor, group.pattern = other.anchor, other.pattern
                for n in other.nodes:
                    group_of[id(n)] = group
                groups.remove(other)
            group.nodes.append(node)
            if pattern == COMM_REDUCE:
                group.anchor, group.pattern = node, COMM_REDUCE
        group_of[id(node)] = group
    order = {id(n): k for k, n in enumerate(graph.nodes)}
    _defer_widening_tails(groups, group_of, users, out_ids, order)
    parts = [sorted(g.nodes, key=lambda n: order[id(n)]) for g in groups]
    return sorted(parts, key=lambda nodes: order[id(nodes[-1])])


def _defer_widening_tails(groups: list, group_of: dict, users: dict, out_ids: set, order: dict) -> None:
    """A group that ends in a ``dequantize`` (uint8 in, float32 out) read by one elementwise
    epilogue node of another group gives the ``dequantize`` to that group: the tensor between
    the two kernels stays integer (a quarter of the bytes written and read; ResNet's
    downsampling branch into the residual add)."""
    for g in groups:
        tail = max(g.nodes, key=lambda n: order[id(n)])
        if tail.op != "dequantize" or len(g.nodes) < 2 or id(tail.output) in out_ids:
            continue
        src = tail.inputs[0]
        readers = {id(n): n for n, _ in users.get(id(tail.output), ())}
        if src.node is None or group_of.get(id(src.node)) is not g or len(readers) != 1 \
                or len({id(n) for n, _ in users.get(id(src), ())}) != 1:
            continue
        reader = next(iter(readers.values()))
        h = group_of.get(id(reader))
        if h is None or h is g or reader is h.anchor or get_op(reader.op).pattern > BROADCAST \
                or not (h.pattern <= INJECTIVE or h.pattern == OUT_ELEMWISE_FUSABLE):
            continue
        g.nodes.remove(tail)
        h.nodes.append(tail)
        group_of[id(tail)] = h


def _group_body(nodes: list, name: str):
    """The group as a graph over fresh input values; returns (body, outer inputs)."""
    from graph.ir import copy_node

    members = {id(n) for n in nodes}
    outer: list = []
    local: dict = {}
    for node in nodes:
        for v in node.inputs:
            if id(v) in local or (v.node is not None and id(v.node) in members):
                continue
            if v.node is not None and v.node.is_constant and v.size <= INLINE_CONSTANT_ELEMENTS:
                local[id(v)] = constant_node(v.node.attrs["value"], v.name).output
                continue
            local[id(v)] = Value(v.name, v.shape, v.dtype)
            outer.append(v)
    inner_nodes = []
    for node in nodes:
        new = copy_node(node, [local[id(v)] for v in node.inputs])
        for old, nv in zip(node.outputs, new.outputs):
            local[id(old)] = nv
        inner_nodes.append(new)
    last = nodes[-1]
    body = Graph.from_outputs([local[id(v)] for v in outer], [local[id(v)] for v in last.outputs], name)
    return body, outer


def group_name(nodes: list) -> str:
    ops = []
    for n in nodes:
        if n.op not in ops:
            ops.append(n.op)
    return "fused_" + "_".join(ops[:4])


def fuse_ops(graph: Graph, singletons: bool = False) -> Graph:
    """Replace every fusion group by one ``fused`` node (see the module docstring).

    Nodes already fused stay as they are; ``singletons`` gives every other
    node a group of its own (what the compiler needs when fusion is off).
    """
    if all(n.op in ("fused", "constant") for n in graph.nodes):
        return graph
    remap: dict = {}
    for nodes in partition(graph, singletons):
        if len(nodes) == 1 and nodes[0].op == "fused":
            node = nodes[0]
            if any(id(v) in remap for v in node.inputs):
                node = Node("fused", tuple(remap.get(id(v), v) for v in node.inputs), node.attrs, node.name)
                node.outputs = tuple(Value(v.name, v.shape, v.dtype, node, k)
                                     for k, v in enumerate(nodes[0].outputs))
                for old, new in zip(nodes[0].outputs, node.outputs):
                    remap[id(old)] = new
            continue
        anchor = next((n for n in nodes if get_op(n.op).pattern >= COMM_REDUCE), None)
        name = group_name(nodes)
        body, outer = _group_body(nodes, name)
        inputs = [remap.get(id(v), v) for v in outer]
        fused = Node("fused", tuple(inputs), {
            "body": body, "anchor": anchor.op if anchor is not None else None,
            "pattern": PATTERN_NAMES[get_op(anchor.op).pattern if anchor is not None else INJECTIVE],
        }, name)
        last = nodes[-1]
        fused.outputs = tuple(Value(v.name, v.shape, v.dtype, fused, k) for k, v in enumerate(last.outputs))
        for old, new in zip(last.outputs, fused.outputs):
            remap[id(old)] = new
    outputs = [remap.get(id(v), v) for v in graph.outputs]
    return Graph.from_outputs(graph.inputs, outputs, graph.name)


def _fused_types(values, attrs):
    return [(v.shape, v.dtype) for v in attrs["body"].outputs]


register("fused", None, OPAQUE, None, _fused_types,
         lambda xs, a: __import__("graph.interpreter", fromlist=["interpret"]).interpret(
             a["body"], {v.name: x for v, x in zip(a["body"].inputs, xs)}),
         doc="a fusion group (attrs: body graph, anchor op, pattern); compiled as one kernel")
