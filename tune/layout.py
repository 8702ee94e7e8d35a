"""Blocked layouts of a template's arguments, so candidates of different layouts can be checked.

A template whose tensors are blocked by its config (TVM's ``conv2d_NCHWc``:
data ``[N, C/16, H, W, 16]`` when ``ic_bn=16``) says what each one stands for::

    data = autotvm.layout.declare(te.placeholder((1, 4, 56, 56, 16)), "NCHW16c", (1, 64, 56, 56))

Layout strings are TVM's: upper-case letters are the logical axes in order,
``<factor><lower-case letter>`` an inner block of that axis, in the order the
blocks are stored (``"OIHW16i32o"``: ``[O/32, I/16, H, W, 16, 32]``).  An axis
whose block does not divide it is zero-padded (and cropped on the way back).

A layout may also be a ``rewrite_layout`` copy's, ``{"lengths": ..., "order": ...}``
(``schedule.layout_rewrite``: an auto_scheduler candidate that reads its
weights pre-packed in its tiles' order).

The runner fills a candidate's inputs from one set of logical random arrays
(:func:`to_blocked`) and compares its outputs in the logical form
(:func:`to_logical`), so every config of such a template is checked against
the fallback's answer, whatever its blocks.
"""

from __future__ import annotations

import re
import threading

import numpy as np

_local = threading.local()


def parse(layout: str) -> tuple:
    """``(axes, blocks)``: the logical axes (``"NCHW"``) and ``[(axis, factor), ...]`` in stored order."""
    if not isinstance(layout, str) or not re.fullmatch(r"([A-Z]|[0-9]+[a-z])+", layout):
        raise ValueError(f"layout {layout!r}: write logical axes in upper case and blocks as <factor><axis in "
                         f"lower case>, e.g. 'NCHW16c'")
    axes, blocks = [], []
    for tok in re.findall(r"[A-Z]|[0-9]+[a-z]", layout):
        if tok.isalpha():
            axes.append(tok)
        else:
            blocks.append((tok[-1].upper(), int(tok[:-1])))
    named = [a for a, _ in blocks]
    if len(set(axes)) != len(axes) or len(set(named)) != len(named) or not set(named) <= set(axes):
        raise ValueError(f"layout {layout!r}: each axis once, each block of an axis the layout names")
    if any(f < 1 for _, f in blocks):
        raise ValueError(f"layout {layout!r}: block factors must be positive")
    return "".join(axes), blocks


def blocked_shape(layout: str, logical_shape) -> tuple:
    """The stored shape of a logical ``logical_shape`` in ``layout``."""
    axes, blocks = parse(layout)
    factor = dict(blocks)
    _check_rank(layout, axes, logical_shape)
    outer = [-(-int(n) // factor[a]) if a in factor else int(n) for a, n in zip(axes, logical_shape)]
    return tuple(outer + [f for _, f in blocks])


def to_blocked(x, layout: str) -> np.ndarray:
    """The logical array ``x`` stored in ``layout`` (blocked axes zero-padded to whole blocks)."""
    x = np.asarray(x)
    if isinstance(layout, dict):
        return _packed(x, layout["lengths"], layout["order"])
    axes, blocks = parse(layout)
    factor = dict(blocks)
    _check_rank(layout, axes, x.shape)
    pad = [(0, -n % factor[a] if a in factor else 0) for a, n in zip(axes, x.shape)]
    if any(p for _, p in pad):
        x = np.pad(x, pad)
    split, where = [], {}
    for a, n in zip(axes, x.shape):
        where[a] = len(split)
        split += [n // factor[a], factor[a]] if a in factor else [n]
    order = [where[a] for a in axes] + [where[a] + 1 for a, _ in blocks]
    return np.ascontiguousarray(x.reshape(split).transpose(order))


def to_logical(y, layout: str, logical_shape) -> np.ndarray:
    """The logical array (``logical_shape``) that ``y``, stored in ``layout``, holds."""
    y = np.asarray(y)
    if isinstance(layout, dict):
        return _unpacked(y, layout["lengths"], layout["order"], logical_shape)
    axes, blocks = parse(layout)
    want = blocked_shape(layout, logical_shape)
    if tuple(y.shape) != want:
        raise ValueError(f"layout {layout!r}: an array of shape {tuple(y.shape)} does not store "
                         f"{tuple(logical_shape)} (expected {want})")
    inner = {a: len(axes) + k for k, (a, _) in enumerate(blocks)}
    order, merged = [], []
    for k, a in enumerate(axes):
        order.append(k)
        size = y.shape[k]
        if a in inner:
            order.append(inner[a])
            size *= y.shape[inner[a]]
        merged.append(size)
    x = y.transpose(order).reshape(merged)
    return np.ascontiguousarray(x[tuple(slice(0, int(n)) for n in logical_shape)])


def _level_axes(lengths, order) -> list:
    """Per (dimension, level) of ``order``, its axis in the array of every dimension's levels."""
    first = np.cumsum([0] + [len(lv) for lv in lengths])
    return [int(first[d]) + t for d, t in order]


def _packed(x, lengths, order) -> np.ndarray:
    """``x`` as ``rewrite_layout`` copies it: dimension d cut in loops of ``lengths[d]`` (zero-padded
    where they overrun it), the loops stored in ``order``."""
    if x.ndim != len(lengths):
        raise ValueError(f"packed layout of {len(lengths)} dimensions, the shape {x.shape} {x.ndim}")
    pad = [(0, int(np.prod(lv)) - n) for lv, n in zip(lengths, x.shape)]
    if any(p < 0 for _, p in pad):
        raise ValueError(f"packed layout {lengths} does not cover the shape {x.shape}")
    x = np.pad(x, pad) if any(p for _, p in pad) else x
    split = [n for lv in lengths for n in lv]
    return np.ascontiguousarray(x.reshape(split).transpose(_level_axes(lengths, order)))


def _unpacked(y, lengths, order, logical_shape) -> np.ndarray:
    want = tuple(lengths[d][t] for d, t in order)
    if tuple(y.shape) != want:
        raise ValueError(f"packed layout: an array of shape {tuple(y.shape)} does not store "
                         f"{tuple(logical_shape)} (expected {want})")
    x = y.transpose(np.argsort(_level_axes(lengths, order))).reshape([int(np.prod(lv)) for lv in lengths])
    return np.ascontiguousarray(x[tuple(slice(0, int(n)) for n in logical_shape)])


def _check_rank(layout: str, axes: str, shape) -> None:
    if len(shape) != len(axes):
        raise ValueError(f"layout {layout!r} has {len(axes)} logical axes, the shape {tuple(shape)} {len(shape)}")


# ------------------------------------------------ declarations in templates ---
def declare(tensor, layout: str, logical_shape):
    """Mark a template's argument ``tensor`` as ``logical_shape`` stored in ``layout``; returns it.

    Outside :func:`collecting` (a plain call of the template) it only checks the shapes."""
    shape = tuple(int(d) for d in tensor.shape)
    if blocked_shape(layout, logical_shape) != shape:
        raise ValueError(f"declare: tensor {tensor.op.name!r} of shape {shape} does not store "
                         f"{tuple(logical_shape)} in layout {layout!r}")
    table = getattr(_local, "table", None)
    if table is not None:
        table[(id(tensor.op), tensor.value_index)] = (tensor.op, layout, tuple(int(d) for d in logical_shape))
    return tensor


def placeholder(logical_shape, layout: str, name: str = "placeholder", dtype: str = "float32"):
    """A template argument that stores ``logical_shape`` in ``layout``, declared (:func:`declare`)."""
    import te

    return declare(te.placeholder(blocked_shape(layout, logical_shape), dtype=dtype, name=name), layout,
                   logical_shape)


class collecting:
    """``with collecting() as got: ...; got.of(tensors)``: the layouts declared meanwhile."""

    def __enter__(self):
        self._outer = getattr(_local, "table", None)
        self.table = _local.table = {}
        return self

    def __exit__(self, *exc) -> None:
        _local.table = self._outer

    def of(self, tensors) -> list:
        """Per tensor: ``(layout, logical shape)`` or None (stored as it is)."""
        out = []
        for t in tensors:
            hit = self.table.get((id(t.op), getattr(t, "value_index", 0))) if hasattr(t, "op") else None
            out.append(None if hit is None else (hit[1], hit[2]))
        return out


__all__ = ["blocked_shape", "collecting", "declare", "parse", "placeholder", "to_blocked", "to_logical"]
