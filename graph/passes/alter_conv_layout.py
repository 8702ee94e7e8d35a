"""alter_conv_layout: give constant conv2d kernels and dense weights their blocked layouts.

The x86 convolution computes in NCHW[x]c with its kernel in
``[OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn]``; packing a constant kernel
inside every call would cost a pass over the weights per inference.  This
pass inserts the packing as a graph node, which constant folding then
evaluates once (TVM's AlterOpLayout for conv2d)::

    before:  %y = conv2d(%x, %w)                          # %w: constant [64, 64, 3, 3]
    after:   %p = pack_conv2d_kernel(%w, ic_bn=16, oc_bn=16)
             %y = conv2d(%x, %p)                          # %p folds to [4, 4, 3, 3, 16, 16]

The block sizes are the default x86 config's for the conv's workload, with
``oc_bn`` lowered to a divisor of OC when it does not divide (the packed
output keeps exactly OC channels); a conv that cannot be blocked is left as is.

A ``dense`` with a constant ``[N, K]`` weight gets TVM's dense_pack layout
``[N/bn, K, bn]`` (N zero-padded), so each vector of outputs streams
contiguous weights (except a GEMV over a weight larger than
``PACK_GEMV_MAX_BYTES``, memory-bound either way); the node records ``units=N``::

    before:  %y = dense(%x, %w)                           # %w: constant [1000, 2048]
    after:   %p = pack_dense_weight(%w, bn=64)
             %y = dense(%x, %p, units=1000)               # %p folds to [16, 2048, 64]
"""

from __future__ import annotations

from graph.ir import Graph, make_node, rebuild


def _blocks(node) -> tuple | None:
    from graph.ops.nn import group_conv_blocks

    kernel = node.inputs[1]
    blocks = group_conv_blocks(node.inputs[0].shape, kernel.shape, node.attrs)
    if blocks is None:
        return None
    ic_bn, oc_bn = blocks
    oc, icg = kernel.shape[0], kernel.shape[1]
    groups = node.attrs.get("groups", 1)
    while oc_bn > 1 and (oc // groups) % oc_bn:
        oc_bn //= 2
    if oc_bn < 8 or icg % ic_bn:
        return None
    return ic_bn, oc_bn


def alter_conv_layout(graph: Graph) -> Graph:
    """Pack the constant kernels of ``conv2d`` for the blocked x86 convolution (grouped too,
    when each group's channels divide into blocks)."""

    def rewrite(node, ins):
        if node.op == "dense":
            return _pack_dense(node, ins)
        if node.op != "conv2d" or len(ins[1].shape) != 4:
            return None
        if ins[1].node is None or not ins[1].node.is_constant:
            return None
        blocks = _blocks(node)
        if blocks is None:
            return None
        packed = make_node("pack_conv2d_kernel", [ins[1]], {"ic_bn": blocks[0], "oc_bn": blocks[1]},
                           f"{node.name}_kernel_packed")
        return make_node("conv2d", [ins[0], packed.output, *ins[2:]], node.attrs, node.name,
                         [v.name for v in node.outputs]).outputs

    return rebuild(graph, rewrite)


# A GEMV (M <= 2) whose weight does not stay in cache is bound by memory either
# way; there the plain [N, K] rows measured faster (VGG's 25088x4096: 14.2 ms
# plain vs 16.0 ms packed; 2048x1000: 0.110 plain vs 0.086 packed).
PACK_GEMV_MAX_BYTES = 32 * 2**20


def _pack_dense(node, ins):
    from topi.x86.dense import default_dense_pack_config

    w = ins[1]
    if len(w.shape) != 2 or w.node is None or not w.node.is_constant or w.dtype != "float32":
        return None
    n, k = w.shape
    if ins[0].shape[0] <= 2 and w.nbytes > PACK_GEMV_MAX_BYTES:
        return None
    bn = default_dense_pack_config(ins[0].shape[0], n, k)["bn"]
    packed = make_node("pack_dense_weight", [w], {"bn": bn}, f"{node.name}_weight_packed")
    return make_node("dense", [ins[0], packed.output], {**node.attrs, "units": n}, node.name,
                     [v.name for v in node.outputs]).outputs
