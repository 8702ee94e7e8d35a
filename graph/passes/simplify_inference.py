"""Inference-time simplification: drop identities, expand batch_norm to scale and shift."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, constant_node, make_node, rebuild
from graph.passes.common import replace_node

# Ops that are the identity at inference (the ONNX importer maps Dropout to identity).
IDENTITY_OPS = frozenset({"identity", "dropout"})


def simplify_inference(graph: Graph) -> Graph:
    """Remove inference no-ops and rewrite ``batch_norm`` into a multiply and an add.

    ``batch_norm(data, gamma, beta, mean, var, axis, epsilon)`` becomes
    ``data * scale + shift`` with ``scale = gamma / sqrt(var + epsilon)`` and
    ``shift = beta - mean * scale``, built as graph nodes (so
    ``fold_constants`` folds them when the statistics are constants) and
    reshaped to broadcast over ``axis``: ``(C, 1, 1)`` for NCHW data.
    TVM's ``relay.transform.SimplifyInference``.

    Examples
    --------
    Before::

        graph main(%x: float32[1, 8, 4, 4]) {
          %d: float32[1, 8, 4, 4] = identity(%x)
          %bn: float32[1, 8, 4, 4] = batch_norm(%d, %g, %b, %m, %v, axis=1, epsilon=1e-05)
          return %bn
        }

    After::

        graph main(%x: float32[1, 8, 4, 4]) {
          %bn.eps = constant float32[]
          %bn.var_eps: float32[8] = add(%v, %bn.eps)
          %bn.std: float32[8] = sqrt(%bn.var_eps)
          %bn.scale: float32[8] = divide(%g, %bn.std)
          %bn.scale_c: float32[8, 1, 1] = reshape(%bn.scale, newshape=(8, 1, 1))
          %bn.mul: float32[1, 8, 4, 4] = multiply(%x, %bn.scale_c)
          %bn.mean_scale: float32[8] = multiply(%m, %bn.scale)
          %bn.shift: float32[8] = subtract(%b, %bn.mean_scale)
          %bn.shift_c: float32[8, 1, 1] = reshape(%bn.shift, newshape=(8, 1, 1))
          %bn: float32[1, 8, 4, 4] = add(%bn.mul, %bn.shift_c)
          return %bn
        }
    """

    def rewrite(node, ins):
        if node.op in IDENTITY_OPS:
            return (ins[0],)
        if node.op == "batch_norm":
            return (expand_batch_norm(node, ins),)
        return None

    return rebuild(graph, rewrite)


def expand_batch_norm(node, ins) -> Value:
    """``data * scale + shift`` for one batch_norm node over inputs ``ins``."""
    data, gamma, beta, mean, var = ins
    axis = node.attrs.get("axis", 1) % len(data.shape)
    eps = node.attrs.get("epsilon", 1e-5)
    n = node.name
    eps_c = constant_node(np.array(eps, dtype=var.dtype), f"{n}.eps").output
    std = _op("sqrt", f"{n}.std", _op("add", f"{n}.var_eps", var, eps_c))
    scale = _op("divide", f"{n}.scale", gamma, std)
    shift = _op("subtract", f"{n}.shift", beta, _op("multiply", f"{n}.mean_scale", mean, scale))
    bshape = (data.shape[axis],) + (1,) * (len(data.shape) - axis - 1)
    scale_c = _reshape(scale, bshape, f"{n}.scale_c")
    shift_c = _reshape(shift, bshape, f"{n}.shift_c")
    return replace_node(node, "add", (_op("multiply", f"{n}.mul", data, scale_c), shift_c))


def _op(op: str, name: str, *args: Value, **attrs) -> Value:
    return make_node(op, args, attrs, name).output


def _reshape(v: Value, shape: tuple, name: str) -> Value:
    return v if v.shape == shape else _op("reshape", name, v, newshape=shape)
