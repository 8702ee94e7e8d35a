"""Graph operators of the blocked activation layout (NCHW[x]c), TVM's AlterOpLayout targets.

``conv2d_NCHWc`` is what ``graph.passes.alter_op_layout`` turns a ``conv2d``
with a constant kernel into: data NCHW (packed inside the kernel) or
already blocked ``[N, C/ic_bn, H, W, ic_bn]``, a pre-packed kernel
``[OC/oc_bn, IC/groups/ic_bn, KH, KW, ic_bn, oc_bn]``, the output blocked
``[N, OC/oc_bn, OH, OW, oc_bn]``.  Elementwise ops, pooling (``layout``
attribute ``"NCHWc"``) and channel concatenation then work on blocked
values unchanged; ``layout_transform`` (``graph.ops.transform``) converts
where a layout-bound operator needs NCHW.

Helpers here convert arrays between the two layouts (the numpy twins and
the pass's constant re-layout use them).
"""

from __future__ import annotations

import numpy as np

import topi
from graph.ops.registry import OUT_ELEMWISE_FUSABLE, register
from topi.x86 import conv2d as x86conv
from topi.x86.conv2d_nchwc import conv2d_NCHWc_x86, plain_shapes


def blocked_layout(block: int) -> str:
    """The layout string of a value blocked by ``block`` channels (``"NCHW16c"``)."""
    return f"NCHW{block}c"


def block_array(x: np.ndarray, block: int) -> np.ndarray:
    """``[N, C, H, W] -> [N, C/block, H, W, block]``."""
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // block, block, h, w).transpose(0, 1, 3, 4, 2))


def unblock_array(x: np.ndarray) -> np.ndarray:
    """``[N, C/b, H, W, b] -> [N, C, H, W]``."""
    n, cc, h, w, b = x.shape
    return np.ascontiguousarray(x.transpose(0, 1, 4, 2, 3).reshape(n, cc * b, h, w))


def unpack_kernel_array(k: np.ndarray) -> np.ndarray:
    """``[OCc, ICc, KH, KW, ic_bn, oc_bn] -> [OC, IC, KH, KW]`` (inverse of ``pack_kernel_numpy``)."""
    occ, icc, kh, kw, ic_bn, oc_bn = k.shape
    return np.ascontiguousarray(k.transpose(0, 5, 1, 4, 2, 3).reshape(occ * oc_bn, icc * ic_bn, kh, kw))


def _conv_args(a):
    return (
        tuple(a.get("strides", (1, 1))),
        tuple(a.get("padding", (0, 0, 0, 0))),
        tuple(a.get("dilation", (1, 1))),
    )


def _conv2d_nchwc_types(values, a):
    data, kernel = values[0], values[1]
    if len(kernel.shape) != 6 or len(data.shape) not in (4, 5):
        raise ValueError(
            f"conv2d_NCHWc expects 4-D or 5-D data and a 6-D packed kernel, "
            f"got {data.shape} and {kernel.shape}"
        )
    occ, ic_bn, oc_bn = kernel.shape[0], kernel.shape[4], kernel.shape[5]
    if len(data.shape) == 5 and data.shape[4] != ic_bn:
        raise ValueError(
            f"conv2d_NCHWc: data {data.shape} is blocked by {data.shape[4]}, the kernel "
            f"{kernel.shape} by {ic_bn}"
        )
    from graph.ops.nn import _conv2d_types  # the NCHW shape rule

    dshape, kshape = plain_shapes(data.shape, kernel.shape)
    probe = [type(data)(data.name, dshape, data.dtype), type(kernel)(kernel.name, kshape, kernel.dtype)]
    (n, _, oh, ow), dtype = _conv2d_types(probe, a)[0]
    return [((n, occ, oh, ow, oc_bn), dtype)]


def _conv2d_nchwc_compute(xs, a):
    st, pad, dil = _conv_args(a)
    return [conv2d_NCHWc_x86(xs[0], xs[1], st, pad, dil, cfg=a.get("config"), groups=a.get("groups", 1))]


def _np_conv2d_nchwc(xs, a):
    from graph.ops.nn import _np_conv2d

    data, kernel = xs
    if data.ndim == 5:
        data = unblock_array(data)
    out = _np_conv2d([data, unpack_kernel_array(kernel)], a)[0]
    return [block_array(out, kernel.shape[5])]


register(
    "conv2d_NCHWc",
    _conv2d_nchwc_compute,
    OUT_ELEMWISE_FUSABLE,
    lambda outs, a: x86conv.schedule_conv2d_NCHWc(outs),
    _conv2d_nchwc_types,
    _np_conv2d_nchwc,
    doc="blocked conv: data NCHW or [N, C/ic_bn, H, W, ic_bn], kernel [OCc, ICc, KH, KW, ic_bn, oc_bn], "
    "output [N, OC/oc_bn, OH, OW, oc_bn]; attrs as conv2d",
)


def layout_transform_numpy(x: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The numpy twin of ``layout_transform`` (``topi.testing.layout_transform_python``)."""
    return topi.testing.layout_transform_python(x, src, dst)
