"""numpy references: depth/space and batch/space moves (classic ``topi.testing`` names), by reshapes
and transposes (the computes in ``topi.nn.space_ops`` index element by element)."""

from __future__ import annotations

import numpy as np

__all__ = ["batch_to_space_nd_python", "depth_to_space_python", "space_to_batch_nd_python",
           "space_to_depth_python"]


def depth_to_space_python(data: np.ndarray, block_size: int, mode: str = "DCR") -> np.ndarray:
    """NCHW ``data`` with its channels moved into ``block_size``-square spatial blocks."""
    n, c, h, w = data.shape
    b = block_size
    if mode == "DCR":
        t = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth_python(data: np.ndarray, block_size: int) -> np.ndarray:
    """NCHW ``data`` with its ``block_size``-square spatial blocks moved into the channels."""
    n, c, h, w = data.shape
    b = block_size
    t = data.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    return t.reshape(n, c * b * b, h // b, w // b)


def space_to_batch_nd_python(data, block_shape, pad_before, pad_after, pad_value=0) -> np.ndarray:
    """``data``'s padded spatial blocks moved into the batch (block offsets major)."""
    m = len(block_shape)
    pads = [(0, 0)] + list(zip(pad_before, pad_after)) + [(0, 0)] * (data.ndim - m - 1)
    x = np.pad(data, pads, constant_values=pad_value)
    n, rest = x.shape[0], x.shape[m + 1:]
    split = [n]
    for k, b in enumerate(block_shape):
        split += [x.shape[k + 1] // b, b]
    x = x.reshape(split + list(rest))
    order = [2 + 2 * k for k in range(m)] + [0] + [1 + 2 * k for k in range(m)] + \
        list(range(1 + 2 * m, x.ndim))
    x = x.transpose(order)
    return x.reshape([n * int(np.prod(block_shape))] + [x.shape[m + 1 + k] for k in range(m)] + list(rest))


def batch_to_space_nd_python(data, block_shape, crop_begin_list, crop_end_list) -> np.ndarray:
    """The batch's blocks moved back into the spatial axes, then cropped."""
    m = len(block_shape)
    total = int(np.prod(block_shape))
    n = data.shape[0] // total
    x = data.reshape(list(block_shape) + [n] + list(data.shape[1:]))
    order = [m]
    for k in range(m):
        order += [m + 1 + k, k]
    order += list(range(2 * m + 1, x.ndim))
    x = x.transpose(order)
    x = x.reshape([n] + [data.shape[k + 1] * block_shape[k] for k in range(m)] + list(data.shape[m + 1:]))
    crop = tuple([slice(None)] + [slice(crop_begin_list[k], x.shape[k + 1] - crop_end_list[k]) for k in range(m)])
    return x[crop]
