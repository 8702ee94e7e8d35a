"""Injective graph operators: reshapes, transposes, slices, gathers, padding."""

from __future__ import annotations

import numpy as np

import te
import topi
from graph.ops.registry import INJECTIVE, OPAQUE, injective_schedule, register


def _one(fn):
    return lambda xs, a: [fn(xs, a)]


def _np_one(fn):
    return lambda xs, a: [fn(xs, a)]


def _reshape_types(values, attrs):
    shape = tuple(int(d) for d in attrs["newshape"])
    if int(np.prod(shape)) != values[0].size:
        raise ValueError(f"cannot reshape {values[0].shape} to {shape}")
    return [(shape, values[0].dtype)]


register("reshape", _one(lambda xs, a: topi.reshape(xs[0], tuple(a["newshape"]))), INJECTIVE,
         injective_schedule, _reshape_types, _np_one(lambda xs, a: xs[0].reshape(a["newshape"])))


def _transpose_types(values, attrs):
    axes = attrs.get("axes") or tuple(reversed(range(len(values[0].shape))))
    if sorted(axes) != list(range(len(values[0].shape))):
        raise ValueError(f"axes {tuple(axes)} are not a permutation of the {len(values[0].shape)} axes")
    return [(tuple(values[0].shape[k] for k in axes), values[0].dtype)]


register("transpose", _one(lambda xs, a: topi.transpose(xs[0], a.get("axes"))), INJECTIVE,
         injective_schedule, _transpose_types, _np_one(lambda xs, a: np.transpose(xs[0], a.get("axes"))))


def _concat_types(values, attrs):
    rank = len(values[0].shape)
    axis = attrs.get("axis", 0) % rank
    shape = list(values[0].shape)
    for v in values[1:]:
        if len(v.shape) != rank or any(v.shape[k] != shape[k] for k in range(rank) if k != axis):
            raise ValueError(f"concatenate on axis {axis}: shapes {[w.shape for w in values]} differ off the axis")
        shape[axis] += v.shape[axis]
    return [(tuple(shape), values[0].dtype)]


register("concatenate", _one(lambda xs, a: topi.concatenate(list(xs), a.get("axis", 0))), INJECTIVE,
         injective_schedule, _concat_types, _np_one(lambda xs, a: np.concatenate(xs, a.get("axis", 0))))


def _split_sections(shape, attrs):
    axis = attrs.get("axis", 0) % len(shape)
    sizes = attrs["sizes"]
    if sum(sizes) != shape[axis]:
        raise ValueError(f"split sizes {tuple(sizes)} do not add up to axis {axis} of extent {shape[axis]}")
    return axis, list(np.cumsum(sizes)[:-1])


def _split_compute(xs, a):
    axis, idx = _split_sections([int(d) for d in xs[0].shape], a)
    return list(topi.split(xs[0], [int(i) for i in idx], axis))


def _split_types(values, attrs):
    axis, _ = _split_sections(values[0].shape, attrs)
    out = []
    for s in attrs["sizes"]:
        shape = list(values[0].shape)
        shape[axis] = int(s)
        out.append((tuple(shape), values[0].dtype))
    return out


register("split", _split_compute, INJECTIVE, injective_schedule, _split_types,
         lambda xs, a: np.split(xs[0], _split_sections(xs[0].shape, a)[1], a.get("axis", 0)))


def _slice_np(xs, a):
    x = xs[0]
    index = [slice(None)] * x.ndim
    for b, e, s, ax in zip(a["begin"], a["end"], a["strides"], a["axes"]):
        index[ax] = slice(b, e, s)
    return x[tuple(index)]


def _slice_compute(xs, a):
    return topi.strided_slice(xs[0], list(a["begin"]), list(a["end"]), list(a["strides"]), list(a["axes"]))


register("strided_slice", _one(_slice_compute), INJECTIVE, injective_schedule, None, _np_one(_slice_np),
         doc="attrs: begin, end, strides, axes (numpy slice semantics, end clamped)")


def _take_types(values, attrs):
    data, idx = values
    axis = attrs.get("axis", 0) % len(data.shape)
    shape = data.shape[:axis] + idx.shape + data.shape[axis + 1:]
    return [(shape, data.dtype)]


def _np_take(xs, a):
    data, idx = xs
    axis = a.get("axis", 0) % data.ndim
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return np.take(data, np.clip(idx, 0, data.shape[axis] - 1), axis=axis)


register("take", _one(lambda xs, a: topi.take(xs[0], xs[1], a.get("axis", 0), mode="negative")),
         INJECTIVE, injective_schedule, _take_types, _np_one(_np_take))


def _np_pad(xs, a):
    return np.pad(xs[0], list(zip(a["pad_before"], a["pad_after"])), constant_values=a.get("pad_value", 0.0))


register("pad", _one(lambda xs, a: topi.nn.pad(xs[0], a["pad_before"], a["pad_after"], a.get("pad_value", 0.0))),
         INJECTIVE, injective_schedule, None, _np_one(_np_pad))
register("tile", _one(lambda xs, a: topi.tile(xs[0], tuple(a["reps"]))), INJECTIVE, injective_schedule,
         None, _np_one(lambda xs, a: np.tile(xs[0], a["reps"])))
register("broadcast_to", _one(lambda xs, a: topi.broadcast_to(xs[0], tuple(a["shape"]))), INJECTIVE,
         injective_schedule, None, _np_one(lambda xs, a: np.broadcast_to(xs[0], a["shape"]).copy()))
register("layout_transform", _one(lambda xs, a: topi.layout_transform(xs[0], a["src_layout"], a["dst_layout"])),
         INJECTIVE, injective_schedule, None,
         _np_one(lambda xs, a: topi.testing.layout_transform_python(xs[0], a["src_layout"], a["dst_layout"])))


def _resize_compute(xs, a):
    return topi.resize(xs[0], tuple(a["size"]), "NCHW", a.get("method", "nearest_neighbor"),
                       a.get("coordinate_transformation_mode", "half_pixel"), a.get("rounding_method", ""))


register("resize", _one(_resize_compute), INJECTIVE, injective_schedule)


def _full_types(values, attrs):
    return [(tuple(int(d) for d in attrs["shape"]), str(np.dtype(attrs["dtype"])))]


def _full_compute(xs, a):
    value = te.const(a["value"], str(np.dtype(a["dtype"])))
    return [te.compute(tuple(a["shape"]), lambda *i: value, name="full", tag=topi.tag.ELEMWISE)]


register("full", _full_compute, INJECTIVE, injective_schedule, _full_types,
         lambda xs, a: [np.full(tuple(a["shape"]), a["value"], dtype=a["dtype"])],
         doc="no inputs; attrs shape, value, dtype (ONNX ConstantOfShape)")


def _shape_of_types(values, attrs):
    return [((len(values[0].shape),), "int64")]


register("shape_of", None, OPAQUE, None, _shape_of_types,
         lambda xs, a: [np.array(xs[0].shape, dtype=np.int64)],
         doc="the static shape of its input (always folded to a constant)")
