"""2-D convolution computes: NCHW, NHWC, grouped, and the blocked NCHW[x]c layout.

Every conv pads its input in a separate ``pad`` stage, so the reduction
body reads without guards (a guarded load keeps the vectorizer away)::

    PadInput[n, c, y, x] = (in bounds) ? data[n, c, y - top, x - left] : 0
    conv[n, f, y, x] += PadInput[n, rc, y*sh + ry*dh, x*sw + rx*dw] * kernel[f, rc, ry, rx]

Signatures are classic TVM's: ``stride`` and ``dilation`` an int or a pair,
``padding`` an int, a pair, a 4-tuple ``(top, left, bottom, right)`` or
``"SAME"`` / ``"VALID"``.
"""

from __future__ import annotations

from typing import NamedTuple

import te
from topi import tag
from topi.nn.pad import pad_spatial
from topi.utils import get_const_tuple


def as_pair(value, op: str, arg: str) -> tuple[int, int]:
    """``value`` (an int or a pair of ints) as a pair; ``ValueError`` naming ``op`` otherwise."""
    if isinstance(value, int):
        pair = (value, value)
    else:
        pair = tuple(int(v) for v in value)
    if len(pair) != 2 or min(pair) < 1:
        raise ValueError(f"{op}: argument {arg}={value!r} must be a positive int or a pair of them")
    return pair


def get_pad_tuple(padding, kernel: tuple[int, int], op: str = "conv2d") -> tuple[int, int, int, int]:
    """Padding as ``(top, left, bottom, right)`` for a (dilated) ``kernel`` of (KH, KW).

    ``"SAME"`` pads ``K - 1`` in total, the extra element at the bottom/right
    (as TensorFlow and classic TVM do); ``"VALID"`` pads nothing.
    """
    if isinstance(padding, str):
        if padding.upper() == "VALID":
            return 0, 0, 0, 0
        if padding.upper() != "SAME":
            raise ValueError(f"{op}: argument padding={padding!r}: use an int, a tuple, 'SAME' or 'VALID'")
        ph, pw = kernel[0] - 1, kernel[1] - 1
        return (ph + 1) // 2, (pw + 1) // 2, ph - (ph + 1) // 2, pw - (pw + 1) // 2
    if isinstance(padding, int):
        pads = (padding,) * 4
    else:
        pads = tuple(int(p) for p in padding)
        if len(pads) == 2:
            pads = pads * 2
    if len(pads) != 4 or min(pads) < 0:
        raise ValueError(f"{op}: argument padding={padding!r} must be a non-negative int, a 2-tuple or a 4-tuple")
    return pads


def plain_kernel_shape(kernel_shape, channels: int | None = None) -> tuple:
    """OIHW of a conv kernel: itself, or of a pre-packed ``[OCc, ICc, KH, KW, ic_bn, oc_bn]`` one,
    which keeps ``channels`` of its blocks' ``OCc * oc_bn`` output channels (all by default; the
    rest are the last block's zero padding)."""
    kshape = tuple(int(d) for d in kernel_shape)
    if len(kshape) == 6:
        occ, icc, kh, kw, ic_bn, oc_bn = kshape
        return channels or occ * oc_bn, icc * ic_bn, kh, kw
    return kshape


def out_size(op: str, size: int, k: int, stride: int, dil: int, before: int, after: int,
             data_shape, kernel_shape) -> int:
    """Output extent of one spatial axis; ``ValueError`` if the dilated kernel does not fit."""
    dk = (k - 1) * dil + 1
    if dk > size + before + after:
        raise ValueError(
            f"{op}: argument kernel of shape {tuple(kernel_shape)} (dilated extent {dk}) is larger "
            f"than the padded input ({size} + {before + after} padding) of data shape {tuple(data_shape)}"
        )
    return (size + before + after - dk) // stride + 1


def _mul(a, b, out_dtype: str):
    if a.dtype != out_dtype:
        a, b = a.astype(out_dtype), b.astype(out_dtype)
    return a * b


def _spatial(op, data_shape, kernel_shape, hw, khw, stride, padding, dilation):
    sh, sw = as_pair(stride, op, "stride")
    dh, dw = as_pair(dilation, op, "dilation")
    dk = ((khw[0] - 1) * dh + 1, (khw[1] - 1) * dw + 1)
    top, left, bottom, right = get_pad_tuple(padding, dk, op)
    oh = out_size(op, hw[0], khw[0], sh, dh, top, bottom, data_shape, kernel_shape)
    ow = out_size(op, hw[1], khw[1], sw, dw, left, right, data_shape, kernel_shape)
    return (sh, sw), (dh, dw), (top, left, bottom, right), (oh, ow)


class Window(NamedTuple):
    """What every direct convolution sets up: strides, dilations, pads, output
    extent, the padded input and the reduce axes over the kernel window."""

    stride: tuple
    dilation: tuple
    pads: tuple
    out_hw: tuple
    padded: te.Tensor
    ry: te.IterVar
    rx: te.IterVar


def conv_window(op, data, dshape, kshape, hw, khw, stride, padding, dilation, layout: str) -> Window:
    st, dil, pads, out_hw = _spatial(op, dshape, kshape, hw, khw, stride, padding, dilation)
    padded = pad_spatial(data, pads, layout)
    return Window(st, dil, pads, out_hw, padded, te.reduce_axis((0, khw[0]), "ry"),
                  te.reduce_axis((0, khw[1]), "rx"))


def _check_channels(op, data_shape, kernel_shape, have: int, want: int) -> None:
    if have != want:
        raise ValueError(
            f"{op}: argument kernel of shape {tuple(kernel_shape)} expects {want} input channels, "
            f"but data of shape {tuple(data_shape)} has {have}"
        )


def group_conv2d_nchw(data, kernel, stride, padding, dilation, groups: int, out_dtype=None):
    """Grouped convolution, NCHW data and OIHW kernel ``[OC, IC // groups, KH, KW]``.

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC, H, W]``.
    kernel : te.Tensor
        ``[OC, IC // groups, KH, KW]``.
    stride, dilation : int or (int, int)
    padding : int, tuple or str
        See :func:`get_pad_tuple`.
    groups : int
        Number of groups; it must divide IC and OC.
    out_dtype : str, optional
        Accumulation and output dtype (default: the data's).

    Returns
    -------
    te.Tensor
        ``[N, OC, OH, OW]``.
    """
    op = "conv2d_nchw" if groups == 1 else "group_conv2d_nchw"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 4-D")
    n, ic, h, w = dshape
    oc, icg, kh, kw = kshape
    if groups < 1 or ic % groups or oc % groups:
        raise ValueError(f"{op}: argument groups={groups} must divide the input channels of data "
                         f"{dshape} and the output channels of kernel {kshape}")
    _check_channels(op, dshape, kshape, ic // groups, icg)
    (sh, sw), (dh, dw), (t, l, b, r), (oh, ow), padded, ry, rx = conv_window(
        op, data, dshape, kshape, (h, w), (kh, kw), stride, padding, dilation, "NCHW")
    out_dtype = out_dtype or data.dtype
    rc = te.reduce_axis((0, icg), "rc")
    ocg = oc // groups

    def body(nn, ff, yy, xx):
        cin = rc if groups == 1 else ff // ocg * icg + rc
        return te.sum(_mul(padded[nn, cin, yy * sh + ry * dh, xx * sw + rx * dw],
                           kernel[ff, rc, ry, rx], out_dtype), axis=[rc, ry, rx])

    tg = tag.CONV2D_NCHW if groups == 1 else "group_conv2d_nchw"
    return te.compute((n, oc, oh, ow), body, name="conv2d_nchw" if groups == 1 else "group_conv2d_nchw",
                      tag=tg, attrs={"workload": ("conv2d_nchw", dshape, kshape, (sh, sw), (t, l, b, r),
                                                  (dh, dw), groups, out_dtype)})


def conv2d_nchw(data, kernel, stride, padding, dilation, out_dtype=None):
    """Convolution of NCHW ``data`` with an OIHW ``kernel`` (classic ``topi.nn.conv2d_nchw``).

    See :func:`group_conv2d_nchw` (``groups=1``) for the arguments.
    """
    return group_conv2d_nchw(data, kernel, stride, padding, dilation, 1, out_dtype)


def _hwio_window(op: str, layout: str, data, kernel, stride, padding, dilation) -> tuple:
    """``(dshape, kshape, n, oc, *conv_window(...), rc)`` of a conv of ``layout`` data (NHWC, HWCN)
    with an HWIO kernel: the shapes checked, the padded input and the reduce axes."""
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 4-D")
    n, h, w, ic = (dshape[layout.index(a)] for a in "NHWC")
    kh, kw, kic, oc = kshape
    _check_channels(op, dshape, kshape, ic, kic)
    window = conv_window(op, data, dshape, kshape, (h, w), (kh, kw), stride, padding, dilation, layout)
    return (dshape, kshape, n, oc, *window, te.reduce_axis((0, ic), "rc"))


def conv2d_nhwc(data, kernel, stride, padding, dilation, out_dtype=None):
    """Convolution of NHWC ``data`` ``[N, H, W, IC]`` with an HWIO ``kernel`` ``[KH, KW, IC, OC]``.

    Returns ``[N, OH, OW, OC]``; the other arguments are as in :func:`conv2d_nchw`.
    """
    op = "conv2d_nhwc"
    dshape, kshape, n, oc, (sh, sw), (dh, dw), (t, l, b, r), (oh, ow), padded, ry, rx, rc = _hwio_window(
        op, "NHWC", data, kernel, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (n, oh, ow, oc),
        lambda nn, yy, xx, ff: te.sum(_mul(padded[nn, yy * sh + ry * dh, xx * sw + rx * dw, rc],
                                           kernel[ry, rx, rc, ff], out_dtype), axis=[ry, rx, rc]),
        name="conv2d_nhwc", tag=tag.CONV2D_NHWC,
        attrs={"workload": ("conv2d_nhwc", dshape, kshape, (sh, sw), (t, l, b, r), (dh, dw), 1, out_dtype)},
    )


def conv2d_hwcn(data, kernel, stride, padding, dilation, out_dtype=None):
    """Convolution of HWCN ``data`` ``[H, W, IC, N]`` with an HWIO ``kernel`` ``[KH, KW, IC, OC]``
    (classic ``topi.nn.conv2d_hwcn``); returns ``[OH, OW, OC, N]``, the other arguments as in
    :func:`conv2d_nchw`."""
    op = "conv2d_hwcn"
    dshape, kshape, n, oc, (sh, sw), (dh, dw), (t, l, b, r), (oh, ow), padded, ry, rx, rc = _hwio_window(
        op, "HWCN", data, kernel, stride, padding, dilation)
    out_dtype = out_dtype or data.dtype
    return te.compute(
        (oh, ow, oc, n),
        lambda yy, xx, ff, nn: te.sum(_mul(padded[yy * sh + ry * dh, xx * sw + rx * dw, rc, nn],
                                           kernel[ry, rx, rc, ff], out_dtype), axis=[ry, rx, rc]),
        name="Conv2dOutput", tag="conv2d_hwcn",
        attrs={"workload": (op, dshape, kshape, (sh, sw), (t, l, b, r), (dh, dw), 1, out_dtype)},
    )


def conv2d(data, kernel, strides, padding, dilation, data_layout: str = "NCHW", kernel_layout: str = "",
           out_dtype=None, layout: str | None = None):
    """Dispatch on ``data_layout`` (``"NCHW"`` or ``"NHWC"``) to the conv compute.

    ``kernel_layout`` defaults to the data layout's own (``OIHW`` for NCHW, ``HWIO`` for NHWC);
    an NHWC conv also takes an ``OHWI`` kernel, transposed to HWIO by an injective stage that
    the schedule inlines.  ``layout`` is the older name of ``data_layout``.
    """
    data_layout = layout or data_layout
    want = {"NCHW": "OIHW", "NHWC": "HWIO"}.get(data_layout)
    if want is None:
        raise ValueError(f"conv2d: argument data_layout={data_layout!r} is not supported; use 'NCHW' or 'NHWC'")
    if kernel_layout and kernel_layout != want:
        if (data_layout, kernel_layout) != ("NHWC", "OHWI"):
            raise ValueError(f"conv2d: kernel_layout={kernel_layout!r} with data_layout={data_layout!r} is not "
                             f"supported; use {want!r} (or 'OHWI' with NHWC)")
        o, h, w, i = get_const_tuple(kernel.shape)
        kernel = te.compute((h, w, i, o), lambda y, x, c, f: kernel[f, y, x, c], name="kernel_hwio",
                            tag=tag.INJECTIVE)
    if data_layout == "NCHW":
        return conv2d_nchw(data, kernel, strides, padding, dilation, out_dtype)
    return conv2d_nhwc(data, kernel, strides, padding, dilation, out_dtype)


def nchwc_conv(data_pad, kernel, out_hw, stride, dilation, out_dtype, name="conv2d_NCHWc", attrs=None,
               groups: int = 1, flat: bool = False):
    """The blocked conv over an already padded ``[N, ICc, Hp, Wp, ic_bn]`` input.

    The reduction runs over ``(ic_outer, kh, kw, ic_inner)``, four separate
    axes so that a schedule can reorder them without index arithmetic::

        conv[n, oc, y, x, ob] += data_pad[n, ico, y*sh + kh*dh, x*sw + kw*dw, ici]
                                 * kernel[oc, ico, kh, kw, ici, ob]

    With ``groups`` > 1 the kernel holds one group's input blocks
    (``ICc / groups``) and output block ``oc`` reads the blocks of its group,
    ``oc // (OCc / groups) * ICc / groups + ico`` (the blocks must not straddle groups).

    ``flat``: the output plane as one row of ``OH*OW`` columns, ``[N, OCc, 1, OH*OW, oc_bn]``,
    column ``f`` reading the window of output point ``(f // OW, f % OW)``.
    """
    n = get_const_tuple(data_pad.shape)[0]
    occ, icc, kh, kw, ic_bn, oc_bn = get_const_tuple(kernel.shape)
    (sh, sw), (dh, dw) = stride, dilation
    ico = te.reduce_axis((0, icc), "ic_outer")
    ry = te.reduce_axis((0, kh), "kh")
    rx = te.reduce_axis((0, kw), "kw")
    ici = te.reduce_axis((0, ic_bn), "ic_inner")
    occ_group = occ // groups

    def block(oc):
        return ico if groups == 1 else oc // occ_group * icc + ico

    def point(b, oc, y, x, ob):
        return te.sum(_mul(data_pad[b, block(oc), y * sh + ry * dh, x * sw + rx * dw, ici],
                           kernel[oc, ico, ry, rx, ici, ob], out_dtype), axis=[ico, ry, rx, ici])

    oh, ow = out_hw
    if flat:
        return te.compute((n, occ, 1, oh * ow, oc_bn), lambda b, oc, _, f, ob: point(b, oc, f // ow, f % ow, ob),
                          name=name, tag=tag.CONV2D_NCHWC, attrs=attrs or {})
    return te.compute((n, occ, oh, ow, oc_bn), point, name=name, tag=tag.CONV2D_NCHWC, attrs=attrs or {})


def conv2d_NCHWc(data, kernel, stride, padding, dilation, layout: str = "NCHWc",
                 out_layout: str = "NCHWc", out_dtype=None):
    """Convolution in the blocked layout (classic ``topi.nn.conv2d_NCHWc``).

    Parameters
    ----------
    data : te.Tensor
        ``[N, IC // ic_bn, H, W, ic_bn]``.
    kernel : te.Tensor
        ``[OC // oc_bn, IC // groups // ic_bn, KH, KW, ic_bn, oc_bn]``: the number of groups
        is the ratio of the data's input blocks to the kernel's (classic TVM's rule); a
        group's channels are whole blocks.
    stride, padding, dilation
        As in :func:`conv2d_nchw`.
    layout, out_layout : str
        Informational (``"NCHW16c"`` ...); the blocks come from the shapes.

    Returns
    -------
    te.Tensor
        ``[N, OC // oc_bn, OH, OW, oc_bn]``.
    """
    op = "conv2d_NCHWc"
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 5 or len(kshape) != 6:
        raise ValueError(f"{op}: data {dshape} must be 5-D and kernel {kshape} 6-D")
    n, icc, h, w, ic_bn = dshape
    occ, kicc, kh, kw, kic_bn, oc_bn = kshape
    groups = icc // kicc if kicc and icc % kicc == 0 else 0
    if kic_bn != ic_bn or not groups or occ % groups:
        raise ValueError(f"{op}: argument kernel of shape {kshape} expects input channels blocked as "
                         f"({kicc} per group, {kic_bn}), but data of shape {dshape} has ({icc}, {ic_bn}); "
                         f"the data's blocks must be a multiple of the kernel's, and the groups divide the "
                         f"{occ} output blocks")
    st, dil, (t, l, b, r), ohw = _spatial(op, dshape, kshape, (h, w), (kh, kw), stride, padding, dilation)
    padded = pad_spatial(data, (t, l, b, r), "NCHWc", name="data_pad")
    attrs = {"workload": ("conv2d_NCHWc", dshape, kshape, st, (t, l, b, r), dil, layout, out_layout, groups)}
    return nchwc_conv(padded, kernel, ohw, st, dil, out_dtype or data.dtype, attrs=attrs, groups=groups)


class Workload(NamedTuple):
    """A conv2d's geometry as classic TVM's x86 templates key it (``topi.nn.conv2d.Workload``)."""

    in_dtype: str
    out_dtype: str
    height: int
    width: int
    in_filter: int
    groups: int
    out_filter: int
    kernel_h: int
    kernel_w: int
    padt: int
    padl: int
    padb: int
    padr: int
    dilation_h: int
    dilation_w: int
    stride_h: int
    stride_w: int


_DATA_AXES = {"NCHW": (1, 2, 3), "NHWC": (3, 1, 2), "HWCN": (2, 0, 1)}  # layout -> (C, H, W) axes


def _get_workload(data, kernel, stride, padding, dilation, out_dtype, data_layout: str = "NCHW") -> Workload:
    """The classic :class:`Workload` of a conv of ``data`` (NCHW, NHWC or HWCN) and ``kernel``
    (OIHW for NCHW, HWIO otherwise): the key classic x86 fallbacks read (see
    ``topi.x86.conv2d_avx_common._fallback_schedule``); padding resolved as :func:`get_pad_tuple`."""
    if data_layout not in _DATA_AXES:
        raise ValueError(f"conv2d workload: data_layout={data_layout!r} is not supported; use one of "
                         f"{sorted(_DATA_AXES)}")
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    ci, ih, iw = (dshape[a] for a in _DATA_AXES[data_layout])
    if data_layout == "NCHW":
        co, cig, kh, kw = kshape
    else:
        kh, kw, cig, co = kshape
    dh, dw = as_pair(dilation, "conv2d workload", "dilation")
    sh, sw = as_pair(stride, "conv2d workload", "stride")
    pt, pl, pb, pr = get_pad_tuple(padding, ((kh - 1) * dh + 1, (kw - 1) * dw + 1))
    if data.dtype != kernel.dtype and (data.dtype, kernel.dtype) != ("uint8", "int8"):
        raise ValueError(f"conv2d workload: data dtype {data.dtype} and kernel dtype {kernel.dtype} differ "
                         f"(only uint8 data with an int8 kernel may)")
    return Workload(data.dtype, out_dtype, ih, iw, ci, ci // cig, co, kh, kw, pt, pl, pb, pr, dh, dw, sh, sw)


def workload_out_width(wkl) -> int:
    """Output columns of a classic conv workload (a :class:`Workload` or a depthwise one)."""
    dilated = (wkl.kernel_w - 1) * wkl.dilation_w + 1
    return (wkl.width + wkl.padl + wkl.padr - dilated) // wkl.stride_w + 1


def conv2d_infer_layout(data_shape, kernel_shape, stride, padding, dilation, ic_bn: int, oc_bn: int):
    """Shapes and layouts of the NCHWc conv for NCHW ``data_shape`` / OIHW ``kernel_shape``.

    Returns
    -------
    tuple
        ``((data_shape_c, "NCHW{ic_bn}c"), (kernel_shape_c, "OIHW{ic_bn}i{oc_bn}o"),
        (out_shape_c, "NCHW{oc_bn}c"))``.
    """
    n, ic, h, w = data_shape
    oc, _, kh, kw = kernel_shape
    _, _, _, (oh, ow) = _spatial("conv2d_infer_layout", data_shape, kernel_shape, (h, w), (kh, kw),
                                 stride, padding, dilation)
    return (
        ((n, ic // ic_bn, h, w, ic_bn), f"NCHW{ic_bn}c"),
        ((oc // oc_bn, ic // ic_bn, kh, kw, ic_bn, oc_bn), f"OIHW{ic_bn}i{oc_bn}o"),
        ((n, oc // oc_bn, oh, ow, oc_bn), f"NCHW{oc_bn}c"),
    )


