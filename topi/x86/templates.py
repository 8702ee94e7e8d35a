"""topi's x86 schedules as AutoTVM templates: ``conv2d_NCHWc.x86``, ``dense_pack.x86``, ``dense.x86``,
``softmax.x86`` (classic TVM's task names), ``conv2d_NCHWc_int8.x86``, ``dense_int8.x86``.

``autotvm.task.create("conv2d_NCHWc.x86", args, target)`` where ``args`` is
topi's workload key without its name (``topi.x86.conv2d_rule.conv2d_workload``).
The bridge is the same for every knob template (a ``tune.autotvm.config.Rule``):

* the space: one ``define_knob`` per knob, its candidates those of
  ``tune.autotvm.config.config_space(workload)`` for the task's target;
* the fallback config (no record, ``cfg.is_fallback``): the rule default
  (``tune.autotvm.config.default_config``), so tuning measures it first;
* a combination the template's constraint refuses raises (the trial is an
  instantiation error).

>>> from topi.x86.conv2d_rule import conv2d_workload
>>> wl = conv2d_workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
>>> task = autotvm.task.create(wl[0], wl[1:], target="llvm")
"""

from __future__ import annotations

import te
from tune.autotvm.config import (check_config, config_of, config_space, default_config, recorded_values,
                                 rule_of)
from tune.autotvm.space import ConfigEntity
from tune import autotvm


def template_config(workload: tuple, flop: float | None = None) -> ConfigEntity:
    """The config of ``workload`` that the running AutoTVM template is asked for, checked against the rule.

    ``flop``: the operation's own count (``cfg.add_flop``), so that a task's GFLOP/s does not
    count the padding of the config its space was defined on (default: counted on the compute)."""
    workload = tuple(workload)
    space = config_space(workload)
    cfg = autotvm.get_config()
    for knob, cands in space.items():
        cfg.define_knob(knob, cands)
    defining = type(cfg) is autotvm.ConfigSpace  # the space itself, built on the rule's values too:
    if cfg.is_fallback or defining:              # the knobs' first choices may be refused
        values = default_config(workload).values
    else:  # a record (from before a knob existed: its legacy value)
        values = recorded_values(workload, {knob: cfg[knob].val for knob in space if knob in cfg})
    if cfg.is_fallback:
        for knob, value in values.items():
            cfg[knob] = value
    if defining and flop is not None:
        cfg.add_flop(flop)
    t = rule_of(workload[0])
    reason = t.constraint(workload, values) if t.constraint else None
    if reason:
        raise ValueError(f"{workload[0]}: {reason}")
    return check_config(config_of(workload, values, space))


@autotvm.template("conv2d_NCHWc.x86")
def conv2d_nchwc(dshape, kshape, strides, pads, dilation, groups=1, dtype="float32", out_dtype="float32"):
    """The blocked conv as a graph runs it between blocked convolutions (TVM's ``conv2d_NCHWc``):
    data ``NCHW[ic_bn]c``, the kernel pre-packed ``OIHW[ic_bn]i[oc_bn]o``, output ``NCHW[oc_bn]c``
    (:func:`topi.x86.conv2d_nchwc.conv2d_NCHWc_x86`); the blocks are the config's, so what is
    timed is the kernel a graph built with that config calls (no packing or unpacking inside).
    The arguments are the NCHW workload's; each tensor declares the logical one it stores."""
    from topi.x86.conv2d import kernel_layout
    from topi.x86.conv2d_rule import conv2d_flop, conv2d_workload
    from topi.x86.conv2d_schedule import schedule_conv2d_NCHWc
    from topi.x86.conv2d_nchwc import conv2d_NCHWc_x86

    workload = conv2d_workload(dshape, kshape, strides, pads, dilation, groups, dtype, out_dtype)
    cfg = template_config(workload, conv2d_flop(workload))
    ic_bn, oc_bn = cfg["ic_bn"].val, cfg["oc_bn"].val
    data = autotvm.layout.placeholder(dshape, f"NCHW{ic_bn}c", "data", dtype)
    kernel = autotvm.layout.placeholder(kshape, kernel_layout(ic_bn, oc_bn), "kernel", dtype)
    out = conv2d_NCHWc_x86(data, kernel, strides, pads, dilation, cfg, groups, out_dtype)
    autotvm.layout.declare(out, f"NCHW{oc_bn}c", (dshape[0], kshape[0], *[int(d) for d in out.shape[2:4]]))
    return schedule_conv2d_NCHWc([out]), [data, kernel, out]  # the config the compute carries


@autotvm.template("dense_pack.x86")
def dense_pack(M, N, K, dtype="float32"):
    """``data[M, K] @ weight[N, K].T`` over a block-packed weight (packed in a stage here)."""
    from topi.x86.dense import PACK_TEMPLATE, dense_workload, schedule_dense_pack
    from topi.x86.dense import dense_pack as dense_pack_compute

    cfg = template_config(dense_workload(M, N, K, dtype, PACK_TEMPLATE), 2.0 * M * N * K)
    data = te.placeholder((M, K), name="data", dtype=dtype)
    weight = te.placeholder((N, K), name="weight", dtype=dtype)
    out = dense_pack_compute(data, weight, cfg=cfg)
    return schedule_dense_pack([out], cfg), [data, weight, out]


@autotvm.template("dense.x86")
def dense(M, N, K, dtype="float32"):
    """``data[M, K] @ weight[N, K].T`` with the dot-product kernel (:func:`topi.x86.dense.schedule_dense`)."""
    from topi.nn.dense import dense as dense_compute
    from topi.x86.dense import dense_workload, schedule_dense

    cfg = template_config(dense_workload(M, N, K, dtype), 2.0 * M * N * K)
    data = te.placeholder((M, K), name="data", dtype=dtype)
    weight = te.placeholder((N, K), name="weight", dtype=dtype)
    out = dense_compute(data, weight)
    return schedule_dense([out], cfg), [data, weight, out]


@autotvm.template("softmax.x86")
def softmax(rows, cols, dtype="float32"):
    """Softmax over the last axis of ``[rows, cols]`` (:func:`topi.x86.softmax.schedule_softmax`)."""
    from topi.nn.softmax import softmax as softmax_compute
    from topi.x86.softmax import schedule_softmax, softmax_workload

    cfg = template_config(softmax_workload(rows, cols, dtype))
    x = te.placeholder((rows, cols), name="x", dtype=dtype)
    out = softmax_compute(x, axis=-1)
    return schedule_softmax([out], cfg), [x, out]


@autotvm.template("conv2d_winograd.x86")
def conv2d_winograd(dshape, kshape, strides, pads, dilation, groups=1, dtype="float32", out_dtype="float32"):
    """Winograd conv (:func:`topi.x86.conv2d_winograd.conv2d_winograd_x86`) of ``conv2d_NCHWc.x86``'s
    workloads (3x3, stride 1 only), as a graph runs it between blocked convolutions: data
    ``NCHW[cb]c`` (the graph gives ``cb`` the block its data has), output blocked as
    :func:`topi.x86.conv2d_winograd.winograd_out_block` says, and the kernel arriving transformed
    (``topi.nn.winograd.winograd_kernel_transform_numpy``), as a graph folds it."""
    from topi.nn.winograd import winograd_kernel_shape
    from topi.x86.conv2d_rule import conv2d_flop
    from topi.x86.conv2d_winograd import (
        conv2d_winograd_x86,
        schedule_conv2d_winograd,
        winograd_out_block,
        winograd_workload,
    )

    workload = winograd_workload(dshape, kshape, strides, pads, dilation, groups, dtype, out_dtype)
    cfg = template_config(workload, conv2d_flop(workload))  # the direct conv's: GFLOP/s compare
    data_layout = f"NCHW{cfg['cb'].val}c" if dshape[1] % cfg["cb"].val == 0 else "NCHW"
    data = autotvm.layout.placeholder(dshape, data_layout, "data", dtype)
    ushape = winograd_kernel_shape(kshape, cfg["tile"].val, cfg["bn"].val, cfg["cb"].val)
    u = te.placeholder(ushape, name="kernel_winograd", dtype=dtype)
    ob = winograd_out_block(workload, cfg)
    out = conv2d_winograd_x86(data, u, tuple(pads), out_dtype, cfg=cfg, kshape=tuple(kshape), out_block=ob)
    oshape = (dshape[0], kshape[0], *[int(d) for d in out.shape[2:4]])
    autotvm.layout.declare(out, f"NCHW{ob}c" if ob else "NCHW", oshape)
    return schedule_conv2d_winograd([out], cfg), [data, u, out]


__all__ = ["conv2d_nchwc", "conv2d_winograd", "dense", "dense_pack", "softmax", "template_config"]


@autotvm.template("conv2d_NCHWc_int8.x86")
def conv2d_int8(dshape, kshape, strides, pads, mode, group=1):
    """The requantized int8 conv (:func:`topi.x86.conv2d_int8.conv2d_int8`) of uint8 NCHW data by
    centered OIHW weights of ``mode`` in groups of ``group`` words, packed for the config's channel
    block (the kernel arrives packed, as a graph folds it); output NCHW[oc_bn]c where the block
    divides the channels, else NCHW.  Knobs: the register tile's channels (one or two vectors)
    and columns."""
    from codegen.target import Target
    from topi.x86 import conv2d_int8 as c8
    from topi.x86.int8_dot import operand_dtypes

    workload = c8.int8_workload(dshape, kshape, strides, pads, mode, group)
    n, ic, h, w = dshape
    oc, _, kh, kw = kshape
    target = Target.current()
    ic_bn = c8.blocks(oc, ic, mode, target)[0]
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kw) // strides[1] + 1
    cfg = template_config(workload, 2.0 * n * oc * oh * ow * ic * kh * kw)
    oc_bn, ow_bn = cfg["oc_bn"].val, cfg["ow_bn"].val
    data = te.placeholder(tuple(dshape), "uint8", name="data")
    kernel = te.placeholder(c8.kernel_shape(oc, ic, kh, kw, mode, ic_bn, oc_bn, group),
                            operand_dtypes(mode)[1], name="kernel_int8")
    ocp = -(-oc // oc_bn) * oc_bn
    offset = te.placeholder((ocp,), "int32", name="offset")
    multiplier = te.placeholder((ocp,), "float32", name="multiplier")
    out = c8.conv2d_int8(data, kernel, offset, multiplier, oc, tuple(strides), tuple(pads), (1, 1), 0, 0, mode,
                         ow_bn=ow_bn, out_block=oc_bn if oc % oc_bn == 0 else 0)
    return c8.schedule_conv2d_int8(out, target), [data, kernel, offset, multiplier, out]


@autotvm.template("dense_int8.x86")
def dense_int8(dshape, wshape, mode, group=1):
    """The int8 dense (:func:`topi.x86.dense_int8.dense_int8`) of uint8 data ``[M, K]`` by centered
    weights ``[N, K]`` of ``mode`` in groups of ``group`` words, the weight packed for the config's
    column block (as a graph folds it), the data's zero point a run-time scalar.  Knobs: the
    register tile's columns (one or two int32 vectors) and rows."""
    from codegen.target import Target
    from topi.x86 import dense_int8 as d8
    from topi.x86.int8_dot import operand_dtypes

    workload = d8.int8_workload(dshape, wshape, mode, group)
    (m, k), (n, _) = dshape, wshape
    cfg = template_config(workload, 2.0 * m * n * k)
    nb, mr = cfg["nb"].val, cfg["mr"].val
    data = te.placeholder((m, k), "uint8", name="data")
    weight = te.placeholder(d8.weight_shape(n, k, mode, nb, group), operand_dtypes(mode)[1], name="weight_int8")
    wsum = te.placeholder((-(-n // nb) * nb,), "int32", name="wsum")
    x_zp = te.placeholder((), "uint8", name="x_zp")
    out = d8.dense_int8(data, weight, wsum, x_zp, n, mode, mr)
    return d8.schedule_dense_int8(out, Target.current()), [data, weight, wsum, x_zp, out]
