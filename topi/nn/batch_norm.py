"""Batch normalisation, inference form."""

from __future__ import annotations

import math

import te
from topi import tag
from topi.utils import check_axis, get_const_tuple, shape_str


def _check_param(name: str, p: te.Tensor, channels, data: te.Tensor, axis: int) -> None:
    if len(p.shape) != 1 or get_const_tuple(p.shape)[0] != get_const_tuple((channels,))[0]:
        raise ValueError(
            f"batch_norm: argument '{name}' {shape_str(p)} must have one entry per channel of "
            f"data {shape_str(data)} along axis {axis}"
        )


def batch_norm(data: te.Tensor, gamma: te.Tensor, beta: te.Tensor, moving_mean: te.Tensor,
               moving_var: te.Tensor, axis: int = 1, epsilon: float = 1e-5, center: bool = True,
               scale: bool = True, training: bool = False, momentum: float = 0.1) -> list:
    """``(data - mean) / sqrt(var + epsilon) * gamma + beta`` along channel ``axis``.

    Parameters
    ----------
    data : te.Tensor
        Input of any rank.
    gamma, beta, moving_mean, moving_var : te.Tensor
        Per-channel vectors (extent ``data.shape[axis]``).
    axis : int
        The channel axis.
    epsilon : float
        Added to the variance.
    center, scale : bool
        Whether ``beta`` / ``gamma`` are applied.
    training : bool
        Normalise by the batch's own per-channel mean and (biased) variance, reductions
        over every other axis, and update the moving statistics:
        ``moving * (1 - momentum) + batch * momentum``.
    momentum : float
        In ``[0, 1]``.

    Returns
    -------
    list of te.Tensor
        ``[out, moving_mean, moving_var]`` as classic TVM (in inference, copies of the
        statistics passed in); ``out`` is one ``broadcast`` stage.
    """
    axis = check_axis("batch_norm", axis, len(data.shape))
    c = data.shape[axis]
    for name, p in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean),
                    ("moving_var", moving_var)):
        _check_param(name, p, c, data, axis)
    if not 0 <= momentum <= 1:
        raise ValueError(f"batch_norm: momentum={momentum} must lie in [0, 1]")
    eps = te.const(float(epsilon), data.dtype)
    mean, var = (_batch_stats(data, axis) if training else (moving_mean, moving_var))

    def body(*i):
        ch = i[axis]
        y = (data[i] - mean[ch]) / te.sqrt(var[ch] + eps)
        if scale:
            y = y * gamma[ch]
        if center:
            y = y + beta[ch]
        return y

    out = te.compute(data.shape, body, name="T_batch_norm", tag=tag.BROADCAST)
    if not training:
        return [out, _copy(moving_mean, "T_moving_mean"), _copy(moving_var, "T_moving_var")]
    keep, take = te.const(1.0 - momentum, data.dtype), te.const(float(momentum), data.dtype)
    new_mean = te.compute(moving_mean.shape, lambda c: moving_mean[c] * keep + mean[c] * take, name="T_moving_mean",
                          tag=tag.ELEMWISE)
    new_var = te.compute(moving_var.shape, lambda c: moving_var[c] * keep + var[c] * take, name="T_moving_var",
                         tag=tag.ELEMWISE)
    return [out, new_mean, new_var]


def _copy(t: te.Tensor, name: str) -> te.Tensor:
    return te.compute(t.shape, lambda *i: t(*i), name=name, tag=tag.ELEMWISE)


def _batch_stats(data: te.Tensor, axis: int) -> tuple:
    """Per-channel mean and biased variance over every axis but ``axis`` (two reduction stages)."""
    shape = get_const_tuple(data.shape)
    others = [d for d in range(len(shape)) if d != axis]
    inv = te.const(1.0 / math.prod(shape[d] for d in others), data.dtype)

    def reduce(fn, name):
        def body(c):
            red = [te.reduce_axis((0, shape[d]), f"k{d}") for d in others]
            idx = list(red)
            idx.insert(axis, c)
            return te.sum(fn(data(*idx), c) * inv, axis=red)

        return te.compute((shape[axis],), body, name=name, tag="batch_norm_stats")

    mean = reduce(lambda x, c: x, "T_batch_mean")
    var = reduce(lambda x, c: (x - mean[c]) * (x - mean[c]), "T_batch_var")
    return mean, var
