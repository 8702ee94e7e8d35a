"""Import-time values: fold the producers of a graph value with the operators' numpy twins.

Converters that need an input's *value* (a Reshape shape, Slice bounds, Pad
widths...) ask :func:`fold_value`.  It walks the producer subgraph of the
value back to constants and initializer-backed parameters and evaluates it
node by node with ``graph.ops.get_op(op).evaluate``; ``shape_of`` of any
value is its static shape, so shape arithmetic never needs the data::

    %s = shape_of(%data)                 -> [1, 64, 7, 7]   (static, data not needed)
    %n = take(%s, %zero, axis=0)         -> 1
    %t = concatenate(%n, %minus_one)     -> [1, -1]         (the Reshape target)

A value that depends on a data input cannot be folded: :class:`NotFoldable`
names the input it depends on.
"""

from __future__ import annotations

import numpy as np

from graph.ir import Value, topo_sort


class NotFoldable(Exception):
    """The value depends on the graph input ``input_name``."""

    def __init__(self, input_name: str):
        super().__init__(input_name)
        self.input_name = input_name


def _producers(value: Value) -> list:
    """Nodes to evaluate for ``value``, producers first; does not look behind ``shape_of``."""
    return topo_sort([value], lambda node: () if node.op == "shape_of" else node.inputs)


def _leaf(value: Value, known: dict) -> np.ndarray:
    if id(value) not in known:
        raise NotFoldable(value.name)
    return known[id(value)]


def fold_value(value: Value, known: dict) -> np.ndarray:
    """The array ``value`` holds, computed at import time.

    Parameters
    ----------
    value : Value
        Any value of the graph being built.
    known : dict
        ``id(Value) -> np.ndarray`` for the values already known (parameters,
        earlier folds); updated in place with every value evaluated here.

    Returns
    -------
    np.ndarray

    Raises
    ------
    NotFoldable
        When the value depends on a graph input that is not in ``known``.
    """
    from graph.ops import get_op

    if id(value) in known:
        return known[id(value)]
    if value.node is None:
        return _leaf(value, known)
    for node in _producers(value):
        if all(id(v) in known for v in node.outputs):
            continue
        if node.op == "shape_of":
            outs = [np.array(node.inputs[0].shape, dtype=np.int64)]
        else:
            args = [known[id(v)] if v.node is not None else _leaf(v, known) for v in node.inputs]
            outs = get_op(node.op).evaluate(args, node.attrs)
        for v, a in zip(node.outputs, outs):
            known[id(v)] = np.asarray(a).astype(v.dtype, copy=False)
    return known[id(value)]
