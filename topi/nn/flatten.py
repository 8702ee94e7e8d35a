"""``flatten``: keep the batch axis, fold the rest (classic ``topi.nn.flatten``)."""

from __future__ import annotations

import math

import te
from topi import tag
from topi.utils import get_const_tuple


def flatten(data: te.Tensor) -> te.Tensor:
    """``data`` of shape ``(N, d1, d2, ...)`` as ``(N, d1 * d2 * ...)``, row-major.

    ::

        out[n, j] = data[n, j // (d2*d3), j // d3 % d2, j % d3]

    Parameters
    ----------
    data : te.Tensor
        At least 1-D, of constant shape.

    Returns
    -------
    te.Tensor
        Tagged ``injective``.
    """
    if not isinstance(data, te.Tensor):
        raise TypeError(f"flatten: data must be a te.Tensor, got {type(data).__name__}")
    shape = get_const_tuple(data.shape)
    if not shape or not all(isinstance(d, int) for d in shape):
        raise ValueError(f"flatten: data needs a constant shape of rank >= 1, got {shape}")
    rest = shape[1:]

    def body(n, j):
        idx = []
        for d in reversed(rest):
            idx.append(j % d if d != 1 else 0)
            j = j // d
        return data(n, *idx[::-1])

    return te.compute((shape[0], math.prod(rest)), body, name="T_flatten", tag=tag.INJECTIVE)
