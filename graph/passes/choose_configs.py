"""choose_configs: one schedule config per tunable node, chosen once, stored on the node.

Every operator whose registration names a workload (``OpDef.workload``: conv2d,
depthwise_conv2d, conv2d_transpose, dense, batch_matmul, pooling, softmax,
reductions) gets ``attrs["config"]``: the config ``tune.autotvm.choose.choose``
gives its workload key with the build's target, records and options
(``BuildContext``).  The layout passes after it (block sizes, whether a dense
weight is packed), the operator's compute and schedule, and the kernel cache key
(which prints the config's values) read only that::

    before:  %y = conv2d(%x, %w, padding=(1, 1, 1, 1))
    after:   %y = conv2d(%x, %w, config=config<conv2d_NCHWc.x86 ic_bn=16 oc_bn=32 ow_bn=8 unroll_kw=True>,
                         padding=(1, 1, 1, 1))

One rule spans nodes: a convolution whose data comes from another blocked
convolution (through elementwise and broadcast ops, pooling and depthwise convs,
which keep the channels: :func:`channel_input`, or
a channel concatenation of such values: the block
``graph.passes.layout_state.concat_block`` gives it) takes that convolution's
output block as its input block when it is legal and no record says otherwise,
so the layout pass can pass the activations on without a ``layout_transform``.

A 3x3 stride-1 ``conv2d`` has two implementations, direct and Winograd;
``choose`` picks one (records, else the rule; ``options=Options(winograd=False)``
keeps every conv direct) and the layout passes then give a Winograd conv its
transformed kernel and blocked output (``alter_conv_layout``)::

    before:  %y = conv2d(%x, %w, padding=(1, 1, 1, 1))                   # %w: constant [64, 64, 3, 3]
    after:   %y = conv2d(%x, %w, config=config<conv2d_winograd.x86 tile=4 cb=16 bn=64 mr=4 ku=1>, ...)

A node that already holds a config for its own workload (either implementation) keeps it (the pass
is idempotent); one whose config is for another workload (a layout pass
changed its shapes) gets a new one.  It runs at position 55, before the
layout passes, and again as ``choose_configs_late`` (65) after them.
"""

from __future__ import annotations

from graph.ir import Graph, make_node, rebuild
from graph.ops import get_op
from graph.ops.registry import BROADCAST
from graph.passes.context import BuildContext
from graph.passes.layout_state import concat_block
from tune.autotvm.choose import choose, held, holds, out_block


def node_workload(node, inputs=None, target=None) -> tuple | None:
    """The topi workload key of ``node`` on ``target`` (None: the current one; None for an
    operator without a template there)."""
    if node.is_constant:
        return None
    return get_op(node.op).workload(tuple(inputs if inputs is not None else node.inputs), node.attrs, target)


def channel_input(node, ins) -> int | None:
    """The input whose channel ``c`` is channel ``c`` of the output, whose block the output
    keeps in ``alter_op_layout``: input 0 of pooling and of depthwise convs of multiplier 1,
    the output-shaped input of elementwise and broadcast ops (a squeeze-excite ``scale * x``:
    ``x``); None for other ops."""
    if node.op in ("pool2d", "global_pool"):
        return 0
    if node.op == "depthwise_conv2d":
        k = ins[1].shape if len(ins) > 1 else ()
        return 0 if len(k) == 4 and k[1] == 1 and k[0] == ins[0].shape[1] else None
    out = tuple(node.outputs[0].shape)
    if get_op(node.op).pattern > BROADCAST or len(out) != 4:
        return None
    return next((i for i, v in enumerate(ins) if tuple(v.shape) == out), None)


def keeps_channels(node, ins) -> bool:
    """Whether the output's channels are those of one input (:func:`channel_input`)."""
    return channel_input(node, ins) is not None


def choose_configs(graph: Graph, context: BuildContext) -> Graph:
    """Store ``attrs["config"]`` on every node with a schedule template (see the module doc)."""
    target = context.target
    blocks: dict = {}  # value name -> the channel block a conv wrote it in

    def rewrite(node, ins):
        key = node_workload(node, ins, target)
        old = node.attrs.get("config")
        cfg = None
        if key is not None:
            data_block = blocks.get(ins[0].name)
            if old is not None and holds(old, key):
                cfg = held(old, key, target, data_block)
            else:
                cfg = choose(key, target, context.records, context.options, data_block)
        if cfg is not None and (block := out_block(cfg, target)):
            blocks[node.outputs[0].name] = block
        elif (node.op not in ("constant", "conv2d", "conv2d_winograd")
              and (src := channel_input(node, ins)) is not None and ins[src].name in blocks):
            blocks[node.outputs[0].name] = blocks[ins[src].name]
        elif (node.op == "concatenate" and node.attrs.get("axis") in (1, -3)
              and all(len(v.shape) == 4 for v in ins)):
            block = concat_block([blocks.get(v.name, 0) for v in ins], [v.shape[1] for v in ins],
                                 ins[0].dtype, target)
            if block:
                blocks[node.outputs[0].name] = block  # the block alter_op_layout concatenates in
        if cfg is None or cfg is old:
            return None
        return make_node(node.op, ins, {**node.attrs, "config": cfg}, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)


__all__ = ["channel_input", "choose_configs", "keeps_channels", "node_workload"]
