"""hoist_dense_epilogue: let the bias, residual and activation after a dense fuse into it.

A ``MatMul`` of a 3-D activation by a constant weight imports as
``reshape(dense(reshape(x)))``: the leading axes are folded into the rows of a
``dense`` over the (later packed) weight.  The elementwise ops that follow
(``Add`` bias, residual ``Add``, ``Relu``...) then see the 3-D reshape, and a
reshape is injective, not elementwise: the dense cannot take them as its
epilogue.  This pass moves such ops above the reshape, onto the 2-D rows::

    before:  %d: [128, 1024] = dense(%x2, %w)
             %r: [1, 128, 1024] = reshape(%d)
             %y: [1, 128, 1024] = add(%r, %b)            # %b: [1024]
             %z: [1, 128, 1024] = relu(%y)
    after:   %y2: [128, 1024] = add(%d, %b)
             %z2: [128, 1024] = relu(%y2)
             %z: [1, 128, 1024] = reshape(%z2)           # fuse_ops: dense + add + relu, one kernel

An operand of the moved op must broadcast along the last axis only (a bias
``[N]``/``[1, 1, N]``, a scalar) or have the full shape (a residual, reshaped
to the 2-D rows: a reshape is an alias).  It also turns transposes that only
move unit axes into reshapes (``[1, 128, 256] -> [128, 1, 256]``), and
collapses ``reshape(reshape(x))``, so the reshapes meet.
"""

from __future__ import annotations

import math

from graph.ir import Graph, Value, make_node, rebuild
from graph.ops import get_op
from graph.ops.registry import BROADCAST, OUT_ELEMWISE_FUSABLE


def hoist_dense_epilogue(graph: Graph) -> Graph:
    """Move elementwise ops above the reshape after a dense (see the module docstring)."""
    counter = [0]

    def rewrite(node, ins):
        if node.op == "transpose":
            return _unit_transpose(node, ins[0])
        if node.op == "reshape":
            return _collapse_reshape(node, ins[0])
        if len(node.outputs) == 1 and get_op(node.op).pattern <= BROADCAST and ins:
            return _hoist(node, ins, counter)
        return None

    return rebuild(graph, rewrite)


def _reshape(v: Value, shape: tuple, name: str, out_names=None) -> Value:
    """``reshape(v, shape)``, reading through a reshape that produces ``v``."""
    if v.node is not None and v.node.op == "reshape":
        v = v.node.inputs[0]
    if v.shape == tuple(shape):
        return v
    return make_node("reshape", [v], {"newshape": tuple(shape)}, name, out_names).output


def _unit_transpose(node, x: Value):
    axes = node.attrs.get("axes") or tuple(reversed(range(len(x.shape))))
    moved = [a for a in axes if x.shape[a] != 1]
    if moved != sorted(moved):
        return None
    return (_reshape(x, node.output.shape, node.name, [node.output.name]),)


def _collapse_reshape(node, x: Value):
    if x.node is None or x.node.op != "reshape":
        return None
    return (_reshape(x, node.output.shape, node.name, [node.output.name]),)


def _rows_source(v: Value) -> Value | None:
    """The 2-D ``[M, N]`` value that ``v`` reshapes, when it comes from a dense or its epilogue."""
    if v.node is None or v.node.op != "reshape" or len(v.shape) < 2:
        return None
    src = v.node.inputs[0]
    if len(src.shape) != 2 or src.shape[1] != v.shape[-1] or src.node is None:
        return None
    pattern = get_op(src.node.op).pattern
    return src if pattern in (OUT_ELEMWISE_FUSABLE,) or pattern <= BROADCAST else None


def _operand_2d(v: Value, full: tuple, rows: tuple, name: str) -> Value | None:
    """``v`` (broadcasting to ``full``) as an operand of the 2-D op over ``rows``, or None."""
    if v.shape == full:
        return _reshape(v, rows, name)
    if math.prod(v.shape) == 1:
        return v if len(v.shape) <= 2 else _reshape(v, (1,) * len(rows), name)
    padded = (1,) * (len(full) - len(v.shape)) + tuple(v.shape)
    if all(d == 1 for d in padded[:-1]) and padded[-1] == full[-1]:
        return v if len(v.shape) <= 2 else _reshape(v, (1, full[-1]), name)
    return None


def _hoist(node, ins, counter):
    full = node.output.shape
    src_at = next((k for k, v in enumerate(ins) if v.shape == full and _rows_source(v) is not None), None)
    if src_at is None:
        return None
    rows = _rows_source(ins[src_at]).shape
    new_ins = []
    for k, v in enumerate(ins):
        if k == src_at:
            new_ins.append(_rows_source(v))
            continue
        counter[0] += 1
        op2d = _operand_2d(v, full, rows, f"{node.name}_operand{counter[0]}")
        if op2d is None:
            return None
        new_ins.append(op2d)
    inner = make_node(node.op, new_ins, node.attrs, f"{node.name}_rows")
    if inner.output.shape != rows:
        return None
    return (_reshape(inner.output, full, node.name, [node.output.name]),)
