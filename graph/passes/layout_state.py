"""What ``alter_op_layout`` and ``alter_grouped_layout`` share: the ops that run on blocked
values, which convs the plain blocked path takes, and the state of one run of the pass
(old value -> new value, each new value's block, the transforms made)."""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Graph, Value, constant_node, make_node
from graph.ops import get_op
from graph.ops.layout import blocked_layout
from graph.ops.registry import ELEMWISE
from graph.passes.alter_conv_layout import conv_blocks, is_winograd
from topi.config import vector_lanes

# Broadcast binaries that are elementwise once their operands share a layout.
BINARY_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "prelu")
# elementwise in their first input when their other inputs (scale, zero point) are per tensor, or
# constants per channel (re-laid out with the data: Layouts.channel_param)
PER_TENSOR_OPS = ("quantize", "dequantize", "requantize")
POOL_OPS = ("pool2d", "global_pool")


class Layouts:
    """Old value -> new value, the block of each new blocked value, and the transforms made."""

    def __init__(self, graph: Graph, target):
        self.target = target  # the build's: its blocked layouts (topi.strategy.layout_helpers)
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
        self.read_blocks: dict = {}  # id(old value) -> the block the one conv reading it takes

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

    def channel_param(self, v: Value, block: int, channels: int) -> Value | None:
        """A scale or zero point of a quantization op (``PER_TENSOR_OPS``) for its data blocked by
        ``block``: per tensor as it is, a constant per channel as ``(1, C/b, 1, 1, b)`` (``topi.nn.qnn``
        broadcasts a parameter of the data's rank); None where the channels do not fill whole blocks."""
        if v.shape in ((), (1,)):
            return v
        if tuple(v.shape) != (channels,) or channels % block or v.node is None or not v.node.is_constant:
            return None
        key = (id(v), block, "channel")
        if key not in self.cache:
            arr = np.asarray(v.node.attrs["value"]).reshape(1, channels // block, 1, 1, block)
            self.cache[key] = constant_node(np.ascontiguousarray(arr),
                                            self.fresh(f"{v.name}_{blocked_layout(block)}")).output
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


def convertible(node, target) -> bool:
    """Whether ``node`` is a conv2d that becomes ``conv2d_NCHWc`` (or ``conv2d_winograd``)."""
    if node.op != "conv2d" or len(node.inputs) != 2:
        return False
    kernel = node.inputs[1]
    if len(kernel.shape) != 4 or kernel.node is None or not kernel.node.is_constant:
        return False
    if kernel.dtype != "float32" or node.inputs[0].dtype != "float32":
        return False
    return conv_blocks(node, target) is not None or is_winograd(node)


def concat_block(blocks: list, channels: list, dtype: str = "float32", target=None) -> int:
    """The channel block of a concatenation along the channels of inputs blocked by ``blocks``
    (0: plain) with ``channels`` each, or 0 (it runs in NCHW: a plain input).

    The most common input block that divides every input's channels (the other inputs are
    converted to it); on a tie, the block a conv's rule reads (``ic_bn``: one vector, at
    most 16), then the larger; when none divides them all, their gcd if at least 8 ((112 by
    16) ++ (24 by 24): both by 8, rather than both to NCHW).  ``choose_configs`` and
    ``alter_op_layout`` both ask here, so a conv after the concat reads its block: DenseNet's
    running concat of a 16-channel-block value and an 8-channel-block conv (AVX2, 7x7) kept
    16 and made two transforms a layer; it now stays by 8 after one (``target``: whose lanes the
    rule's ``ic_bn`` is; default the current one)::

        before:  %c = concatenate(%a (by 16), layout_transform(%b, NCHW8c -> NCHW16c))
                 %y = conv2d_NCHWc(layout_transform(relu(%c), NCHW16c -> NCHW8c))   # ic_bn = 8
        after:   %c = concatenate(layout_transform(%a, NCHW16c -> NCHW8c), %b (by 8))
                 %y = conv2d_NCHWc(relu(%c))                                      # ic_bn = 8
    """
    if not blocks or not all(blocks):
        return 0
    fits = [b for b in blocks if all(c % b == 0 for c in channels)]
    if not fits:
        common = math.gcd(*blocks, *channels)
        return common if common >= 8 else 0
    preferred = min(16, vector_lanes(dtype, target))
    return max(set(fits), key=lambda b: (fits.count(b), b == preferred, b))


def mark_upstream(v: Value, block: int, found: dict, follow=lambda v: True) -> None:
    """Record ``found[id(v)] = block`` for ``v`` and the values it is computed from through
    blocked-transparent single-activation nodes (elementwise ops, their constant operands
    aside), stopping at a constant, at a value ``follow`` refuses, and after a pool, a
    concatenation or any other node."""
    while v.node is not None and not v.node.is_constant and follow(v):
        found[id(v)] = block
        acts = [u for u in v.node.inputs if u.node is None or not u.node.is_constant]
        if not transparent(v.node) or v.node.op in POOL_OPS + ("concatenate",) or len(acts) != 1:
            break
        v = acts[0]


def transparent(node) -> bool:
    """Whether ``node`` may run on blocked values (given suitable shapes)."""
    if len(node.outputs) != 1 or len(node.output.shape) != 4:
        return False
    if get_op(node.op).pattern == ELEMWISE and len(node.inputs) == 1:
        return True
    if node.op == "concatenate":
        return node.attrs.get("axis", 0) in (1, -3)
    if node.op in PER_TENSOR_OPS:
        return all(v.shape in ((), (1,)) for v in node.inputs[1:]) or per_channel_params(node)
    return node.op in BINARY_OPS or node.op in POOL_OPS


def per_channel_params(node) -> bool:
    """Whether the scale and zero point of quantization op ``node`` are constants per tensor or per
    channel (axis 1 of NCHW data, not ONNX's blocked quantization)."""
    channels = node.inputs[0].shape[1]
    return (node.attrs.get("block_size", 0) == 0 and node.attrs.get("axis", 1) % 4 == 1
            and all(v.shape in ((), (1,)) or (tuple(v.shape) == (channels,) and v.node is not None
                                              and v.node.is_constant) for v in node.inputs[1:]))
