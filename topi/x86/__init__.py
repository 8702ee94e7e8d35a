"""topi.x86: tuned CPU schedules (each reads its choices from a topi.config.Config)."""

from topi._lazy import lazy_exports

_TABLE = {}
for _mod, _names in {
    "conv2d": "schedule_conv2d_nchw schedule_conv2d_nhwc schedule_conv2d_NCHWc conv2d_nchw_x86 "
              "default_conv2d_config",
    "depthwise_conv2d": "schedule_depthwise_conv2d_nchw schedule_depthwise_conv2d_nhwc",
    "conv2d_transpose": "schedule_conv2d_transpose_nchw",
    "conv1d": "schedule_conv1d_ncw schedule_conv1d_nwc",
    "dense": "schedule_dense schedule_matmul default_dense_config",
    "batch_matmul": "schedule_batch_matmul",
    "pooling": "schedule_pool schedule_adaptive_pool",
    "softmax": "schedule_softmax",
    "injective": "schedule_injective schedule_elemwise schedule_broadcast schedule_concatenate",
    "reduction": "schedule_reduce",
}.items():
    for _n in _names.split():
        _TABLE[_n] = _mod

__getattr__, __dir__ = lazy_exports("topi.x86", _TABLE)
