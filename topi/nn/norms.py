"""Classic topi's normalisations over chosen axes: ``layer_norm``, ``instance_norm``, ``group_norm``.

Each normalises ``data`` by the mean and variance of a set of its elements, then scales
and shifts by ``gamma``/``beta``::

    layer_norm / instance_norm (data, gamma, beta, axis):   statistics over the axes ``axis``;
        gamma, beta have shape [data.shape[a] for a in axis]
    group_norm (data, gamma, beta, num_groups, channel_axis, axes):   the channels split into
        ``num_groups`` groups; statistics per group over its channels and ``axes``;
        gamma, beta have shape [C]

    mean[s] = sum x / count;   var[s] = sum (x - mean[s])^2 / count      (two reduction stages)
    out     = (x - mean[s]) * rsqrt(var[s] + epsilon) * gamma + beta

A ``layer_norm`` over the last axis alone is :func:`topi.nn.layer_norm.layer_norm` (its
fused x86 schedule).  float16 data is normalised in float32 and rounded once.
"""

from __future__ import annotations

import math

import te
from topi.accumulate import accumulate_dtype, widen
from topi.utils import get_const_tuple, shape_str


def _axes(op: str, axis, ndim: int) -> list:
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = sorted({a % ndim if -ndim <= a < ndim else _bad_axis(op, a, ndim) for a in axes})
    if not out:
        raise ValueError(f"{op}: axis must name at least one axis")
    return out


def _bad_axis(op: str, a: int, ndim: int):
    raise ValueError(f"{op}: axis {a} is out of range for data of rank {ndim}")


def _normalize(op: str, data: te.Tensor, gamma, beta, axes: list, epsilon: float, groups=None, channel=None,
               scale_index=None) -> te.Tensor:
    shape = get_const_tuple(data.shape)
    acc = accumulate_dtype(data.dtype)
    per_group = shape[channel] // groups if groups else 1
    stat_shape = [1 if d in axes else n for d, n in enumerate(shape)]
    if groups:
        stat_shape[channel] = groups
    count = math.prod(shape[a] for a in axes) * per_group

    def stat_of(i):
        s = [te.const(0, "int32") if d in axes else v for d, v in enumerate(i)]
        if groups:
            s[channel] = i[channel] // per_group
        return s

    def reduced(fn, name):
        def body(*s):
            red = [te.reduce_axis((0, shape[a]), f"k{a}") for a in axes]
            rc = te.reduce_axis((0, per_group), "kc") if groups else None
            idx = list(s)
            for a, r in zip(axes, red):
                idx[a] = r
            if groups:
                idx[channel] = s[channel] * per_group + rc
            return te.sum(fn(widen(data(*idx), data.dtype), s), axis=red + ([rc] if groups else []))

        return te.compute(tuple(stat_shape), body, name=f"{op}_{name}", tag=f"{op}_{name}")

    inv_count = te.const(1.0 / count, acc)
    total = reduced(lambda x, s: x, "sum")
    sqsum = reduced(lambda x, s: (x - total(*s) * inv_count) * (x - total(*s) * inv_count), "sqsum")
    eps = te.const(epsilon, acc)

    def body(*i):
        s = stat_of(i)
        v = (widen(data(*i), data.dtype) - total(*s) * inv_count) / te.sqrt(sqsum(*s) * inv_count + eps)
        k = scale_index(i)
        if gamma is not None:
            v = v * widen(gamma(*k), gamma.dtype)
        if beta is not None:
            v = v + widen(beta(*k), beta.dtype)
        return v.astype(data.dtype) if v.dtype != data.dtype else v

    return te.compute(shape, body, name=op, tag=op)


def _check_scale(op: str, gamma, beta, want: tuple) -> None:
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t is not None and get_const_tuple(t.shape) != want:
            raise ValueError(f"{op}: '{name}' must have shape {want}, got {shape_str(t)}")


def layer_norm(data: te.Tensor, gamma: te.Tensor | None, beta: te.Tensor | None, axis, epsilon: float = 1e-5):
    """``data`` normalised over the axes ``axis`` (classic ``topi.nn.layer_norm``)."""
    shape = get_const_tuple(data.shape)
    axes = _axes("layer_norm", axis, len(shape))
    _check_scale("layer_norm", gamma, beta, tuple(shape[a] for a in axes))
    if axes == [len(shape) - 1]:
        from topi.nn.layer_norm import layer_norm as last_axis

        return last_axis(data, gamma, beta, epsilon)
    return _normalize("layer_norm", data, gamma, beta, axes, epsilon, scale_index=lambda i: [i[a] for a in axes])


def instance_norm(data: te.Tensor, gamma: te.Tensor | None, beta: te.Tensor | None, axis, epsilon: float = 1e-5):
    """``data`` normalised over the axes ``axis`` (the spatial axes of each instance and channel)."""
    shape = get_const_tuple(data.shape)
    axes = _axes("instance_norm", axis, len(shape))
    _check_scale("instance_norm", gamma, beta, tuple(shape[a] for a in axes))
    return _normalize("instance_norm", data, gamma, beta, axes, epsilon, scale_index=lambda i: [i[a] for a in axes])


def group_norm(data: te.Tensor, gamma: te.Tensor | None, beta: te.Tensor | None, num_groups: int,
               channel_axis: int, axes, epsilon: float = 1e-5) -> te.Tensor:
    """``data`` normalised per group of ``num_groups`` channel groups, over its channels and ``axes``."""
    shape = get_const_tuple(data.shape)
    channel = channel_axis % len(shape)
    if num_groups < 1 or shape[channel] % num_groups:
        raise ValueError(f"group_norm: num_groups={num_groups} must divide the {shape[channel]} channels "
                         f"(axis {channel}) of {shape_str(data)}")
    red = [a for a in _axes("group_norm", axes, len(shape)) if a != channel]
    _check_scale("group_norm", gamma, beta, (shape[channel],))
    return _normalize("group_norm", data, gamma, beta, red, epsilon, num_groups, channel,
                      scale_index=lambda i: [i[channel]])
