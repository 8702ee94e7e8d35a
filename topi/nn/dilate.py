"""``dilate``: insert ``stride - 1`` fill values between neighbouring elements of each axis.

    out[i_0, ..., i_k] = data[i_0 / s_0, ...]   if every i_j % s_j == 0
                         dilation_value         otherwise

with ``out.shape[j] = (data.shape[j] - 1) * s_j + 1`` (classic ``topi.nn.dilate``: the
kernel dilation of a dilated convolution, the input spreading of a transposed one).
"""

from __future__ import annotations

import te
from topi import tag
from topi.utils import get_const_tuple, shape_str


def dilate(data: te.Tensor, strides, dilation_value: float = 0.0, name: str = "DilatedInput") -> te.Tensor:
    """``data`` dilated by ``strides`` (one positive integer per axis), gaps set to ``dilation_value``.

    Returns
    -------
    te.Tensor
        An injective stage (tag ``injective``) of shape ``(n_j - 1) * s_j + 1`` per axis.
    """
    shape = get_const_tuple(data.shape)
    strides = [int(s) for s in strides]
    if len(strides) != len(shape):
        raise ValueError(f"dilate: {len(strides)} strides {tuple(strides)} for data {shape_str(data)} of rank {len(shape)}")
    if any(s < 1 for s in strides):
        raise ValueError(f"dilate: strides must be >= 1, got {tuple(strides)}")
    out_shape = tuple((n - 1) * s + 1 for n, s in zip(shape, strides))
    fill = te.const(dilation_value, data.dtype)

    def body(*idx):
        conds = [i % s == 0 for i, s in zip(idx, strides) if s > 1]
        source = data(*[i // s if s > 1 else i for i, s in zip(idx, strides)])
        return te.if_then_else(te.all(*conds), source, fill) if conds else source

    return te.compute(out_shape, body, name=name, tag=tag.INJECTIVE)
