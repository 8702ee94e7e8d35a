"""Grouped and depthwise convolutions and ShuffleNet's channel shuffle for ``alter_op_layout``.

The rewrites of :mod:`graph.passes.alter_op_layout` for ShuffleNet's units
(grouped 1x1 conv -> channel shuffle -> depthwise 3x3 -> grouped 1x1 conv), so
they stay blocked from end to end::

    before:  %g = conv2d(%x, %w, groups=4)               # 34 channels a group: no block divides
             %s = reshape(%g) %t = transpose(%s) %u = reshape(%t)   # channel shuffle
             %d = depthwise_conv2d(%u, %k)
    after:   %g = group_conv2d_NCHWc(%x, pack(%w))       # blocks across groups (the target's layout helpers)
             %u = channel_shuffle(%g, groups=4)          # on the blocked value
             %d = depthwise_conv2d_NCHWc(%u, pack(%k))   # channels in the lanes

Before a strided depthwise conv the shuffle moves after it (its taps permuted):
it then shuffles 4x fewer values.
"""

from __future__ import annotations

import math

import numpy as np

from graph.ir import Graph, Value, constant_node, make_node
from graph.passes.alter_conv_layout import conv_blocks, helpers
from graph.passes.layout_state import Layouts, convertible, mark_upstream
from tune.autotvm.config import make_config


def _constant_kernel(node) -> bool:
    kernel = node.inputs[1] if len(node.inputs) > 1 else None
    return (kernel is not None and len(kernel.shape) == 4 and kernel.node is not None and kernel.node.is_constant
            and kernel.dtype == "float32" and node.inputs[0].dtype == "float32")


def group_convertible(node, target) -> bool:
    """A grouped ``conv2d`` (not depthwise) whose output channels divide into blocks of 8 and
    that the blocked path refuses, or blocks by less than a vector where a group holds one
    (ShuffleNet's 136 a group: 8; see ``group_conv2d_rule``): it becomes
    ``group_conv2d_NCHWc``, blocks of a vector spanning groups."""
    groups = node.attrs.get("groups", 1)
    if node.op != "conv2d" or len(node.inputs) != 2 or groups == 1 or not _constant_kernel(node):
        return False
    oc, icg = node.inputs[1].shape[:2]
    if icg == 1 or oc % 8 or len(node.inputs[0].shape) != 4:
        return False
    vec = target.lanes(node.inputs[0].dtype)
    return not convertible(node, target) or conv_blocks(node, target)[1] < vec and oc % vec == 0 and oc // groups >= vec


def depthwise_convertible(node) -> bool:
    """A ``depthwise_conv2d`` of multiplier 1 with a constant kernel."""
    return (node.op == "depthwise_conv2d" and len(node.inputs) == 2 and _constant_kernel(node)
            and node.inputs[1].shape[1] == 1 and node.inputs[1].shape[0] == node.inputs[0].shape[1])


def group_conv(node, ins: list, lay: Layouts) -> tuple | None:
    """``conv2d`` (grouped) -> ``group_conv2d_NCHWc``; its data's block is kept when it divides IC."""
    if not group_convertible(node, lay.target):
        return None
    kernel, groups, data = node.inputs[1], node.attrs["groups"], node.inputs[0]
    st, pad, dil = (tuple(node.attrs.get(k, d)) for k, d in
                    (("strides", (1, 1)), ("padding", (0, 0, 0, 0)), ("dilation", (1, 1))))
    cfg = helpers(lay.target).group_conv_config(data.shape, kernel.shape, st, pad, dil, groups, data.dtype)
    key = cfg.workload
    have = lay.block_of(ins[0])
    ic_cands, oc_cands = cfg.candidates("ic_bn"), cfg.candidates("oc_bn")
    want = lay.concat_blocks.get(id(node.output), cfg["oc_bn"].val)
    if have and have != cfg["ic_bn"].val and have in ic_cands or want in oc_cands:
        ic_bn = have if have and have in ic_cands else cfg["ic_bn"].val
        oc_bn = want if want in oc_cands else cfg["oc_bn"].val
        cfg = make_config(key, {**cfg.values, "ic_bn": ic_bn, "oc_bn": oc_bn})
    ic_bn, oc_bn = cfg["ic_bn"].val, cfg["oc_bn"].val
    packed = constant_node(
        helpers(lay.target).pack_group_kernel_numpy(np.asarray(kernel.node.attrs["value"]), groups,
                                                    ic_bn, oc_bn),
        lay.fresh(f"{node.name}_kernel_packed"),
    )
    new = lay.to(ins[0], ic_bn) if have else ins[0]
    attrs = {**node.attrs, "config": cfg}
    conv = make_node("group_conv2d_NCHWc", [new, packed.output], attrs, node.name, [node.output.name])
    return lay.produce(conv, oc_bn)


def depthwise(node, ins: list, lay: Layouts) -> tuple | None:
    """``depthwise_conv2d`` on a blocked value -> ``depthwise_conv2d_NCHWc`` (same block), when
    its output stays blocked too (else one conversion of its input serves it in NCHW)."""
    block = lay.block_of(ins[0])
    if not block or not depthwise_convertible(node) or id(node.output) not in lay.wanted:
        return None
    taps = np.asarray(node.inputs[1].node.attrs["value"])
    return lay.produce(_depthwise_node(node, ins[0], taps, block, lay, node.output.name), block)


def _depthwise_node(node, data: Value, taps: np.ndarray, block: int, lay: Layouts, out_name: str):
    """A ``depthwise_conv2d_NCHWc`` node of ``node``'s attrs over blocked ``data``, kernel ``taps``."""
    packed = constant_node(helpers(lay.target).pack_depthwise_kernel_numpy(taps, block), lay.fresh(f"{node.name}_kernel_packed"))
    attrs = {k: v for k, v in node.attrs.items() if k != "config"}
    name = node.name if out_name == node.output.name else out_name
    return make_node("depthwise_conv2d_NCHWc", [data, packed.output], attrs, name, [out_name])


def find_shuffles(graph: Graph) -> dict:
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


def shuffle(node, ins: list, lay: Layouts) -> tuple | None:
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


def _strided_depthwise_after(last, lay: Layouts):
    """The strided depthwise conv that is the only consumer of a shuffle's output, else None."""
    users = lay.users.get(id(last.output), ())
    dw = users[0][0] if len(users) == 1 and users[0][1] == 0 else None
    if dw is None or not depthwise_convertible(dw) or id(dw.output) not in lay.wanted:
        return None
    return dw if max(dw.attrs.get("strides", (1, 1))) > 1 else None


def concat_blocks(graph: Graph) -> dict:
    """id(old value) -> the block that a channel concatenation of it will take, when its
    inputs' channels share no whole vector (ShuffleNet's 112 ++ 24: 8), for the values
    from which elementwise ops and constant operands lead to that input: a grouped conv
    there then writes that block itself (an inlined re-blocking inside the concat costs
    over ten times the concat alone)."""
    found = {}
    for node in graph.nodes:
        if node.op != "concatenate" or node.attrs.get("axis", 0) not in (1, -3):
            continue
        if any(len(v.shape) != 4 for v in node.inputs) or all(v.shape[1] % 16 == 0 for v in node.inputs):
            continue
        block = math.gcd(16, *(v.shape[1] for v in node.inputs))
        for v in node.inputs:
            mark_upstream(v, block, found, lambda v: id(v) not in found)
    return found
