"""Operator tags: what a schedule or the fusion pass may do with a stage.

Classic TVM's vocabulary: ``elemwise`` and ``broadcast`` are injective and
always inlinable; ``injective`` covers reshapes and gathers; ``comm_reduce``
marks reductions; ``conv2d_*``, ``dense`` and ``pool`` mark the anchors of
fused groups (an out-of-place stage that epilogues attach to).
"""

ELEMWISE = "elemwise"
BROADCAST = "broadcast"
INJECTIVE = "injective"
COMM_REDUCE = "comm_reduce"
COMM_REDUCE_IDX = "comm_reduce_idx"
CONV2D_NCHW = "conv2d_nchw"
CONV2D_NHWC = "conv2d_nhwc"
CONV2D_NCHWC = "conv2d_NCHWc"
DEPTHWISE_CONV2D_NCHW = "depthwise_conv2d_nchw"
DEPTHWISE_CONV2D_NHWC = "depthwise_conv2d_nhwc"
CONV2D_TRANSPOSE = "conv2d_transpose_nchw"
CONV1D = "conv1d"
DENSE = "dense"
BATCH_MATMUL = "batch_matmul"
POOL = "pool"
SOFTMAX = "softmax"
OPAQUE = "opaque"


def is_injective(tag: str) -> bool:
    """Elementwise, broadcast and other injective ops: safe to inline anywhere."""
    return tag in (ELEMWISE, BROADCAST, INJECTIVE) or tag.startswith(ELEMWISE) or tag.startswith(BROADCAST)


def is_broadcast(tag: str) -> bool:
    return tag in (ELEMWISE, BROADCAST) or tag.startswith(ELEMWISE) or tag.startswith(BROADCAST)
