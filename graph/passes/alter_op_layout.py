"""alter_op_layout: keep activations in the blocked NCHW[x]c layout between convolutions.

TVM's AlterOpLayout for x86.  A ``conv2d`` with a constant kernel that the
x86 fast path can block becomes ``conv2d_NCHWc`` with a packed kernel and a
blocked output ``[N, OC/oc_bn, OH, OW, oc_bn]``.  Its consumers then work on
the blocked value where their meaning does not depend on the layout:

* elementwise ops (relu, clip, ...) as they are;
* broadcast binaries (add, multiply, ...): an operand of the same shape is
  brought to the same block, a per-channel constant (``[C, 1, 1]``,
  ``[1, C, 1, 1]``) is re-laid out to ``[1, C/b, 1, 1, b]`` here, in numpy;
* ``pool2d`` and ``global_pool`` with ``layout="NCHWc"``;
* ``concatenate`` along the channels when every input's channels are whole
  blocks of one size;
* a following ``conv2d_NCHWc`` takes the block as its ``ic_bn`` (unless the
  node's config says otherwise).

Only values that reach a converted conv (or a pooling) through such ops stay
blocked, and a binary op with a plain activation operand runs in NCHW.
Everything else (reshape, flatten, softmax, dense, LRN, depthwise conv, a
graph output ...) needs NCHW: a ``layout_transform`` node is inserted once
per value (and where two block sizes meet), which fusion folds into the
producing conv's output loop when it is that conv's only consumer::

    before:  %c1 = conv2d(%x, %w1)  %r = relu(%c1)  %c2 = conv2d(%r, %w2)  %f = reshape(%c2)
    after:   %c1 = conv2d_NCHWc(%x, pack(%w1))                 # [1, 2, 56, 56, 32]
             %r  = relu(%c1)                                   # stays blocked
             %c2 = conv2d_NCHWc(%r, pack(%w2))                 # ic_bn = 32: no transform
             %t  = layout_transform(%c2, "NCHW32c", "NCHW")
             %f  = reshape(%t)

The first conv of a chain reads its NCHW input and packs it inside its
kernel; the pass never converts a plain value only to feed a conv.  The
pass profile counts the transforms as nodes after the pass; the helper
:func:`count_transforms` counts them in any graph.
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Graph, Value, constant_node, copy_node, make_node
from graph.ops import get_op
from graph.ops.layout import blocked_layout
from graph.ops.registry import ELEMWISE

# Broadcast binaries that are elementwise once their operands share a layout.
BINARY_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "prelu")
POOL_OPS = ("pool2d", "global_pool")


def count_transforms(graph: Graph) -> int:
    """The ``layout_transform`` nodes of ``graph`` (inside fused groups too)."""
    n = 0
    for node in graph.nodes:
        if node.op == "layout_transform":
            n += 1
        elif node.op == "fused":
            n += count_transforms(node.attrs["body"])
    return n


class _Layouts:
    """Old value -> new value, the block of each new blocked value, and the transforms made."""

    def __init__(self, graph: Graph):
        self.new: dict = {}
        self.block: dict = {}  # id(new value) -> channels per block
        self.cache: dict = {}  # (id(new value), layout) -> converted value
        self.names = {v.name for n in graph.nodes for v in n.outputs} | {v.name for v in graph.inputs}
        self.changed = False
        self.wanted: set = set()  # ids of old values worth keeping blocked
        self.shuffles: dict = {}  # id(reshape) -> (groups, transpose, last reshape) of a channel shuffle
        self.skip: set = set()  # ids of old nodes already rewritten (a shuffle's transpose and reshape)
        self.users: dict = {}  # id(old value) -> [(consumer, input index)]
        self.concat_blocks: dict = {}  # id(old value) -> the block a channel concat of it will take

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.names:
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def of(self, v: Value) -> Value:
        return self.new.get(id(v), v)

    def block_of(self, v: Value) -> int:
        return self.block.get(id(v), 0)

    def produce(self, node, block: int = 0) -> tuple:
        """Record ``node`` as the new producer; its outputs are blocked by ``block`` (0: plain)."""
        for v in node.outputs:
            if block:
                self.block[id(v)] = block
        self.changed = True
        return node.outputs

    def to(self, v: Value, block: int) -> Value:
        """``v`` (a new value) in layout NCHW (``block`` 0) or NCHW[block]c, converting once."""
        have = self.block_of(v)
        if have == block:
            return v
        key = (id(v), block)
        if key not in self.cache:
            src = blocked_layout(have) if have else "NCHW"
            dst = blocked_layout(block) if block else "NCHW"
            node = make_node(
                "layout_transform", [v], {"src_layout": src, "dst_layout": dst}, self.fresh(f"{v.name}_{dst}")
            )
            self.produce(node, block)
            self.cache[key] = node.output
        return self.cache[key]

    def constant(self, v: Value, block: int, channels: int) -> Value | None:
        """A constant broadcast operand re-laid out for a ``[N, C/b, H, W, b]`` operand, or None."""
        if v.size == 1 and len(v.shape) <= 5:
            return v
        shape = (1,) * (4 - len(v.shape)) + tuple(v.shape) if len(v.shape) <= 4 else None
        if shape is None or shape[1] not in (1, channels):
            return None
        key = (id(v), block)
        if key not in self.cache:
            arr = np.asarray(v.node.attrs["value"]).reshape(shape)
            a, c, h, w = shape
            if c == 1:
                arr = arr.reshape(a, 1, h, w, 1)
            else:
                arr = arr.reshape(a, c // block, block, h, w).transpose(0, 1, 3, 4, 2)
            self.cache[key] = constant_node(
                np.ascontiguousarray(arr), self.fresh(f"{v.name}_{blocked_layout(block)}")
            ).output
        return self.cache[key]


def _convertible(node) -> bool:
    """Whether ``node`` is a conv2d that becomes ``conv2d_NCHWc`` (or ``conv2d_winograd``)."""
    from graph.passes.alter_conv_layout import conv_blocks, is_winograd

    if node.op != "conv2d" or len(node.inputs) != 2:
        return False
    kernel = node.inputs[1]
    if len(kernel.shape) != 4 or kernel.node is None or not kernel.node.is_constant:
        return False
    if kernel.dtype != "float32" or node.inputs[0].dtype != "float32":
        return False
    return conv_blocks(node) is not None or is_winograd(node)


def _transparent(node) -> bool:
    """Whether ``node`` may run on blocked values (given suitable shapes)."""
    if len(node.outputs) != 1 or len(node.output.shape) != 4:
        return False
    if get_op(node.op).pattern == ELEMWISE and len(node.inputs) == 1:
        return True
    if node.op == "concatenate":
        return node.attrs.get("axis", 0) in (1, -3)
    return node.op in BINARY_OPS or node.op in POOL_OPS


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
                reaches = id(user) in convs and k == 0 or user.op in POOL_OPS and _transparent(user)
                tail = shuffles[id(user)][2].output if id(user) in shuffles else None
                if reaches or (_transparent(user) and id(user.output) in wanted) or id(tail) in wanted:
                    wanted.add(id(v))
                    break
    return wanted


def alter_op_layout(graph: Graph) -> Graph:
    """Convert blockable convs to ``conv2d_NCHWc`` and propagate the blocked layout (module docstring)."""
    convs = {id(n) for n in graph.nodes if _convertible(n) or _group_convertible(n) or _depthwise_convertible(n)}
    if not convs:
        return graph
    lay = _Layouts(graph)
    lay.shuffles = _shuffles(graph)
    lay.users = graph.consumers()
    lay.wanted = _wanted(graph, convs, lay.shuffles)
    lay.concat_blocks = _concat_blocks(graph)
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


def _rewrite(node, ins: list, lay: _Layouts) -> tuple | None:
    """The blocked form of ``node`` (new output values), or None to run it in NCHW."""
    if node.op == "conv2d" and _group_convertible(node):
        return _group_conv(node, ins, lay)
    if node.op == "conv2d":
        return _conv(node, ins, lay)
    if node.op == "depthwise_conv2d":
        return _depthwise(node, ins, lay)
    if id(node) in lay.shuffles:
        return _shuffle(node, ins, lay)
    blocked = [lay.block_of(v) for v in ins if lay.block_of(v)]
    if (
        not blocked
        or not _transparent(node)
        or (id(node.output) not in lay.wanted and node.op not in POOL_OPS)
    ):
        return None
    pattern = get_op(node.op).pattern
    if pattern == ELEMWISE and len(ins) == 1:
        return lay.produce(make_node(node.op, ins, node.attrs, node.name, [node.output.name]), blocked[0])
    if node.op in BINARY_OPS:
        return _binary(node, ins, lay, blocked[0])
    if node.op in POOL_OPS and node.attrs.get("layout", "NCHW") == "NCHW":
        attrs = {**node.attrs, "layout": "NCHWc"}
        return lay.produce(make_node(node.op, ins, attrs, node.name, [node.output.name]), blocked[0])
    if node.op == "concatenate" and node.attrs.get("axis", 0) in (1, -3):
        return _concat(node, ins, lay, blocked)
    return None


def _binary(node, ins: list, lay: _Layouts, block: int) -> tuple | None:
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


def _concat(node, ins: list, lay: _Layouts, blocked: list) -> tuple | None:
    """Concatenate blocked inputs along the block axis: the most common block that
    divides every input's channels (the others are converted), else None."""
    if any(len(v.shape) != 4 for v in node.inputs):
        return None
    fits = [b for b in blocked if all(v.shape[1] % b == 0 for v in node.inputs)]
    common = math.gcd(*blocked, *(v.shape[1] for v in node.inputs))
    if not fits and common >= 8:
        fits = [common]  # (112 by 16) ++ (24 by 24): both by 8, rather than both to NCHW
    if not fits or len(blocked) != len(ins):
        return None
    block = max(sorted(set(fits), reverse=True), key=fits.count)
    new = [lay.to(v, block) for v in ins]
    return lay.produce(
        make_node("concatenate", new, {**node.attrs, "axis": 1}, node.name, [node.output.name]), block
    )


def _conv(node, ins: list, lay: _Layouts) -> tuple | None:
    """``conv2d`` -> ``conv2d_NCHWc`` with a packed kernel, when the x86 fast path can block it."""
    from graph.passes.alter_conv_layout import conv_blocks, is_winograd, winograd_layout

    if not _convertible(node):
        return None
    if is_winograd(node):  # any data block in, the direct rule's block out
        return winograd_layout(node, ins, lay)
    kernel = node.inputs[1]
    have = lay.block_of(ins[0])
    blocks = conv_blocks(node, prefer_ic_bn=have)
    if blocks is None:
        return None
    ic_bn, oc_bn = blocks
    data = lay.to(ins[0], ic_bn) if have else ins[0]
    packed = make_node(
        "pack_conv2d_kernel",
        [kernel],
        {"ic_bn": ic_bn, "oc_bn": oc_bn},
        lay.fresh(f"{node.name}_kernel_packed"),
    )
    attrs = dict(node.attrs)
    if attrs.get("config") is not None:
        attrs["config"] = attrs["config"].with_values(ic_bn=ic_bn, oc_bn=oc_bn)
    conv = make_node("conv2d_NCHWc", [data, packed.output], attrs, node.name, [node.output.name])
    return lay.produce(conv, oc_bn)


# ------------------------------------------------ grouped, depthwise, shuffle ---
# ShuffleNet's units (grouped 1x1 conv -> shuffle -> depthwise 3x3 -> grouped 1x1 conv)
# stay blocked from end to end:
#
#     before:  %g = conv2d(%x, %w, groups=4)               # 34 channels a group: no block divides
#              %s = reshape(%g) %t = transpose(%s) %u = reshape(%t)   # channel shuffle
#              %d = depthwise_conv2d(%u, %k)
#     after:   %g = group_conv2d_NCHWc(%x, span_pack(%w))  # blocks span groups, zeros across
#              %u = channel_shuffle(%g, groups=4)          # on the blocked value
#              %d = depthwise_conv2d_NCHWc(%u, pack(%k))   # channels in the lanes


def _constant_kernel(node) -> bool:
    kernel = node.inputs[1] if len(node.inputs) > 1 else None
    return (kernel is not None and len(kernel.shape) == 4 and kernel.node is not None and kernel.node.is_constant
            and kernel.dtype == "float32" and node.inputs[0].dtype == "float32")


def _group_convertible(node) -> bool:
    """A grouped ``conv2d`` (not depthwise) whose output channels divide into blocks of 8 and
    that the blocked path refuses, or blocks by less than a vector where a group holds one
    (ShuffleNet's 136 a group: 8; 544 -> 544 at 7x7 by 16 across groups, 75 us, by 8: 116 us): it becomes
    ``group_conv2d_NCHWc``, blocks of a vector spanning groups."""
    from graph.passes.alter_conv_layout import conv_blocks
    from topi.config import current_target

    groups = node.attrs.get("groups", 1)
    if node.op != "conv2d" or len(node.inputs) != 2 or groups == 1 or not _constant_kernel(node):
        return False
    oc, icg = node.inputs[1].shape[:2]
    if icg == 1 or oc % 8 or len(node.inputs[0].shape) != 4:
        return False
    vec = current_target().lanes(node.inputs[0].dtype)
    return not _convertible(node) or conv_blocks(node)[1] < vec and oc % vec == 0 and oc // groups >= vec


def _depthwise_convertible(node) -> bool:
    """A ``depthwise_conv2d`` of multiplier 1 with a constant kernel."""
    return (node.op == "depthwise_conv2d" and len(node.inputs) == 2 and _constant_kernel(node)
            and node.inputs[1].shape[1] == 1 and node.inputs[1].shape[0] == node.inputs[0].shape[1])


def _group_conv(node, ins: list, lay: _Layouts) -> tuple | None:
    """``conv2d`` (grouped) -> ``group_conv2d_NCHWc``; its data's block is kept when it divides IC."""
    from topi.config import choose_config, make_config
    from topi.x86.group_conv2d import group_conv2d_workload, pack_group_kernel_numpy

    if not _group_convertible(node):
        return None
    kernel, groups, data = node.inputs[1], node.attrs["groups"], node.inputs[0]
    st, pad, dil = (tuple(node.attrs.get(k, d)) for k, d in
                    (("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("dilation", (1, 1))))
    key = group_conv2d_workload(data.shape, kernel.shape, st, pad, dil, groups, data.dtype)
    cfg = choose_config(key)
    have = lay.block_of(ins[0])
    want = lay.concat_blocks.get(id(node.output), cfg["oc_bn"])
    if have and have != cfg["ic_bn"] and have in cfg.space["ic_bn"] or want in cfg.space["oc_bn"]:
        ic_bn = have if have and have in cfg.space["ic_bn"] else cfg["ic_bn"]
        oc_bn = want if want in cfg.space["oc_bn"] else cfg["oc_bn"]
        cfg = make_config(key, {**cfg.values, "ic_bn": ic_bn, "oc_bn": oc_bn})
    packed = constant_node(
        pack_group_kernel_numpy(np.asarray(kernel.node.attrs["value"]), groups, cfg["ic_bn"], cfg["oc_bn"]),
        lay.fresh(f"{node.name}_kernel_packed"),
    )
    new = lay.to(ins[0], cfg["ic_bn"]) if have else ins[0]
    attrs = {**node.attrs, "config": cfg}
    conv = make_node("group_conv2d_NCHWc", [new, packed.output], attrs, node.name, [node.output.name])
    return lay.produce(conv, cfg["oc_bn"])


def _depthwise(node, ins: list, lay: _Layouts) -> tuple | None:
    """``depthwise_conv2d`` on a blocked value -> ``depthwise_conv2d_NCHWc`` (same block), when
    its output stays blocked too (else one conversion of its input serves it in NCHW)."""
    block = lay.block_of(ins[0])
    if not block or not _depthwise_convertible(node) or id(node.output) not in lay.wanted:
        return None
    taps = np.asarray(node.inputs[1].node.attrs["value"])
    return lay.produce(_depthwise_node(node, ins[0], taps, block, lay, node.output.name), block)


def _depthwise_node(node, data: Value, taps: np.ndarray, block: int, lay: _Layouts, out_name: str):
    """A ``depthwise_conv2d_NCHWc`` node of ``node``'s attrs over blocked ``data``, kernel ``taps``."""
    from topi.x86.depthwise_conv2d import pack_depthwise_kernel_numpy

    packed = constant_node(pack_depthwise_kernel_numpy(taps, block), lay.fresh(f"{node.name}_kernel_packed"))
    attrs = {k: v for k, v in node.attrs.items() if k != "config"}
    name = node.name if out_name == node.output.name else out_name
    return make_node("depthwise_conv2d_NCHWc", [data, packed.output], attrs, name, [out_name])


def _shuffles(graph: Graph) -> dict:
    """id(first reshape) -> (groups, transpose, last reshape) of each channel shuffle
    ``reshape [N, G, C/G, H, W] -> transpose (0, 2, 1, 3, 4) -> reshape [N, C, H, W]``."""
    users = graph.consumers()
    outputs = {id(v) for v in graph.outputs}

    def only_user(v):
        us = users.get(id(v), ())
        return us[0][0] if len(us) == 1 and id(v) not in outputs else None

    found = {}
    for a in graph.nodes:
        if a.op != "reshape" or len(a.inputs[0].shape) != 4 or len(a.output.shape) != 5:
            continue
        n, c, h, w = a.inputs[0].shape
        g = a.output.shape[1]
        b = only_user(a.output)
        last = only_user(b.output) if b is not None and b.op == "transpose" else None
        if (tuple(a.output.shape) == (n, g, c // g, h, w) and g * (c // g) == c
                and tuple(b.attrs.get("axes") or ()) == (0, 2, 1, 3, 4)
                and last is not None and last.op == "reshape" and tuple(last.output.shape) == (n, c, h, w)):
            found[id(a)] = (g, b, last)
    return found


def _shuffle(node, ins: list, lay: _Layouts) -> tuple | None:
    """A channel shuffle of a blocked value -> one ``channel_shuffle`` node on it."""
    groups, mid, last = lay.shuffles[id(node)]
    block = lay.block_of(ins[0])
    if not block or id(last.output) not in lay.wanted:
        return None
    lay.skip |= {id(mid), id(last)}
    dw = _strided_depthwise_after(last, lay)
    if dw is not None:  # shuffle(x) -> depthwise, stride 2 == depthwise' (permuted taps) -> shuffle, 4x smaller
        taps = np.asarray(dw.inputs[1].node.attrs["value"])
        c = taps.shape[0]
        src = (np.arange(c) % groups) * (c // groups) + np.arange(c) // groups  # shuffled c reads src[c]
        permuted = np.empty_like(taps)
        permuted[src] = taps
        conv = _depthwise_node(dw, ins[0], permuted, block, lay, lay.fresh(f"{dw.name}_unshuffled"))
        shuffle = make_node("channel_shuffle", [conv.output], {"groups": groups}, dw.name, [dw.output.name])
        lay.skip.add(id(dw))
        lay.produce(shuffle, block)
        lay.new[id(dw.output)] = shuffle.output
        return ()
    shuffle = make_node("channel_shuffle", [ins[0]], {"groups": groups}, last.name, [last.output.name])
    lay.produce(shuffle, block)
    lay.new[id(last.output)] = shuffle.output
    return ()


def _strided_depthwise_after(last, lay: _Layouts):
    """The strided depthwise conv that is the only consumer of a shuffle's output, else None."""
    users = lay.users.get(id(last.output), ())
    dw = users[0][0] if len(users) == 1 and users[0][1] == 0 else None
    if dw is None or not _depthwise_convertible(dw) or id(dw.output) not in lay.wanted:
        return None
    return dw if max(dw.attrs.get("strides", (1, 1))) > 1 else None


def _concat_blocks(graph: Graph) -> dict:
    """id(old value) -> the block that a channel concatenation of it will take, when its
    inputs' channels share no whole vector (ShuffleNet's 112 ++ 24: 8), for the values
    from which elementwise ops and constant operands lead to that input: a grouped conv
    there then writes that block itself (the concat's inlined re-blocking cost 0.6 ms
    at 28x28x136 where the concat alone takes 0.05 ms)."""
    found = {}
    for node in graph.nodes:
        if node.op != "concatenate" or node.attrs.get("axis", 0) not in (1, -3):
            continue
        if any(len(v.shape) != 4 for v in node.inputs) or all(v.shape[1] % 16 == 0 for v in node.inputs):
            continue
        block = math.gcd(16, *(v.shape[1] for v in node.inputs))
        for v in node.inputs:
            while v.node is not None and not v.node.is_constant and id(v) not in found:
                found[id(v)] = block
                acts = [u for u in v.node.inputs if u.node is None or not u.node.is_constant]
                if not _transparent(v.node) or v.node.op in POOL_OPS + ("concatenate",) or len(acts) != 1:
                    break
                v = acts[0]
    return found
