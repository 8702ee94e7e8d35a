"""topi.testing: numpy reference implementations (classic ``*_python`` names)."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.testing.conv import (  # noqa: F401
    conv2d_nchw_python, conv2d_nhwc_python, depthwise_conv2d_python_nchw,
    depthwise_conv2d_python_nhwc, depthwise_conv2d_python_nchwc, conv2d_transpose_nchw_python, conv1d_ncw_python,
    group_conv2d_nchw_python, conv2d_NCHWc_python, group_conv1d_ncw_python, conv2d_hwcn_python,
)
from topi.testing.nn_ref import (  # noqa: F401
    dense_python, batch_matmul, batch_matmul_python, pool2d_python, pool1d_python, global_pool_python,
    adaptive_pool_python, softmax_python, log_softmax_python, batch_norm_python, lrn_python,
    batch_norm_python as batch_norm,
    max_pool2d_with_indices_python, adaptive_pool_python as adaptive_pool,
)
from topi.testing.pooling import pool_grad_nchw, poolnd_python  # noqa: F401
from topi.testing.sort_ref import topk_python  # noqa: F401
from topi.testing.conv_nd import (  # noqa: F401
    conv1d_transpose_ncw_python, conv3d_ncdhw_python, conv3d_ndhwc_python, conv3d_transpose_ncdhw_python,
    correlation_nchw_python, deformable_conv2d_nchw_python, deformable_conv2d_nhwc_python,
)
from topi.testing.common import (  # noqa: F401
    dilate_python, pad_python, relu_python, leaky_relu_python, prelu_python, elu_python, selu_python,
    gelu_python, resize_python, layout_transform_python,
)
from topi.testing.lstm import lstm_python  # noqa: F401
from topi.testing.winograd_python import conv2d_winograd_nchw_python  # noqa: F401
from topi.testing.indexing import (  # noqa: F401
    gather_nd_python, scatter_nd_python, scatter_elements_python, cumulative_python,
)
from topi.testing.image import col2im_python, grid_sample_onnx_python  # noqa: F401
from topi.testing.resize import (  # noqa: F401
    affine_grid_python, crop_and_resize_python, grid_sample_python, resize1d_python, resize2d_python,
    resize3d_python, resize_nd_python,
)
from topi.testing.transform_ref import (  # noqa: F401
    gather_python, matrix_set_diag, one_hot, sequence_mask, strided_set_python, strided_slice_python,
)
from topi.testing.dispatch import (  # noqa: F401
    compare_numpy_tvm, dispatch, get_broadcast_schedule, get_conv2d_nchw_implement,
    get_elemwise_schedule, get_injective_schedule, get_reduce_schedule,
)
from topi.testing.qnn import (  # noqa: F401
    dequantize_python, qnn_conv2d_python, qnn_dense_python, quantize_python, requantize_python,
)
from topi.testing.loss_norm import (  # noqa: F401
    group_norm_python, instance_norm_python, layer_norm_python, nll_loss, searchsorted_ref,
)
from topi.testing.space_ref import (  # noqa: F401
    batch_to_space_nd_python, depth_to_space_python, space_to_batch_nd_python, space_to_depth_python,
)
from topi.testing.vision import (  # noqa: F401,E402
    all_class_nms_python, get_valid_counts_python, multibox_prior_python, multibox_transform_loc_python,
    non_max_suppression_python, proposal_python, reorg_python, roi_align_nchw_python, roi_pool_nchw_python,
)
