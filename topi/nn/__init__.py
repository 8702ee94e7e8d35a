"""topi.nn: target-independent computes of the neural-network operators."""

from topi._lazy import lazy_exports

_TABLE = {}
for _mod, _names in {
    "conv2d": "conv2d conv2d_nchw conv2d_nhwc conv2d_NCHWc group_conv2d_nchw conv2d_infer_layout",
    "depthwise_conv2d": "depthwise_conv2d_nchw depthwise_conv2d_nhwc",
    "conv2d_transpose": "conv2d_transpose_nchw",
    "conv1d": "conv1d conv1d_ncw conv1d_nwc",
    "pad": "pad",
    "dense": "dense matmul",
    "batch_matmul": "batch_matmul",
    "pooling": "pool2d pool1d global_pool adaptive_pool",
    "softmax": "softmax log_softmax",
    "batch_norm": "batch_norm",
    "lrn": "lrn",
    "elemwise": "relu leaky_relu prelu elu selu gelu clip",
    "flatten": "flatten",
}.items():
    for _n in _names.split():
        _TABLE[_n] = _mod

__getattr__, __dir__ = lazy_exports("topi.nn", _TABLE)
