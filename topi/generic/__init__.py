"""topi.generic: fallback schedules that are correct for any operator."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.generic.injective import (  # noqa: F401
    schedule_injective, schedule_elemwise, schedule_broadcast, schedule_concatenate,
)
from topi.generic.reduction import schedule_reduce  # noqa: F401
from topi.generic.nn import (  # noqa: F401
    schedule_conv2d_nchw, schedule_conv2d_nhwc, schedule_conv2d_NCHWc,
    schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_nhwc,
    schedule_conv2d_transpose_nchw, schedule_conv1d_ncw, schedule_dense,
    schedule_batch_matmul, schedule_pool, schedule_pool_grad, schedule_adaptive_pool, schedule_softmax,
    schedule_lrn, schedule_lstm, schedule_extern, schedule_unique, schedule_sort, schedule_argsort, schedule_topk,
    schedule_argwhere, schedule_batch_norm, schedule_conv1d_nwc, schedule_group_conv1d_ncw,
    schedule_group_conv1d_nwc, schedule_group_conv2d_nchw, schedule_group_conv2d_nhwc, default_schedule,
    schedule_sparse_conv2d, schedule_sparse_dense, schedule_sparse_transpose,
)
from topi.generic.conv2d import (  # noqa: F401,E402
    schedule_conv1d_transpose_ncw, schedule_conv2d_hwcn, schedule_conv3d_ncdhw, schedule_conv3d_ndhwc,
    schedule_conv3d_transpose_ncdhw, schedule_correlation_nchw, schedule_deformable_conv2d_nchw,
    schedule_deformable_conv2d_nhwc, schedule_group_conv2d_transpose_nchw,
)
from topi.generic.vision import (  # noqa: F401,E402
    schedule_get_valid_counts, schedule_multibox_detection, schedule_multibox_prior, schedule_multibox_transform_loc,
    schedule_nms, schedule_proposal, schedule_reorg, schedule_roi_align, schedule_roi_pool,
)
