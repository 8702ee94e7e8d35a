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
(or from a channel concatenation of such values: the block
``graph.passes.layout_state.concat_block`` gives it) takes that
convolution's ``oc_bn`` as its ``ic_bn`` when it is legal and no
record says otherwise, so the layout pass can pass the activations on
without a ``layout_transform``.

A 3x3 stride-1 ``conv2d`` has two implementations: its config is the one
``topi.x86.choose_conv2d_algorithm`` returns, the direct template's or
``conv2d_winograd.x86`` (the faster record of the two under
``apply_history_best``, else Winograd where both channel counts reach
``topi.x86.conv2d_winograd.MIN_CHANNELS``); the layout passes then give a
Winograd conv its transformed kernel and blocked output (``alter_conv_layout``).
``TESSERA_WINOGRAD=0`` in the environment (read at each run of the pass)
keeps every conv direct::

    before:  %y = conv2d(%x, %w, padding=(1, 1, 1, 1))                   # %w: constant [64, 64, 3, 3]
    after:   %y = conv2d(%x, %w, config=config<conv2d_winograd.x86 tile=4 cb=16 bn=64 mr=4 ku=1>, ...)

A node that already holds a config for its own workload (either implementation) keeps it (the pass
is idempotent); one whose config is for another workload (a layout pass
changed its shapes) gets a new one.  It runs at position 55, before the
layout passes, and again as ``choose_configs_late`` (65) after them.
"""

from __future__ import annotations

import os

from graph.ir import Graph, make_node, rebuild

CONV_TEMPLATE = "conv2d_NCHWc.x86"
WINOGRAD_TEMPLATE = "conv2d_winograd.x86"
# the knob that says in which channel block a conv template reads its input
INPUT_BLOCK_KNOB = {CONV_TEMPLATE: "ic_bn", WINOGRAD_TEMPLATE: "cb"}


def winograd_enabled() -> bool:
    """False when ``TESSERA_WINOGRAD`` is ``0`` / ``off`` / ``false`` (every conv then direct)."""
    return os.environ.get("TESSERA_WINOGRAD", "1").strip().lower() not in ("0", "off", "false", "no")


def _holds(cfg, key: tuple) -> bool:
    """Whether ``cfg`` is a config of ``key``'s operator: for its workload, or the Winograd
    implementation of the same conv."""
    if cfg.workload == key:
        return True
    return (key[0] == CONV_TEMPLATE and cfg.template == WINOGRAD_TEMPLATE
            and tuple(cfg.workload[1:]) == tuple(key[1:]))


def choose_winograd(key: tuple, data_block: int | None = None):
    """The Winograd config of a conv ``key`` when it should run that way, else None.

    Its records hold to :func:`record_candidates` (the rule's config unless a record beats it
    by more than ``RECORD_MARGIN``).  The rule's config (no record, no dispatch context, or kept
    by the margin) takes its input block ``cb`` from the block its data already has
    (``data_block``) where that is a legal ``cb``: the input stage then only pads the blocks
    instead of gathering channels across them."""
    from topi.config import default_config, dispatched, make_config
    from topi.x86.conv2d_winograd import choose_conv2d_algorithm, winograd_applicable
    from tune.autotvm import lookup_values

    if not winograd_enabled() or not winograd_applicable(key):
        return None
    wkey = (WINOGRAD_TEMPLATE, *key[1:])
    cfg = dispatched(wkey)
    if cfg is not None:
        return cfg
    cfg = choose_conv2d_algorithm(key)  # the records of both templates, else the rule
    if cfg.template != WINOGRAD_TEMPLATE:
        return None
    if lookup_values(wkey) is not None:  # the best record beyond the margin, else the rule's config
        best = record_candidates(wkey)[0][0]
        if best not in rule_variants(wkey):
            return make_config(wkey, best)
    return rule_in_block(wkey, data_block) or default_config(wkey)


def rule_in_block(key: tuple, block: int | None):
    """The rule's config of the conv ``key`` reading its input in blocks of ``block``, as it runs on
    data blocked so (a direct conv's rule re-chosen for that ``ic_bn``, a Winograd conv's ``cb``
    set), or None where ``block`` is not a legal input block of ``key``."""
    from topi.config import default_config, make_config

    knob = INPUT_BLOCK_KNOB.get(key[0])
    cfg = default_config(key)
    if knob is None or not block or block not in cfg.space[knob] or key[1][1] % block:
        return None
    if block == cfg[knob]:
        return cfg
    if key[0] == CONV_TEMPLATE:
        from topi.x86.conv2d import input_block_config

        return input_block_config(key, block)
    return make_config(key, {**cfg.values, knob: block})


def rule_variants(key: tuple) -> list:
    """The values of the rule's config of ``key`` in every legal input block, its own first
    (:func:`rule_in_block`): what the rule runs as on data in each block."""
    from topi.config import default_config

    rule = default_config(key)
    knob = INPUT_BLOCK_KNOB.get(key[0])
    others = [] if knob is None else [rule_in_block(key, b) for b in rule.space[knob] if b != rule[knob]]
    return [rule.values] + [c.values for c in others if c is not None]


# A record must beat the rule's config by this much to replace it: re-measuring one config varies
# by up to ~4% here, and within that margin a ResNet-50 tune's "bests" (blocks of 1 or 64 channels
# for 1x1 convs the rule blocks by 16) ran no faster in the graph and cost 15 layout transforms.
RECORD_MARGIN = 0.05


def deployable(key: tuple, values: dict) -> bool:
    """Whether the graph runs a config of ``key`` as it was measured.  The blocked layout keeps no
    zero-padded channels, so a direct conv's output block must divide each group's output channels:
    the template also measures blocks that pad them (1000 channels by 16), which
    ``alter_conv_layout`` would lower to a divisor, running the other knobs unmeasured."""
    return key[0] != CONV_TEMPLATE or (key[2][0] // key[6]) % values["oc_bn"] == 0


def record_candidates(key: tuple) -> list:
    """``[(knob values, seconds), ...]`` measured for ``key`` (fastest first) that the graph runs as
    measured (:func:`deployable`), or []: where the rule's
    config was measured, only its variants (:func:`rule_variants`) and the records faster than the
    fastest of them by more than ``RECORD_MARGIN``.

    Direct convs and Winograd convs alike (``tune_layouts`` weighs them): a tuned ResNet-50 that
    ran its Winograd records as they came took 0.912x onnxruntime's time against 0.885x with the
    same log's direct records alone; held to the margin, 0.884x and 0.867x (two runs; the rule
    build 0.862x and 0.867x; paired rounds).  Timed alone, those records had beaten the rule's
    configs by a few percent.  The bar is the rule's config in every input block measured
    (measured by whole-model tuning: ``graph.tuning.rule_variants``), for in a graph it reads
    its data's block."""
    from tune.autotvm import lookup_ranked

    rows = [(values, seconds) for values, seconds in lookup_ranked(key) if deployable(key, values)]
    if not rows:
        return rows
    variants = rule_variants(key)
    measured = [seconds for values, seconds in rows if values in variants]
    if not measured:
        return rows
    limit = min(measured) * (1 - RECORD_MARGIN)
    return [(values, seconds) for values, seconds in rows if seconds < limit or values in variants]


def _out_block(cfg, key: tuple) -> int:
    """The channel block of a conv's output in the blocked layout (0: none)."""
    if cfg.template == CONV_TEMPLATE:
        return cfg["oc_bn"] if deployable(key, cfg.values) else 0
    if cfg.template == WINOGRAD_TEMPLATE:
        from topi.x86.conv2d_winograd import winograd_out_block

        return winograd_out_block(cfg.workload, cfg)
    return 0


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
    from topi.config import dispatched, recorded_config

    cfg = dispatched(key)
    if cfg is not None:
        return cfg
    if key[0] == CONV_TEMPLATE:
        cfg = choose_winograd(key, data_block)
        if cfg is not None:
            return cfg
    cfg = recorded_config(key)  # the best record of ``with autotvm.apply_history_best(log):``
    if cfg is not None and not deployable(key, cfg.values):
        from topi.config import make_config

        rows = record_candidates(key)  # the fastest the graph runs as measured
        cfg = make_config(key, rows[0][0]) if rows else None
    if cfg is not None:
        return cfg
    return rule_config(key, data_block)


def rule_config(key: tuple, data_block: int | None):
    """The rule's config of ``key``; a conv's ``ic_bn`` follows its data's block where that is legal."""
    from topi.config import default_config

    return (key[0] == CONV_TEMPLATE and rule_in_block(key, data_block)) or default_config(key)


def rule_values(key: tuple) -> dict:
    """Knob -> value of the rule's own config of ``key`` (its ``ic_bn`` the rule's, not the data's)."""
    from topi.config import default_config

    return default_config(key).values


def _held(old, key: tuple, data_block: int | None):
    """The config a node that holds ``old`` keeps: ``old``, but the rule's own config of a direct
    conv (as a record or ``tune_layouts`` may store it) takes its input in its data's block, as
    the rule does without records (kept as stored, it cost ResNet-50 27 layout transforms)."""
    if key[0] != CONV_TEMPLATE or old.values != rule_values(old.workload):
        return old
    cfg = rule_in_block(old.workload, data_block)
    return old if cfg is None or cfg.values == old.values else cfg


def choose_configs(graph: Graph) -> Graph:
    """Store ``attrs["config"]`` on every node with a schedule template (see the module doc)."""
    from graph.passes.layout_state import concat_block

    blocks: dict = {}  # value name -> the oc_bn its channels are blocked by, where a conv made them

    def rewrite(node, ins):
        key = node_workload(node, ins)
        old = node.attrs.get("config")
        cfg = None
        if key is not None:
            data_block = blocks.get(ins[0].name)
            cfg = _held(old, key, data_block) if old is not None and _holds(old, key) else _choose(key, data_block)
        if cfg is not None and (block := _out_block(cfg, key)):
            blocks[node.outputs[0].name] = block
        elif (node.op not in ("constant", "conv2d", "conv2d_winograd") and ins and ins[0].name in blocks
              and _keeps_channels(node, ins)):
            blocks[node.outputs[0].name] = blocks[ins[0].name]
        elif (node.op == "concatenate" and node.attrs.get("axis") in (1, -3)
              and all(len(v.shape) == 4 for v in ins)):
            block = concat_block([blocks.get(v.name, 0) for v in ins], [v.shape[1] for v in ins],
                                 ins[0].dtype)
            if block:
                blocks[node.outputs[0].name] = block  # the block alter_op_layout concatenates in
        if cfg is None or cfg is old:
            return None
        return make_node(node.op, ins, {**node.attrs, "config": cfg}, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)
