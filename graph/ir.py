"""The graph IR: values, nodes and graphs, with shape and dtype inference.

A ``Value`` is one tensor edge: a static shape, a dtype and the node that
produces it (``None`` for a graph input).  A ``Node`` applies one registered
operator (``graph.ops``) to input values; its output values are inferred when
it is built.  A ``Graph`` is a topologically ordered node list with its input
and output values; constants are nodes of op ``"constant"`` whose ``value``
attribute holds the numpy array.

Graphs are built in Python with :class:`GraphBuilder`::

    b = GraphBuilder()
    x = b.input("data", (1, 3, 224, 224))
    w = b.const(np.ones((64, 3, 7, 7), "float32"), "w")
    y = b.op("relu", b.op("conv2d", x, w, strides=(2, 2), padding=(3, 3, 3, 3)))
    g = b.finish([y])
    print(g)

Passes are ``Graph -> Graph`` functions (``graph.passes``); a pass that
changes nothing returns the same graph object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np


@dataclass(eq=False, slots=True)
class Value:
    """One tensor edge of the graph."""

    name: str
    shape: tuple
    dtype: str
    node: Node | None = None
    index: int = 0

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def type_str(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    def __repr__(self) -> str:
        return f"%{self.name}: {self.type_str()}"


@dataclass(eq=False, slots=True)
class Node:
    """One operator application; ``outputs`` are inferred by ``graph.ops``."""

    op: str
    inputs: tuple
    attrs: dict
    name: str
    outputs: tuple = field(default=())

    @property
    def output(self) -> Value:
        return self.outputs[0]

    @property
    def is_constant(self) -> bool:
        return self.op == "constant"

    def __repr__(self) -> str:
        return f"Node({self.op} {self.name})"


def make_node(op: str, inputs: Iterable[Value], attrs: dict | None = None, name: str = "",
              out_names: Iterable[str] | None = None) -> Node:
    """Build a node and infer its outputs (raises ValueError naming the node on bad input)."""
    from graph.ops import get_op

    inputs = tuple(inputs)
    attrs = dict(attrs or {})
    opdef = get_op(op)
    for k, v in enumerate(inputs):
        if not isinstance(v, Value):
            raise TypeError(f"node {name or op!r} ({op}): input {k} is {type(v).__name__}, expected a graph Value")
    try:
        types = opdef.infer(inputs, attrs)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        shapes = ", ".join(v.type_str() for v in inputs)
        raise ValueError(f"node {name or op!r} ({op}) with inputs ({shapes}): {err}") from None
    node = Node(op, inputs, attrs, name or op)
    names = list(out_names or [])
    outs = []
    for k, (shape, dtype) in enumerate(types):
        vname = names[k] if k < len(names) else (node.name if len(types) == 1 else f"{node.name}:{k}")
        outs.append(Value(vname, tuple(int(d) for d in shape), str(dtype), node, k))
    node.outputs = tuple(outs)
    return node


def constant_node(array: np.ndarray, name: str) -> Node:
    array = np.asarray(array)
    node = Node("constant", (), {"value": array}, name)
    node.outputs = (Value(name, tuple(array.shape), str(array.dtype), node, 0),)
    return node


def topo_sort(outputs: Iterable[Value], inputs_of=None) -> list:
    """The nodes that ``outputs`` depend on, producers first (iterative DFS).

    ``inputs_of(node)`` may restrict the edges followed (default: all inputs)."""
    order: list = []
    seen: set = set()
    for out in outputs:
        if out.node is None or id(out.node) in seen:
            continue
        stack = [(out.node, 0)]
        seen.add(id(out.node))
        while stack:
            node, k = stack.pop()
            inputs = node.inputs if inputs_of is None else inputs_of(node)
            if k < len(inputs):
                stack.append((node, k + 1))
                src = inputs[k].node
                if src is not None and id(src) not in seen:
                    seen.add(id(src))
                    stack.append((src, 0))
            else:
                order.append(node)
    return order


class Graph:
    """A dataflow graph: ``inputs`` (values without producer), ``nodes`` in
    topological order, ``outputs``.  Treat it as immutable; passes build new ones."""

    __slots__ = ("inputs", "name", "nodes", "outputs")

    def __init__(self, inputs, nodes, outputs, name: str = "main"):
        self.inputs = tuple(inputs)
        self.nodes = tuple(nodes)
        self.outputs = tuple(outputs)
        self.name = name

    @classmethod
    def from_outputs(cls, inputs, outputs, name: str = "main") -> Graph:
        return cls(inputs, topo_sort(outputs), outputs, name)

    def input(self, name: str) -> Value:
        for v in self.inputs:
            if v.name == name:
                return v
        raise KeyError(f"graph {self.name!r} has no input {name!r}; inputs: {[v.name for v in self.inputs]}")

    def consumers(self) -> dict:
        """id(value) -> list of (node, input position)."""
        users: dict = {}
        for node in self.nodes:
            for k, v in enumerate(node.inputs):
                users.setdefault(id(v), []).append((node, k))
        return users

    def op_count(self) -> int:
        """Nodes that are not constants (what pass profiles count)."""
        return sum(1 for n in self.nodes if not n.is_constant)

    def __len__(self) -> int:
        return len(self.nodes)

    def __str__(self) -> str:
        from graph.printer import print_graph

        return print_graph(self)

    def __repr__(self) -> str:
        return f"Graph({self.name!r}, {len(self.inputs)} inputs, {len(self.nodes)} nodes, {len(self.outputs)} outputs)"


def rebuild(graph: Graph, rewrite) -> Graph:
    """Map every node through ``rewrite(node, new_inputs) -> tuple[Value] | None``.

    Nodes are visited in order with their inputs already remapped; ``None``
    keeps the node (recreated only if an input changed).  Returns ``graph``
    itself when nothing changed.
    """
    remap: dict = {}
    changed = False
    for node in graph.nodes:
        ins = tuple(remap.get(id(v), v) for v in node.inputs)
        new = rewrite(node, ins)
        if new is None:
            if any(a is not b for a, b in zip(ins, node.inputs)):
                new = copy_node(node, ins).outputs
            else:
                continue
        new = tuple(new)
        if len(new) != len(node.outputs):
            raise ValueError(f"rewrite of node {node.name!r} ({node.op}) returned {len(new)} outputs, expected {len(node.outputs)}")
        for old, v in zip(node.outputs, new):
            if v is not old:
                remap[id(old)] = v
                changed = True
    if not changed:
        return graph
    outputs = [remap.get(id(v), v) for v in graph.outputs]
    return Graph.from_outputs(graph.inputs, outputs, graph.name)


def copy_node(node: Node, inputs) -> Node:
    """``node`` over new inputs (outputs re-inferred, names kept)."""
    if node.is_constant:
        return node
    return make_node(node.op, inputs, node.attrs, node.name, [v.name for v in node.outputs])


def fresh_name(base: str, used: set, count: int) -> tuple:
    """``base``, or ``base_<k>`` with the next free counter; marks it used. Returns (name, counter)."""
    name = base
    while name in used:
        count += 1
        name = f"{base}_{count}"
    used.add(name)
    return name, count


class GraphBuilder:
    """Build a graph in Python: ``input``, ``const``, ``op``, then ``finish``."""

    def __init__(self, name: str = "main"):
        self.name = name
        self.inputs: list = []
        self._names: set = set()
        self._count = 0

    def _fresh(self, base: str) -> str:
        name, self._count = fresh_name(base, self._names, self._count)
        return name

    def input(self, name: str, shape, dtype: str = "float32") -> Value:
        if name in self._names:
            raise ValueError(f"GraphBuilder: the name {name!r} is already used")
        self._names.add(name)
        v = Value(name, tuple(int(d) for d in shape), str(np.dtype(dtype)))
        self.inputs.append(v)
        return v

    def const(self, array, name: str = "const") -> Value:
        return constant_node(np.asarray(array), self._fresh(name)).output

    def op(self, op: str, *inputs: Value, name: str | None = None, **attrs) -> Value:
        node = make_node(op, inputs, attrs, self._fresh(name or op))
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def finish(self, outputs) -> Graph:
        outputs = [outputs] if isinstance(outputs, Value) else list(outputs)
        return Graph.from_outputs(self.inputs, outputs, self.name)
