"""Slices whose bounds are tensors, reversals and masks along an axis (classic ``topi.transform``):
``strided_slice`` with tensor bounds, ``strided_set``, ``flip``, ``reverse_sequence``,
``sequence_mask``.

Bounds read at run time follow numpy's slice rules (a negative bound counts from the end, a
bound past the axis is clamped to it); every index read from data is clamped into its buffer,
so a wrong bound or length selects the wrong elements but never reads outside a buffer::

    strided_set(A, V, begin, end, strides), per axis (stride s > 0):
        out[i] = V[(i - start) / s]  if start <= i < stop and (i - start) % s == 0
                 A[i]                otherwise

The numpy references are in ``topi.testing.transform_ref``.
"""

from __future__ import annotations

import te
from te import dtype as dt
from te import expr as E
from topi import tag
from topi.utils import check_axis, const_shape

__all__ = ["dynamic_strided_slice", "flip", "reverse_sequence", "sequence_mask", "strided_set"]


def _clamp(v: E.Expr, lo, hi) -> E.Expr:
    return te.max(te.min(v, hi), lo)


def _vector(op: str, arg: str, v, rank: int, dtype: str = "int32"):
    """Entries of a bound vector as expressions of ``dtype``: a 1-D integer tensor (read at run
    time) or a list of ints; at most ``rank`` of them."""
    if isinstance(v, te.Tensor):
        shape = const_shape(op, v)
        if len(shape) != 1 or not dt.is_int(v.dtype):
            raise ValueError(f"{op}: {arg} must be a 1-D integer tensor, got shape {shape} {v.dtype}")
        entries = [v[k].astype(dtype) for k in range(shape[0])]
    else:
        entries = [te.const(int(x), dtype) for x in v]
    if len(entries) > rank:
        raise ValueError(f"{op}: {arg} has {len(entries)} entries for a tensor of rank {rank}")
    return entries


def _normalize(b: E.Expr, s: E.Expr, n: int) -> E.Expr:
    """numpy's normalised bound of ``slice(.., .., s)`` on an axis of ``n``: a negative ``b`` counts
    from the end; clamped to ``[0, n]`` going forward, ``[-1, n - 1]`` going backward."""
    b = te.if_then_else(b < 0, b + n, b)
    return te.if_then_else(s > 0, _clamp(b, 0, n), _clamp(b, -1, n - 1))


def dynamic_strided_slice(a: te.Tensor, begin, end, strides=None, name: str = "T_strided_slice_dynamic"):
    """``a[begin:end:strides]`` with bounds read at run time (1-D integer tensors, or lists).

    The first ``len(begin)`` axes are sliced, each to an extent known only when the kernel runs:
    the result's shape holds a ``te.var`` for each of them, bound by the output buffer passed at
    the call (which must hold the numpy slice's shape); the other axes are kept whole.
    """
    op = "strided_slice"
    shape = const_shape(op, a)
    n = len(shape)
    b = _vector(op, "begin", begin, n)
    e = _vector(op, "end", end, n)
    s = [te.const(1, "int32")] * len(b) if strides is None else _vector(op, "strides", strides, n)
    if not len(b) == len(e) == len(s):
        raise ValueError(f"{op}: begin, end and strides have {len(b)}, {len(e)} and {len(s)} entries "
                         f"(shape {shape})")
    start = [_normalize(bk, sk, d) for bk, sk, d in zip(b, s, shape)]
    out = [te.var(f"{name}_dim{k}") for k in range(len(b))] + list(shape[len(b):])

    def body(*i):
        idx = [_clamp(st + v * sk, 0, d - 1) for st, v, sk, d in zip(start, i, s, shape)]
        return a(*idx, *i[len(b):])

    return te.compute(out, body, name=name, tag=tag.INJECTIVE)


def strided_set(a: te.Tensor, v: te.Tensor, begin: te.Tensor, end: te.Tensor, strides=None) -> te.Tensor:
    """``a`` with ``a[begin:end:strides] = v`` (numpy slice rules), the bounds 1-D int32 tensors
    read at run time; an axis past their length is taken whole.  A stride of 0 sets nothing."""
    op = "strided_set"
    shape, vshape = const_shape(op, a), const_shape(op, v)
    n = len(shape)
    if len(vshape) != n or v.dtype != a.dtype:
        raise ValueError(f"{op}: v must have the rank and dtype of a {shape} {a.dtype}, got {vshape} {v.dtype}")
    b = _vector(op, "begin", begin, n)
    e = _vector(op, "end", end, n)
    s = _vector(op, "strides", strides, n) if strides is not None else []
    s = s + [te.const(1, "int32")] * (n - len(s))
    start = [_normalize(b[k], s[k], shape[k]) if k < len(b) else te.if_then_else(s[k] > 0, 0, shape[k] - 1)
             for k in range(n)]
    stop = [_normalize(e[k], s[k], shape[k]) if k < len(e) else te.if_then_else(s[k] > 0, shape[k], -1)
            for k in range(n)]

    def body(*i):
        inside, at = [], []
        for k in range(n):
            fwd = s[k] > 0
            dist = te.if_then_else(fwd, i[k] - start[k], start[k] - i[k])
            step = te.max(te.if_then_else(fwd, s[k], -s[k]), 1)
            before_stop = te.if_then_else(fwd, i[k] < stop[k], i[k] > stop[k])
            inside += [s[k] != 0, dist >= 0, before_stop, dist % step == 0]
            at.append(_clamp(dist // step, 0, vshape[k] - 1))
        return te.if_then_else(te.all(*inside), v(*at), a(*i))

    return te.compute(shape, body, name="T_strided_set", tag=tag.INJECTIVE)


def flip(a: te.Tensor, axis: int = 0) -> te.Tensor:
    """``a`` reversed along ``axis`` (numpy ``flip``)."""
    shape = const_shape("flip", a)
    axis = check_axis("flip", axis, len(shape))
    last = shape[axis] - 1
    return te.compute(shape, lambda *i: a(*i[:axis], last - i[axis], *i[axis + 1:]), name="T_reverse",
                      tag=tag.INJECTIVE)


def reverse_sequence(a: te.Tensor, seq_lengths: te.Tensor, seq_axis: int = 1, batch_axis: int = 0) -> te.Tensor:
    """Reverse the first ``seq_lengths[b]`` elements along ``seq_axis`` of each slice ``b`` of
    ``batch_axis``; a length is clamped to ``[1, a.shape[seq_axis]]`` (classic TVM's rule)."""
    op = "reverse_sequence"
    shape, lshape = const_shape(op, a), const_shape(op, seq_lengths)
    seq_axis = check_axis(op, seq_axis, len(shape), "seq_axis")
    batch_axis = check_axis(op, batch_axis, len(shape), "batch_axis")
    if len(lshape) != 1 or lshape[0] != shape[batch_axis]:  # classic TVM's wording, its typo included
        raise ValueError("For reverse_sequnece seq_lengths size should match with dimension of batch axis, "
                         f"but got dimension of batch_axis = {shape[batch_axis]}, and seq_length size = "
                         f"{lshape[0] if lshape else 0}")
    if not dt.is_int(seq_lengths.dtype) or seq_axis == batch_axis:
        raise ValueError(f"{op}: seq_lengths must be integers ({seq_lengths.dtype}) and seq_axis ({seq_axis}) "
                         f"differ from batch_axis ({batch_axis})")
    n = shape[seq_axis]

    def body(*i):
        length = _clamp(seq_lengths[i[batch_axis]].astype("int32"), 1, n)
        j = i[seq_axis]
        return a(*i[:seq_axis], te.if_then_else(j < length, length - 1 - j, j), *i[seq_axis + 1:])

    return te.compute(shape, body, name="T_reverse_sequence", tag=tag.INJECTIVE)


def sequence_mask(data: te.Tensor, valid_length: te.Tensor, mask_value=0, axis: int = 0) -> te.Tensor:
    """``data`` with the elements past each sequence's valid length set to ``mask_value``.

    ``axis`` (0 or 1) is the time axis, ``1 - axis`` the batch axis: ``out[t, b, ...] =
    mask_value if t >= valid_length[b] else data[t, b, ...]`` for ``axis=0``.
    """
    op = "sequence_mask"
    shape, lshape = const_shape(op, data), const_shape(op, valid_length)
    if axis not in (0, 1) or len(shape) < 2:
        raise ValueError(f"{op}: axis must be 0 or 1 of a tensor of rank >= 2, got axis={axis}, shape {shape}")
    if lshape != (shape[1 - axis],) or not dt.is_int(valid_length.dtype):
        raise ValueError(f"{op}: valid_length must be integers of shape ({shape[1 - axis]},), "
                         f"got {lshape} {valid_length.dtype}")
    fill = te.const(mask_value, data.dtype)

    def body(*i):
        past = i[axis].astype(valid_length.dtype) >= valid_length[i[1 - axis]]
        return te.if_then_else(past, fill, data(*i))

    return te.compute(shape, body, name="T_sequence_mask", tag=tag.INJECTIVE)
