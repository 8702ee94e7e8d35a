"""fuse_layer_norm: the reduction pattern of a layer (or RMS) norm -> one ``layer_norm`` op.

ONNX ``LayerNormalization`` imports as reductions and elementwise ops, and
older exporters emit the same pattern themselves (ReduceMean, Sub, Pow,
ReduceMean, Add epsilon, Sqrt, Div, Mul scale, Add shift).  Four kernels
(mean, subtract, mean of squares, normalise) become one::

    before:  %m = mean(%x, axis=(-1,), keepdims=1)       %c = subtract(%x, %m)
             %v = mean(multiply(%c, %c), axis=(-1,))     %s = sqrt(add(%v, 1e-05))
             %y = add(multiply(divide(%c, %s), %gamma), %beta)
    after:   %y = layer_norm(%x, %gamma, %beta, epsilon=1e-05)

RMS normalisation (``x / sqrt(mean(x^2) + eps) * gamma``, also
``x * rsqrt(...)``, ``x * reciprocal(sqrt(...))`` and ``x * (1 / sqrt(...))``) becomes ``rms_norm``.
The statistics must be over the last axis only, every intermediate used once
(the centred ``%c`` twice), epsilon, gamma and beta constants of the right shape.
"""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, Value, constant_node, make_node
from graph.passes.common import const_array, use_counts
from graph.passes.pattern import producer as _producer
from graph.passes.pattern import rebuild_remapped
from graph.passes.pattern import scalar as _scalar


def fuse_layer_norm(graph: Graph) -> Graph:
    """Rewrite layer-norm and RMS-norm patterns (see the module docstring)."""
    uses = use_counts(graph)
    readers = {k: len({id(n) for n, _ in v}) for k, v in graph.consumers().items()}
    for v in graph.outputs:
        readers[id(v)] = readers.get(id(v), 0) + 1

    def once(v: Value) -> bool:
        return uses.get(id(v), 0) == 1

    def rewrite(node, ins, new):
        if node.op in ("divide", "multiply"):
            found = _normalise(node, once, readers)
            if found is not None:
                op, x, eps = found
                return (_norm(op, [new(x)], eps, node),)
        if node.op in ("multiply", "add") and len(ins) == 2:
            return _absorb_affine(node, ins, once)
        return None

    return rebuild_remapped(graph, rewrite)


def _norm(op: str, inputs, eps: float, node) -> Value:
    return make_node(op, inputs, {"epsilon": eps}, node.name, [node.output.name]).output


def _last_axis_mean(v: Value):
    """The input of ``mean(x, axis=last, keepdims=1)`` producing ``v``, or None."""
    n = _producer(v, "mean")
    if n is None or not n.attrs.get("keepdims"):
        return None
    x = n.inputs[0]
    axis = n.attrs.get("axis")
    axes = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if len(axes) != 1 or axes[0] % len(x.shape) != len(x.shape) - 1:
        return None
    return x


def _square_of(v: Value):
    """``x`` when ``v`` is ``x * x`` or ``x ** 2``."""
    n = v.node
    if n is None:
        return None
    if n.op == "multiply" and n.inputs[0] is n.inputs[1]:
        return n.inputs[0]
    if n.op == "power" and _scalar(n.inputs[1]) == 2.0:
        return n.inputs[0]
    return None


def _variance_eps(v: Value, once):
    """(x2, eps) when ``v`` is ``mean(x2 * x2) + eps`` (x2 the squared value)."""
    n = _producer(v, "add")
    if n is None:
        return None
    for a, b in ((0, 1), (1, 0)):
        eps = _scalar(n.inputs[b])
        mean_in = _last_axis_mean(n.inputs[a])
        if eps is None or mean_in is None or not once(n.inputs[a]) or not once(mean_in):
            continue
        sq = _square_of(mean_in)
        if sq is not None:
            return sq, eps
    return None


def _inv_std(node, once):
    """(denominator form) -> (x2, eps, divides): ``sqrt(var+eps)`` under a divide, or
    ``rsqrt``/``reciprocal(sqrt)`` under a multiply."""
    if node.op == "divide":
        s = _producer(node.inputs[1], "sqrt")
        if s is None or not once(node.inputs[1]) or not once(s.inputs[0]):
            return None
        found = _variance_eps(s.inputs[0], once)
        return None if found is None else (node.inputs[0], *found)
    for a, b in ((0, 1), (1, 0)):
        d = node.inputs[b]
        if not once(d) or d.node is None:
            continue
        inner = None
        if d.node.op == "rsqrt":
            inner = d.node.inputs[0]
        elif (
            d.node.op == "reciprocal"
            and _producer(d.node.inputs[0], "sqrt") is not None
            and once(d.node.inputs[0])
        ):
            inner = d.node.inputs[0].node.inputs[0]
        elif (  # 1 / sqrt(...): how torch.rsqrt exports (Hugging Face T5's norm)
            d.node.op == "divide"
            and _scalar(d.node.inputs[0]) == 1.0
            and _producer(d.node.inputs[1], "sqrt") is not None
            and once(d.node.inputs[1])
        ):
            inner = d.node.inputs[1].node.inputs[0]
        if inner is None or not once(inner):
            continue
        found = _variance_eps(inner, once)
        if found is not None:
            return (node.inputs[a], *found)
    return None


def _normalise(node, once, readers):
    """("layer_norm" | "rms_norm", x, eps) for the normalising divide/multiply, or None."""
    found = _inv_std(node, once)
    if found is None:
        return None
    num, sq, eps = found
    if num.shape != node.output.shape:
        return None
    sub = _producer(num, "subtract")
    if sub is not None and sq is num and readers.get(id(num), 0) == 2:  # the square and the numerator
        x = sub.inputs[0]
        if _last_axis_mean(sub.inputs[1]) is x and once(sub.inputs[1]):
            return "layer_norm", x, eps
    if sq is num and (num.node is None or num.node.op != "subtract"):
        return "rms_norm", num, eps
    return None


def _vector(v: Value, array, n: int, name: str) -> Value:
    """The constant ``v`` as an ``[n]`` vector."""
    return v if v.shape == (n,) else constant_node(array.reshape(n), name).output


def _absorb_affine(node, ins, once):
    """``layer_norm(x) * gamma`` -> ``layer_norm(x, gamma)``; ``... + beta`` likewise."""
    for a, b in ((0, 1), (1, 0)):
        ln = ins[a].node
        if ln is None or ln.op not in ("layer_norm", "rms_norm") or not once(node.inputs[a]):
            continue
        if ln.attrs.get("axis", -1) % len(ins[a].shape) != len(ins[a].shape) - 1:
            continue
        c = const_array(ins[b])
        n = ins[a].shape[-1]
        if c is None or c.size != n or ins[b].shape[-1:] != (n,):
            continue
        have = len(ln.inputs)
        if node.op == "multiply" and have == 1:
            gamma = _vector(ins[b], c, n, f"{node.name}_gamma")
            return (make_node(ln.op, [ln.inputs[0], gamma], ln.attrs, node.name, [node.output.name]).output,)
        if node.op == "add" and ln.op == "layer_norm" and have in (1, 2):
            beta = _vector(ins[b], c, n, f"{node.name}_beta")
            gamma = (
                ln.inputs[1]
                if have == 2
                else constant_node(np.ones(n, ln.inputs[0].dtype), f"{node.name}_gamma").output
            )
            return (
                make_node(
                    "layer_norm", [ln.inputs[0], gamma, beta], ln.attrs, node.name, [node.output.name]
                ).output,
            )
    return None


def fold_norm_transposes(graph: Graph) -> Graph:
    """``transpose -> layer_norm -> inverse transpose`` -> ``layer_norm`` over the original axis.

    A channels-first layer norm (timm's ``LayerNorm2d`` in ConvNeXt, the Swin and
    PoolFormer variants) is exported as a permute to channels-last, a norm over the
    last axis and the permute back: two full copies around every norm.  With the
    normalised axis given, the norm runs where the data lies (``topi.x86.layer_norm``
    vectorizes its statistics along the contiguous axis)::

        before:  %t = transpose(%x, axes=(0, 2, 3, 1))     # [1, 56, 56, 40]
                 %n = layer_norm(%t, %g, %b)
                 %y = transpose(%n, axes=(0, 3, 1, 2))     # [1, 40, 56, 56]
        after:   %y = layer_norm(%x, %g, %b, axis=1)

    Both transposes and the norm must be used once and the second undo the first.
    """
    uses = use_counts(graph)

    def rewrite(node, ins, new):
        if node.op != "transpose" or uses.get(id(node.inputs[0]), 0) != 1:
            return None
        ln = node.inputs[0].node
        if ln is None or ln.op != "layer_norm" or ln.attrs.get("axis", -1) not in (-1, len(ln.output.shape) - 1):
            return None
        t = ln.inputs[0].node
        if t is None or t.op != "transpose" or uses.get(id(ln.inputs[0]), 0) != 1:
            return None
        rank = len(t.inputs[0].shape)
        first = tuple(t.attrs.get("axes") or range(rank)[::-1])
        second = tuple(node.attrs.get("axes") or range(rank)[::-1])
        if [first[k] for k in second] != list(range(rank)):
            return None
        attrs = {**ln.attrs, "axis": first[-1]}
        return make_node("layer_norm", [new(t.inputs[0])] + [new(v) for v in ln.inputs[1:]], attrs, node.name,
                         [node.output.name]).outputs

    return rebuild_remapped(graph, rewrite)
