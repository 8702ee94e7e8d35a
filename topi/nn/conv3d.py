"""3-D convolution, NCDHW data and OIDHW kernel, grouped (ONNX Conv over volumes).

::

    PadInput = pad(data, (0, 0, d0, h0, w0), (0, 0, d1, h1, w1))
    out[n, f, z, y, x] = sum_{c, rz, ry, rx} PadInput[n, g(f)*ICg + c, z*sd + rz*dd, y*sh + ry*dh, x*sw + rx*dw]
                                             * kernel[f, c, rz, ry, rx]

with ``g(f) = f // (OC / groups)`` and ``ICg = IC / groups``.  The generic
schedule runs it (no x86 template yet).
"""

from __future__ import annotations

import te
from topi.nn.pad import pad
from topi.utils import get_const_tuple


def conv3d_out_size(n: int, k: int, s: int, d: int, before: int, after: int) -> int:
    """Output extent of one axis; ``ValueError`` when the dilated kernel exceeds the padded input."""
    eff = (k - 1) * d + 1
    if n + before + after < eff:
        raise ValueError(f"conv3d: kernel extent {eff} (with dilation) exceeds the padded input {n + before + after}")
    return (n + before + after - eff) // s + 1


def conv3d_ncdhw(data: te.Tensor, kernel: te.Tensor, strides, before, after, dilation,
                 groups: int = 1) -> te.Tensor:
    """Grouped 3-D convolution of NCDHW ``data`` with an ``[OC, IC/groups, KD, KH, KW]`` kernel.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, D, H, W]``.
    kernel : te.Tensor
        ``[OC, IC/groups, KD, KH, KW]``.
    strides, dilation : tuple of 3 ints
    before, after : tuple of 3 ints
        Padding at the start and end of D, H, W.
    groups : int
        It must divide IC and OC.

    Returns
    -------
    te.Tensor
        ``[N, OC, OD, OH, OW]`` (tag ``conv3d_ncdhw``).
    """
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 5 or len(kshape) != 5:
        raise ValueError(f"conv3d_ncdhw: data {dshape} and kernel {kshape} must both be 5-D")
    n, ic = dshape[:2]
    oc, icg, kd, kh, kw = kshape
    if groups < 1 or ic != icg * groups or oc % groups:
        raise ValueError(f"conv3d_ncdhw: data has {ic} channels, kernel {kshape} with groups={groups} "
                         f"expects {icg * groups} (and OC a multiple of groups)")
    outs = [conv3d_out_size(*args) for args in zip(dshape[2:], (kd, kh, kw), strides, dilation, before, after)]
    if any(before) or any(after):
        data = pad(data, [0, 0, *before], [0, 0, *after], name="PadInput")
    ocg = oc // groups
    rc = te.reduce_axis((0, icg), "rc")
    rz, ry, rx = (te.reduce_axis((0, k), name) for k, name in ((kd, "rz"), (kh, "ry"), (kw, "rx")))
    (sd, sh, sw), (dd, dh, dw) = strides, dilation

    def body(b, f, z, y, x):
        c = (f // ocg) * icg + rc if groups > 1 else rc
        return te.sum(data[b, c, z * sd + rz * dd, y * sh + ry * dh, x * sw + rx * dw] * kernel[f, rc, rz, ry, rx],
                      axis=[rc, rz, ry, rx])

    return te.compute((n, oc, *outs), body, name="conv3d_ncdhw", tag="conv3d_ncdhw")
