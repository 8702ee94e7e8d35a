"""numpy references: padding, activations, resize, blocked layouts."""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "dilate_python",
    "elu_python",
    "gelu_python",
    "layout_transform_python",
    "leaky_relu_python",
    "pad_python",
    "prelu_python",
    "relu_python",
    "resize_python",
    "selu_python",
]


def pad_python(a: np.ndarray, pad_before, pad_after, pad_value=0) -> np.ndarray:
    """``a`` with ``pad_before[k]``/``pad_after[k]`` elements of ``pad_value`` on axis ``k``.

    Missing trailing entries of ``pad_before``/``pad_after`` mean no padding.
    """
    n = a.ndim
    before = list(pad_before) + [0] * (n - len(pad_before))
    after = list(pad_after) + [0] * (n - len(pad_after))
    return np.pad(a, list(zip(before, after)), mode="constant", constant_values=pad_value)


def relu_python(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype)


def leaky_relu_python(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, x * alpha).astype(x.dtype)


def prelu_python(x: np.ndarray, slope: np.ndarray, axis: int = 1) -> np.ndarray:
    shape = [1] * x.ndim
    shape[axis] = -1
    return np.where(x > 0, x, x * slope.reshape(shape)).astype(x.dtype)


def elu_python(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    return np.where(x > 0, x, alpha * np.expm1(x)).astype(x.dtype)


def selu_python(x: np.ndarray) -> np.ndarray:
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return (scale * np.where(x > 0, x, alpha * np.expm1(x))).astype(x.dtype)


def gelu_python(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))).astype(x.dtype)


def resize_python(x: np.ndarray, size, layout: str = "NCHW", method: str = "nearest_neighbor",
                  coordinate_transformation_mode: str = "half_pixel",
                  rounding_method: str = "") -> np.ndarray:
    """Reference of ``topi.resize``: ``resize_nd_python`` with its nearest rounding defaults."""
    from topi.testing.resize import resize_nd_python

    default = {"align_corners": "round", "half_pixel": "round_prefer_ceil"}
    rounding = rounding_method or default.get(coordinate_transformation_mode, "floor")
    axes = (2, 3) if layout == "NCHW" else (1, 2)
    return resize_nd_python(x, size, axes, method, coordinate_transformation_mode, rounding)


def _split_layout(layout: str) -> list:
    items, digits = [], ""
    for ch in layout:
        if ch.isdigit():
            digits += ch
        else:
            items.append((ch, int(digits) if digits else 0))
            digits = ""
    return items


def layout_transform_python(x: np.ndarray, src_layout: str, dst_layout: str) -> np.ndarray:
    """Reference of ``topi.layout_transform``: unblock to primal axes, permute, re-block."""
    src, dst = _split_layout(src_layout), _split_layout(dst_layout)
    # 1. to the primal layout: merge each inner block into its outer axis
    names = [a for a, _ in src]
    for a, f in [(a, f) for a, f in src if f]:
        outer, inner = names.index(a.upper()), names.index(a)
        x = np.moveaxis(x, inner, outer + 1)
        names.insert(outer + 1, names.pop(inner))
        shape = list(x.shape)
        x = x.reshape(shape[:outer] + [shape[outer] * f] + shape[outer + 2:])
        names.pop(outer + 1)
    # 2. split the blocks of the destination off, innermost-last, and permute
    for a, f in [(a, f) for a, f in dst if f]:
        k = names.index(a.upper())
        shape = list(x.shape)
        x = x.reshape(shape[:k] + [shape[k] // f, f] + shape[k + 1:])
        names.insert(k + 1, a)
    return np.ascontiguousarray(x.transpose([names.index(a) for a, _ in dst]))


def dilate_python(x: np.ndarray, strides, dilation_value: float = 0.0) -> np.ndarray:
    """``x`` with ``strides[k] - 1`` copies of ``dilation_value`` between neighbours on axis ``k``."""
    if len(strides) != x.ndim:
        raise ValueError(f"dilate_python: {len(strides)} strides for an array of rank {x.ndim}")
    out = np.full([(n - 1) * s + 1 for n, s in zip(x.shape, strides)], dilation_value, dtype=x.dtype)
    out[tuple(slice(None, None, s) for s in strides)] = x
    return out

