"""The x86 operator strategies: how a CPU target (key ``"cpu"``) runs each graph operator.

One registration module (``topi.strategy``): for each graph operator whose
kernel differs on x86, the topi compute, the schedule of a fused group
anchored at it and the template workload its config is chosen for, plus the
layout helpers the graph's layout passes call (packing constant kernels into
the blocked layouts these computes read).  The graph layer names none of
these modules; a second target registers its own under its key.

``attrs`` are a graph node's attributes; ``values`` its inputs (``shape``,
``dtype``, and ``node`` for a constant weight); a node's ``config`` is the one
``tune.autotvm.choose`` chose for the workload given here.
"""

from __future__ import annotations

import numpy as np

import te
from topi import reduction
from topi.nn.conv2d import group_conv2d_nchw, plain_kernel_shape
from topi.nn.dense import dense as dense_nchw
from topi.nn.winograd import plain_data_shape
from topi.strategy import register_layout_helpers, register_strategy
from topi.utils import find_anchor
from topi.x86 import conv2d_nchwc, conv2d_transpose, conv_direct, injective, norms, pooling, softmax
from topi.x86 import conv2d as x86conv
from topi.x86 import conv2d_int8, dense_int8, int8_dot
from topi.x86 import conv2d_rule as x86conv_rule
from topi.x86 import conv2d_schedule as x86conv_schedule
from topi.x86 import conv2d_winograd as x86wino
from topi.x86 import dense as x86dense
from topi.x86 import depthwise_conv2d as x86dw
from topi.x86 import group_conv2d as x86group
from topi.x86 import reduction as x86reduce
from topi.x86.attention import schedule_attention
from topi.x86.batch_matmul import batch_matmul as x86_batch_matmul, batch_matmul_template, schedule_batch_matmul
from topi.x86.channel_shuffle import schedule_channel_shuffle
from topi.x86.layer_norm import schedule_layer_norm
from topi.x86.qnn import schedule_qnn_dense
from tune.autotvm.config import choose_config

CPU = "cpu"


def conv_args(a: dict) -> tuple:
    return tuple(a.get("strides", (1, 1))), tuple(a.get("padding", (0, 0, 0, 0))), tuple(a.get("dilation", (1, 1)))


# ----------------------------------------------------------------- conv2d ---
def conv2d_key(data_shape, kernel_shape, a, dtype: str = "float32") -> tuple:
    """The ``conv2d_NCHWc.x86`` workload key of a conv2d node (OIHW or pre-packed kernel)."""
    st, pad, dil = conv_args(a)
    return x86conv_rule.conv2d_workload(data_shape, plain_kernel_shape(kernel_shape, a.get("channels")), st, pad,
                                        dil, a.get("groups", 1), dtype)


def _blockable(data_shape, kernel_shape, a) -> bool:
    return len(kernel_shape) == 6 or x86conv_rule.conv2d_blockable(conv2d_key(data_shape, kernel_shape, a))


def conv2d_workload(values, a, out_shape) -> tuple:
    """The blocked template's key, or the direct template's when a group is too narrow to block."""
    data, kernel = values[0], values[1]
    key = conv2d_key(data.shape, kernel.shape, a, data.dtype)
    if _blockable(data.shape, kernel.shape, a):
        return key
    name = "conv2d_nchw" if a.get("groups", 1) == 1 else "group_conv2d_nchw"
    return conv_direct.direct_workload(name, out_shape(), False, data.dtype)


def conv2d_compute(xs, a):
    """NCHW conv: Winograd or the blocked path (4-D OIHW or pre-packed 6-D kernel) by the node's
    config (without one, blocked when it can be); else the generic grouped conv."""
    data, kernel = xs[0], xs[1]
    st, pad, dil = conv_args(a)
    groups = a.get("groups", 1)
    cfg = a.get("config")
    if cfg is not None and cfg.template == x86wino.TEMPLATE:  # OIHW kernel, transformed in a stage
        return [x86wino.conv2d_winograd_x86(data, kernel, pad, cfg=cfg)]
    blocked = cfg.template == x86conv_rule.TEMPLATE if cfg is not None else _blockable(data.shape, kernel.shape, a)
    if not blocked:
        return [group_conv2d_nchw(data, kernel, st, pad, dil, groups)]
    return [x86conv.conv2d_nchw_x86(data, kernel, st, pad, dil, cfg=cfg, groups=groups, channels=a.get("channels"))]


def conv2d_schedule(outs, a, target):
    """The node's config decides the implementation; the target is the build's, handed down."""
    cfg = a.get("config")
    if cfg is not None and cfg.template == x86wino.TEMPLATE:
        return x86wino.schedule_conv2d_winograd(outs, cfg, target=target)
    return x86conv_schedule.schedule_conv2d_nchw(outs, cfg, target=target)


def group_conv_blocks(data_shape, kernel_shape, a) -> tuple | None:
    """(ic_bn, oc_bn) of the blocked path for a conv2d node, None if it cannot be blocked."""
    if not _blockable(data_shape, kernel_shape, a):
        return None
    cfg = a.get("config") or choose_config(conv2d_key(data_shape, kernel_shape, a))
    if cfg.template != x86conv_rule.TEMPLATE:
        return None
    return cfg["ic_bn"].val, cfg["oc_bn"].val


register_strategy("conv2d", CPU, conv2d_compute, conv2d_schedule, conv2d_workload)
register_strategy("conv2d_NCHWc", CPU,
                  lambda xs, a: [conv2d_nchwc.conv2d_NCHWc_x86(xs[0], xs[1], *conv_args(a), cfg=a.get("config"),
                                                               groups=a.get("groups", 1), channels=a.get("channels"),
                                                               out_block=a.get("out_block", 0))],
                  lambda outs, a, t: x86conv_schedule.schedule_conv2d_NCHWc(outs, target=t))
register_strategy("pack_conv2d_kernel", CPU, lambda xs, a: [x86conv.pack_kernel(xs[0], a["ic_bn"], a["oc_bn"])])
register_strategy("conv2d_winograd", CPU,
                  lambda xs, a: [x86wino.conv2d_winograd_x86(xs[0], xs[1], conv_args(a)[1], cfg=a["config"],
                                                             kshape=tuple(a["kernel_shape"]),
                                                             out_block=a.get("out_block", 0))],
                  lambda outs, a, t: x86wino.schedule_conv2d_winograd(outs, a["config"], target=t),
                  lambda v, a, out_shape: x86wino.winograd_workload(plain_data_shape(v[0].shape),
                                                         tuple(a["kernel_shape"]), (1, 1), conv_args(a)[1],
                                                         (1, 1), 1, v[0].dtype))


# ---------------------------------------------------- other convolutions ---
register_strategy("depthwise_conv2d", CPU,
                  schedule=lambda outs, a, t: x86dw.schedule_depthwise_conv2d_nchw(outs, a.get("config")),
                  workload=lambda v, a, out_shape: x86dw.depthwise_workload(out_shape(), "NCHW", v[0].dtype,
                                                                            v[1].shape[2:4]))
register_strategy("depthwise_conv2d_NCHWc", CPU,
                  lambda xs, a: [x86dw.depthwise_conv2d_NCHWc(xs[0], xs[1], *conv_args(a), cfg=a.get("config"))],
                  lambda outs, a, t: x86dw.schedule_depthwise_conv2d_NCHWc(outs),
                  lambda v, a, out_shape: x86dw.depthwise_nchwc_workload(v[0].shape, v[1].shape[1:3], *conv_args(a),
                                                              v[0].dtype))
register_strategy("group_conv2d_NCHWc", CPU,
                  lambda xs, a: [x86group.group_conv2d_NCHWc_x86(xs[0], xs[1], *conv_args(a), a["groups"],
                                                                 a["config"])],
                  lambda outs, a, t: x86group.schedule_group_conv2d_NCHWc(outs))
register_strategy("channel_shuffle", CPU, schedule=lambda outs, a, t: schedule_channel_shuffle(outs))


register_strategy("conv2d_transpose", CPU,
                  schedule=lambda outs, a, t: conv2d_transpose.schedule_conv2d_transpose_nchw(outs, a.get("config")),
                  workload=lambda v, a, out_shape: conv_direct.direct_workload("conv2d_transpose_nchw", out_shape(),
                                                                               False, v[0].dtype))


# ------------------------------------------------------------------ dense ---
def _packs(a) -> bool:
    cfg = a.get("config")
    return a.get("units") is not None or (cfg is not None and cfg.template == x86dense.PACK_TEMPLATE)


def dense_compute(xs, a):
    """``dense_pack`` over a packed weight, or a plain one packed in a stage when the node's
    config is a ``dense_pack.x86`` one (the layout pass did not run); else ``dense``."""
    if _packs(a):
        return [x86dense.dense_pack(xs[0], xs[1], units=a.get("units"), cfg=a.get("config"))]
    return [dense_nchw(xs[0], xs[1])]


def dense_schedule(outs, a, target):
    if _packs(a):
        return x86dense.schedule_dense_pack(outs, a.get("config"))
    return x86dense.schedule_dense(outs, a.get("config"))


def dense_workload(values, a, out_shape) -> tuple:
    """``dense_pack.x86`` for a packed or constant float32 weight (see
    :func:`topi.x86.dense.dense_template`), ``dense.x86`` otherwise."""
    x, w = values
    m, k = x.shape[0], x.shape[1]
    n = a.get("units", w.shape[0]) if len(w.shape) == 3 else w.shape[0]
    if len(w.shape) == 3:
        template = x86dense.PACK_TEMPLATE
    else:
        const = w.node is not None and w.node.is_constant
        template = x86dense.dense_template(m, n, k, w.dtype, const)
    return x86dense.dense_workload(m, n, k, x.dtype, template)


def batch_matmul_compute(xs, a):
    """``topi.x86.batch_matmul``: ``y`` block-packed per call, or the plain operands for a few
    rows or under a ``batch_matmul.x86`` config (a record of that template)."""
    return [x86_batch_matmul(xs[0], xs[1], transpose_b=a.get("transpose_b", False), cfg=a.get("config"))]


def batch_matmul_workload(values, a, out_shape) -> tuple:
    *_, m, n = out_shape()
    k, dtype = values[0].shape[-1], values[0].dtype
    cfg = a.get("config")
    tb = a.get("transpose_b", False)
    template = cfg.template if cfg is not None else batch_matmul_template(m, k, dtype, transpose_b=tb)
    return x86dense.dense_workload(m, n, k, dtype, template)


register_strategy("dense", CPU, dense_compute, dense_schedule, dense_workload)
register_strategy("pack_dense_weight", CPU, lambda xs, a: [x86dense.pack_dense_weight(xs[0], a["bn"])])
register_strategy("qnn_dense", CPU, schedule=lambda outs, a, t: schedule_qnn_dense(outs))
register_strategy(
    "conv2d_int8", CPU,
    lambda xs, a: [conv2d_int8.conv2d_int8(*xs, a["channels"], a["strides"], a["padding"], a["dilation"],
                                           a["x_zp"], a["y_zp"], a["mode"], a["dtype"], a.get("lo"),
                                           a.get("ow_bn", 4), a.get("out_block", 0))],
    lambda outs, a, t: conv2d_int8.schedule_conv2d_int8(outs, t))
register_strategy(
    "dense_int8", CPU,
    lambda xs, a: [dense_int8.dense_int8(*xs, a["units"], a["mode"], a.get("mr", 4))],
    lambda outs, a, t: dense_int8.schedule_dense_int8(outs, t))
register_strategy("batch_matmul", CPU, batch_matmul_compute,
                  lambda outs, a, t: schedule_batch_matmul(outs, a.get("config")), batch_matmul_workload)


# ----------------------------------------------- pooling, softmax, reduce ---
def _pool(outs, a, target):
    return pooling.schedule_pool(outs, cfg=a.get("config"))


def pool_workload(values, a, out_shape) -> tuple:
    return pooling.pool_workload(out_shape(), values[0].dtype)


def softmax_workload(values, a, out_shape) -> tuple | None:
    """The ``softmax.x86`` key when the last axis is normalised (else the generic schedule)."""
    shape = values[0].shape
    if len(shape) < 2 or a.get("axis", -1) % len(shape) != len(shape) - 1:
        return None
    return softmax.softmax_workload(int(np.prod(shape[:-1])), shape[-1], values[0].dtype)


def reduce_workload(name: str):
    """The ``reduce.x86`` key of the reduction ``topi.<name>`` builds over the node's input."""
    def workload(values, a, out_shape):
        x = te.placeholder(values[0].shape, values[0].dtype, "x")
        out = getattr(reduction, name)(x, a.get("axis"), a.get("keepdims", False))
        found = find_anchor(None, out.op, lambda op: bool(op.reduce_axis), inline=False)[0]
        return None if found is None else x86reduce.reduce_workload(found)

    return workload


for _name in ("pool2d", "global_pool"):
    register_strategy(_name, CPU, schedule=_pool, workload=pool_workload)
register_strategy("max_pool2d_with_indices", CPU,
                  schedule=lambda outs, a, t: pooling.schedule_max_pool_with_indices(outs, cfg=a.get("config")),
                  workload=pool_workload)
register_strategy("pool3d", CPU, schedule=lambda outs, a, t: pooling.schedule_pool(outs))
for _name in ("softmax", "log_softmax"):
    register_strategy(_name, CPU, schedule=lambda outs, a, t: softmax.schedule_softmax(outs, a.get("config")),
                      workload=softmax_workload)
for _name in ("sum", "mean", "max", "min", "prod", "argmax", "argmin"):
    register_strategy(_name, CPU, schedule=lambda outs, a, t: x86reduce.schedule_reduce(outs, a.get("config")),
                      workload=reduce_workload(_name))


register_strategy("injective", CPU, schedule=lambda outs, a, t: injective.schedule_injective(outs))
for _name in ("layer_norm", "rms_norm"):
    register_strategy(_name, CPU, schedule=lambda outs, a, t: schedule_layer_norm(outs))
register_strategy("attention", CPU, schedule=lambda outs, a, t: schedule_attention(outs))
register_strategy("lrn", CPU, schedule=lambda outs, a, t: norms.schedule_lrn(outs))


# --------------------------------------------------------- layout helpers ---
def dense_pack_block(m: int, n: int, k: int) -> int:
    """The ``bn`` the rule packs an ``[N, K]`` weight by for an ``[M, K]`` input."""
    return x86dense.default_dense_pack_config(m, n, k)["bn"].val


def group_conv_config(dshape, kshape, strides, pads, dilation, groups: int, dtype: str):
    """The chosen config of a grouped blocked conv (``group_conv2d_NCHWc.x86``)."""
    return choose_config(x86group.group_conv2d_workload(dshape, kshape, strides, pads, dilation, groups, dtype))


register_layout_helpers(
    CPU,
    kernel_layout=x86conv.kernel_layout,
    pack_kernel_numpy=x86conv.pack_kernel_numpy,
    plain_shapes=conv2d_nchwc.plain_shapes,
    group_conv_blocks=group_conv_blocks,
    group_conv_config=group_conv_config,
    group_template=x86group.GROUP_TEMPLATE,
    pack_group_kernel_numpy=x86group.pack_group_kernel_numpy,
    unpack_group_kernel_numpy=x86group.unpack_group_kernel_numpy,
    pack_depthwise_kernel_numpy=x86dw.pack_depthwise_kernel_numpy,
    pack_dense_weight_numpy=x86dense.pack_dense_weight_numpy,
    dense_pack_block=dense_pack_block,
    dense_pack_template=x86dense.PACK_TEMPLATE,
    conv_template=x86conv_rule.TEMPLATE,
    conv_out_block=x86conv_rule.out_block_of,
    winograd_template=x86wino.TEMPLATE,
    int8_mode=int8_dot.choose_mode,
    int8_pairs_fit=int8_dot.pairs_fit_int16,
    int8_conv_blocks=conv2d_int8.blocks,
    int8_conv_workload=conv2d_int8.int8_workload,
    int8_conv_float_is_faster=conv2d_int8.float_is_faster,
    pack_int8_conv_kernel=conv2d_int8.pack_kernel,
    int8_conv_group=conv2d_int8.group,
    int8_winograd_kernel=conv2d_int8.winograd_kernel,
    int8_winograd_block=conv2d_int8.winograd_block,
    unpack_int8_conv_kernel=conv2d_int8.unpack_kernel,
    int8_dense_blocks=dense_int8.blocks,
    int8_dense_workload=dense_int8.int8_workload,
    pack_int8_dense_weight=dense_int8.pack_weight,
    int8_dense_group=dense_int8.group,
    unpack_int8_dense_weight=dense_int8.unpack_weight,
)
