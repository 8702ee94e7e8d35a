"""fuse_activation: elementwise subgraphs computing GELU, tanh-GELU or SiLU -> one op.

Exporters spell activations as small elementwise graphs that read their input
several times (``x * 0.5 * (1 + erf(x / sqrt(2)))``), which ``fuse_ops``
cannot hand to the producing dense as an epilogue (the dense output would
have several consumers).  Instead of matching each spelling, this pass finds
every *region*: a tree of single-use elementwise nodes whose only
non-constant leaf is one value ``x`` (constants are scalars), and evaluates
it with the operators' numpy twins on a probe of ``x`` values; a region that
agrees with a known activation becomes that one op::

    before:  %d = divide(%x, 1.4142135)   %e = erf(%d)   %a = add(%e, 1.0)
             %m = multiply(%x, %a)         %y = multiply(%m, 0.5)
    after:   %y = gelu(%x)                # and fuse_ops makes it the dense's epilogue

Known activations (:data:`ACTIVATIONS`): ``gelu`` (erf form), ``gelu_tanh``
(GPT-2's ``gelu_new``, FastGelu), ``silu`` (``x * sigmoid(x)``).
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Graph, make_node
from graph.ops import get_op
from graph.ops.registry import BROADCAST
from graph.passes.common import use_counts
from graph.passes.pattern import rebuild_remapped


def _erf(x):
    return np.vectorize(math.erf)(x)


ACTIVATIONS = {
    "gelu": lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))),
    "gelu_tanh": lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3))),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
}

PROBE = np.linspace(-5.0, 5.0, 41)
MAX_REGION = 16


def fuse_activation(graph: Graph) -> Graph:
    """Replace activation regions by one op (see the module docstring)."""
    uses = use_counts(graph)
    matches = _find(graph, uses)
    if not matches:
        return graph

    def rewrite(node, ins, new):
        found = matches.get(id(node))
        if found is None:
            return None
        op, x = found
        return (make_node(op, [new(x)], {}, node.name, [node.output.name]).output,)

    return rebuild_remapped(graph, rewrite)


def _elementwise(node) -> bool:
    return (
        not node.is_constant
        and len(node.outputs) == 1
        and len(node.inputs) >= 1
        and get_op(node.op).pattern <= BROADCAST
        and node.op != "cast"
    )


def _region(root, uses):
    """(nodes, x) of the region under ``root``, or None (more than one leaf value, a big
    constant, or more than MAX_REGION nodes)."""
    nodes, leaf, todo, seen = [], None, [root], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        if len(nodes) > MAX_REGION:
            return None
        for v in node.inputs:
            p = v.node
            if p is not None and p.is_constant:
                if v.size != 1:
                    return None
                continue
            if p is not None and _elementwise(p) and uses.get(id(v), 0) == 1 and v is not leaf:
                todo.append(p)
                continue
            if leaf is not None and v is not leaf:
                return None
            leaf = v
    if leaf is None or len(nodes) < 2 or leaf.shape != root.output.shape or leaf.dtype != "float32":
        return None
    return nodes, leaf


def _evaluate(nodes, x) -> np.ndarray | None:
    env = {id(x): PROBE.astype(np.float32)}
    for node in sorted(nodes, key=_depth_key(nodes)):
        args = []
        for v in node.inputs:
            if id(v) in env:
                args.append(env[id(v)])
            elif v.node is not None and v.node.is_constant:
                args.append(np.asarray(v.node.attrs["value"]).reshape(()))
            else:
                return None
        try:
            with np.errstate(all="ignore"):
                out = get_op(node.op).evaluate(args, node.attrs)[0]
        except Exception:  # noqa: BLE001 - a twin refusing a probe means: no match
            return None
        env[id(node.output)] = np.asarray(out, dtype=np.float64)
    return env[id(nodes[0].output)]


def _depth_key(nodes):
    """Producers before consumers within the region."""
    ids = {id(n) for n in nodes}
    depth: dict = {}

    def d(n) -> int:
        if id(n) not in depth:
            depth[id(n)] = 1 + max(
                (d(v.node) for v in n.inputs if v.node is not None and id(v.node) in ids), default=0
            )
        return depth[id(n)]

    return d


def _find(graph: Graph, uses) -> dict:
    """id(root node) -> (activation op, x), largest regions first."""
    matches: dict = {}
    covered: set = set()
    for node in reversed(graph.nodes):
        if id(node) in covered or not _elementwise(node):
            continue
        found = _region(node, uses)
        if found is None:
            continue
        nodes, x = found
        y = _evaluate(nodes, x)
        if y is None:
            continue
        for op, fn in ACTIVATIONS.items():
            if np.allclose(y, fn(PROBE.astype(np.float32).astype(np.float64)), rtol=1e-4, atol=1e-5):
                matches[id(node)] = (op, x)
                covered.update(id(n) for n in nodes)
                break
    return matches
