"""``dft``: the discrete Fourier transform along the last axis (classic ``topi.dft``).

With ``N`` the last extent and the sign ``s = -1`` forward, ``+1`` inverse::

    X[..., k] = scale * sum_n x[..., n] * exp(s * 2*pi*i * k*n / N)      (scale 1, or 1/N inverse)

on split real and imaginary parts.  The twiddle factors are two ``N x N`` table stages
(``cos`` and ``sin`` of ``2*pi * ((n*k) mod N) / N``: the exact integer phase keeps the
angle below ``2*pi``, so large ``k*n`` lose no precision), computed once and read by every
row.  O(N^2) per row: for the short transforms of signal front-ends, not a fast FFT.
float16 data is transformed in float32 and rounded once (:mod:`topi.accumulate`).
"""

from __future__ import annotations

import math

import te
from topi import tag
from topi.accumulate import accumulate_dtype
from topi.utils import get_const_tuple, shape_str

DFT = "dft"
TWIDDLE = "dft_twiddle"


def dft(re_input: te.Tensor, im_input: te.Tensor, inverse: bool) -> list:
    """The DFT (``inverse``: the inverse DFT, scaled by ``1/N``) of ``re_input + i*im_input``.

    Returns
    -------
    list of te.Tensor
        ``[re_output, im_output]``, the inputs' shape and dtype (tag ``dft``).
    """
    shape = get_const_tuple(re_input.shape)
    if get_const_tuple(im_input.shape) != shape or im_input.dtype != re_input.dtype:
        raise ValueError(f"dft: re_input {shape_str(re_input)} and im_input {shape_str(im_input)} must match")
    if not shape or not isinstance(shape[-1], int) or shape[-1] < 1:
        raise ValueError(f"dft: the last axis of {shape_str(re_input)} must have a static extent >= 1")
    n, dtype = shape[-1], re_input.dtype
    acc = accumulate_dtype(dtype)

    def phase(t, k):
        return te.const(2 * math.pi / n, acc) * ((t * k) % n).astype(acc)

    cos_t = te.compute((n, n), lambda t, k: te.cos(phase(t, k)), name="dft_cos", tag=TWIDDLE)
    sin_t = te.compute((n, n), lambda t, k: te.sin(phase(t, k)), name="dft_sin", tag=TWIDDLE)
    sign = 1.0 if inverse else -1.0  # X = sum x * (cos + sign*i*sin)
    scale = te.const(1.0 / n if inverse else 1.0, acc)

    def part(real: bool):
        def body(*idx):
            t = te.reduce_axis((0, n), "n")
            src = [*idx[:-1], t]
            re, im = re_input(*src).astype(acc), im_input(*src).astype(acc)
            c, s = cos_t[t, idx[-1]], sin_t[t, idx[-1]] * te.const(sign, acc)
            term = re * c - im * s if real else im * c + re * s
            return te.sum(term, axis=t)

        name = "dft_re" if real else "dft_im"
        total = te.compute(shape, body, name=name + "_acc", tag=DFT)
        return te.compute(shape, lambda *i: (total(*i) * scale).astype(dtype), name=name, tag=tag.ELEMWISE)

    return [part(True), part(False)]
