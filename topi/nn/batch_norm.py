"""Batch normalisation, inference form."""

from __future__ import annotations

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
               scale: bool = True) -> list:
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

    Returns
    -------
    list of te.Tensor
        ``[out, moving_mean, moving_var]`` as classic TVM (the statistics pass through
        unchanged in inference); ``out`` is one ``broadcast`` stage.
    """
    axis = check_axis("batch_norm", axis, len(data.shape))
    c = data.shape[axis]
    for name, p in (("gamma", gamma), ("beta", beta), ("moving_mean", moving_mean),
                    ("moving_var", moving_var)):
        _check_param(name, p, c, data, axis)
    eps = te.const(float(epsilon), data.dtype)

    def body(*i):
        ch = i[axis]
        y = (data[i] - moving_mean[ch]) / te.sqrt(moving_var[ch] + eps)
        if scale:
            y = y * gamma[ch]
        if center:
            y = y + beta[ch]
        return y

    out = te.compute(data.shape, body, name="T_batch_norm", tag=tag.BROADCAST)
    return [out, moving_mean, moving_var]
