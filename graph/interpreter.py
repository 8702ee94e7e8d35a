"""A reference interpreter: run a graph node by node with each operator's numpy twin.

Slow and simple on purpose; tests compare the compiled executor and the
passes against it (``graph.passes`` must not change what this computes).
"""

from __future__ import annotations

import numpy as np


def interpret(graph, inputs: dict | None = None, params: dict | None = None) -> list:
    """Evaluate ``graph`` on ``inputs`` and ``params`` (name -> array); returns the outputs."""
    from graph.ops import get_op

    given = {**(params or {}), **(inputs or {})}
    env: dict = {}
    for v in graph.inputs:
        if v.name not in given:
            raise ValueError(f"interpret: no value given for graph input {v.name!r}")
        a = np.asarray(given[v.name])
        if tuple(a.shape) != v.shape or str(a.dtype) != v.dtype:
            raise ValueError(f"interpret: input {v.name!r} expects {v.type_str()}, got {a.dtype}{list(a.shape)}")
        env[id(v)] = a
    for node in graph.nodes:
        args = [env[id(v)] for v in node.inputs]
        outs = get_op(node.op).evaluate(args, node.attrs)
        for v, a in zip(node.outputs, outs):
            a = np.asarray(a)
            if tuple(a.shape) != v.shape:
                raise AssertionError(f"interpret: node {node.name!r} ({node.op}) gave shape {a.shape}, "
                                     f"inferred {v.shape}")
            env[id(v)] = a.astype(v.dtype, copy=False)
    return [env[id(v)] for v in graph.outputs]
