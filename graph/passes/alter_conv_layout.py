"""alter_conv_layout: give constant conv2d kernels the blocked NCHW[x]c layout.

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
