"""alter_op_layout: keep activations in the blocked NCHW[x]c layout between convolutions.

TVM's AlterOpLayout for x86.  A ``conv2d`` with a constant kernel that the
x86 fast path can block becomes ``conv2d_NCHWc`` with a packed kernel and a
blocked output ``[N, OC/oc_bn, OH, OW, oc_bn]``.  Its consumers then work on
the blocked value where their meaning does not depend on the layout:

* elementwise ops (relu, clip, ...) as they are;
* broadcast binaries (add, multiply, ...): in the block of their largest
  blocked operand, to which the others are brought (a squeeze-excite scale
  ``[1, C/8, 1, 1, 8]`` is converted, not the activations it scales); a
  per-channel constant (``[C, 1, 1]``, ``[1, C, 1, 1]``) is re-laid out to
  ``[1, C/b, 1, 1, b]`` here, in numpy;
* ``pool2d`` and ``global_pool`` with ``layout="NCHWc"``;
* ``concatenate`` along the channels when every input is blocked, by the block
  :func:`~graph.passes.layout_state.concat_block` gives (the one ``choose_configs``
  passes on to the next conv's ``ic_bn``);
* a following ``conv2d_NCHWc`` takes the block as its ``ic_bn`` (unless the
  node's config says otherwise); an int8 ``conv2d_int8`` reads any block and
  writes its ``oc_bn`` block (:func:`_conv_int8`).

A conv whose ``oc_bn`` zero-pads its channels (72 by 16: the x86 rule's wide
tile) keeps them padded in its packed kernel only; its output is blocked by
the largest half of ``oc_bn`` that divides them (attrs ``channels=72,
out_block=8``), so no padded channel reaches another op.

Grouped convs whose blocks do not divide a group, depthwise convs and
ShuffleNet's channel shuffle stay blocked too (:mod:`graph.passes.alter_grouped_layout`).
Only values that reach a converted conv (or a pooling) through such ops stay
blocked, and a binary op with a plain activation operand runs in NCHW.
Everything else (reshape, flatten, softmax, dense, LRN, a depthwise conv whose
output leaves the chain, a graph output ...) needs NCHW: a ``layout_transform`` node is inserted once
per value (and where two block sizes meet), which fusion folds into the
producing conv's output loop when it is that conv's only consumer::

    before:  %c1 = conv2d(%x, %w1)  %r = relu(%c1)  %c2 = conv2d(%r, %w2)  %f = reshape(%c2)
    after:   %c1 = conv2d_NCHWc(%x, pack(%w1))                 # [1, 2, 56, 56, 32]
             %r  = relu(%c1)                                   # stays blocked
             %c2 = conv2d_NCHWc(%r, pack(%w2))                 # ic_bn = 32: no transform
             %t  = layout_transform(%c2, "NCHW32c", "NCHW")
             %f  = reshape(%t)

A conv writes the block that the conv alone reading its output takes, where
that block divides its ``oc_bn`` (:func:`read_blocks`, :func:`~graph.passes.
alter_grouped_layout.concat_blocks`): no transform sits between them.

The first conv of a chain reads its NCHW input and packs it inside its
kernel; the pass never converts a plain value only to feed a conv.  The
pass profile counts the transforms as nodes after the pass; the helper
:func:`count_transforms` counts them in any graph.
"""

from __future__ import annotations

from graph.ir import Graph, copy_node, make_node
from graph.ops import get_op
from graph.ops.registry import ELEMWISE
from graph.passes import alter_grouped_layout as grouped
from graph.passes.alter_conv_layout import conv_blocks, helpers, is_winograd, winograd_layout
from graph.passes.layout_state import (BINARY_OPS, PER_TENSOR_OPS, POOL_OPS, Layouts, concat_block, convertible,
                                       mark_upstream, transparent)
from tune.autotvm.config import with_values


def count_transforms(graph: Graph) -> int:
    """The ``layout_transform`` nodes of ``graph`` (inside fused groups too)."""
    n = 0
    for node in graph.nodes:
        if node.op == "layout_transform":
            n += 1
        elif node.op == "fused":
            n += count_transforms(node.attrs["body"])
    return n


def _wanted(graph: Graph, convs: set, shuffles: dict) -> set:
    """ids of the values worth keeping blocked: those that reach a converted conv's data or
    a pooling (whose output is smaller to convert) through ops that run on blocked values.
    Elsewhere a blocked conv output goes back to NCHW right away, which its kernel does
    for free (the transform fuses into it)."""
    users = graph.consumers()
    wanted: set = set()
    for node in reversed(graph.nodes):
        for v in node.outputs:
            for user, k in users.get(id(v), ()):
                reaches = id(user) in convs and k == 0 or user.op in POOL_OPS and transparent(user)
                tail = shuffles[id(user)][2].output if id(user) in shuffles else None
                if reaches or (transparent(user) and id(user.output) in wanted) or id(tail) in wanted:
                    wanted.add(id(v))
                    break
    return wanted


def alter_op_layout(graph: Graph, context) -> Graph:
    """Convert blockable convs to ``conv2d_NCHWc`` and propagate the blocked layout (module docstring)
    of the build's target (``context.target``); nothing on a target with no blocked layout
    (``alter_conv_layout.helpers``)."""
    target = context.target
    if helpers(target) is None:
        return graph
    convs = {id(n) for n in graph.nodes if convertible(n, target) or grouped.group_convertible(n, target)
             or grouped.depthwise_convertible(n) or n.op == "conv2d_int8"}
    if not convs:
        return graph
    lay = Layouts(graph, target)
    lay.shuffles = grouped.find_shuffles(graph)
    lay.users = graph.consumers()
    lay.wanted = _wanted(graph, convs, lay.shuffles)
    lay.concat_blocks = grouped.concat_blocks(graph)
    lay.read_blocks = read_blocks(graph, target)
    for node in graph.nodes:
        if node.is_constant or id(node) in lay.skip:
            continue
        ins = [lay.of(v) for v in node.inputs]
        outs = _rewrite(node, ins, lay)
        if outs is None:
            ins = [lay.to(v, 0) for v in ins]
            if all(a is b for a, b in zip(ins, node.inputs)):
                continue
            outs = copy_node(node, ins).outputs
        for old, new in zip(node.outputs, outs):
            lay.new[id(old)] = new
    if not lay.changed:
        return graph
    outputs = [lay.to(lay.of(v), 0) for v in graph.outputs]
    return Graph.from_outputs(graph.inputs, outputs, graph.name)


def read_blocks(graph: Graph, target) -> dict:
    """id(old value) -> the input block ``ic_bn`` of the plain blocked conv that alone reads it,
    directly or through elementwise ops with constant operands (bias, relu), for the values
    on that path: a conv there whose ``oc_bn`` that block divides writes it itself (RegNet's
    1x1 convs write 16-channel blocks by rule, its grouped 3x3 convs of 8-channel groups read
    8; a transform between them cost as much as the 1x1 conv)."""
    users = graph.consumers()
    outputs = {id(v) for v in graph.outputs}
    found = {}
    for node in graph.nodes:
        if (node.op != "conv2d" or not convertible(node, target) or is_winograd(node)
                or grouped.group_convertible(node, target)):
            continue
        mark_upstream(node.inputs[0], conv_blocks(node, target)[0], found,
                      lambda v: len(users.get(id(v), ())) == 1 and id(v) not in outputs)
    return found


def _rewrite(node, ins: list, lay: Layouts) -> tuple | None:
    """The blocked form of ``node`` (new output values), or None to run it in NCHW."""
    if node.op == "conv2d" and grouped.group_convertible(node, lay.target):
        return grouped.group_conv(node, ins, lay)
    if node.op == "conv2d":
        return _conv(node, ins, lay)
    if node.op == "conv2d_int8":
        return _conv_int8(node, ins, lay)
    if node.op == "depthwise_conv2d":
        return grouped.depthwise(node, ins, lay)
    if id(node) in lay.shuffles:
        return grouped.shuffle(node, ins, lay)
    blocked = [lay.block_of(v) for v in ins if lay.block_of(v)]
    if (
        not blocked
        or not transparent(node)
        or (id(node.output) not in lay.wanted and node.op not in POOL_OPS)
    ):
        return None
    pattern = get_op(node.op).pattern
    if pattern == ELEMWISE and len(ins) == 1:
        return lay.produce(make_node(node.op, ins, node.attrs, node.name, [node.output.name]), blocked[0])
    if node.op in BINARY_OPS:  # in the block of its largest operand (a squeeze-excite scale converts)
        return _binary(node, ins, lay, lay.block_of(max((v for v in ins if lay.block_of(v)), key=lambda v: v.size)))
    if node.op in PER_TENSOR_OPS and lay.block_of(ins[0]):
        block = lay.block_of(ins[0])
        params = [lay.channel_param(v, block, node.output.shape[1]) for v in ins[1:]]
        if any(p is None for p in params):
            return None
        return lay.produce(make_node(node.op, [ins[0], *params], node.attrs, node.name, [node.output.name]), block)
    if node.op in POOL_OPS and node.attrs.get("layout", "NCHW") == "NCHW":
        attrs = {**node.attrs, "layout": "NCHWc"}
        return lay.produce(make_node(node.op, ins, attrs, node.name, [node.output.name]), blocked[0])
    if node.op == "concatenate" and node.attrs.get("axis", 0) in (1, -3):
        return _concat(node, ins, lay)
    return None


def _binary(node, ins: list, lay: Layouts, block: int) -> tuple | None:
    """Blocked operands (brought to one block) and constants re-laid out; None when an
    operand is a plain activation: the op then runs in NCHW rather than convert it."""
    channels = node.output.shape[1]
    new = []
    for old, v in zip(node.inputs, ins):
        if lay.block_of(v):
            new.append(lay.to(v, block))
            continue
        if old.node is None or not old.node.is_constant:
            return None
        c = lay.constant(old, block, channels)
        if c is None:
            return None
        new.append(c)
    return lay.produce(make_node(node.op, new, node.attrs, node.name, [node.output.name]), block)


def _concat(node, ins: list, lay: Layouts) -> tuple | None:
    """Concatenate blocked inputs along the block axis, in :func:`concat_block`'s block
    (the others are converted), else None."""
    if any(len(v.shape) != 4 for v in node.inputs):
        return None
    block = concat_block([lay.block_of(v) for v in ins], [v.shape[1] for v in node.inputs], node.output.dtype,
                         lay.target)
    if not block:
        return None
    new = [lay.to(v, block) for v in ins]
    return lay.produce(
        make_node("concatenate", new, {**node.attrs, "axis": 1}, node.name, [node.output.name]), block
    )


def _conv(node, ins: list, lay: Layouts) -> tuple | None:
    """``conv2d`` -> ``conv2d_NCHWc`` with a packed kernel, when the x86 fast path can block it."""
    if not convertible(node, lay.target):
        return None
    if is_winograd(node):  # any data block in, the direct rule's block out
        return winograd_layout(node, ins, lay)
    kernel = node.inputs[1]
    have = lay.block_of(ins[0])
    blocks = conv_blocks(node, lay.target, prefer_ic_bn=have, padded=True)
    if blocks is None:
        return None
    ic_bn, oc_bn = blocks
    channels = kernel.shape[0]
    out_block = helpers(lay.target).conv_out_block(channels, oc_bn, node.attrs.get("groups", 1))
    want = lay.concat_blocks.get(id(node.output)) or lay.read_blocks.get(id(node.output))
    if want and out_block and want != out_block and oc_bn % want == 0 and channels % want == 0:
        out_block = want  # the block its consumer reads, written by the register tile itself
    data = lay.to(ins[0], ic_bn) if have else ins[0]
    packed = make_node(
        "pack_conv2d_kernel",
        [kernel],
        {"ic_bn": ic_bn, "oc_bn": oc_bn},
        lay.fresh(f"{node.name}_kernel_packed"),
    )
    attrs = dict(node.attrs)
    if attrs.get("config") is not None:
        attrs["config"] = with_values(attrs["config"], ic_bn=ic_bn, oc_bn=oc_bn)
    if out_block != oc_bn:  # the kernel's channels zero-padded to whole blocks, the output by out_block
        attrs.update(channels=channels, out_block=out_block)
    conv = make_node("conv2d_NCHWc", [data, packed.output], attrs, node.name, [node.output.name])
    return lay.produce(conv, out_block)


def _conv_int8(node, ins: list, lay: Layouts) -> tuple | None:
    """``conv2d_int8`` (``graph.passes.lower_int8``) reads a blocked input as it comes (in place
    when blocked by its kernel's ``ic_bn``) and, when a conv or pooling wants its value blocked,
    writes NCHW[oc_bn]c: its requantization then stores each register tile's channels as one
    vector (``topi.x86.conv2d_int8``); None: NCHW in and out."""
    oc_bn = node.attrs["oc_bn"]
    out_block = oc_bn if node.attrs["channels"] % oc_bn == 0 and id(node.output) in lay.wanted else 0
    if not out_block and not lay.block_of(ins[0]):
        return None
    conv = make_node("conv2d_int8", ins, {**node.attrs, "out_block": out_block}, node.name, [node.output.name])
    return lay.produce(conv, out_block)
