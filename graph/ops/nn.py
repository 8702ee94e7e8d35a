"""Neural-network graph operators: convolutions, dense, pooling, softmax, norms, reductions.

Convolutions, dense and pooling are the anchors of fused groups
(OUT_ELEMWISE_FUSABLE: the elementwise ops after them run in their output
loop); reductions take their injective inputs (COMM_REDUCE); softmax, LRN
and batch_norm stand alone (OPAQUE).
"""

from __future__ import annotations

import numpy as np

import topi
from codegen.target import create
from graph.ops.registry import COMM_REDUCE, OPAQUE, OUT_ELEMWISE_FUSABLE, default_schedule, register
from topi.nn.conv2d import out_size, plain_kernel_shape
from topi.strategy import layout_helpers


def _conv_args(a):
    return tuple(a.get("strides", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))), tuple(a.get("dilation", (1, 1)))


def _conv2d_compute(xs, a):
    """The generic NCHW conv (a target's strategy may compute it its own way, by the node's config)."""
    st, pad, dil = _conv_args(a)
    return [topi.nn.group_conv2d_nchw(xs[0], xs[1], st, pad, dil, a.get("groups", 1))]


def _conv2d_types(values, a):
    data, kernel = values[0], values[1]
    st, pad, dil = _conv_args(a)
    groups = a.get("groups", 1)
    kshape = plain_kernel_shape(kernel.shape, a.get("channels")) if len(kernel.shape) == 6 else kernel.shape
    if len(data.shape) != 4 or len(kshape) != 4:
        raise ValueError(f"conv2d expects 4-D data and kernel, got {data.shape} and {kernel.shape}")
    if data.shape[1] != kshape[1] * groups:
        raise ValueError(f"conv2d: data has {data.shape[1]} channels, kernel {kernel.shape} with groups={groups} "
                         f"expects {kshape[1] * groups}")
    oh = out_size("conv2d", data.shape[2], kshape[2], st[0], dil[0], pad[0], pad[2], data.shape, kernel.shape)
    ow = out_size("conv2d", data.shape[3], kshape[3], st[1], dil[1], pad[1], pad[3], data.shape, kernel.shape)
    return [((data.shape[0], kshape[0], oh, ow), data.dtype)]


def _np_conv2d(xs, a):
    data, kernel = xs
    st, pad, dil = _conv_args(a)
    if kernel.ndim == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kernel.shape
        kernel = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(occ * oc_bn, icc * ic_bn, kh, kw)
        kernel = kernel[: a.get("channels") or occ * oc_bn]
    padded = np.pad(data, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    return [topi.testing.conv2d_nchw_python(padded, kernel, st, 0, a.get("groups", 1), dil).astype(data.dtype)]


register("conv2d", _conv2d_compute, OUT_ELEMWISE_FUSABLE, default_schedule, _conv2d_types, _np_conv2d,
         doc="attrs: strides, padding (top, left, bottom, right), dilation, groups, config, channels; "
             "kernel OIHW or pre-packed [OCc, ICc, KH, KW, ic_bn, oc_bn] (channels: the output's, "
             "where the kernel's last block is zero-padded)")


def _depthwise_compute(xs, a):
    st, pad, dil = _conv_args(a)
    return [topi.nn.depthwise_conv2d_nchw(xs[0], xs[1], st, pad, dil)]


def _np_depthwise(xs, a):
    st, pad, dil = _conv_args(a)
    padded = np.pad(xs[0], ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    return [topi.testing.depthwise_conv2d_python_nchw(padded, xs[1], st, 0, dil).astype(xs[0].dtype)]


register("depthwise_conv2d", _depthwise_compute, OUT_ELEMWISE_FUSABLE, default_schedule, None, _np_depthwise,
         doc="NCHW data, kernel [C, multiplier, KH, KW]")


def _conv_transpose_compute(xs, a):
    st = tuple(a.get("strides", (1, 1)))
    out = topi.nn.conv2d_transpose_nchw(xs[0], xs[1], st, tuple(a.get("padding", (0, 0, 0, 0))),
                                        output_padding=tuple(a.get("output_padding", (0, 0))))
    return [out]


register("conv2d_transpose", _conv_transpose_compute, OUT_ELEMWISE_FUSABLE, default_schedule, None, None,
         doc="NCHW data, kernel [IC, OC, KH, KW]")


def _dense_types(values, a):
    x, w = values
    k_w = w.shape[1]
    n = a.get("units", w.shape[0]) if len(w.shape) == 3 else w.shape[0]
    if len(x.shape) != 2 or len(w.shape) not in (2, 3) or x.shape[1] != k_w:
        raise ValueError(f"dense expects data [M, K] and weight [N, K] (or packed [N/bn, K, bn]), "
                         f"got {x.shape} and {w.shape}")
    return [((x.shape[0], n), x.dtype)]


def _dense_compute(xs, a):
    """The generic dense (a packed weight's layout is a target's: its strategy computes it)."""
    if len(xs[1].shape) != 2:
        raise ValueError(f"dense: a packed weight {tuple(xs[1].shape)} needs its target's strategy")
    return [topi.nn.dense(xs[0], xs[1])]


def _pack_dense_types(values, a):
    n, k = values[0].shape
    bn = a["bn"]
    return [((-(-n // bn), k, bn), values[0].dtype)]


def _np_dense(xs, a):
    w = xs[1]
    if w.ndim == 3:
        w = w.transpose(0, 2, 1).reshape(-1, w.shape[1])[: a["units"]]
    return [(xs[0] @ w.T).astype(xs[0].dtype)]


register("dense", _dense_compute, OUT_ELEMWISE_FUSABLE, default_schedule, _dense_types, _np_dense,
         doc="data [M, K] x weight [N, K], or a packed weight [N/bn, K, bn] with attrs units=N")
register("pack_dense_weight", None, OPAQUE, default_schedule, _pack_dense_types,
         lambda xs, a: [layout_helpers(create(None)).pack_dense_weight_numpy(xs[0], a["bn"])],
         doc="[N, K] -> [N/bn, K, bn] (folded on constant weights; the target's blocked layout)")


def _batch_matmul_compute(xs, a):
    return [topi.nn.batch_matmul(xs[0], xs[1], transpose_b=a.get("transpose_b", False))]


register("batch_matmul", _batch_matmul_compute, OUT_ELEMWISE_FUSABLE, default_schedule, None,
         lambda xs, a: [np.matmul(xs[0], np.swapaxes(xs[1], -1, -2) if a.get("transpose_b") else xs[1])],
         doc="[B, M, K] x [B, K, N] (transpose_b: [B, N, K])")


def _pool_compute(xs, a):
    return [topi.nn.pool2d(xs[0], tuple(a["kernel"]), tuple(a.get("strides", (1, 1))),
                           tuple(a.get("dilation", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))),
                           a["pool_type"], a.get("ceil_mode", False), a.get("layout", "NCHW"),
                           a.get("count_include_pad", True))]


def _np_pool(xs, a):
    return [topi.testing.pool2d_python(xs[0], tuple(a["kernel"]), tuple(a.get("strides", (1, 1))),
                                       tuple(a.get("dilation", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))),
                                       a["pool_type"], a.get("ceil_mode", False), a.get("layout", "NCHW"),
                                       a.get("count_include_pad", True)).astype(xs[0].dtype)]


register("pool2d", _pool_compute, OUT_ELEMWISE_FUSABLE, default_schedule, None, _np_pool,
         doc="attrs: pool_type (max/avg), kernel, strides, dilation, padding, ceil_mode, count_include_pad, "
             "layout (NCHW, or NCHWc for blocked data)")


def _max_pool_indices_args(a: dict) -> tuple:
    return (tuple(a["kernel"]), tuple(a.get("strides", (1, 1))), tuple(a.get("dilation", (1, 1))),
            tuple(a.get("padding", (0, 0, 0, 0))), a.get("ceil_mode", False), a.get("storage_order", 0))


register("max_pool2d_with_indices",
         lambda xs, a: list(topi.nn.max_pool2d_with_indices(xs[0], *_max_pool_indices_args(a))), OPAQUE,
         default_schedule, None,
         lambda xs, a: list(topi.testing.max_pool2d_with_indices_python(xs[0], *_max_pool_indices_args(a))),
         doc="NCHW max pooling and the int64 flat input index of each maximum (ONNX MaxPool with "
             "Indices); attrs: kernel, strides, dilation, padding, ceil_mode, storage_order (0/1)")


def _np_global_pool(xs, a):
    fn = np.max if a["pool_type"] == "max" else np.mean
    return [fn(xs[0], axis=(2, 3), keepdims=True).astype(xs[0].dtype)]


register("global_pool", lambda xs, a: [topi.nn.global_pool(xs[0], a["pool_type"], a.get("layout", "NCHW"))],
         OUT_ELEMWISE_FUSABLE, default_schedule, None, _np_global_pool)


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


register("softmax", lambda xs, a: [topi.nn.softmax(xs[0], a.get("axis", -1))], OPAQUE, default_schedule,
         lambda v, a: [(v[0].shape, v[0].dtype)], lambda xs, a: [_np_softmax(xs[0], a.get("axis", -1))])
register("log_softmax", lambda xs, a: [topi.nn.log_softmax(xs[0], a.get("axis", -1))], OPAQUE,
         default_schedule, lambda v, a: [(v[0].shape, v[0].dtype)],
         lambda xs, a: [np.log(_np_softmax(xs[0], a.get("axis", -1)))])


def _lrn_compute(xs, a):
    return [topi.nn.lrn(xs[0], a["size"], 1, a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0))]


register("lrn", _lrn_compute, OPAQUE, default_schedule, lambda v, a: [(v[0].shape, v[0].dtype)],
         lambda xs, a: [topi.testing.lrn_python(xs[0], a["size"], 1, a.get("bias", 1.0), a.get("alpha", 1e-4),
                                                a.get("beta", 0.75)).astype(xs[0].dtype)])


def _batch_norm_compute(xs, a):
    out = topi.nn.batch_norm(*xs, axis=a.get("axis", 1), epsilon=a.get("epsilon", 1e-5))
    return [out[0] if isinstance(out, (list, tuple)) else out]


def _np_batch_norm(xs, a):
    x, gamma, beta, mean, var = xs
    shape = [1] * x.ndim
    shape[a.get("axis", 1)] = -1
    scale = gamma / np.sqrt(var + a.get("epsilon", 1e-5))
    return [(x * scale.reshape(shape) + (beta - mean * scale).reshape(shape)).astype(x.dtype)]


register("batch_norm", _batch_norm_compute, OPAQUE, default_schedule,
         lambda v, a: [(v[0].shape, v[0].dtype)], _np_batch_norm,
         doc="inference batch norm: data, gamma, beta, mean, var (simplify_inference rewrites it)")


def _reduce(name, fn, np_fn):
    def compute(xs, a):
        return [fn(xs[0], a.get("axis"), a.get("keepdims", False))]

    def evaluate(xs, a):
        axis = a.get("axis")
        return [np.asarray(np_fn(xs[0], axis=tuple(axis) if isinstance(axis, (list, tuple)) else axis,
                                 keepdims=a.get("keepdims", False)))]

    register(name, compute, COMM_REDUCE, default_schedule, None, evaluate)


_reduce("sum", topi.sum, np.sum)
_reduce("mean", topi.mean, np.mean)
_reduce("max", topi.max, np.max)
_reduce("min", topi.min, np.min)
_reduce("prod", topi.prod, np.prod)
_reduce("argmax", topi.argmax, lambda x, axis, keepdims: np.argmax(x, axis=axis, keepdims=keepdims).astype("int32"))
_reduce("argmin", topi.argmin, lambda x, axis, keepdims: np.argmin(x, axis=axis, keepdims=keepdims).astype("int32"))


def _pack_kernel_types(values, a):
    oc, ic, kh, kw = values[0].shape
    ic_bn, oc_bn = a["ic_bn"], a["oc_bn"]
    if ic % ic_bn:
        raise ValueError(f"pack_conv2d_kernel: ic_bn={ic_bn} must divide IC={ic}")
    return [((-(-oc // oc_bn), ic // ic_bn, kh, kw, ic_bn, oc_bn), values[0].dtype)]


register("pack_conv2d_kernel", None, OPAQUE, default_schedule, _pack_kernel_types,
         lambda xs, a: [layout_helpers(create(None)).pack_kernel_numpy(xs[0], a["ic_bn"], a["oc_bn"])],
         doc="OIHW -> [ceil(OC/oc_bn), IC/ic_bn, KH, KW, ic_bn, oc_bn], OC zero-padded to whole blocks "
             "(folded on constant weights)")
