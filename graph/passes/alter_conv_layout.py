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
    import te
    from topi.nn.conv2d import conv2d_nchw
    from topi.x86.conv2d import default_conv2d_config

    data, kernel = node.inputs[0], node.inputs[1]
    a = node.attrs
    probe = conv2d_nchw(te.placeholder(data.shape, data.dtype), te.placeholder(kernel.shape, kernel.dtype),
                        tuple(a.get("strides", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))),
                        tuple(a.get("dilation", (1, 1))))
    cfg = default_conv2d_config(probe.op.attrs["workload"])
    oc, ic = kernel.shape[0], kernel.shape[1]
    ic_bn, oc_bn = cfg["ic_bn"], cfg["oc_bn"]
    while oc_bn > 1 and oc % oc_bn:
        oc_bn //= 2
    if oc_bn < 8 or ic % ic_bn:
        return None
    return ic_bn, oc_bn


def alter_conv_layout(graph: Graph) -> Graph:
    """Pack the constant kernels of ``conv2d`` (groups == 1) for the blocked x86 convolution."""

    def rewrite(node, ins):
        if node.op != "conv2d" or node.attrs.get("groups", 1) != 1 or len(ins[1].shape) != 4:
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
