"""fuse_attention: ``MatMul(Q, K^T) -> scale -> mask -> Softmax -> MatMul(., V)`` -> one op.

Exporters spell attention as two batched matrix products around a softmax,
with reshapes between the ``[B*H, S, S]`` products and the ``[B, H, S, S]``
scores.  Four to six kernels (two batched products, the scale and mask, the
softmax, the transposes that materialise ``K^T``) become one ``attention``
node, whose kernel reads q, k and v where they lie::

    before:  %s = batch_matmul(%q, %kt)           # [BH, S, D] x [BH, D, S]
             %s4 = reshape(%s, [B, H, S, S])
             %m = add(multiply(%s4, 0.125), %mask)
             %p = reshape(softmax(%m, axis=-1), [BH, S, S])
             %o = batch_matmul(%p, %v)            # [BH, S, S] x [BH, S, Dv]
    after:   %o = attention(%q, %kt, %v, %mask3, scale=0.125, k_transposed=1)

After the softmax it accepts torch's guard ``where(isnan(p), 0, p)`` (the
fused kernel zeroes fully masked rows itself).  A scalar multiplication of q or k under
their reshapes and transposes folds into the scale.  Between the products the pass accepts reshapes, multiplications and
divisions by a scalar constant, additive masks, and ``where(cond, fill, s)``
with a constant ``cond`` and scalar ``fill`` (a causal mask: folded into a
constant additive mask of 0 and ``fill``).  The mask is brought to
``[1 or BH, 1 or Sq, Sk]`` (a constant broadcast over the heads is
materialised; a non-constant one must be per-batch-and-head or shared).
Every intermediate must be used once; anything else leaves the graph as is.
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Graph, Value, constant_node, make_node
from graph.passes.common import const_array, use_counts
from graph.passes.pattern import rebuild_remapped, scalar


def fuse_attention(graph: Graph) -> Graph:
    """Rewrite attention patterns (see the module docstring)."""
    uses = use_counts(graph)

    def rewrite(node, ins, new):
        if node.op != "batch_matmul" or node.attrs.get("transpose_b"):
            return None
        found = _match(node, uses)
        if found is None:
            return None
        q, k, k_transposed, masks, scale = found
        (q, fq), (k, fk) = _unscaled(q, uses, new), _unscaled(k, uses, new)
        scale *= fq * fk
        inputs = [q, k, new(node.inputs[1])]
        mask = _mask(masks, node, new)
        if mask is False:
            return None
        if mask is not None:
            inputs.append(mask)
        return (
            make_node(
                "attention",
                inputs,
                {"scale": scale, "k_transposed": k_transposed},
                node.name,
                [node.output.name],
            ).output,
        )

    return rebuild_remapped(graph, rewrite)


def merge_attention_heads(graph: Graph) -> Graph:
    """Let ``attention`` write its heads merged when a reshape/transpose chain merges them.

    After attention the heads go back next to each other for the output
    projection: ``[BH, S, Dv] -> [B, H, S, Dv] -> transpose -> [B, S, H*Dv]`` (or
    torch MHA's ``transpose(0, 1)`` for one batch), one copy kernel.  When the
    chain of single-use reshapes and transposes after an attention node puts
    the elements in the order of ``[B, S, H, Dv]`` for some ``H`` (checked by
    running the chain on an index array), the node writes that layout itself::

        before:  %a: [4, 128, 64] = attention(...)    %t = transpose(reshape(%a))  %m = reshape(%t)
        after:   %a: [1, 128, 4, 64] = attention(..., heads=4)                     %m = reshape(%a)
    """
    users = graph.consumers()
    uses = use_counts(graph)

    def rewrite(node, ins, new):
        if node.op not in ("reshape", "transpose"):
            return None
        chain, v = [node], node.inputs[0]
        while v.node is not None and v.node.op in ("reshape", "transpose") and uses.get(id(v), 0) == 1:
            chain.append(v.node)
            v = v.node.inputs[0]
        att = v.node
        if att is None or att.op != "attention" or att.attrs.get("heads") or uses.get(id(v), 0) != 1:
            return None
        if len(users.get(id(node.output), ())) == 1 and users[id(node.output)][0][0].op in (
            "reshape",
            "transpose",
        ):
            return None  # rewrite at the end of the chain
        heads = _merged_heads(v.shape, list(reversed(chain)))
        if heads is None:
            return None
        merged = make_node("attention", [new(x) for x in att.inputs], {**att.attrs, "heads": heads}, att.name)
        return (
            make_node(
                "reshape", [merged.output], {"newshape": node.output.shape}, node.name, [node.output.name]
            ).output,
        )

    return rebuild_remapped(graph, rewrite)


def _merged_heads(shape: tuple, chain: list) -> int | None:
    """The H for which ``chain`` (reshapes/transposes, first to last) orders an attention
    output of ``shape`` [BH, S, Dv] as [BH/H, S, H, Dv], or None."""
    bh, sq, dv = shape
    index = np.arange(bh * sq * dv).reshape(shape)
    out = index
    for n in chain:
        out = out.reshape(n.attrs["newshape"]) if n.op == "reshape" else out.transpose(n.attrs.get("axes"))
    flat = out.ravel()
    for heads in range(bh, 0, -1):
        if bh % heads == 0:
            want = index.reshape(bh // heads, heads, sq, dv).transpose(0, 2, 1, 3).ravel()
            if np.array_equal(flat, want):
                return heads
    return None


def privatize_attention_inputs(graph: Graph) -> Graph:
    """Copy the shared injective producers of each attention input (see :func:`_private`).

    Runs after the late common-subexpression pass (which would merge the copies
    back) and before ``fuse_ops``, which then fuses each copy into its kernel."""
    uses = use_counts(graph)

    def rewrite(node, ins, new):
        if node.op != "attention":
            return None
        private = [
            _private(v, uses, new, f"{node.name}/in{k}") if k < 3 else new(v)
            for k, v in enumerate(node.inputs)
        ]
        if all(a is b for a, b in zip(private, ins)):
            return None
        return make_node("attention", private, node.attrs, node.name, [node.output.name]).outputs

    return rebuild_remapped(graph, rewrite)


# What is copied per attention input: moves of data (and a scaling), at most this deep.
LAYOUT_OPS = ("reshape", "transpose", "take", "strided_slice", "expand_dims", "squeeze")  # and split
PRIVATE_DEPTH = 16


def _private(v: Value, uses: dict, new, name: str, depth: int = 0, shared: bool = False) -> Value:
    """``v`` with the injective chain producing it copied where another node shares it.

    Q, K and V usually come from one QKV projection through a shared head
    transpose (``transpose(reshape(dense))`` read by three ``take``); a shared
    node is its own kernel, materialising the transpose.  Copied per input,
    each chain fuses into the attention kernel as index arithmetic on its reads::

        before:  %t = transpose(reshape(%qkv))      %q = take(%t, 0)  %k = take(%t, 1)  ...
        after:   %q = take(transpose(reshape(%qkv)), 0)   %k = take(transpose(reshape(%qkv)), 1)
    """
    n = v.node
    if n is not None and n.op == "split" and depth < PRIVATE_DEPTH:
        return _split_slice(v, uses, new, name, depth)
    if n is None or n.is_constant or depth >= PRIVATE_DEPTH or len(n.outputs) != 1:
        return new(v)
    data = [x for x in n.inputs if x.node is None or not x.node.is_constant]
    if len(data) != 1 or not (n.op in LAYOUT_OPS or (n.op in ("multiply", "divide") and _scalar_side(n))):
        return new(v)
    shared = shared or uses.get(id(v), 0) > 1  # copies of this node would share its producer
    ins = [new(x) if x is not data[0] else _private(x, uses, new, name, depth + 1, shared) for x in n.inputs]
    if not shared and all(a is new(b) for a, b in zip(ins, n.inputs)):
        return new(v)
    return make_node(n.op, ins, n.attrs, f"{name}/{n.op}{depth}").output


def _split_slice(v: Value, uses: dict, new, name: str, depth: int) -> Value:
    """Output ``v.index`` of a ``split`` as a ``strided_slice`` of the split's (private) input:
    a single-output injective op, which fuses where the multi-output split cannot."""
    n = v.node
    x = n.inputs[0]
    axis = n.attrs.get("axis", 0) % len(x.shape)
    start = sum(n.attrs["sizes"][: v.index])
    attrs = {"begin": (start,), "end": (start + n.attrs["sizes"][v.index],), "strides": (1,), "axes": (axis,)}
    src = _private(x, uses, new, name, depth + 1, True)
    return make_node("strided_slice", [src], attrs, f"{name}/slice{depth}").output


def _match(node, uses):
    """(q, k, k_transposed, masks, scale) of the pattern ending at ``node``, or None.

    ``masks``: [(mask value, factor, score shape where it was added)]; the factor is the
    product of the scalings applied after the mask (met before it, walking inwards)."""
    p = node.inputs[0]
    while p.node is not None and p.node.op == "reshape" and uses.get(id(p), 0) == 1:
        p = p.node.inputs[0]
    guarded = _nan_guarded(p, uses)
    p = guarded if guarded is not None else p
    sm = p.node
    if sm is None or sm.op != "softmax" or uses.get(id(p), 0) != (2 if guarded is not None else 1):
        return None
    if sm.attrs.get("axis", -1) % len(p.shape) != len(p.shape) - 1:
        return None
    s, scale, masks = sm.inputs[0], 1.0, []
    while uses.get(id(s), 0) == 1 and s.node is not None:
        n = s.node
        if n.op == "reshape":
            s = n.inputs[0]
        elif n.op in ("multiply", "divide") and _scalar_side(n) is not None:
            k, c = _scalar_side(n)
            f = c if n.op == "multiply" else 1.0 / c
            scale *= f  # walking inwards: masks met later were added before this scaling
            s = n.inputs[k]
        elif n.op == "add":
            side = _score_side(n)
            if side is None:
                return None
            masks.append((n.inputs[1 - side], scale, n.output.shape))
            s = n.inputs[side]
        elif n.op == "where" and const_array(n.inputs[0]) is not None:
            found = _where_mask(n)
            if found is None:
                return None
            m, side = found
            masks.append((m, scale, n.output.shape))
            s = n.inputs[side]
        else:
            break
    mm = s.node
    if mm is None or mm.op != "batch_matmul" or uses.get(id(s), 0) != 1:
        return None
    q, k = mm.inputs
    k_transposed = not mm.attrs.get("transpose_b", False)
    v = node.inputs[1]
    bh, sq, sk = q.shape[0], q.shape[1], (k.shape[2] if k_transposed else k.shape[1])
    if node.inputs[0].shape != (bh, sq, sk) or v.shape[:2] != (bh, sk) or mm.output.shape != (bh, sq, sk):
        return None
    return q, k, k_transposed, masks, scale


def _unscaled(v: Value, uses: dict, new) -> tuple:
    """``(value, factor)``: ``v`` without the multiplication (or division) by a scalar constant
    under its single-use reshapes and transposes, and that scalar, folded into the attention's
    scale; ``(new(v), 1.0)`` when there is none.  torch's SDPA exports multiply q and k^T by
    ``sqrt(scale)`` each, which the kernel would otherwise redo on every read of q and k::

        before:  %q = reshape(multiply(transpose(%x), 0.35))    ->  attention(%q, ..., scale=1)
        after:   %q = reshape(transpose(%x))                    ->  attention(%q, ..., scale=0.35)
    """
    chain, cur = [], v
    while cur.node is not None and cur.node.op in ("reshape", "transpose") and uses.get(id(cur), 0) == 1:
        chain.append(cur.node)
        cur = cur.node.inputs[0]
    n = cur.node
    side = _scalar_side(n) if n is not None and n.op in ("multiply", "divide") else None
    if side is None or uses.get(id(cur), 0) != 1:
        return new(v), 1.0
    k, c = side
    x = new(n.inputs[k])
    for m in reversed(chain):
        x = make_node(m.op, [x], m.attrs, f"{m.name}/unscaled").output
    return x, (c if n.op == "multiply" else 1.0 / c)


def _nan_guarded(p: Value, uses: dict) -> Value | None:
    """``x`` when ``p`` is ``where(isnan(x), 0, x)``: the guard torch's exporter writes after the
    softmax of scaled dot-product attention to zero fully masked rows, which the attention
    kernel zeroes itself (``topi.nn.attention``); None otherwise."""
    n = p.node
    if n is None or n.op != "where" or uses.get(id(p), 0) != 1:
        return None
    cond, fill, x = n.inputs
    if cond.node is None or cond.node.op != "isnan" or uses.get(id(cond), 0) != 1:
        return None
    if cond.node.inputs[0] is not x or scalar(fill) != 0.0 or x.shape != p.shape:
        return None
    return x


def _scalar_side(n):
    for k in (0, 1):
        c = scalar(n.inputs[1 - k])
        if c is not None and n.inputs[k].shape == n.output.shape and (n.op == "multiply" or k == 0):
            return k, c
    return None


def _score_side(n):
    """Which input of an ``add`` carries the scores (the full-shape one that is not constant)."""
    for side in (0, 1):
        if n.inputs[side].shape == n.output.shape and const_array(n.inputs[side]) is None:
            return side
    return None


def _where_mask(n):
    """(constant additive mask, scores side) of ``where(cond, fill, s)`` / ``where(cond, s, fill)``."""
    cond = const_array(n.inputs[0]).astype(bool)
    for side, fill_at in ((2, 1), (1, 2)):
        fill = scalar(n.inputs[fill_at])
        if fill is None or n.inputs[side].shape != n.output.shape:
            continue
        add = np.where(cond, fill, 0.0) if fill_at == 1 else np.where(cond, 0.0, fill)
        dtype = n.output.dtype
        return constant_node(add.astype(dtype), f"{n.name}_additive_mask").output, side
    return None


def _mask(masks, node, new):
    """One ``[MB, MQ, Sk]`` mask value from the masks met, None without any, False when
    the masks cannot be expressed so (the pattern is then left alone)."""
    if not masks:
        return None
    bh, sq, sk = node.inputs[0].shape
    total = np.zeros((bh, sq, sk))
    for m, factor, shape in masks:
        c = const_array(m)
        if c is None:
            if len(masks) != 1 or factor != 1.0:
                return False
            return _dynamic_mask(new(m), shape, bh, sq, sk, node)
        if math.prod(shape) != bh * sq * sk or tuple(shape[-2:]) != (sq, sk):
            return False
        total = total + np.broadcast_to(c.astype(np.float64) * factor, shape).reshape(bh, sq, sk)
    if np.all(total == total[:1]):
        total = total[:1]
    return constant_node(total.astype(node.output.dtype), f"{node.name}_mask").output


def _dynamic_mask(m: Value, shape: tuple, bh: int, sq: int, sk: int, node):
    """A non-constant mask: its broadcast leading axes must be all 1 or all full."""
    padded = (1,) * (len(shape) - len(m.shape)) + tuple(m.shape)
    lead, mq = padded[:-2], padded[-2]
    if padded[-1] != sk or mq not in (1, sq):
        return False
    if math.prod(lead) == 1:
        mb = 1
    elif lead == tuple(shape[:-2]) and math.prod(lead) == bh:
        mb = bh
    else:
        return False
    return make_node("reshape", [m], {"newshape": (mb, mq, sk)}, f"{node.name}_mask").output
