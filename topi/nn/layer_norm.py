"""Layer normalisation (over any one axis) and RMS normalisation over the last axis (one kernel each).

``layer_norm`` (ONNX LayerNormalization, torch ``nn.LayerNorm``)::

    mean[r] = sum_k x[r, k] / N
    var[r]  = sum_k (x[r, k] - mean[r])^2 / N            # two passes over a row in cache
    out[r, k] = (x[r, k] - mean[r]) * rsqrt(var[r] + eps) * gamma[k] + beta[k]

``rms_norm`` (ONNX RMSNormalization, LLaMA's RMSNorm)::

    ms[r] = sum_k x[r, k]^2 / N
    out[r, k] = x[r, k] * rsqrt(ms[r] + eps) * gamma[k]

The statistics are reduction stages (tags ``layer_norm_sum``, ``layer_norm_sqsum``)
that the x86 schedule computes per row inside the output loop.  float16 data is
normalised in float32 (statistics, scale and shift) and rounded once at the output
(:mod:`topi.accumulate`); other dtypes compute in themselves.
"""

from __future__ import annotations

import te
from topi.accumulate import accumulate_dtype, widen
from topi.utils import get_const_tuple, shape_str

LAYER_NORM = "layer_norm"


def _check(op: str, data: te.Tensor, gamma, beta, axis: int = -1) -> tuple:
    """``(N, axis)``: the normalised axis's extent and its index (``axis`` checked against the rank)."""
    shape = get_const_tuple(data.shape)
    if not shape or not all(isinstance(d, int) for d in shape):
        raise ValueError(f"{op}: 'data' must have a static shape of rank >= 1, got {shape_str(data)}")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"{op}: axis={axis} is out of range for data {shape_str(data)}")
    axis %= len(shape)
    n = shape[axis]
    for name, t in (("gamma", gamma), ("beta", beta)):
        if t is not None and get_const_tuple(t.shape) != (n,):
            raise ValueError(
                f"{op}: '{name}' must have shape ({n},) (axis {axis} of data {shape_str(data)}), "
                f"got {shape_str(t)}"
            )
    return n, axis


def _affine(v, k, gamma, beta):
    if gamma is not None:
        v = v * widen(gamma[k], gamma.dtype)
    if beta is not None:
        v = v + widen(beta[k], beta.dtype)
    return v


def _rounded(v, dtype: str):
    return v if v.dtype == dtype else v.astype(dtype)


def layer_norm(
    data: te.Tensor, gamma: te.Tensor | None = None, beta: te.Tensor | None = None, epsilon: float = 1e-5,
    axis: int = -1,
) -> te.Tensor:
    """Normalise ``data`` over one axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    Parameters
    ----------
    data : te.Tensor
        ``[..., N, ...]``.
    gamma, beta : te.Tensor, optional
        ``[N]`` scale and shift.
    epsilon : float
    axis : int
        The normalised axis (default the last; the channels of ``[B, C, H, W]`` for a
        channels-first norm such as ConvNeXt's ``LayerNorm2d``: statistics per pixel).

    Returns
    -------
    te.Tensor
        ``data``'s shape, tagged ``layer_norm`` (``attrs["axis"]``: the normalised axis).
    """
    n, axis = _check("layer_norm", data, gamma, beta, axis)
    lead = tuple(d for a, d in enumerate(data.shape) if a != axis)
    acc = accumulate_dtype(data.dtype)

    def x(r, k):  # data at stats index r with k on the normalised axis
        return widen(data[r[:axis] + (k,) + r[axis:]], data.dtype)

    k1 = te.reduce_axis((0, n), name="k")
    total = te.compute(
        lead, lambda *r: te.sum(x(r, k1), axis=k1), name="T_layer_norm_sum", tag="layer_norm_sum"
    )
    inv_n = te.const(1.0 / n, acc)
    k2 = te.reduce_axis((0, n), name="k")

    def sq(*r):
        c = x(r, k2) - total[r] * inv_n
        return te.sum(c * c, axis=k2)

    sqsum = te.compute(lead, sq, name="T_layer_norm_sqsum", tag="layer_norm_sqsum")
    eps = te.const(epsilon, acc)

    def rstd(r):
        return te.const(1.0, acc) / te.sqrt(sqsum[r] * inv_n + eps)

    if axis != len(lead):  # not the last axis: 1/std once per position, not once per element
        inv_std = te.compute(lead, lambda *r: rstd(r), name="T_layer_norm_rstd", tag="layer_norm_rstd")
        rstd = inv_std.__getitem__

    def body(*i):
        r, k = i[:axis] + i[axis + 1:], i[axis]
        inv = rstd(r)
        return _rounded(_affine((widen(data[i], data.dtype) - total[r] * inv_n) * inv, k, gamma, beta), data.dtype)

    return te.compute(
        tuple(data.shape), body, name="T_layer_norm", tag=LAYER_NORM,
        attrs={"epsilon": float(epsilon), "axis": axis},
    )


def rms_norm(data: te.Tensor, gamma: te.Tensor | None = None, epsilon: float = 1e-5) -> te.Tensor:
    """``x * rsqrt(mean(x^2) + eps) * gamma`` over the last axis (tag ``layer_norm``)."""
    n, _ = _check("rms_norm", data, gamma, None)
    lead = tuple(data.shape[:-1])
    acc = accumulate_dtype(data.dtype)

    def x(idx):
        return widen(data[idx], data.dtype)

    k = te.reduce_axis((0, n), name="k")
    sqsum = te.compute(
        lead,
        lambda *r: te.sum(x(r + (k,)) * x(r + (k,)), axis=k),
        name="T_layer_norm_sqsum",
        tag="layer_norm_sqsum",
    )
    inv_n, eps = te.const(1.0 / n, acc), te.const(epsilon, acc)

    def body(*i):
        inv = te.const(1.0, acc) / te.sqrt(sqsum[i[:-1]] * inv_n + eps)
        return _rounded(_affine(x(i) * inv, i[-1], gamma, None), data.dtype)

    return te.compute(
        tuple(data.shape), body, name="T_rms_norm", tag=LAYER_NORM, attrs={"epsilon": float(epsilon)}
    )
