"""topi.nn: target-independent computes of the neural-network operators."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.nn.conv2d import (  # noqa: F401
    conv2d, conv2d_nchw, conv2d_nhwc, conv2d_NCHWc, group_conv2d_nchw, conv2d_infer_layout, conv2d_hwcn,
)
from topi.nn.depthwise_conv2d import depthwise_conv2d_nchw, depthwise_conv2d_nhwc  # noqa: F401
from topi.nn.conv2d_transpose import (  # noqa: F401
    conv1d_transpose_ncw, conv2d_transpose_nchw, conv3d_transpose_ncdhw, group_conv2d_transpose_nchw,
)
from topi.nn.conv1d import conv1d, conv1d_ncw, conv1d_nwc  # noqa: F401
from topi.nn.conv3d import conv3d_ncdhw, conv3d_ndhwc  # noqa: F401
from topi.nn.pad import pad  # noqa: F401
from topi.nn.dense import dense, matmul  # noqa: F401
from topi.nn.batch_matmul import batch_matmul  # noqa: F401
from topi.nn.pooling import pool2d, pool1d, pool3d, global_pool, adaptive_pool, adaptive_pool3d  # noqa: F401
from topi.nn.pool_grad import pool_grad  # noqa: F401
from topi.nn.upsampling import upsampling, upsampling3d  # noqa: F401
from topi.nn.max_pool_indices import max_pool2d_with_indices  # noqa: F401
from topi.nn.softmax import softmax, log_softmax  # noqa: F401
from topi.nn.batch_norm import batch_norm  # noqa: F401
from topi.nn.lrn import lrn  # noqa: F401
from topi.nn.elemwise import relu, leaky_relu, prelu, elu, selu, gelu, clip  # noqa: F401
from topi.nn.flatten import flatten  # noqa: F401
from topi.nn.winograd import conv2d_winograd_nchw, winograd_kernel_transform, winograd_kernel_transform_numpy  # noqa: F401,E501
from topi.nn.qnn import dequantize, qnn_conv2d, qnn_dense, quantize, requantize  # noqa: F401
from topi.nn.dilate import dilate  # noqa: F401
from topi.nn.loss import nll_loss  # noqa: F401
# the classic normalisations over chosen axes: the layer_norm module is imported first, so that
# the function bound after it stays topi.nn.layer_norm however the module is imported later
from topi.nn import layer_norm as _layer_norm_module  # noqa: F401,E402
from topi.nn.norms import group_norm, instance_norm, layer_norm  # noqa: F401,E402,F811
from topi.nn.conv1d import group_conv1d_ncw, group_conv1d_nwc  # noqa: F401,E402
from topi.nn.group_conv import group_conv2d_nhwc  # noqa: F401,E402
from topi.nn.space_ops import batch_to_space_nd, depth_to_space, space_to_batch_nd, space_to_depth  # noqa: F401,E402
from topi.nn.lstm import lstm  # noqa: F401,E402
from topi.nn.correlation import correlation_nchw  # noqa: F401,E402
from topi.nn.winograd_nhwc import conv2d_winograd_nhwc  # noqa: F401,E402
from topi.nn.deformable_conv2d import deformable_conv2d_nchw, deformable_conv2d_nhwc  # noqa: F401,E402
from topi.nn.bitserial import (  # noqa: F401,E402
    binarize_pack, binary_dense, bitpack, bitserial_conv2d_nchw, bitserial_conv2d_nhwc,
)
from topi.nn.sparse import sparse_add, sparse_conv2d, sparse_dense, sparse_transpose  # noqa: F401,E402
from topi.nn.mapping import scale_shift_nchw, scale_shift_nchwc, scale_shift_nhwc  # noqa: F401,E402
