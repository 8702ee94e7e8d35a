"""Index-driven operators: gather_nd, adv_index, unravel_index, scatter_nd, scatter_elements,
sparse_to_dense, cumulative sums and products.

Scatters are written as gathers over the updates: each output element looks
for the updates addressed to it (a reduction over the update positions), so
every store stays inside the output and an out-of-range index addresses
nothing instead of writing past a buffer::

    scatter_elements(data, idx, upd, axis=1), output (i, j):
        last[i, j] = max over k of (k + 1 if idx[i, k] == j else 0)
        out[i, j]  = upd[i, last - 1] if last > 0 else data[i, j]

``reduction`` ("add", "mul", "max", "min") combines every matching update
with the data instead of taking the last one.  Negative indices count from
the end of their axis.  The numpy references are in ``topi.testing.indexing``.
"""

from __future__ import annotations

import math

import te
from te import dtype as dt
from topi import tag
from topi.utils import get_const_tuple

__all__ = ["adv_index", "cumulative", "gather_nd", "scatter_elements", "scatter_nd", "sparse_to_dense",
           "unravel_index"]

REDUCTIONS = ("none", "add", "mul", "max", "min")


def _wrap(v, n: int):
    """An index read from a tensor, negative counting from the end, clamped into ``[0, n)``."""
    v = v.astype("int64") if v.dtype != "int64" else v
    v = te.if_then_else(v < 0, v + n, v)
    return te.max(te.min(v, te.const(max(n - 1, 0), "int64")), te.const(0, "int64"))


def gather_nd(a: te.Tensor, indices: te.Tensor, batch_dims: int = 0, index_axis: int = 0) -> te.Tensor:
    """Gather whole index tuples: each tuple of ``indices`` along ``index_axis`` addresses the
    axes of ``a`` after its ``batch_dims`` leading ones.

    Classic TVM's layout is ``index_axis=0``: ``out[y, r] = a[indices[0, y], ...,
    indices[m-1, y], r]``; ONNX GatherND's is ``index_axis=-1``: ``out[b, y, r] = a[b,
    indices[b, y, :], r]``.  Float indices are truncated, negative ones count from the end, and
    every index is clamped into its axis."""
    dshape, ishape = get_const_tuple(a.shape), get_const_tuple(indices.shape)
    if len(ishape) < 1 or index_axis not in (0, -1, len(ishape) - 1):
        raise ValueError(f"gather_nd: index_axis must be the first or last axis of indices {ishape}")
    first = index_axis == 0 and len(ishape) > 1
    q = ishape[0] if first else ishape[-1]
    if q > len(dshape) - batch_dims:
        raise ValueError(f"gather_nd: indices {ishape} index {q} axes of data {dshape} after {batch_dims} batch axes")
    lead = len(ishape) - 1
    shape = (ishape[1:] if first else ishape[:-1]) + dshape[batch_dims + q:]

    def body(*i):
        pos = i[:lead]
        at = [_wrap(indices(t, *pos) if first else indices(*pos, t), dshape[batch_dims + t]) for t in range(q)]
        return a(*i[:batch_dims], *at, *i[lead:])

    return te.compute(shape, body, name="T_gather_nd", tag=tag.INJECTIVE)


def adv_index(data: te.Tensor, indices) -> te.Tensor:
    """numpy advanced indexing ``data[indices[0], ..., indices[m-1]]``: the index tensors broadcast
    together; the result has their broadcast shape, then ``data``'s axes after the first ``m``."""
    dshape = get_const_tuple(data.shape)
    ishapes = [get_const_tuple(t.shape) for t in indices]
    if not 0 < len(indices) <= len(dshape) or not all(dt.is_int(t.dtype) for t in indices):
        raise ValueError(f"adv_index: give 1 to {len(dshape)} integer index tensors, got {ishapes}")
    rank = max(len(s) for s in ishapes)
    bshape = []
    for k in range(rank):
        dims = {s[k - rank + len(s)] for s in ishapes if k - rank + len(s) >= 0} - {1}
        if len(dims) > 1:
            raise ValueError(f"adv_index: index shapes {ishapes} do not broadcast")
        bshape.append(dims.pop() if dims else 1)

    def body(*i):
        at = []
        for t, s, n in zip(indices, ishapes, dshape):
            pos = [0 if d == 1 else i[rank - len(s) + k] for k, d in enumerate(s)]
            at.append(_wrap(t(*pos), n))
        return data(*at, *i[rank:])

    return te.compute(tuple(bshape) + dshape[len(indices):], body, name="T_adv_index", tag=tag.INJECTIVE)


def unravel_index(indices: te.Tensor, shape: te.Tensor) -> te.Tensor:
    """numpy ``unravel_index``: ``out[k, j]`` is the coordinate on axis ``k`` of the flat index
    ``indices[j]`` in a tensor of shape ``shape`` (a 1-D tensor read at run time); a 0-d
    ``indices`` gives ``out[k]``.  The result has ``shape``'s dtype."""
    ishape, sshape = get_const_tuple(indices.shape), get_const_tuple(shape.shape)
    if len(ishape) > 1 or len(sshape) != 1 or not (dt.is_int(indices.dtype) and dt.is_int(shape.dtype)):
        raise ValueError(f"unravel_index: indices must be 0-d or 1-d and shape 1-d integer tensors, got "
                         f"{ishape} {indices.dtype} and {sshape} {shape.dtype}")
    rank, dtype = sshape[0], shape.dtype

    def body(k, *j):
        flat = indices(*j).astype(dtype)
        value = te.const(0, dtype)
        for axis in range(rank - 1, -1, -1):  # peel axes off the flat index, last first
            extent = te.max(shape[axis], te.const(1, dtype))
            value = te.if_then_else(k == axis, flat % extent, value)
            flat = flat // extent
        return value

    return te.compute((rank, *ishape), body, name="T_unravel_index", tag=tag.INJECTIVE)


def sparse_to_dense(sparse_indices: te.Tensor, output_shape, sparse_values: te.Tensor,
                    default_value=0) -> te.Tensor:
    """A dense tensor of ``output_shape`` holding ``sparse_values`` at ``sparse_indices`` (0-d: one
    index into a 1-D output; ``(n,)``: n indices into a 1-D output; ``(n, rank)``: n index tuples)
    and ``default_value`` (a number or a 0-d tensor) elsewhere; a 0-d ``sparse_values`` is used
    for every index.  A repeated index takes its last value."""
    oshape = tuple(int(d) for d in get_const_tuple(output_shape))
    ishape, vshape = get_const_tuple(sparse_indices.shape), get_const_tuple(sparse_values.shape)
    count = ishape[0] if ishape else 1
    width = ishape[1] if len(ishape) == 2 else 1
    if len(ishape) > 2 or width != len(oshape) or vshape not in ((), (count,)):
        raise ValueError(f"sparse_to_dense: indices {ishape} and values {vshape} do not fit output {oshape}")
    dtype = sparse_values.dtype
    if isinstance(default_value, te.Tensor):
        default = te.compute(oshape, lambda *p: default_value(), name="sparse_to_dense_default")
    else:
        default = te.compute(oshape, lambda *p: te.const(default_value, dtype), name="sparse_to_dense_default")

    def index(k, t):
        return sparse_indices(*([k, t][:len(ishape)]))

    def match(p, k):
        return te.all(*[_wrap(index(k, t), oshape[t]) == p[t].astype("int64") for t in range(width)])

    def update(p, k):
        return sparse_values(*([k] if vshape else []))

    matched, picked = _reduce_updates(oshape, count, match, update, "none", dtype, "sparse_to_dense")
    return _combine(default, matched, picked, "none", oshape, "T_sparse_to_dense")


def _combine(data: te.Tensor, matched, picked, reduction: str, shape, name: str) -> te.Tensor:
    """``data`` with the matching updates combined in (``matched``: the last match + 1 or the
    match count; ``picked``: the chosen update or the reduced ones)."""
    def body(*p):
        d = data(*p)
        hit = matched(*p) > 0
        if reduction == "none":
            return te.if_then_else(hit, picked(*p), d)
        if reduction == "add":
            return d + picked(*p)
        if reduction == "mul":
            return d * picked(*p)
        pick = te.max(d, picked(*p)) if reduction == "max" else te.min(d, picked(*p))
        return te.if_then_else(hit, pick, d)

    return te.compute(shape, body, name=name, tag=tag.INJECTIVE)


def _reduce_updates(shape, extent: int, match, update, reduction: str, dtype: str, name: str) -> tuple:
    """(matched, picked) over a reduce axis of ``extent`` update positions: ``match(p, k)``
    says update ``k`` addresses output ``p``; ``update(p, k)`` reads it."""
    k = te.reduce_axis((0, max(extent, 1)), name="k")
    valid = (lambda c: c) if extent else (lambda c: te.const(False))
    last = te.compute(shape, lambda *p: te.max(te.if_then_else(valid(match(p, k)), k.var.astype("int64") + 1,
                                                               te.const(0, "int64")), axis=k),
                      name=f"{name}_last")
    if reduction == "none":
        def pick(*p):
            return update(p, te.max(last(*p) - 1, te.const(0, "int64")))

        return last, te.compute(shape, pick, name=f"{name}_pick")
    identity = {"add": te.const(0, dtype), "mul": te.const(1, dtype),
                "max": te.min_value(dtype), "min": te.max_value(dtype)}[reduction]
    combine = {"add": te.sum, "mul": _prod, "max": te.max, "min": te.min}[reduction]
    k2 = te.reduce_axis((0, max(extent, 1)), name="k2")
    picked = te.compute(shape, lambda *p: combine(te.if_then_else(valid(match(p, k2)), update(p, k2), identity),
                                                  axis=k2), name=f"{name}_reduce")
    return last, picked


def _prod(expr, axis):
    from te.reduction import comm_reducer

    product = comm_reducer(lambda a, b: a * b, lambda t: te.const(1, t), name="prod")
    return product(expr, axis=axis)


def scatter_elements(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, axis: int = 0,
                     reduction: str = "none") -> te.Tensor:
    """``out[..., indices[i, ..., k, ...], ...] = updates[i, ..., k, ...]`` along ``axis``
    (ONNX ScatterElements; ``reduction`` combines with the data)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"scatter_elements: reduction {reduction!r} is not one of {REDUCTIONS}")
    dshape, ishape = get_const_tuple(data.shape), get_const_tuple(indices.shape)
    if ishape != get_const_tuple(updates.shape) or len(ishape) != len(dshape):
        raise ValueError(f"scatter_elements: indices {ishape} and updates {get_const_tuple(updates.shape)} must "
                         f"have one shape, of the rank of data {dshape}")
    axis = axis % len(dshape)
    n = dshape[axis]

    def at(p, k):
        return tuple(k if a == axis else te.min(p[a], ishape[a] - 1) for a in range(len(p)))

    def inside(p):
        conds = [p[a] < ishape[a] for a in range(len(p)) if a != axis and ishape[a] < dshape[a]]
        return conds

    def match(p, k):
        conds = inside(p) + [_wrap(indices(*at(p, k)), n) == p[axis].astype("int64")]
        if any(d == 0 for d in ishape):
            return te.const(False)
        return te.all(*conds)

    def update(p, k):
        return updates(*at(p, k))

    matched, picked = _reduce_updates(dshape, ishape[axis], match, update, reduction, data.dtype,
                                      "scatter_elements")
    return _combine(data, matched, picked, reduction, dshape, "T_scatter_elements")


def scatter_nd(data: te.Tensor, indices: te.Tensor, updates: te.Tensor, reduction: str = "none") -> te.Tensor:
    """``out[indices[u, :], ...] = updates[u, ...]`` (ONNX ScatterND)."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"scatter_nd: reduction {reduction!r} is not one of {REDUCTIONS}")
    dshape, ishape = get_const_tuple(data.shape), get_const_tuple(indices.shape)
    q = ishape[-1]
    lead = ishape[:-1]
    if q > len(dshape) or get_const_tuple(updates.shape) != lead + dshape[q:]:
        raise ValueError(f"scatter_nd: updates {get_const_tuple(updates.shape)} must have shape "
                         f"{lead + dshape[q:]} for indices {ishape} into data {dshape}")
    count = math.prod(lead)

    def unravel(k):
        pos, rest = [], k
        for d in reversed(lead):
            pos.append(rest % d)
            rest = rest // d
        return tuple(reversed(pos))

    def match(p, k):
        u = unravel(k)
        return te.all(*[_wrap(indices(*u, t), dshape[t]) == p[t].astype("int64") for t in range(q)])

    def update(p, k):
        return updates(*unravel(k), *p[q:])

    matched, picked = _reduce_updates(dshape, count, match, update, reduction, data.dtype, "scatter_nd")
    return _combine(data, matched, picked, reduction, dshape, "T_scatter_nd")


def cumulative(x: te.Tensor, axis: int, op: str = "sum", exclusive: bool = False,
               reverse: bool = False) -> te.Tensor:
    """Running sum (``op="sum"``) or product (``"prod"``) along ``axis`` (ONNX CumSum/CumProd):
    ``exclusive`` leaves each element out of its own total, ``reverse`` runs from the end."""
    shape = get_const_tuple(x.shape)
    axis = axis % len(shape)
    n = shape[axis]
    k = te.reduce_axis((0, max(n, 1)), name="k")
    identity = te.const(0 if op == "sum" else 1, x.dtype)

    def body(*i):
        j = i[axis]
        if reverse:
            take = (k.var > j) if exclusive else (k.var >= j)
        else:
            take = (k.var < j) if exclusive else (k.var <= j)
        if n == 0:
            take = te.const(False)
        v = te.if_then_else(take, x(*i[:axis], te.min(k.var, max(n - 1, 0)), *i[axis + 1:]), identity)
        return te.sum(v, axis=k) if op == "sum" else _prod(v, k)

    if op not in ("sum", "prod") or not (dt.is_float(x.dtype) or dt.is_int(x.dtype) or dt.is_unsigned(x.dtype)):
        raise ValueError(f"cumulative: op {op!r} of {x.dtype} is not supported (sum or prod of numbers)")
    return te.compute(shape, body, name=f"T_cum{op}")
