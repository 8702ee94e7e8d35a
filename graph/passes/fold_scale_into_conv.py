"""Fold per-channel scales into convolution and dense weights; merge constant adds."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, constant_node, copy_node, make_node, rebuild
from graph.passes.common import const_array, replace_node, use_counts

# Producers whose weight (input 1) has the output channel on its first axis.
SCALABLE_OPS = frozenset({"conv2d", "depthwise_conv2d", "dense"})


def fold_scale_into_conv(graph: Graph) -> Graph:
    """Fold scale and shift into convolution weights.

    ``multiply(conv, s)`` with ``s`` a constant per output channel (shape
    ``(C, 1, 1)``, ``(1, C, 1, 1)``, ``(C,)`` for dense, or a scalar) becomes
    the convolution over ``kernel * s[:, None, None, None]``, when nothing
    else reads the convolution's output.  ``conv2d`` (any groups, 4-D OIHW
    kernel), ``depthwise_conv2d`` (kernel ``[C, mult, KH, KW]``, output
    channel ``c * mult + m``) and ``dense`` (weight ``[N, K]``) qualify.  A
    bias add between them moves past the scale (``(conv + b) * s = conv' +
    b * s``), and two constant adds in a row merge into one, so
    ``conv -> add(b) -> batch_norm`` ends as one convolution and one add.
    Exact up to float rounding.  The new convolution keeps the old one's
    names; a replaced add keeps the name of the node it replaces.  The
    backward half of TVM's ``relay.transform.FoldScaleAxis``.

    Examples
    --------
    Before (after ``simplify_inference`` and ``fold_constants``)::

        graph main(%x: float32[1, 3, 8, 8]) {
          %w = constant float32[4, 3, 3, 3]
          %conv: float32[1, 4, 6, 6] = conv2d(%x, %w)
          %bn.scale_c = constant float32[4, 1, 1]
          %bn.mul: float32[1, 4, 6, 6] = multiply(%conv, %bn.scale_c)
          %bn.shift_c = constant float32[4, 1, 1]
          %bn: float32[1, 4, 6, 6] = add(%bn.mul, %bn.shift_c)
          return %bn
        }

    After::

        graph main(%x: float32[1, 3, 8, 8]) {
          %w.scaled = constant float32[4, 3, 3, 3]
          %conv: float32[1, 4, 6, 6] = conv2d(%x, %w.scaled)
          %bn.shift_c = constant float32[4, 1, 1]
          %bn: float32[1, 4, 6, 6] = add(%conv, %bn.shift_c)
          return %bn
        }
    """
    uses = use_counts(graph)

    def rewrite(node, ins):
        new = _rewrite_node(node, ins, uses)
        if new is None:
            if all(a is b for a, b in zip(ins, node.inputs)):
                return None
            new = copy_node(node, ins).outputs
        for old, v in zip(node.outputs, new):  # new values inherit the uses of the old
            uses[id(v)] = uses.get(id(old), 0)
        return new

    return rebuild(graph, rewrite)


def _rewrite_node(node, ins, uses: dict) -> tuple | None:
    if node.op not in ("multiply", "add") or len(ins) != 2:
        return None
    for x, c in (ins, ins[::-1]):
        const = const_array(c)
        if const is None or x.shape != node.output.shape or x.node is None:
            continue
        if node.op == "multiply":
            new = _fold_multiply(node, x, const, uses)
        else:
            new = _merge_adds(node, x, const, uses)
        if new is not None:
            return (new,)
    return None


def _fold_multiply(node, x: Value, scale: np.ndarray, uses: dict) -> Value | None:
    """``x * scale`` with ``x`` a scalable producer, or a constant add over one."""
    if uses.get(id(x), 0) != 1:
        return None
    if x.node.op in SCALABLE_OPS:
        return _scaled_producer(x.node, scale)
    if x.node.op != "add":
        return None
    for y, b in (x.node.inputs, x.node.inputs[::-1]):
        bias = const_array(b)
        if bias is None or y.shape != x.shape or y.node is None or uses.get(id(y), 0) != 1:
            continue
        if y.node.op not in SCALABLE_OPS:
            continue
        conv = _scaled_producer(y.node, scale)
        if conv is not None:
            uses[id(conv)] = 1  # read by the add below only
            shifted = constant_node((bias * scale).astype(bias.dtype, copy=False), f"{b.name}.scaled").output
            return replace_node(node, "add", (conv, shifted))
    return None


def _merge_adds(node, x: Value, t: np.ndarray, uses: dict) -> Value | None:
    """``(y + b) + t`` with constants ``b``, ``t`` -> ``y + (b + t)``."""
    if x.node.op != "add" or uses.get(id(x), 0) != 1:
        return None
    for y, b in (x.node.inputs, x.node.inputs[::-1]):
        bias = const_array(b)
        if bias is not None and y.shape == x.shape:
            merged = constant_node((bias + t).astype(bias.dtype, copy=False), f"{b.name}.merged").output
            return replace_node(node, "add", (y, merged))
    return None


def _scaled_producer(prod, scale: np.ndarray) -> Value | None:
    """``prod`` over its weight scaled per output channel, or ``None`` if it does not apply."""
    if len(prod.inputs) != 2:
        return None
    data, w = prod.inputs
    kernel = const_array(w)
    vec = channel_vector(scale, prod.output.shape)
    if kernel is None or vec is None:
        return None
    if prod.op == "dense" and kernel.ndim == 2:
        factor = vec[:, None]
    elif prod.op == "conv2d" and kernel.ndim == 4:
        factor = vec[:, None, None, None]
    elif prod.op == "depthwise_conv2d" and kernel.ndim == 4:
        factor = vec.reshape(kernel.shape[0], kernel.shape[1])[:, :, None, None]
    else:
        return None
    new_w = constant_node((kernel * factor).astype(kernel.dtype, copy=False), f"{w.name}.scaled").output
    return make_node(prod.op, (data, new_w), prod.attrs, prod.name, [v.name for v in prod.outputs]).output


def channel_vector(scale: np.ndarray, out_shape: tuple) -> np.ndarray | None:
    """``scale`` as a vector over axis 1 of ``out_shape`` when it varies along no other axis."""
    rank = len(out_shape)
    if scale.ndim > rank or rank < 2:
        return None
    shape = (1,) * (rank - scale.ndim) + tuple(scale.shape)
    if any(d != 1 for k, d in enumerate(shape) if k != 1) or shape[1] not in (1, out_shape[1]):
        return None
    return np.broadcast_to(scale.reshape(shape[1]), (out_shape[1],))
