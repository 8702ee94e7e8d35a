"""Moves between the spatial axes and the channel or batch axis (TensorFlow's and ONNX's).

``depth_to_space`` / ``space_to_depth`` (block ``b``, NCHW or NHWC)::

    depth_to_space DCR: out[n, c, y, x] = in[n, ((y % b) * b + x % b) * C_out + c, y // b, x // b]
                   CDR: out[n, c, y, x] = in[n, c * b * b + (y % b) * b + x % b,   y // b, x // b]
    space_to_depth:     out[n, (by * b + bx) * C + c, y, x] = in[n, c, y * b + by, x * b + bx]

``space_to_batch_nd`` / ``batch_to_space_nd`` (blocks ``b_1..b_M`` over the axes after the
batch; the block offset ``j`` is the major part of the new batch index)::

    space_to_batch_nd: out[j * N + n, y_i, ...] = in[n, y_i * b_i + j_i - pad_before_i, ...]  (pad_value outside)
    batch_to_space_nd: out[n, o_i, ...] = in[j * N_out + n, (o_i + crop_i) // b_i, ...],  j_i = (o_i + crop_i) % b_i

Each is one injective stage.
"""

from __future__ import annotations

import math

import te
from topi import tag
from topi.utils import get_const_tuple, shape_str


def _channel_axes(op: str, data: te.Tensor, layout: str) -> tuple:
    if layout not in ("NCHW", "NHWC") or len(data.shape) != 4:
        raise ValueError(f"{op}: needs 4-D NCHW or NHWC data, got layout={layout!r} and {shape_str(data)}")
    return (1, 2, 3) if layout == "NCHW" else (3, 1, 2)


def _place(layout: str, n, c, y, x) -> tuple:
    return (n, c, y, x) if layout == "NCHW" else (n, y, x, c)


def depth_to_space(data: te.Tensor, block_size: int, layout: str = "NCHW", mode: str = "DCR") -> te.Tensor:
    """Channels moved into ``block_size x block_size`` spatial blocks (``mode`` ``DCR`` or ``CDR``)."""
    ca, ha, wa = _channel_axes("depth_to_space", data, layout)
    shape = get_const_tuple(data.shape)
    b = int(block_size)
    if shape[ca] % (b * b):
        raise ValueError(f"depth_to_space: block_size={b} squared must divide the channels of {shape_str(data)}")
    if mode not in ("DCR", "CDR", "CRD"):
        raise ValueError(f"depth_to_space: mode={mode!r}; use 'DCR' or 'CDR'")
    c_out = shape[ca] // (b * b)
    out = list(shape)
    out[ca], out[ha], out[wa] = c_out, shape[ha] * b, shape[wa] * b

    def body(*i):
        n, c, y, x = i[0], i[ca], i[ha], i[wa]
        block = (y % b) * b + x % b
        src_c = block * c_out + c if mode == "DCR" else c * b * b + block
        return data(*_place(layout, n, src_c, y // b, x // b))

    return te.compute(tuple(out), body, name="depth_to_space", tag=tag.INJECTIVE)


def space_to_depth(data: te.Tensor, block_size: int, layout: str = "NCHW") -> te.Tensor:
    """``block_size x block_size`` spatial blocks moved into the channels."""
    ca, ha, wa = _channel_axes("space_to_depth", data, layout)
    shape = get_const_tuple(data.shape)
    b = int(block_size)
    if shape[ha] % b or shape[wa] % b:
        raise ValueError(f"space_to_depth: block_size={b} must divide the height and width of {shape_str(data)}")
    c_in = shape[ca]
    out = list(shape)
    out[ca], out[ha], out[wa] = c_in * b * b, shape[ha] // b, shape[wa] // b

    def body(*i):
        n, c, y, x = i[0], i[ca], i[ha], i[wa]
        block, ci = c // c_in, c % c_in
        return data(*_place(layout, n, ci, y * b + block // b, x * b + block % b))

    return te.compute(tuple(out), body, name="space_to_depth", tag=tag.INJECTIVE)


def _unravel(flat, dims: list) -> list:
    out = []
    for d in reversed(dims):
        out.append(flat % d)
        flat = flat // d
    return out[::-1]


def _blocks(op: str, data: te.Tensor, block_shape, *lists) -> tuple:
    shape = get_const_tuple(data.shape)
    blocks = [int(v) for v in block_shape]
    m = len(blocks)
    if not 1 <= m < len(shape) or any(v < 1 for v in blocks) or any(len(v) != m for v in lists):
        raise ValueError(f"{op}: block_shape {tuple(blocks)} and its per-axis lists must name 1..{len(shape) - 1} "
                         f"axes after the batch of {shape_str(data)}")
    return shape, blocks, m


def space_to_batch_nd(data: te.Tensor, block_shape, pad_before, pad_after, pad_value: float = 0.0) -> te.Tensor:
    """Spatial blocks (after padding) moved into the batch axis."""
    shape, blocks, m = _blocks("space_to_batch_nd", data, block_shape, pad_before, pad_after)
    padded = [shape[i + 1] + int(pad_before[i]) + int(pad_after[i]) for i in range(m)]
    if any(p % b for p, b in zip(padded, blocks)):
        raise ValueError(f"space_to_batch_nd: block_shape {tuple(blocks)} must divide the padded extents {padded}")
    batch = shape[0]
    out = (batch * math.prod(blocks),) + tuple(p // b for p, b in zip(padded, blocks)) + shape[m + 1:]
    fill = te.const(pad_value, data.dtype)

    def body(*i):
        n, j = i[0] % batch, _unravel(i[0] // batch, blocks)
        src = [i[k + 1] * blocks[k] + j[k] - int(pad_before[k]) for k in range(m)]
        inside = te.all(*[te.all(s >= 0, s < shape[k + 1]) for k, s in enumerate(src)])
        clamped = [te.min(te.max(s, 0), shape[k + 1] - 1) for k, s in enumerate(src)]
        return te.if_then_else(inside, data(n, *clamped, *i[m + 1:]), fill)

    return te.compute(out, body, name="space_to_batch_nd", tag=tag.INJECTIVE)


def batch_to_space_nd(data: te.Tensor, block_shape, crop_begin_list, crop_end_list) -> te.Tensor:
    """Batch blocks moved back into the spatial axes, then cropped."""
    shape, blocks, m = _blocks("batch_to_space_nd", data, block_shape, crop_begin_list, crop_end_list)
    total = math.prod(blocks)
    if shape[0] % total:
        raise ValueError(f"batch_to_space_nd: the batch of {shape_str(data)} must be a multiple of {total}")
    batch = shape[0] // total
    begin = [int(v) for v in crop_begin_list]
    out = (batch,) + tuple(shape[k + 1] * blocks[k] - begin[k] - int(crop_end_list[k]) for k in range(m)) \
        + shape[m + 1:]

    def body(*i):
        pos = [i[k + 1] + begin[k] for k in range(m)]
        flat = te.const(0, "int32")
        for k in range(m):
            flat = flat * blocks[k] + pos[k] % blocks[k]
        return data(flat * batch + i[0], *[pos[k] // blocks[k] for k in range(m)], *i[m + 1:])

    return te.compute(out, body, name="batch_to_space_nd", tag=tag.INJECTIVE)
