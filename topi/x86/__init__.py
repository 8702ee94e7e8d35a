"""topi.x86: tuned CPU schedules (each reads its choices from a topi.config.Config)."""

# Imported eagerly: a lazy lookup would lose to the submodule attribute that
# Python binds on the package when a module shares its function's name.
from topi.x86.conv2d import (  # noqa: F401
    schedule_conv2d_nchw, schedule_conv2d_nhwc, schedule_conv2d_NCHWc, conv2d_nchw_x86,
    default_conv2d_config,
)
from topi.x86.depthwise_conv2d import (  # noqa: F401
    schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_nhwc,
)
from topi.x86.conv2d_transpose import schedule_conv2d_transpose_nchw  # noqa: F401
from topi.x86.conv1d import schedule_conv1d_ncw, schedule_conv1d_nwc  # noqa: F401
from topi.x86.dense import schedule_dense, schedule_matmul, default_dense_config  # noqa: F401
from topi.x86.batch_matmul import schedule_batch_matmul  # noqa: F401
from topi.x86.pooling import schedule_pool, schedule_adaptive_pool  # noqa: F401
from topi.x86.softmax import schedule_softmax  # noqa: F401
from topi.x86.injective import (  # noqa: F401
    schedule_injective, schedule_elemwise, schedule_broadcast, schedule_concatenate,
)
from topi.x86.reduction import schedule_reduce  # noqa: F401
