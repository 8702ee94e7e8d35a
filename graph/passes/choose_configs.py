"""choose_configs: one schedule config per tunable node, chosen once, stored on the node.

Every operator whose registration names a workload (``OpDef.workload``: conv2d,
depthwise_conv2d, conv2d_transpose, dense, batch_matmul, pooling, softmax,
reductions) gets ``attrs["config"]``: the config ``topi.config.choose_config``
gives its workload key for the current target (the innermost dispatch
context's, such as a tuner's records, else the rule default).  The layout
passes after it (block sizes, whether a dense weight is packed), the
operator's compute and schedule, and the kernel cache key (which prints the
config's values) read only that::

    before:  %y = conv2d(%x, %w, padding=(1, 1, 1, 1))
    after:   %y = conv2d(%x, %w, config=config<conv2d_NCHWc.x86 ic_bn=16 oc_bn=32 ow_bn=8 unroll_kw=True>,
                         padding=(1, 1, 1, 1))

One rule spans nodes: a convolution whose data comes from another blocked
convolution (through elementwise ops and pooling, which keep the channels)
(or from a channel concatenation of convolutions blocked alike) takes that
convolution's ``oc_bn`` as its ``ic_bn`` when it is legal and no
record says otherwise, so the layout pass can pass the activations on
without a ``layout_transform``.

A node that already holds a config for its own workload keeps it (the pass
is idempotent); one whose config is for another workload (a layout pass
changed its shapes) gets a new one.  It runs at position 55, before the
layout passes, and again as ``choose_configs_late`` (65) after them.
"""

from __future__ import annotations

from graph.ir import Graph, make_node, rebuild

CONV_TEMPLATE = "conv2d_NCHWc.x86"


def node_workload(node, inputs=None) -> tuple | None:
    """The topi workload key of ``node`` (None for an operator without a template)."""
    from graph.ops import get_op

    if node.is_constant:
        return None
    return get_op(node.op).workload(tuple(inputs if inputs is not None else node.inputs), node.attrs)


def _keeps_channels(node, ins) -> bool:
    """Elementwise, broadcast and pooling ops: channel ``c`` of the output is channel ``c`` of input 0."""
    from graph.ops import get_op
    from graph.ops.registry import BROADCAST

    if node.op in ("pool2d", "global_pool"):
        return True
    out = node.outputs[0].shape
    return (get_op(node.op).pattern <= BROADCAST and len(ins) > 0 and len(out) == 4
            and tuple(ins[0].shape) == tuple(out))


def _choose(key: tuple, data_block: int | None):
    """The config of ``key``: a topi dispatch context's, else an AutoTVM record's, else the rule's
    (a conv's ``ic_bn`` following its data)."""
    from topi.config import default_config, dispatched, make_config
    from tune.autotvm import lookup_values

    cfg = dispatched(key)
    if cfg is not None:
        return cfg
    values = lookup_values(key)  # the best record of ``with autotvm.apply_history_best(log):``
    if values is not None:
        return make_config(key, values)
    cfg = default_config(key)
    if key[0] == CONV_TEMPLATE and data_block and cfg["ic_bn"] != data_block and data_block in cfg.space["ic_bn"]:
        cfg = make_config(key, {**cfg.values, "ic_bn": data_block})
    return cfg


def choose_configs(graph: Graph) -> Graph:
    """Store ``attrs["config"]`` on every node with a schedule template (see the module doc)."""
    blocks: dict = {}  # value name -> the oc_bn its channels are blocked by, where a conv made them

    def rewrite(node, ins):
        key = node_workload(node, ins)
        old = node.attrs.get("config")
        cfg = None
        if key is not None:
            cfg = old if old is not None and old.workload == key else _choose(key, blocks.get(ins[0].name))
        if cfg is not None and cfg.template == CONV_TEMPLATE and key[2][0] % cfg["oc_bn"] == 0:
            blocks[node.outputs[0].name] = cfg["oc_bn"]
        elif node.op not in ("constant", "conv2d") and ins and ins[0].name in blocks and _keeps_channels(node, ins):
            blocks[node.outputs[0].name] = blocks[ins[0].name]
        elif node.op == "concatenate" and node.attrs.get("axis") == 1 and len({blocks.get(v.name) for v in ins}) == 1:
            block = blocks.get(ins[0].name)
            if block and all(v.shape[1] % block == 0 for v in ins):
                blocks[node.outputs[0].name] = block  # channel blocks of one size, concatenated
        if cfg is None or cfg is old:
            return None
        return make_node(node.op, ins, {**node.attrs, "config": cfg}, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)
