"""Graph operators of the Winograd convolution (``topi.nn.winograd``, ``topi.x86.conv2d_winograd``).

``choose_configs`` gives a 3x3 stride-1 ``conv2d`` a ``conv2d_winograd.x86``
config where ``tune.autotvm.choose.choose`` prefers it; the layout
passes then rewrite it into these two operators (TVM's
``contrib_conv2d_winograd_without_weight_transform`` and
``contrib_conv2d_winograd_weight_transform``)::

    before:  %y = conv2d(%x, %w, config=config<conv2d_winograd.x86 tile=4 cb=16 bn=64 ...>)
    after:   %u = winograd_transform_kernel(%w, tile=4, bn=64, cp=64)   # folds: [6, 6, 1, 64, 64]
             %y = conv2d_winograd(%x, %u, kernel_shape=(64, 64, 3, 3), out_block=32, config=...)

``%x`` is NCHW or blocked ``[N, C/b, H, W, b]`` (any ``b``: the Winograd
input stage re-blocks it); the output is NCHW (``out_block`` 0) or
``[N, K/out_block, OH, OW, out_block]``.
"""

from __future__ import annotations

import numpy as np

import topi
from graph.ops.registry import OPAQUE, OUT_ELEMWISE_FUSABLE, default_schedule, register
from topi.nn.winograd import (
    plain_data_shape,
    winograd_kernel_shape,
    winograd_kernel_transform,
    winograd_kernel_transform_numpy,
    winograd_matrices,
)


# ------------------------------------------------------ kernel transform ---
def _transform_types(values, a):
    kshape = tuple(values[0].shape)
    if len(kshape) != 4 or kshape[2:] != (3, 3):
        raise ValueError(f"winograd_transform_kernel expects an OIHW 3x3 kernel, got {kshape}")
    if a["cp"] < kshape[1]:
        raise ValueError(f"winograd_transform_kernel: cp={a['cp']} is below the kernel's {kshape[1]} channels")
    alpha, bn = a["tile"] + 2, a["bn"]
    return [((alpha, alpha, -(-kshape[0] // bn), a["cp"], bn), values[0].dtype)]


register("winograd_transform_kernel",
         lambda xs, a: [winograd_kernel_transform(xs[0], a["tile"], a["bn"], a["cp"])], OPAQUE,
         default_schedule, _transform_types,
         lambda xs, a: [winograd_kernel_transform_numpy(xs[0], a["tile"], a["bn"], a["cp"])],
         doc="OIHW 3x3 -> U = G g G^T [alpha, alpha, Kp/bn, cp, bn] (folded on constant weights)")


# ------------------------------------------------------------------ conv ---
def _pads(a) -> tuple:
    return tuple(a.get("padding", (0, 0, 0, 0)))


def _winograd_types(values, a):
    data, u = values[0], values[1]
    kshape = tuple(a["kernel_shape"])
    dshape = plain_data_shape(data.shape)
    cfg = a["config"]
    want = winograd_kernel_shape(kshape, cfg["tile"].val, cfg["bn"].val, cfg["cb"].val)
    if len(data.shape) not in (4, 5) or tuple(u.shape) != want:
        raise ValueError(f"conv2d_winograd expects 4-D or 5-D data and a transformed kernel {want} "
                         f"(kernel_shape {kshape}, {cfg.text()}), got {data.shape} and {u.shape}")
    if dshape[1] != kshape[1]:
        raise ValueError(f"conv2d_winograd: data {data.shape} has {dshape[1]} channels, kernel_shape {kshape}")
    top, left, bottom, right = _pads(a)
    n, _, h, w = dshape
    oh, ow = h + top + bottom - 2, w + left + right - 2
    ob = a.get("out_block", 0)
    if ob:
        return [((n, kshape[0] // ob, oh, ow, ob), data.dtype)]
    return [((n, kshape[0], oh, ow), data.dtype)]


def untransform_kernel_numpy(u: np.ndarray, kshape: tuple, tile: int) -> np.ndarray:
    """The OIHW kernel of a transformed ``U`` (``g = G+ U G+^T``, G+ the left inverse of G)."""
    _, _, g = winograd_matrices(tile)
    gp = np.linalg.pinv(np.array(g, dtype=np.float64))
    alpha, _, kcn, cp, bn = u.shape
    full = u.astype(np.float64).transpose(0, 1, 2, 4, 3).reshape(alpha, alpha, kcn * bn, cp)
    k, c = kshape[0], kshape[1]
    return np.einsum("ra,abkc,sb->kcrs", gp, full[:, :, :k, :c], gp)


def _np_winograd(xs, a):
    """The numpy twin: the direct convolution of the kernel ``U`` was transformed from."""
    from graph.ops.layout import block_array, unblock_array

    data, u = xs
    if data.ndim == 5:
        data = unblock_array(data)
    top, left, bottom, right = _pads(a)
    kernel = untransform_kernel_numpy(u, tuple(a["kernel_shape"]), a["config"]["tile"].val)
    padded = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    out = topi.testing.conv2d_nchw_python(padded, kernel, 1, 0).astype(data.dtype)
    ob = a.get("out_block", 0)
    return [block_array(out, ob) if ob else out]


register("conv2d_winograd", None, OUT_ELEMWISE_FUSABLE, None, _winograd_types, _np_winograd,
         doc="3x3 stride-1 conv by Winograd: data NCHW or [N, C/b, H, W, b], kernel transformed "
             "[alpha, alpha, Kp/bn, Cp, bn]; attrs padding, kernel_shape (OIHW), config, out_block "
             "(0: NCHW output); compute, schedule and workload: the target's strategy")
