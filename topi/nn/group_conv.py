"""``group_conv2d_nhwc``: grouped convolution of NHWC data with an HWIO kernel ``[KH, KW, IC // groups, OC]``.

Computed as the NCHW grouped convolution between two transposes, each an injective stage
that a schedule inlines (the data read in place, the result written in NHWC)::

    out[n, y, x, f] = group_conv2d_nchw(data[n, c, y, x], kernel[f, c, ky, kx])[n, f, y, x]
"""

from __future__ import annotations

import te
from topi import tag
from topi.nn.conv2d import group_conv2d_nchw
from topi.utils import get_const_tuple


def group_conv2d_nhwc(data, kernel, stride, padding, dilation, groups: int, out_dtype=None) -> te.Tensor:
    """Grouped convolution: ``[N, H, W, IC]`` data, ``[KH, KW, IC // groups, OC]`` kernel -> ``[N, OH, OW, OC]``."""
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"group_conv2d_nhwc: data {dshape} and kernel {kshape} must both be 4-D")
    nchw = te.compute((dshape[0], dshape[3], dshape[1], dshape[2]), lambda n, c, y, x: data[n, y, x, c],
                      name="data_nchw", tag=tag.INJECTIVE)
    oihw = te.compute((kshape[3], kshape[2], kshape[0], kshape[1]), lambda f, c, y, x: kernel[y, x, c, f],
                      name="kernel_oihw", tag=tag.INJECTIVE)
    out = group_conv2d_nchw(nchw, oihw, stride, padding, dilation, groups, out_dtype)
    n, f, oh, ow = get_const_tuple(out.shape)
    return te.compute((n, oh, ow, f), lambda b, y, x, c: out[b, c, y, x], name="group_conv2d_nhwc",
                      tag=tag.INJECTIVE)
