"""topi.testing: numpy reference implementations (classic ``*_python`` names)."""

from topi._lazy import lazy_exports

_TABLE = {}
for _mod, _names in {
    "conv": "conv2d_nchw_python conv2d_nhwc_python depthwise_conv2d_python_nchw "
            "depthwise_conv2d_python_nhwc conv2d_transpose_nchw_python conv1d_ncw_python "
            "group_conv2d_nchw_python conv2d_NCHWc_python",
    "nn_ref": "dense_python batch_matmul_python pool2d_python pool1d_python global_pool_python "
              "adaptive_pool_python softmax_python log_softmax_python batch_norm_python lrn_python",
    "common": "pad_python relu_python leaky_relu_python prelu_python elu_python selu_python "
              "gelu_python resize_python layout_transform_python",
}.items():
    for _n in _names.split():
        _TABLE[_n] = _mod

__getattr__, __dir__ = lazy_exports("topi.testing", _TABLE)
