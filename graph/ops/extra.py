"""Graph operators the ONNX importer needs beyond ``nn``/``transform``.

``conv3d`` (NCDHW data, OIDHW kernel, groups: ``topi.nn.conv3d_ncdhw``) and ``pool3d`` (max/avg over
D, H, W) are the anchors of fused groups like their 2-D counterparts
(OUT_ELEMWISE_FUSABLE); ``gather_elements`` (ONNX GatherElements) is
injective; ``topk`` (two outputs, sort-free: ``topi.topk``) is opaque.  Each carries a
numpy twin for constant folding and the reference interpreter.
"""

from __future__ import annotations

import numpy as np

import te
import topi
from graph.ops.registry import (
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    default_schedule,
    injective_schedule,
    register,
)
from topi.nn.pooling import _pool_nd


def _conv3d_args(a: dict) -> tuple:
    pads = tuple(a.get("padding", (0,) * 6))
    return tuple(a.get("strides", (1, 1, 1))), pads[:3], pads[3:], tuple(a.get("dilation", (1, 1, 1)))


def _conv3d_types(values, a):
    data, kernel = values
    if len(data.shape) != 5 or len(kernel.shape) != 5:
        raise ValueError(f"conv3d expects 5-D data and kernel, got {data.shape} and {kernel.shape}")
    groups = a.get("groups", 1)
    if data.shape[1] != kernel.shape[1] * groups or kernel.shape[0] % groups:
        raise ValueError(f"conv3d: data has {data.shape[1]} channels, kernel {kernel.shape} with "
                         f"groups={groups} expects {kernel.shape[1] * groups}")
    st, before, after, dil = _conv3d_args(a)
    spatial = tuple(topi.nn.conv3d.conv3d_out_size(*args)
                    for args in zip(data.shape[2:], kernel.shape[2:], st, dil, before, after))
    return [((data.shape[0], kernel.shape[0]) + spatial, data.dtype)]


def _np_conv3d(xs, a):
    st, before, after, dil = _conv3d_args(a)
    return [topi.testing.conv3d_ncdhw_python(xs[0], xs[1], st, (*before, *after), a.get("groups", 1), dil)]


def _conv3d_compute(xs, a):
    st, before, after, dil = _conv3d_args(a)
    return [topi.nn.conv3d_ncdhw(xs[0], xs[1], st, (*before, *after), dil, a.get("groups", 1))]


register("conv3d", _conv3d_compute, OUT_ELEMWISE_FUSABLE, lambda outs, a: default_schedule(outs),
         _conv3d_types, _np_conv3d,
         doc="NCDHW conv; attrs strides, padding (d0, h0, w0, d1, h1, w1), dilation, groups; kernel OIDHW")


def _pool3d_args(a: dict) -> tuple:
    return (tuple(a["kernel"]), tuple(a.get("strides", (1, 1, 1))), tuple(a.get("dilation", (1, 1, 1))),
            tuple(a.get("padding", (0,) * 6)))


def _pool3d_compute(xs, a):
    kernel, strides, dilation, padding = _pool3d_args(a)
    return [_pool_nd("pool3d", xs[0], kernel, strides, dilation, padding, a["pool_type"],
                     a.get("ceil_mode", False), "NCDHW", "DHW", a.get("count_include_pad", True))]


def _np_pool3d(xs, a):
    """Reference pooling over the last three axes: pad, then reduce every dilated window."""
    x = xs[0]
    kernel, strides, dilation, padding = _pool3d_args(a)
    out_shape = _pool3d_compute([te.placeholder(x.shape, x.dtype, "x")], a)[0].shape
    outs = [int(d) for d in out_shape[2:]]
    fill = -np.inf if a["pool_type"] == "max" else 0.0
    need = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(outs, strides, kernel, dilation)]
    after = [max(n - b - size, 0) for n, b, size in zip(need, padding[:3], x.shape[2:])]
    width = [(0, 0), (0, 0)] + list(zip(padding[:3], after))
    xp = np.pad(x.astype(np.float64), width, constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), list(zip(padding[:3], after)))
    inside = np.ones([n + b + e for n, b, e in zip(x.shape[2:], padding[:3], padding[3:])])
    inside = np.pad(inside, [(0, max(n - inside.shape[k], 0)) for k, n in enumerate(xp.shape[2:])])
    acc = np.full((x.shape[0], x.shape[1], *outs), fill)
    count = np.zeros(outs)
    for tap in np.ndindex(*kernel):
        window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s) for t, d, o, s in zip(tap, dilation, outs, strides))
        v = xp[(Ellipsis,) + window]
        acc = np.maximum(acc, v) if a["pool_type"] == "max" else acc + v
        count += (inside if a.get("count_include_pad", True) else ones)[window]
    if a["pool_type"] == "avg":
        acc = acc / np.maximum(count, 1)
    return [acc.astype(x.dtype)]


register("pool3d", _pool3d_compute, OUT_ELEMWISE_FUSABLE, default_schedule,
         None, _np_pool3d,
         doc="attrs: pool_type (max/avg), kernel, strides, dilation, padding (d0, h0, w0, d1, h1, w1), "
             "ceil_mode, count_include_pad (NCDHW)")


def _gather_elements_types(values, a):
    data, idx = values
    axis = a.get("axis", 0) % max(len(data.shape), 1)
    if len(idx.shape) != len(data.shape) or any(i > d for k, (i, d) in enumerate(zip(idx.shape, data.shape))
                                                if k != axis):
        raise ValueError(f"gather_elements: indices {idx.shape} do not fit data {data.shape} on axis {axis}")
    return [(idx.shape, data.dtype)]


def _np_gather_elements(xs, a):
    data, idx = xs
    axis = a.get("axis", 0) % data.ndim
    idx = np.clip(np.where(idx < 0, idx + data.shape[axis], idx), 0, data.shape[axis] - 1)
    window = tuple(slice(0, n) if k != axis else slice(None) for k, n in enumerate(idx.shape))
    return [np.take_along_axis(data[window], idx, axis=axis)]


register("gather_elements", lambda xs, a: [topi.gather(xs[0], a.get("axis", 0), xs[1])], INJECTIVE,
         injective_schedule, _gather_elements_types, _np_gather_elements,
         doc="out[i, j] = data[i, indices[i, j]] for axis=1 (ONNX GatherElements; negative indices wrap once)")


def _topk_types(values, a):
    x = values[0]
    axis, k = a.get("axis", -1) % len(x.shape), int(a["k"])
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"topk: k={k} exceeds axis {axis} of shape {x.shape}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [(shape, x.dtype), (shape, "int64")]


def _np_topk(xs, a):
    return topi.testing.topk_python(xs[0], int(a["k"]), a.get("axis", -1), a.get("largest", True))


register("topk", lambda xs, a: topi.sorting.select_top(xs[0], int(a["k"]), a.get("axis", -1), a.get("largest", True)),
         OPAQUE,
         lambda outs, a: default_schedule(outs), _topk_types, _np_topk,
         doc="attrs k, axis, largest; outputs the sorted values and their int64 indices (ONNX TopK)")
