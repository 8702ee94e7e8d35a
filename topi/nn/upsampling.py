"""Upsampling by scale factors (classic ``topi.nn.upsampling`` / ``upsampling3d``): a resize of the
spatial axes to ``round(extent * scale)`` (:mod:`topi.image.resize`)."""

from __future__ import annotations

import te
from te.errors import OpError
from topi.image.resize import resize2d, resize3d, spatial_axes
from topi.utils import get_const_tuple


def _scaled(op: str, data: te.Tensor, layout: str, scales: tuple) -> tuple:
    shape = get_const_tuple(data.shape)
    axes = spatial_axes(op, data, layout, len(scales))
    if min(scales) <= 0:
        raise OpError(f"{op}: scales must be positive, got {scales}")
    return tuple(int(round(shape[a] * s)) for a, s in zip(axes, scales))


def upsampling(data: te.Tensor, scale_h, scale_w, layout: str = "NCHW", method: str = "nearest_neighbor",
               align_corners: bool = False, output_shape=None) -> te.Tensor:
    """Scale the ``H`` and ``W`` axes of ``data`` by ``scale_h``, ``scale_w``.

    Parameters
    ----------
    data : te.Tensor
        In ``layout``: NCHW, NHWC or a packed NCHW (``NCHW1n16c``).
    scale_h, scale_w : float
        The output extents are ``round(H * scale_h)``, ``round(W * scale_w)``.
    method : {"nearest_neighbor", "bilinear", "bicubic"}
    align_corners : bool
        Map corner to corner (``align_corners``), else ``asymmetric`` coordinates.
    output_shape
        Accepted for TVM's signature; shapes here are static.
    """
    size = _scaled("upsampling", data, layout, (float(scale_h), float(scale_w)))
    return resize2d(data, [0.0] * 4, size, layout, method[2:] if method.startswith("bi") else method,
                    "align_corners" if align_corners else "asymmetric")


def upsampling3d(data: te.Tensor, scale_d, scale_h, scale_w, layout: str = "NCDHW",
                 method: str = "nearest_neighbor", coordinate_transformation_mode: str = "half_pixel",
                 output_shape=None) -> te.Tensor:
    """Scale the ``D``, ``H`` and ``W`` axes of ``data`` (NCDHW or NDHWC) by the three factors;
    ``method`` is ``nearest_neighbor``, ``trilinear`` or ``tricubic``, coordinates as
    ``coordinate_transformation_mode`` (:mod:`topi.image.resize`)."""
    size = _scaled("upsampling3d", data, layout, (float(scale_d), float(scale_h), float(scale_w)))
    return resize3d(data, [0.0] * 6, size, layout, method[3:] if method.startswith("tri") else method,
                    coordinate_transformation_mode)
