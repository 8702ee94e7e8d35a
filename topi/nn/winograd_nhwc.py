"""Winograd conv2d on NHWC data with an HWIO kernel (classic ``topi.nn.conv2d_winograd_nhwc``).

The NCHW Winograd stages of :mod:`topi.nn.winograd` between two injective relayouts::

    data_nchw[n, c, y, x] = data[n, y, x, c]             kernel_oihw[k, c, ry, rx] = kernel[ry, rx, c, k]
    out_nchw = conv2d_winograd_nchw(data_nchw, kernel_oihw, padding, tile)
    out[n, y, x, k] = out_nchw[n, k, y, x]
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.conv2d import as_pair
from topi.nn.dilate import dilate
from topi.nn.winograd import conv2d_winograd_nchw
from topi.utils import get_const_tuple


def conv2d_winograd_nhwc(data, weight, strides, padding, dilation, out_dtype=None, pre_computed: bool = False,
                         tile_size: int = 4):
    """3x3 (after dilation), stride-1 conv of NHWC ``data`` ``[N, H, W, C]`` with an HWIO ``weight``
    ``[3, 3, C, K]`` by Winograd F(``tile_size`` x ``tile_size``, 3x3); returns ``[N, OH, OW, K]``.

    A dilated kernel is dilated first (a 3x3 result only: a 2x2 kernel dilated by 2).
    ``pre_computed`` (a kernel transformed ahead of time) is not supported: pass the HWIO kernel.
    """
    op = "conv2d_winograd_nhwc"
    if pre_computed:
        raise ValueError(f"{op}: pre_computed=True is not supported; pass the HWIO kernel (the graph "
                         f"compiler transforms a constant kernel once by constant folding)")
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(weight.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 4-D (NHWC, HWIO)")
    if as_pair(strides, op, "strides") != (1, 1):
        raise ValueError(f"{op}: argument strides={strides!r}: Winograd needs stride 1; use topi.nn.conv2d_nhwc")
    dh, dw = as_pair(dilation, op, "dilation")
    if (dh, dw) != (1, 1):
        weight = dilate(weight, (dh, dw, 1, 1))
    kh, kw, c, k = get_const_tuple(weight.shape)
    n = dshape[0]
    data_nchw = te.compute((n, dshape[3], dshape[1], dshape[2]), lambda b, cc, y, x: data[b, y, x, cc],
                           name="data_nchw", tag=tag.INJECTIVE)
    kernel_oihw = te.compute((k, c, kh, kw), lambda f, cc, y, x: weight[y, x, cc, f], name="kernel_oihw",
                             tag=tag.INJECTIVE)
    out = conv2d_winograd_nchw(data_nchw, kernel_oihw, padding, tile=tile_size, out_dtype=out_dtype or data.dtype)
    _, _, oh, ow = get_const_tuple(out.shape)
    return te.compute((n, oh, ow, k), lambda b, y, x, f: out[b, f, y, x], name=op, tag=tag.INJECTIVE)
