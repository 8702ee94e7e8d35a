"""tune_layouts: choose each tuned convolution's config for the whole graph, not per kernel.

TVM's graph tuner.  Records give every convolution workload a list of
measured configs; the fastest of each alone can block a conv's output by 32
channels and ask its consumer's input in blocks of 8, and the layout pass
then inserts a ``layout_transform`` between them (ResNet-50 with per-kernel
bests got 44).  This pass weighs the measured time of each candidate config
against the time of the transforms it forces on the values it shares with
its neighbours, and stores the chosen config on the node, before
``choose_configs`` (which keeps a config a node already holds)::

    records:  conv a: oc_bn=32 0.40 ms, oc_bn=16 0.41 ms    conv b: ic_bn=16 0.50 ms, ic_bn=32 0.52 ms
    per kernel: a oc_bn=32, b ic_bn=16 -> a transform of a's output (0.2 ms)
    tuned:      a oc_bn=16, b ic_bn=16 -> 0.91 ms, no transform

Values carry a block from the convolutions that produce them, through the
ops that keep channels (elementwise, pooling, same-shape binaries, channel
concatenation).  Costs: a consumer conv whose ``ic_bn`` differs from a
producer's ``oc_bn`` pays one transform of that value; two producers meeting
in a binary op or a concatenation with different blocks pay one too.  A
transform costs its bytes read and written at :data:`TRANSFORM_BYTES_PER_S`.
The choice is iterated conditional modes: start from each node's fastest
record, then re-choose each node against its neighbours' current choices
until nothing changes (each step lowers the total, so it ends).  A record replaces the
rule's config only when it is faster by more than :data:`RECORD_MARGIN` (the measurement
noise; where the rule's config was measured, as tuning always does first).  Convs with
no records keep the rule of ``choose_configs`` (their ``ic_bn`` follows the
data) and are left out.  A consumer on the rule's config takes its producer's
block at no cost.  Whole-model tuning also measures the rule's config in every
other input block (``tune.autotvm.choose.rule_variants``): those variants stand for it
in their blocks at their own times, and a record must beat the fastest of them.
Winograd convs are weighed the same way (their input block is ``cb``, their
output block ``winograd_out_block``'s); one without records keeps the rule's
config, whose output block its consumers still weigh.  Outside
``apply_history_best`` the pass does nothing.
"""

from __future__ import annotations

from graph.ir import Graph, make_node, rebuild
from graph.passes.choose_configs import keeps_channels, node_workload
from graph.passes.context import BuildContext
from tune.autotvm.choose import RECORD_MARGIN, choose, out_block, record_candidates, rule_in_block, rule_variants
from tune.autotvm.config import make_config, rule_of

# Effective speed of a standalone layout transform (read + write) on this class of machine.
TRANSFORM_BYTES_PER_S = 8e9
MAX_SWEEPS = 20


def _blocks(cfg, target) -> tuple:
    """``(input block, output block)`` of a conv config in the blocked layout (0: NCHW output)."""
    return cfg[rule_of(cfg.template).input_knob].val, out_block(cfg, target)


def _transform_seconds(value) -> float:
    return 2.0 * value.nbytes / TRANSFORM_BYTES_PER_S


def _sources(graph: Graph, tuned: dict) -> tuple:
    """``(sources, meets)``: value name -> the tuned convs whose ``oc_bn`` blocks it, and the
    pairs of producers that meet in one op (each with the value whose transform a mismatch costs)."""
    sources: dict = {}
    meets: list = []
    for node in graph.nodes:
        ins = node.inputs
        if node.name in tuned:
            for v in node.outputs:
                sources[v.name] = {node.name}
            continue
        if node.is_constant or not ins:
            continue
        merged = [sources[v.name] for v in ins if v.name in sources and len(v.shape) in (4, 5)
                  and (node.op in ("concatenate", "pool2d", "depthwise_conv2d")
                       or tuple(v.shape) == tuple(node.outputs[0].shape))]
        keeps = node.op == "concatenate" and node.attrs.get("axis") == 1 or keeps_channels(node, ins)
        if not keeps or not merged:
            continue
        for a, b in zip(merged, merged[1:]):
            for x in a:
                for y in b:
                    if x != y:
                        meets.append((x, y, node.outputs[0]))
        sources[node.outputs[0].name] = set().union(*merged)
    return sources, meets


def tune_layouts(graph: Graph, context: BuildContext) -> Graph:
    """Store the graph-best record config on every tuned convolution (see the module doc)."""
    target, records = context.target, context.records
    if not records.contexts:
        return graph
    keys: dict = {}  # node name -> the workload key its configs are of (direct or Winograd)
    options: dict = {}  # node name -> [(values, seconds), ...]: the configs to choose from
    fixed: set = set()  # Winograd convs without records: the rule's config, which no choice here moves
    for node in graph.nodes:
        if node.op != "conv2d" or node.attrs.get("config") is not None:
            continue
        key = node_workload(node, target=target)
        if key is None or rule_of(key[0]).input_knob is None:
            continue
        chosen = choose(key, target, records, context.options)  # the records of both implementations (or the rule)
        if chosen.template != key[0]:  # the other implementation (Winograd)
            rows = record_candidates(chosen.workload, target, records)
            if not rows:
                rows = [(chosen.values, 0.0)]
                fixed.add(node.name)
            keys[node.name], options[node.name] = chosen.workload, rows
            continue
        rows = record_candidates(key, target, records)
        if len(rows) > 0:
            keys[node.name], options[node.name] = key, rows
    if len(fixed) == len(options):
        return graph
    sources, meets = _sources(graph, options)
    variants = {name: rule_variants(key, target) for name, key in keys.items()}  # the rule's own first
    for node in graph.nodes:  # data no tuned conv blocks: only the rule's config follows its block
        if node.name in options and not sources.get(node.inputs[0].name) and node.name not in fixed:
            rows = [row for row in options[node.name] if row[0] not in variants[node.name][1:]]
            options[node.name] = rows or options[node.name]
    configs = {name: [make_config(keys[name], values, target) for values, _ in rows] for name, rows in options.items()}
    blocks = {name: [_blocks(cfg, target) for cfg in cfgs] for name, cfgs in configs.items()}
    edges: dict = {name: [] for name in options}  # name -> [(other, my side, other side, seconds)]
    for node in graph.nodes:
        if node.name not in options:
            continue
        data = node.inputs[0]
        for src in sources.get(data.name, ()):
            cost = _transform_seconds(data)
            edges[node.name].append((src, 0, 1, cost))  # my input block against its output block
            edges[src].append((node.name, 1, 0, cost))
    for x, y, value in meets:
        cost = _transform_seconds(value)
        edges[x].append((y, 1, 1, cost))
        edges[y].append((x, 1, 1, cost))

    choice = {name: 0 for name in options}
    # the rule's config takes its input in whatever legal block its data has (choose_configs)
    follows = {name: [cfg.values == variants[name][0] or name in fixed for cfg in cfgs]
               for name, cfgs in configs.items()}
    # the rule's variants measured in their own blocks stand for it there, at their own times
    measured = {name: {blocks[name][k][0] for k, (values, _) in enumerate(options[name])
                       if values in variants[name][1:]} for name in options}

    def takes(name: str, k: int, block) -> bool:
        """Whether config ``k`` of conv ``name`` reads data blocked by ``block`` as it is."""
        return blocks[name][k][0] == block or (
            follows[name][k] and block not in measured[name] and rule_in_block(keys[name], block, target) is not None)

    def free(name: str, k: int, side: int, other: str, other_side: int) -> bool:
        """Whether the value between ``name`` (config ``k``) and ``other`` needs no transform: the
        consumer takes the producer's block, or two producers meeting block alike."""
        mine, theirs = blocks[name][k][side], blocks[other][choice[other]][other_side]
        if side == 0:
            return takes(name, k, theirs)
        if other_side == 0:
            return takes(other, choice[other], mine)
        return mine == theirs

    def local_cost(name: str, k: int) -> float:
        return options[name][k][1] + sum(cost for other, side, other_side, cost in edges[name]
                                         if not free(name, k, side, other, other_side))

    for _ in range(MAX_SWEEPS):
        changed = False
        for name in options.keys() - fixed:
            best = min(range(len(options[name])), key=lambda k: (local_cost(name, k), k))
            if local_cost(name, best) < local_cost(name, choice[name]):
                choice[name], changed = best, True
        if not changed:
            break

    def rewrite(node, ins):
        if node.name not in options or node.name in fixed:
            return None
        cfg = configs[node.name][choice[node.name]]
        return make_node(node.op, ins, {**node.attrs, "config": cfg}, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)


__all__ = ["RECORD_MARGIN", "TRANSFORM_BYTES_PER_S", "tune_layouts"]
