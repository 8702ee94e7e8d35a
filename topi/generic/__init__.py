"""topi.generic: fallback schedules that are correct for any operator."""

from topi._lazy import lazy_exports

_TABLE = {}
for _mod, _names in {
    "injective": "schedule_injective schedule_elemwise schedule_broadcast schedule_concatenate",
    "reduction": "schedule_reduce",
    "nn": "schedule_conv2d_nchw schedule_conv2d_nhwc schedule_conv2d_NCHWc "
          "schedule_depthwise_conv2d_nchw schedule_depthwise_conv2d_nhwc "
          "schedule_conv2d_transpose_nchw schedule_conv1d_ncw schedule_dense schedule_batch_matmul "
          "schedule_pool schedule_adaptive_pool schedule_softmax schedule_lrn default_schedule",
}.items():
    for _n in _names.split():
        _TABLE[_n] = _mod

__getattr__, __dir__ = lazy_exports("topi.generic", _TABLE)
