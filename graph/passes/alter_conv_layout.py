"""alter_conv_layout: give constant conv2d kernels and dense weights their blocked layouts.

The target's blocked convolution (x86: ``topi.x86.strategy``'s layout helpers,
``topi.strategy.layout_helpers``) computes in NCHW[x]c with its kernel in
``[OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn]``; packing a constant kernel
inside every call would cost a pass over the weights per inference.  This
pass inserts the packing as a graph node, which constant folding then
evaluates once (TVM's AlterOpLayout for conv2d)::

    before:  %y = conv2d(%x, %w)                          # %w: constant [64, 64, 3, 3]
    after:   %p = pack_conv2d_kernel(%w, ic_bn=16, oc_bn=16)
             %y = conv2d(%x, %p)                          # %p folds to [4, 4, 3, 3, 16, 16]

The block sizes are the node's config's, or the default x86 rule's for the
conv's workload (:func:`conv_blocks`), with ``oc_bn`` lowered to a divisor
of OC when it does not divide (the packed output keeps exactly OC
channels); where none of 8 or more divides, a config that pads the channels
packs the kernel padded and the node records ``channels=OC`` (:func:`padded_blocks`);
a conv that cannot be blocked is left as is.  At ``opt_level``
2 ``alter_op_layout`` (position 58) has already turned every blockable conv
into ``conv2d_NCHWc`` with blocked activations; this pass then packs the
kernels of convs left NCHW (when that pass is excluded).

A 3x3 stride-1 conv whose config ``choose_configs`` made a
``conv2d_winograd.x86`` one (``tune.autotvm.choose.choose``) gets its
constant kernel transformed once, here, as a node that constant folding
evaluates (``U = G g G^T``, no transform per call), and becomes
``conv2d_winograd`` (``graph.ops.winograd``); at ``opt_level`` 2
``alter_op_layout`` does this with blocked data and output (:func:`winograd_layout`)::

    before:  %y = conv2d(%x, %w, config=config<conv2d_winograd.x86 tile=4 cb=16 bn=64 mr=4 ku=1>)
    after:   %u = winograd_transform_kernel(%w, tile=4, bn=64, cp=64)   # folds to [6, 6, 1, 64, 64]
             %y = conv2d_winograd(%x, %u, kernel_shape=(64, 64, 3, 3), out_block=0, config=...)

A ``dense`` with a constant ``[N, K]`` weight gets TVM's dense_pack layout
``[N/bn, K, bn]`` (N zero-padded), so each vector of outputs streams
contiguous weights (except a GEMV over a weight larger than
``PACK_GEMV_MAX_BYTES``, memory-bound either way); the node records ``units=N``::

    before:  %y = dense(%x, %w)                           # %w: constant [1000, 2048]
    after:   %p = pack_dense_weight(%w, bn=64)
             %y = dense(%x, %p, units=1000)               # %p folds to [16, 2048, 64]

A target with no blocked layout (no layout helpers registered for its keys)
keeps every conv and dense as it is.
"""

from __future__ import annotations

from graph.ir import Graph, make_node, rebuild
from topi.strategy import layout_helpers
from tune.autotvm.choose import out_block as config_out_block

WINOGRAD_TEMPLATE = "conv2d_winograd.x86"


def helpers(target):
    """The layout helpers of ``target`` (None: it has no blocked layout)."""
    found = layout_helpers(target)
    return found if hasattr(found, "conv_template") else None


def is_winograd(node) -> bool:
    """Whether ``node`` is a ``conv2d`` with a constant OIHW kernel and a ``conv2d_winograd.x86`` config."""
    cfg = node.attrs.get("config")
    if node.op != "conv2d" or cfg is None or cfg.template != WINOGRAD_TEMPLATE or len(node.inputs) != 2:
        return False
    kernel = node.inputs[1]
    return len(kernel.shape) == 4 and kernel.node is not None and kernel.node.is_constant


def winograd_conv(node, data, kernel, out_block: int, kernel_name: str):
    """``conv2d_winograd(data, winograd_transform_kernel(kernel))`` of a :func:`is_winograd` node."""
    cfg = node.attrs["config"]
    cp = -(-kernel.shape[1] // cfg["cb"].val) * cfg["cb"].val
    u = make_node("winograd_transform_kernel", [kernel], {"tile": cfg["tile"].val, "bn": cfg["bn"].val,
                                                           "cp": cp},
                  kernel_name)
    attrs = {"padding": tuple(node.attrs.get("padding", (0, 0, 0, 0))), "kernel_shape": tuple(kernel.shape),
             "config": cfg, "out_block": out_block}
    return make_node("conv2d_winograd", [data, u.output], attrs, node.name, [v.name for v in node.outputs])


def winograd_layout(node, ins: list, lay) -> tuple:
    """``alter_op_layout``'s rewrite of a :func:`is_winograd` node: the data as it comes (NCHW
    or any block: the Winograd input stage re-blocks it), the output blocked as the direct
    template would block it (``topi.x86.conv2d_winograd.winograd_out_block``), so no
    ``layout_transform`` appears on either side."""
    cfg = node.attrs["config"]
    ob = config_out_block(cfg, lay.target)
    conv = winograd_conv(node, ins[0], ins[1], ob, lay.fresh(f"{node.name}_kernel_winograd"))
    return lay.produce(conv, ob)


def conv_blocks(node, target, prefer_ic_bn: int = 0, padded: bool = False) -> tuple | None:
    """(ic_bn, oc_bn) of a ``conv2d`` node with an OIHW kernel, None if it cannot be blocked.

    The blocks are the node's ``config`` (``ic_bn``, ``oc_bn``) when it has
    one, else the default x86 rule's; without a config, ``prefer_ic_bn``
    (the block its data already has) replaces the rule's ``ic_bn`` when it
    divides each group's input channels, so no transform is needed.
    ``oc_bn`` is lowered to a divisor of each group's output channels, unless
    ``padded`` (a blocked output) and the target's ``conv_out_block`` gives the
    output a block: the kernel's channels are then zero-padded to whole blocks.
    """
    kernel = node.inputs[1]
    h = helpers(target)
    if h is None:
        return None
    oc, icg = kernel.shape[0], kernel.shape[1]
    groups = node.attrs.get("groups", 1)
    cfg = node.attrs.get("config")
    if cfg is not None and cfg.template != h.conv_template:
        return None  # choose_configs found it cannot be blocked: the direct template
    if cfg is not None:
        blocks = cfg["ic_bn"].val, cfg["oc_bn"].val
    else:
        blocks = h.group_conv_blocks(node.inputs[0].shape, kernel.shape, node.attrs)
    if blocks is None:
        return None
    ic_bn, oc_bn = blocks
    if cfg is None and prefer_ic_bn and icg % prefer_ic_bn == 0:
        ic_bn = prefer_ic_bn
    while oc_bn > 1 and (oc // groups) % oc_bn and not (padded and h.conv_out_block(oc, oc_bn, groups)):
        oc_bn //= 2
    if oc_bn < 8 or icg % ic_bn:
        return None
    return ic_bn, oc_bn


def alter_conv_layout(graph: Graph, context) -> Graph:
    """Pack the constant kernels of ``conv2d`` for the blocked convolution of the build's target
    (``context.target``; grouped too, when each group's channels divide into blocks)."""
    target = context.target
    if helpers(target) is None:
        return graph


    def rewrite(node, ins):
        if node.op == "dense":
            return _pack_dense(node, ins, target)
        if is_winograd(node):
            return winograd_conv(node, ins[0], ins[1], 0, f"{node.name}_kernel_winograd").outputs
        if node.op != "conv2d" or len(ins[1].shape) != 4:
            return None
        if ins[1].node is None or not ins[1].node.is_constant:
            return None
        blocks, attrs = conv_blocks(node, target), node.attrs
        if blocks is None:
            blocks = padded_blocks(node, target)
            if blocks is None:
                return None
            attrs = {**attrs, "channels": ins[1].shape[0]}
        packed = make_node("pack_conv2d_kernel", [ins[1]], {"ic_bn": blocks[0], "oc_bn": blocks[1]},
                           f"{node.name}_kernel_packed")
        return make_node("conv2d", [ins[0], packed.output, *ins[2:]], attrs, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)


def padded_blocks(node, target) -> tuple | None:
    """(ic_bn, oc_bn) of a one-group NCHW conv whose config's ``oc_bn`` zero-pads its output
    channels (ShuffleNet-v2's 116 by 16: ``topi.x86.conv2d_rule._pads_to_tiles``; RegNet's
    squeeze-excite 440 -> 110 by 8): the kernel is packed once with its last block padded, the
    node keeps ``channels`` (its output stays NCHW), instead of the conv packing its kernel in
    every call (RegNet's 440 -> 110: 120-147 us a call, 26-34 us packed once).  None otherwise."""
    cfg, h = node.attrs.get("config"), helpers(target)
    kernel = node.inputs[1]
    if cfg is None or cfg.template != h.conv_template or node.attrs.get("groups", 1) != 1:
        return None
    ic_bn, oc_bn = cfg["ic_bn"].val, cfg["oc_bn"].val
    if kernel.shape[0] % oc_bn == 0 or kernel.shape[1] % ic_bn or oc_bn < 8:
        return None
    return ic_bn, oc_bn


# A GEMV (M <= 2) whose weight does not stay in cache keeps its plain [N, K]
# rows: the same bound as the x86 dense strategy's (topi/x86/dense.py says why).
PACK_GEMV_MAX_BYTES = 32 * 2**20


def _pack_dense(node, ins, target):
    w = ins[1]
    if len(w.shape) != 2 or w.node is None or not w.node.is_constant or w.dtype != "float32":
        return None
    n, k = w.shape
    if ins[0].shape[0] <= 2 and w.nbytes > PACK_GEMV_MAX_BYTES:
        return None
    cfg = node.attrs.get("config")
    if cfg is not None and cfg.template != helpers(target).dense_pack_template:
        return None  # choose_configs chose the plain dense template
    bn = cfg["bn"].val if cfg is not None else helpers(target).dense_pack_block(ins[0].shape[0], n, k)
    packed = make_node("pack_dense_weight", [w], {"bn": bn}, f"{node.name}_weight_packed")
    return make_node("dense", [ins[0], packed.output], {**node.attrs, "units": n}, node.name,
                     [v.name for v in node.outputs]).outputs
