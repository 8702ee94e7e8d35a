"""Algebraic identities: x*1, x+0, and reshapes and transposes that cancel or compose."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, rebuild
from graph.passes.common import const_array, replace_node

# Constants bigger than this are never scanned for all-ones / all-zeros.
SCAN_LIMIT = 1 << 16

# op -> (neutral constant, whether it may stand on the left): x*1, 1*x, x+0, 0+x, x-0, x/1.
NEUTRAL = {"multiply": (1, True), "add": (0, True), "subtract": (0, False), "divide": (1, False)}


def simplify_arithmetic(graph: Graph) -> Graph:
    """Remove arithmetic that does nothing and collapse chains of shape ops.

    - ``x * 1``, ``x + 0``, ``x - 0``, ``x / 1`` -> ``x`` (constant operands
      only, and only when they do not broadcast ``x`` to a bigger shape);
    - ``reshape(x)`` to ``x``'s own shape, ``transpose(x)`` by the identity
      permutation and ``cast(x)`` to ``x``'s own dtype -> ``x``;
    - ``reshape(reshape(x))`` -> ``reshape(x)`` (or ``x``);
    - ``transpose(transpose(x, p), q)`` -> ``transpose(x, p[q])`` (or ``x``).

    A small part of TVM's ``relay.transform.SimplifyExpr``.

    Examples
    --------
    Before::

        graph main(%x: float32[2, 3]) {
          %one = constant float32[]
          %m: float32[2, 3] = multiply(%x, %one)
          %t: float32[3, 2] = transpose(%m, axes=(1, 0))
          %t2: float32[2, 3] = transpose(%t, axes=(1, 0))
          %r: float32[6] = reshape(%t2, newshape=(6,))
          %r2: float32[3, 2] = reshape(%r, newshape=(3, 2))
          return %r2
        }

    After::

        graph main(%x: float32[2, 3]) {
          %r2: float32[3, 2] = reshape(%x, newshape=(3, 2))
          return %r2
        }
    """

    def rewrite(node, ins):
        new = _simplify(node, ins)
        return None if new is None else (new,)

    return rebuild(graph, rewrite)


def _simplify(node, ins) -> Value | None:
    if node.op in NEUTRAL:
        return _drop_neutral(node, ins)
    if len(ins) != 1:
        return None
    x, out = ins[0], node.output
    if node.op in ("reshape", "cast") and x.shape == out.shape and x.dtype == out.dtype:
        return x
    if node.op == "reshape" and x.node is not None and x.node.op == "reshape":
        src = x.node.inputs[0]
        return src if src.shape == out.shape else replace_node(node, "reshape", (src,), node.attrs)
    if node.op == "transpose":
        return _compose_transposes(node, x)
    return None


def _drop_neutral(node, ins) -> Value | None:
    neutral, commutes = NEUTRAL[node.op]
    pairs = [(ins[0], ins[1])] + ([(ins[1], ins[0])] if commutes else [])
    for x, c in pairs:
        const = const_array(c)
        if (
            const is not None
            and const.size <= SCAN_LIMIT
            and x.shape == node.output.shape
            and x.dtype == node.output.dtype
            and np.all(const == neutral)
        ):
            return x
    return None


def _axes(v: Value, axes) -> tuple:
    return tuple(axes) if axes else tuple(reversed(range(len(v.shape))))


def _compose_transposes(node, x: Value) -> Value | None:
    perm = _axes(x, node.attrs.get("axes"))
    if perm == tuple(range(len(perm))):
        return x
    if x.node is None or x.node.op != "transpose":
        return None
    src = x.node.inputs[0]
    inner = _axes(src, x.node.attrs.get("axes"))
    composed = tuple(inner[k] for k in perm)
    if composed == tuple(range(len(composed))):
        return src
    return replace_node(node, "transpose", (src,), {"axes": composed})
