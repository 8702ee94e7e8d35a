"""Constant folding: evaluate nodes whose inputs are all constants."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, constant_node, rebuild
from graph.ops import get_op
from graph.passes.common import const_array

# Ops that only replicate their input: folding one whose output exceeds this
# many bytes (and its inputs) would trade a cheap runtime broadcast for a huge
# baked-in array, so it stays a node.  ``full`` is not guarded: the light ONNX
# models make every weight with it (VGG's fc weight is ~400 MB) and the
# convolutions and dense layers after it need those weights as constants.
EXPANDING_OPS = frozenset({"broadcast_to", "tile"})
EXPAND_LIMIT_BYTES = 64 << 20


def fold_constants(graph: Graph) -> Graph:
    """Replace each node whose inputs are all constants by its value.

    Values come from the operator's numpy twin,
    ``graph.ops.get_op(op).evaluate(arrays, attrs)``.  ``shape_of`` always
    folds, from its input's static shape (its input need not be constant);
    ``full`` has no inputs and always folds.  ``broadcast_to`` and ``tile``
    do not fold when their result is over ``EXPAND_LIMIT_BYTES`` and bigger
    than their input.  Folded constants keep the names of the values they
    replace and are C-contiguous.  TVM's ``relay.transform.FoldConstant``
    (NNVM's ``PrecomputePrune``).

    Examples
    --------
    Before::

        graph main(%x: float32[1, 4, 2, 2]) {
          %s: int64[4] = shape_of(%x)
          %var = constant float32[4]
          %eps = constant float32[]
          %d: float32[4] = add(%var, %eps)
          %r: float32[4] = sqrt(%d)
          %rc: float32[4, 1, 1] = reshape(%r, newshape=(4, 1, 1))
          %y: float32[1, 4, 2, 2] = multiply(%x, %rc)
          return %y, %s
        }

    After::

        graph main(%x: float32[1, 4, 2, 2]) {
          %rc = constant float32[4, 1, 1]
          %y: float32[1, 4, 2, 2] = multiply(%x, %rc)
          %s = constant int64[4]
          return %y, %s
        }
    """

    def rewrite(node, ins):
        if node.is_constant:
            return None
        if node.op == "shape_of":
            return (constant_node(np.array(ins[0].shape, dtype=np.int64), node.output.name).output,)
        arrays = [const_array(v) for v in ins]
        if any(a is None for a in arrays) or _too_big(node, arrays):
            return None
        return tuple(_constant(node, v, a) for v, a in zip(node.outputs, _evaluate(node, arrays)))

    return rebuild(graph, rewrite)


def _evaluate(node, arrays: list) -> list:
    try:
        return get_op(node.op).evaluate(arrays, node.attrs)
    except Exception as err:
        shapes = ", ".join(f"{a.dtype}{list(a.shape)}" for a in arrays)
        raise RuntimeError(
            f"fold_constants: evaluating node {node.name!r} ({node.op}) on constants ({shapes}) failed: {err}. "
            f"Exclude 'fold' to keep it as a runtime node."
        ) from err


def _too_big(node, arrays: list) -> bool:
    if node.op not in EXPANDING_OPS:
        return False
    out = sum(v.nbytes for v in node.outputs)
    return out > EXPAND_LIMIT_BYTES and out > sum(a.nbytes for a in arrays)


def _constant(node, value, array: np.ndarray):
    array = np.asarray(array, order="C")  # a transpose's view would alias a strided constant
    if tuple(array.shape) != value.shape:
        raise AssertionError(
            f"fold_constants: node {node.name!r} ({node.op}) evaluated to shape "
            f"{array.shape}, inferred {value.shape}"
        )
    return constant_node(array.astype(value.dtype, copy=False), value.name).output
