"""Index-driven graph operators (``topi.indexing``, ``topi.einsum``): gather_nd, scatter_nd, scatter_elements, einsum,
cumulative.  The scatters reduce over the update positions: OPAQUE, default schedule."""

from __future__ import annotations

import numpy as np

import te
import topi
from graph.ops.registry import INJECTIVE, OPAQUE, default_schedule, injective_schedule, register


def _data_type(values, attrs):
    return [(values[0].shape, values[0].dtype)]


def _gather_nd_types(values, attrs):
    data, idx = values
    b = attrs.get("batch_dims", 0)
    q = idx.shape[-1]
    if q > len(data.shape) - b or idx.shape[:b] != data.shape[:b]:
        raise ValueError(f"gather_nd: indices {idx.shape} do not fit data {data.shape} with batch_dims={b}")
    return [(idx.shape[:-1] + data.shape[b + q:], data.dtype)]


register("gather_nd", lambda xs, a: [topi.indexing.gather_nd(xs[0], xs[1], a.get("batch_dims", 0), -1)], INJECTIVE,
         injective_schedule, _gather_nd_types,
         lambda xs, a: [topi.testing.gather_nd_python(xs[0], xs[1], a.get("batch_dims", 0), -1)],
         doc="attrs batch_dims (ONNX GatherND)")


def _schedule(outs, attrs):
    return default_schedule(outs)


register("scatter_nd", lambda xs, a: [topi.indexing.scatter_nd(*xs, a.get("reduction", "none"))], OPAQUE,
         _schedule, _data_type,
         lambda xs, a: [topi.testing.scatter_nd_python(*xs, a.get("reduction", "none"))],
         doc="inputs data, indices, updates; attrs reduction (ONNX ScatterND)")
register("scatter_elements",
         lambda xs, a: [topi.indexing.scatter_elements(*xs, a.get("axis", 0), a.get("reduction", "none"))], OPAQUE,
         _schedule, _data_type,
         lambda xs, a: [topi.testing.scatter_elements_python(*xs, a.get("axis", 0), a.get("reduction", "none"))],
         doc="inputs data, indices, updates; attrs axis, reduction (ONNX ScatterElements)")


def _cum_args(a):
    return a["axis"], a.get("op", "sum"), a.get("exclusive", False), a.get("reverse", False)


register("cumulative", lambda xs, a: [topi.indexing.cumulative(xs[0], *_cum_args(a))], OPAQUE, _schedule,
         _data_type, lambda xs, a: [topi.testing.cumulative_python(xs[0], *_cum_args(a))],
         doc="attrs axis, op (sum/prod), exclusive, reverse (ONNX CumSum/CumProd)")


def _einsum_types(values, attrs):
    out = topi.einsum(attrs["equation"], *[te.placeholder(v.shape, dtype=v.dtype) for v in values])
    return [(tuple(int(d) for d in out.shape), values[0].dtype)]


register("einsum", lambda xs, a: [topi.einsum(a["equation"], *xs)], OPAQUE, _schedule, _einsum_types,
         lambda xs, a: [np.einsum(a["equation"], *xs).astype(xs[0].dtype)],
         doc="attrs equation (explicit '->', letters only): one te reduction (ONNX Einsum)")


def _grid_sample_args(a):
    return a.get("mode", "linear"), a.get("padding_mode", "zeros"), bool(a.get("align_corners", False))


def _grid_sample_types(values, a):
    data, grid = values
    return [(data.shape[:2] + grid.shape[1:-1], data.dtype)]


register("grid_sample", lambda xs, a: [topi.image.grid_sample_onnx(xs[0], xs[1], *_grid_sample_args(a))], INJECTIVE,
         injective_schedule, _grid_sample_types,
         lambda xs, a: [topi.testing.grid_sample_onnx_python(xs[0], xs[1], *_grid_sample_args(a))],
         doc="attrs mode (nearest/linear/cubic), padding_mode (zeros/border/reflection), align_corners")


def _col2im_args(a):
    return tuple(a["image_shape"]), tuple(a["block_shape"]), tuple(a["dilations"]), tuple(a["pads"]), \
        tuple(a["strides"])


register("col2im", lambda xs, a: [topi.image.col2im(xs[0], *_col2im_args(a))], OPAQUE, _schedule, None,
         lambda xs, a: [topi.testing.col2im_python(xs[0], *_col2im_args(a))],
         doc="attrs image_shape, block_shape, dilations, pads, strides (ONNX Col2Im)")


def _deform_compute(xs, a):
    mask = xs[3] if len(xs) > 3 else None
    return [topi.image.deform_conv2d(xs[0], xs[1], xs[2], mask, tuple(a["strides"]), tuple(a["pads"]),
                                     tuple(a["dilations"]), a.get("groups", 1), a.get("offset_groups", 1))]


register("deform_conv2d", _deform_compute, OPAQUE, _schedule,
         doc="inputs data, weight, offset[, mask]; attrs strides, pads (top, left), dilations, groups, offset_groups")
register("roi_align", lambda xs, a: [topi.image.roi_align(xs[0], xs[1], xs[2], tuple(a["pooled"]), a["spatial_scale"],
                                                          a["sampling_ratio"], a["mode"], a["half_pixel"])],
         OPAQUE, _schedule,
         doc="inputs data, rois [R, 4], batch_indices; attrs pooled, spatial_scale, sampling_ratio, mode, half_pixel")
