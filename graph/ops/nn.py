"""Neural-network graph operators: convolutions, dense, pooling, softmax, norms, reductions.

Convolutions, dense and pooling are the anchors of fused groups
(OUT_ELEMWISE_FUSABLE: the elementwise ops after them run in their output
loop); reductions take their injective inputs (COMM_REDUCE); softmax, LRN
and batch_norm stand alone (OPAQUE).
"""

from __future__ import annotations

import numpy as np

import topi
from graph.ops.registry import COMM_REDUCE, OPAQUE, OUT_ELEMWISE_FUSABLE, default_schedule, register
from topi.nn.conv2d import out_size
from topi.x86 import conv2d as x86conv
from topi.x86 import dense as x86dense
from tune.autotvm.config import choose_config


def _conv_args(a):
    return tuple(a.get("strides", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))), tuple(a.get("dilation", (1, 1)))


def _conv2d_compute(xs, a):
    """NCHW conv: the blocked x86 path (4-D OIHW or pre-packed 6-D kernel) when the node's
    config is a ``conv2d_NCHWc.x86`` one (or, without a config, when it can be blocked)."""
    data, kernel = xs[0], xs[1]
    st, pad, dil = _conv_args(a)
    groups = a.get("groups", 1)
    cfg = a.get("config")
    if cfg is not None and cfg.template == topi.x86.conv2d_winograd.TEMPLATE:  # OIHW kernel, transformed in a stage
        return [topi.x86.conv2d_winograd_x86(data, kernel, pad, cfg=cfg)]
    blocked = cfg.template == x86conv.TEMPLATE if cfg is not None else _blockable(data.shape, kernel.shape, a)
    if not blocked:
        return [topi.nn.group_conv2d_nchw(data, kernel, st, pad, dil, groups)]
    return [x86conv.conv2d_nchw_x86(data, kernel, st, pad, dil, cfg=cfg, groups=groups)]


def _plain_kernel_shape(kernel_shape) -> tuple:
    kshape = tuple(int(d) for d in kernel_shape)
    if len(kshape) == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kshape
        return occ * oc_bn, icc * ic_bn, kh, kw
    return kshape


def conv2d_key(data_shape, kernel_shape, a, dtype: str = "float32") -> tuple:
    """The ``conv2d_NCHWc.x86`` workload key of a conv2d node (OIHW or pre-packed kernel)."""
    st, pad, dil = _conv_args(a)
    return x86conv.conv2d_workload(data_shape, _plain_kernel_shape(kernel_shape), st, pad, dil,
                                   a.get("groups", 1), dtype)


def _blockable(data_shape, kernel_shape, a) -> bool:
    return len(kernel_shape) == 6 or x86conv.conv2d_blockable(conv2d_key(data_shape, kernel_shape, a))


def _conv2d_workload(values, a) -> tuple:
    """The blocked template's key, or the direct template's when a group is too narrow to block."""
    data, kernel = values[0], values[1]
    key = conv2d_key(data.shape, kernel.shape, a, data.dtype)
    if _blockable(data.shape, kernel.shape, a):
        return key
    name = "conv2d_nchw" if a.get("groups", 1) == 1 else "group_conv2d_nchw"
    return topi.x86.conv_direct.direct_workload(name, _conv2d_types(values, a)[0][0], False, data.dtype)


def conv_config(data_shape, kernel_shape, a):
    """The config of a conv2d node: its ``config`` attr, else the one chosen for its workload."""
    if a.get("config") is not None:
        return a["config"]
    return choose_config(conv2d_key(data_shape, kernel_shape, a))


def group_conv_blocks(data_shape, kernel_shape, a) -> tuple | None:
    """(ic_bn, oc_bn) of the blocked path for a conv2d node, None if it cannot be blocked."""
    if not _blockable(data_shape, kernel_shape, a):
        return None
    cfg = conv_config(data_shape, kernel_shape, a)
    if cfg.template != x86conv.TEMPLATE:
        return None
    return cfg["ic_bn"], cfg["oc_bn"]


def _conv2d_types(values, a):
    data, kernel = values[0], values[1]
    st, pad, dil = _conv_args(a)
    groups = a.get("groups", 1)
    if len(kernel.shape) == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kernel.shape
        kshape = (occ * oc_bn, icc * ic_bn, kh, kw)
    else:
        kshape = kernel.shape
    if len(data.shape) != 4 or len(kshape) != 4:
        raise ValueError(f"conv2d expects 4-D data and kernel, got {data.shape} and {kernel.shape}")
    if data.shape[1] != kshape[1] * groups:
        raise ValueError(f"conv2d: data has {data.shape[1]} channels, kernel {kernel.shape} with groups={groups} "
                         f"expects {kshape[1] * groups}")
    oh = out_size("conv2d", data.shape[2], kshape[2], st[0], dil[0], pad[0], pad[2], data.shape, kernel.shape)
    ow = out_size("conv2d", data.shape[3], kshape[3], st[1], dil[1], pad[1], pad[3], data.shape, kernel.shape)
    return [((data.shape[0], kshape[0], oh, ow), data.dtype)]


def _schedule_conv2d(outs, a):
    cfg = a.get("config")
    if cfg is not None and cfg.template == topi.x86.conv2d_winograd.TEMPLATE:
        return topi.x86.schedule_conv2d_winograd(outs, cfg)
    return topi.x86.schedule_conv2d_nchw(outs, cfg)


def _np_conv2d(xs, a):
    data, kernel = xs
    st, pad, dil = _conv_args(a)
    if kernel.ndim == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kernel.shape
        kernel = kernel.transpose(0, 5, 1, 4, 2, 3).reshape(occ * oc_bn, icc * ic_bn, kh, kw)
    padded = np.pad(data, ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    return [topi.testing.conv2d_nchw_python(padded, kernel, st, 0, dil, a.get("groups", 1)).astype(data.dtype)]


register("conv2d", _conv2d_compute, OUT_ELEMWISE_FUSABLE, _schedule_conv2d, _conv2d_types, _np_conv2d,
         doc="attrs: strides, padding (top, left, bottom, right), dilation, groups, config; "
             "kernel OIHW or pre-packed [OCc, ICc, KH, KW, ic_bn, oc_bn]", workload=_conv2d_workload)


def _out_shape(name: str, values, a) -> tuple:
    from graph.ops.registry import get_op

    return tuple(get_op(name).infer(values, a)[0][0])


def _depthwise_compute(xs, a):
    st, pad, dil = _conv_args(a)
    return [topi.nn.depthwise_conv2d_nchw(xs[0], xs[1], st, pad, dil)]


def _np_depthwise(xs, a):
    st, pad, dil = _conv_args(a)
    padded = np.pad(xs[0], ((0, 0), (0, 0), (pad[0], pad[2]), (pad[1], pad[3])))
    return [topi.testing.depthwise_conv2d_python_nchw(padded, xs[1], st, 0, dil).astype(xs[0].dtype)]


register("depthwise_conv2d", _depthwise_compute, OUT_ELEMWISE_FUSABLE,
         lambda outs, a: topi.x86.schedule_depthwise_conv2d_nchw(outs, a.get("config")), None, _np_depthwise,
         doc="NCHW data, kernel [C, multiplier, KH, KW]",
         workload=lambda v, a: topi.x86.depthwise_conv2d.depthwise_workload(
             _out_shape("depthwise_conv2d", v, a), "NCHW", v[0].dtype))


def _conv_transpose_compute(xs, a):
    st = tuple(a.get("strides", (1, 1)))
    out = topi.nn.conv2d_transpose_nchw(xs[0], xs[1], st, tuple(a.get("padding", (0, 0, 0, 0))),
                                        output_padding=tuple(a.get("output_padding", (0, 0))))
    return [out]


register("conv2d_transpose", _conv_transpose_compute, OUT_ELEMWISE_FUSABLE,
         lambda outs, a: topi.x86.schedule_conv2d_transpose_nchw(outs, a.get("config")), None, None,
         doc="NCHW data, kernel [IC, OC, KH, KW]",
         workload=lambda v, a: topi.x86.conv_direct.direct_workload(
             "conv2d_transpose_nchw", _out_shape("conv2d_transpose", v, a), False, v[0].dtype))


def _dense_types(values, a):
    x, w = values
    k_w = w.shape[1]
    n = a.get("units", w.shape[0]) if len(w.shape) == 3 else w.shape[0]
    if len(x.shape) != 2 or len(w.shape) not in (2, 3) or x.shape[1] != k_w:
        raise ValueError(f"dense expects data [M, K] and weight [N, K] (or packed [N/bn, K, bn]), "
                         f"got {x.shape} and {w.shape}")
    return [((x.shape[0], n), x.dtype)]


def _packs(a) -> bool:
    cfg = a.get("config")
    return a.get("units") is not None or (cfg is not None and cfg.template == x86dense.PACK_TEMPLATE)


def _dense_compute(xs, a):
    """``dense_pack`` over a packed weight, or a plain one packed in a stage when the node's
    config is a ``dense_pack.x86`` one (the layout pass did not run); else ``dense``."""
    if _packs(a):
        return [topi.x86.dense_pack(xs[0], xs[1], units=a.get("units"), cfg=a.get("config"))]
    return [topi.nn.dense(xs[0], xs[1])]


def _dense_schedule(outs, a):
    if _packs(a):
        return topi.x86.schedule_dense_pack(outs, a.get("config"))
    return topi.x86.schedule_dense(outs, a.get("config"))


def _dense_workload(values, a) -> tuple:
    """``dense_pack.x86`` for a packed or constant float32 weight (see
    :func:`topi.x86.dense.dense_template`), ``dense.x86`` otherwise."""
    x, w = values
    (m, n), k = _dense_types(values, a)[0][0], x.shape[1]
    if len(w.shape) == 3:
        template = x86dense.PACK_TEMPLATE
    else:
        const = w.node is not None and w.node.is_constant
        template = x86dense.dense_template(m, n, k, w.dtype, const)
    return x86dense.dense_workload(m, n, k, x.dtype, template)


def _np_dense(xs, a):
    w = xs[1]
    if w.ndim == 3:
        w = w.transpose(0, 2, 1).reshape(-1, w.shape[1])[: a["units"]]
    return [(xs[0] @ w.T).astype(xs[0].dtype)]


register("dense", _dense_compute, OUT_ELEMWISE_FUSABLE, _dense_schedule, _dense_types, _np_dense,
         doc="data [M, K] x weight [N, K], or a packed weight [N/bn, K, bn] with attrs units=N",
         workload=_dense_workload)
register("pack_dense_weight", lambda xs, a: [x86dense.pack_dense_weight(xs[0], a["bn"])], OPAQUE,
         default_schedule, None, lambda xs, a: [x86dense.pack_dense_weight_numpy(xs[0], a["bn"])],
         doc="[N, K] -> [N/bn, K, bn] (folded on constant weights)")


def _batch_matmul_compute(xs, a):
    return [topi.nn.batch_matmul(xs[0], xs[1], transpose_b=a.get("transpose_b", False))]


def _batch_matmul_workload(values, a) -> tuple:
    *_, m, n = _out_shape("batch_matmul", values, a)
    return x86dense.dense_workload(m, n, values[0].shape[-1], values[0].dtype, topi.x86.batch_matmul.TEMPLATE)


register("batch_matmul", _batch_matmul_compute, OUT_ELEMWISE_FUSABLE,
         lambda outs, a: topi.x86.schedule_batch_matmul(outs, a.get("config")), None,
         lambda xs, a: [np.matmul(xs[0], np.swapaxes(xs[1], -1, -2) if a.get("transpose_b") else xs[1])],
         doc="[B, M, K] x [B, K, N] (transpose_b: [B, N, K])", workload=_batch_matmul_workload)


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


def _schedule_pool(outs, a):
    return topi.x86.schedule_pool(outs, cfg=a.get("config"))


def _pool_workload(name: str):
    return lambda v, a: topi.x86.pooling.pool_workload(_out_shape(name, v, a), v[0].dtype)


register("pool2d", _pool_compute, OUT_ELEMWISE_FUSABLE, _schedule_pool, None, _np_pool,
         doc="attrs: pool_type (max/avg), kernel, strides, dilation, padding, ceil_mode, count_include_pad, "
             "layout (NCHW, or NCHWc for blocked data)", workload=_pool_workload("pool2d"))


def _max_pool_indices_args(a: dict) -> tuple:
    return (tuple(a["kernel"]), tuple(a.get("strides", (1, 1))), tuple(a.get("dilation", (1, 1))),
            tuple(a.get("padding", (0, 0, 0, 0))), a.get("ceil_mode", False), a.get("storage_order", 0))


register("max_pool2d_with_indices",
         lambda xs, a: list(topi.nn.max_pool2d_with_indices(xs[0], *_max_pool_indices_args(a))), OPAQUE,
         lambda outs, a: topi.x86.pooling.schedule_max_pool_with_indices(outs, cfg=a.get("config")), None,
         lambda xs, a: list(topi.testing.max_pool2d_with_indices_python(xs[0], *_max_pool_indices_args(a))),
         doc="NCHW max pooling and the int64 flat input index of each maximum (ONNX MaxPool with "
             "Indices); attrs: kernel, strides, dilation, padding, ceil_mode, storage_order (0/1)",
         workload=_pool_workload("max_pool2d_with_indices"))


def _np_global_pool(xs, a):
    fn = np.max if a["pool_type"] == "max" else np.mean
    return [fn(xs[0], axis=(2, 3), keepdims=True).astype(xs[0].dtype)]


register("global_pool", lambda xs, a: [topi.nn.global_pool(xs[0], a["pool_type"], a.get("layout", "NCHW"))],
         OUT_ELEMWISE_FUSABLE,
         _schedule_pool, None, _np_global_pool, workload=_pool_workload("global_pool"))


def _softmax_schedule(outs, a):
    return topi.x86.schedule_softmax(outs, a.get("config"))


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)


def _softmax_workload(values, a) -> tuple | None:
    """The ``softmax.x86`` key when the last axis is normalised (else the generic schedule)."""
    shape = values[0].shape
    if len(shape) < 2 or a.get("axis", -1) % len(shape) != len(shape) - 1:
        return None
    return topi.x86.softmax.softmax_workload(int(np.prod(shape[:-1])), shape[-1], values[0].dtype)


register("softmax", lambda xs, a: [topi.nn.softmax(xs[0], a.get("axis", -1))], OPAQUE, _softmax_schedule,
         lambda v, a: [(v[0].shape, v[0].dtype)], lambda xs, a: [_np_softmax(xs[0], a.get("axis", -1))],
         workload=_softmax_workload)
register("log_softmax", lambda xs, a: [topi.nn.log_softmax(xs[0], a.get("axis", -1))], OPAQUE,
         _softmax_schedule, lambda v, a: [(v[0].shape, v[0].dtype)],
         lambda xs, a: [np.log(_np_softmax(xs[0], a.get("axis", -1)))], workload=_softmax_workload)


def _lrn_compute(xs, a):
    return [topi.nn.lrn(xs[0], a["size"], 1, a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0))]


register("lrn", _lrn_compute, OPAQUE, default_schedule, lambda v, a: [(v[0].shape, v[0].dtype)],
         lambda xs, a: [topi.testing.lrn_python(xs[0], a["size"], 1, a.get("alpha", 1e-4), a.get("beta", 0.75),
                                                a.get("bias", 1.0)).astype(xs[0].dtype)])


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

    def workload(values, a):
        import te

        outs = compute([te.placeholder(values[0].shape, values[0].dtype, "x")], a)
        found = topi.utils.find_anchor(None, outs[0].op, lambda op: bool(op.reduce_axis), inline=False)[0]
        return None if found is None else topi.x86.reduction.reduce_workload(found)

    register(name, compute, COMM_REDUCE, lambda outs, a: topi.x86.schedule_reduce(outs, a.get("config")), None,
             evaluate, workload=workload)


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
    if ic % ic_bn or oc % oc_bn:
        raise ValueError(f"pack_conv2d_kernel: blocks ({ic_bn}, {oc_bn}) must divide IC={ic} and OC={oc}")
    return [((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn), values[0].dtype)]


register("pack_conv2d_kernel", lambda xs, a: [x86conv.pack_kernel(xs[0], a["ic_bn"], a["oc_bn"])], OPAQUE,
         default_schedule, _pack_kernel_types,
         lambda xs, a: [x86conv.pack_kernel_numpy(xs[0], a["ic_bn"], a["oc_bn"])],
         doc="OIHW -> [OC/oc_bn, IC/ic_bn, KH, KW, ic_bn, oc_bn] (folded on constant weights)")
