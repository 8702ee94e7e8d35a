"""Injective data movement (classic ``topi.transform``): reshape, transpose,
concatenate, slicing, gathers, tiling, casts, blocked layouts and resize.

Every output element reads a bounded set of input elements, so all results are
tagged ``injective`` (``elemwise`` for ``cast``) and schedule inline.  Every bad
argument raises ``ValueError`` naming the operator, the argument and the shape.
Data-dependent indices (``take``, ``gather``) are clamped or wrapped into range:
nothing is ever read out of bounds.
"""

from __future__ import annotations

import itertools
import math as _math
from collections.abc import Sequence

import te
from te import expr as E
from topi import tag
from topi.generate import arange, expand_like, matrix_set_diag, ndarray_size, one_hot, shape, trilu
from topi.indexing import adv_index, gather_nd, sparse_to_dense, unravel_index
from topi.math import reinterpret
from topi.image import resize as image_resize
from topi.slicing import dynamic_strided_slice, flip, reverse_sequence, sequence_mask, strided_set
from topi.utils import const_shape as _shape
from topi.utils import get_const_tuple

__all__ = [  # and, classic topi.transform's too, those of topi.generate, topi.indexing and topi.slicing
    "adv_index",
    "arange",
    "cast",
    "concatenate",
    "dynamic_strided_slice",
    "expand_dims",
    "expand_like",
    "flip",
    "flatten",
    "gather",
    "gather_nd",
    "layout_transform",
    "matrix_set_diag",
    "ndarray_size",
    "one_hot",
    "reinterpret",
    "repeat",
    "reshape",
    "resize",
    "reverse_sequence",
    "sequence_mask",
    "shape",
    "sparse_to_dense",
    "split",
    "squeeze",
    "stack",
    "strided_set",
    "strided_slice",
    "take",
    "tile",
    "transpose",
    "trilu",
    "unravel_index",
]


def _axis(op: str, axis, ndim: int, shape: tuple, arg: str = "axis") -> int:
    if not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise ValueError(f"{op}: {arg}={axis} is out of range for shape {shape} (rank {ndim})")
    return axis % ndim


def _injective(shape, fcompute, name: str, kind: str = tag.INJECTIVE) -> te.Tensor:
    return te.compute(tuple(shape), fcompute, name=name, tag=kind)


def _ravel(indices, shape) -> E.Expr:
    flat = te.const(0, "int32")
    for i, d in zip(indices, shape):
        flat = flat * d + i
    return flat


def _unravel(flat: E.Expr, shape) -> list:
    out = []
    for d in reversed(shape):
        out.append(flat % d if d != 1 else te.const(0, "int32"))
        flat = flat // d
    return out[::-1]


# ------------------------------------------------------------ reshapes ---
def reshape(a: te.Tensor, newshape) -> te.Tensor:
    """``x`` viewed as ``newshape`` in row-major order; one entry may be ``-1``.

    ``out[i...] = a[unravel(ravel(i...), a.shape)]``.
    """
    shape = _shape("reshape", a)
    new = [newshape] if isinstance(newshape, int) else list(get_const_tuple(newshape))
    size = _math.prod(shape)
    if new.count(-1) > 1 or any(not isinstance(d, int) or d < -1 for d in new):
        raise ValueError(f"reshape: invalid newshape {tuple(new)} for shape {shape}")
    if -1 in new:
        rest = _math.prod(d for d in new if d != -1)
        if rest == 0 or size % rest:
            raise ValueError(f"reshape: cannot infer -1 in newshape {tuple(new)} for shape {shape}")
        new[new.index(-1)] = size // rest
    if _math.prod(new) != size:
        raise ValueError(f"reshape: cannot reshape shape {shape} ({size} elements) to {tuple(new)}")
    groups = _reshape_groups(shape, new)
    if groups is None:
        return _injective(new, lambda *i: a(*_unravel(_ravel(i, new), shape)), "T_reshape")

    def body(*i):
        src = []
        for (a0, a1), (b0, b1) in groups:  # input axes [a0, a1) hold output axes [b0, b1)
            src += _unravel(_ravel(i[b0:b1], new[b0:b1]), shape[a0:a1]) if a1 - a0 > 1 else \
                [_ravel(i[b0:b1], new[b0:b1])]
        return a(*src)

    return _injective(new, body, "T_reshape")


def _reshape_groups(shape: list, new: list) -> list | None:
    """Pair runs of input and output axes with equal products, so each output
    index maps to an input index within its run: a split or a merge of axes
    costs no division unless a run merges axes (``(1,136,28,28) -> (1,4,34,28,28)``
    reads ``x[n, g*34 + c, y, x]``).  ``None`` when no finer pairing exists."""
    groups, a, b = [], 0, 0
    while a < len(shape) or b < len(new):
        a1, b1 = a + 1 if a < len(shape) else a, b + 1 if b < len(new) else b
        pa, pb = _math.prod(shape[a:a1]), _math.prod(new[b:b1])
        while pa != pb:
            if pa < pb and a1 < len(shape):
                a1, pa = a1 + 1, pa * shape[a1]
            elif pb < pa and b1 < len(new):
                b1, pb = b1 + 1, pb * new[b1]
            else:
                return None
        while a1 < len(shape) and shape[a1] == 1 and (b1 == len(new) or new[b1] != 1):
            a1 += 1
        while b1 < len(new) and new[b1] == 1 and (a1 == len(shape) or shape[a1] != 1):
            b1 += 1
        groups.append(((a, a1), (b, b1)))
        a, b = a1, b1
    return groups if len(groups) > 1 else None


def flatten(x: te.Tensor, axis: int = 1) -> te.Tensor:
    """``x`` as 2-D ``(prod(shape[:axis]), prod(shape[axis:]))`` (ONNX ``Flatten``)."""
    shape = _shape("flatten", x)
    if not isinstance(axis, int) or not -len(shape) <= axis <= len(shape):
        raise ValueError(f"flatten: axis={axis} is out of range for shape {shape}")
    axis %= len(shape) + 1
    return reshape(x, (_math.prod(shape[:axis]), _math.prod(shape[axis:])))


def transpose(a: te.Tensor, axes: Sequence[int] | None = None) -> te.Tensor:
    """Permute the axes: ``out.shape[k] = a.shape[axes[k]]`` (``None`` reverses them)."""
    shape = _shape("transpose", a)
    n = len(shape)
    axes = tuple(range(n))[::-1] if axes is None else tuple(axes)
    norm = [a % n if isinstance(a, int) and -n <= a < n else None for a in axes]
    if len(axes) != n or None in norm or sorted(norm) != list(range(n)):
        raise ValueError(f"transpose: axes={axes} is not a permutation of the axes of shape {shape}")

    def body(*i):
        idx = [None] * n
        for k, ax in enumerate(norm):
            idx[ax] = i[k]
        return a(*idx)

    return _injective([shape[a] for a in norm], body, "T_transpose")


def expand_dims(a: te.Tensor, axis: int, num_newaxis: int = 1) -> te.Tensor:
    """Insert ``num_newaxis`` axes of extent 1 at ``axis`` (in ``[-ndim-1, ndim]``)."""
    shape = _shape("expand_dims", a)
    n = len(shape)
    if not isinstance(axis, int) or not -n - 1 <= axis <= n:
        raise ValueError(f"expand_dims: axis={axis} is out of range for shape {shape}")
    if not isinstance(num_newaxis, int) or num_newaxis < 0:
        raise ValueError(f"expand_dims: num_newaxis must be >= 0, got {num_newaxis}")
    axis %= n + 1
    new = shape[:axis] + (1,) * num_newaxis + shape[axis:]
    return _injective(new, lambda *i: a(*(i[:axis] + i[axis + num_newaxis:])), "T_expand_dims")


def squeeze(a: te.Tensor, axis=None) -> te.Tensor:
    """Remove axes of extent 1 (``axis=None``: all of them)."""
    shape = _shape("squeeze", a)
    if axis is None:
        drop = {k for k, d in enumerate(shape) if d == 1}
    else:
        drop = {_axis("squeeze", ax, len(shape), shape) for ax in ((axis,) if isinstance(axis, int) else axis)}
        for ax in sorted(drop):
            if shape[ax] != 1:
                raise ValueError(f"squeeze: axis {ax} of shape {shape} has extent {shape[ax]}, not 1")
    keep = [k for k in range(len(shape)) if k not in drop]

    def body(*i):
        idx = [te.const(0, "int32")] * len(shape)
        for k, v in zip(keep, i):
            idx[k] = v
        return a(*idx)

    return _injective([shape[k] for k in keep], body, "T_squeeze")


def cast(x: te.Tensor, dtype: str) -> te.Tensor:
    """``x`` converted to ``dtype`` elementwise (tag ``elemwise``); any shape, symbolic too."""
    if not isinstance(x, te.Tensor):
        raise TypeError(f"cast: expected a te.Tensor, got {type(x).__name__}")
    return _injective(x.shape, lambda *i: x(*i).astype(dtype), "T_cast", tag.ELEMWISE)


# ------------------------------------------------------- join and split ---
def _check_join(op: str, tensors, axis: int, extra: int) -> tuple[list, int]:
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise ValueError(f"{op}: expects a non-empty list of tensors, got {tensors!r}")
    shapes = [_shape(op, t) for t in tensors]
    ref = shapes[0]
    axis = _axis(op, axis, len(ref) + extra, ref)
    for s, t in zip(shapes, tensors):
        other = list(s[:axis] + s[axis + 1:]) if not extra else list(s)
        want = list(ref[:axis] + ref[axis + 1:]) if not extra else list(ref)
        if len(s) != len(ref) or other != want or t.dtype != tensors[0].dtype:
            listed = ", ".join(f"{x} {t.dtype}" for x, t in zip(shapes, tensors))
            raise ValueError(f"{op}: shapes/dtypes must agree except on axis {axis}; got {listed}")
    return shapes, axis


def concatenate(a_tuple: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """Join ``tensors`` along an existing ``axis``.

    ``out[..., i, ...] = A[..., i, ...] if i < a else B[..., i - a, ...]``.
    """
    shapes, axis = _check_join("concatenate", a_tuple, axis, 0)
    offsets = [0]
    for s in shapes:
        offsets.append(offsets[-1] + s[axis])
    out = list(shapes[0])
    out[axis] = offsets[-1]

    def body(*i):
        def read(k):
            return a_tuple[k](*(i[:axis] + (i[axis] - offsets[k],) + i[axis + 1:]))

        val = read(len(a_tuple) - 1)
        for k in range(len(a_tuple) - 2, -1, -1):
            val = te.if_then_else(i[axis] < offsets[k + 1], read(k), val)
        return val

    return _injective(out, body, "T_concat")


def stack(a: Sequence[te.Tensor], axis: int = 0) -> te.Tensor:
    """Join ``tensors`` of one shape along a new ``axis`` (in ``[-ndim-1, ndim]``)."""
    shapes, axis = _check_join("stack", a, axis, 1)
    out = list(shapes[0])
    out.insert(axis, len(a))

    def body(*i):
        rest = i[:axis] + i[axis + 1:]
        val = a[-1](*rest)
        for k in range(len(a) - 2, -1, -1):
            val = te.if_then_else(i[axis] == k, a[k](*rest), val)
        return val

    return _injective(out, body, "T_stack")


def split(ary: te.Tensor, indices_or_sections, axis: int = 0) -> list:
    """Cut ``x`` along ``axis`` into equal sections, or at the given indices (numpy ``split``)."""
    shape = _shape("split", ary)
    axis = _axis("split", axis, len(shape), shape)
    n = shape[axis]
    if isinstance(indices_or_sections, int):
        k = indices_or_sections
        if k <= 0 or n % k:
            raise ValueError(f"split: {k} sections do not divide axis {axis} of shape {shape}")
        bounds = [n // k * j for j in range(k + 1)]
    else:
        idx = [int(i) for i in indices_or_sections]
        if idx != sorted(idx) or any(i < 0 for i in idx):
            raise ValueError(f"split: indices {idx} must be non-negative and ascending (shape {shape})")
        bounds = [0] + [min(i, n) for i in idx] + [n]
    return [strided_slice(ary, [lo], [hi], axes=[axis]) for lo, hi in itertools.pairwise(bounds)]


def strided_slice(a: te.Tensor, begin, end, strides=None, axes=None, slice_mode: str = "end") -> te.Tensor:
    """``a[begin:end:strides]`` per axis with numpy's rules (negative indices and steps).

    ``axes`` names the sliced axes (default: the first ``len(begin)``); the others
    are kept whole; an ``end`` of None runs to the end of its axis.  ``slice_mode="size"`` reads
    ``end`` as the slice's length (-1: to the end of the axis) and ignores ``strides``.  Bounds
    given as tensors are read at run time (:func:`topi.slicing.dynamic_strided_slice`).
    """
    if any(isinstance(v, te.Tensor) for v in (begin, end, strides)):
        if axes is not None or slice_mode != "end":
            raise ValueError("strided_slice: bounds given as tensors take neither axes nor slice_mode='size'")
        return dynamic_strided_slice(a, begin, end, strides)
    shape = _shape("strided_slice", a)
    n = len(shape)
    begin, end = list(begin), list(end)
    if slice_mode == "size":
        end = [None if e is None or e < 0 else b + e for b, e in zip(begin, end)]
        strides = None
    elif slice_mode != "end":
        raise ValueError(f"strided_slice: slice_mode must be 'end' or 'size', got {slice_mode!r}")
    strides = [] if strides is None else list(strides)
    strides += [1] * (len(begin) - len(strides))  # classic TVM: missing strides are 1
    axes = list(range(len(begin))) if axes is None else [_axis("strided_slice", a, n, shape) for a in axes]
    if not len(begin) == len(end) == len(strides) == len(axes) or len(axes) > n:
        raise ValueError(f"strided_slice: begin={begin}, end={end}, strides={strides}, axes={axes} "
                         f"must have one entry per sliced axis of shape {shape}")
    start, step = [0] * n, [1] * n
    out = list(shape)
    for ax, b, e, s in zip(axes, begin, end, strides):
        if s == 0:
            raise ValueError(f"strided_slice: stride 0 on axis {ax} of shape {shape}")
        start[ax], stop, step[ax] = slice(b, e, s).indices(shape[ax])
        out[ax] = len(range(start[ax], stop, step[ax]))
    return _injective(out, lambda *i: a(*[st + v * sp for st, v, sp in zip(start, i, step)]),
                      "T_strided_slice")


# ------------------------------------------------------------- gathers ---
def _fix_index(op: str, i: E.Expr, n: int, mode: str) -> E.Expr:
    """Index ``i`` brought into ``[0, n)`` by ``mode``, computed in a type that holds it (int64 for
    64-bit and uint32 indices), then as int32."""
    wide = te.dtype.bits(i.dtype) > 32 or (te.dtype.is_unsigned(i.dtype) and te.dtype.bits(i.dtype) == 32)
    t = "int64" if wide else "int32"
    i, size, last, zero = i.astype(t), te.const(n, t), te.const(max(n - 1, 0), t), te.const(0, t)
    if mode == "wrap":
        i = te.floormod(i, size)
    elif mode == "negative":  # ONNX: -1 is the last element
        i = te.if_then_else(i < zero, i + size, i)
    elif mode not in ("clip", "fast"):  # "fast" promises in-range indices: clamping them changes nothing
        raise ValueError(f"{op}: mode must be 'clip', 'wrap' or 'fast', got {mode!r}")
    return te.max(te.min(i, last), zero).astype("int32")


def _index_tensor(op: str, indices) -> te.Tensor:
    if not isinstance(indices, te.Tensor) or not te.dtype.is_int(indices.dtype):
        raise ValueError(f"{op}: indices must be an integer te.Tensor, got {indices!r}")
    return indices


def take(a: te.Tensor, indices: te.Tensor, axis: int | None = None, batch_dims: int = 0,
         mode: str = "clip") -> te.Tensor:
    """Pick elements along ``axis`` by ``indices`` (numpy ``take``).

    ``axis=None`` takes from the flattened ``a``.  ``mode="clip"`` (and ``"fast"``) clamps an
    index into range, ``"wrap"`` takes it modulo the extent.  The first ``batch_dims`` axes of
    ``indices`` run along those of ``a`` (one index table per batch row).
    """
    shape = _shape("take", a)
    indices = _index_tensor("take", indices)
    ishape = _shape("take", indices)
    _fix_index("take", te.const(0), 1, mode)
    if axis is None:
        size = _math.prod(shape)
        return _injective(ishape, lambda *j: a(*_unravel(_fix_index("take", indices(*j), size, mode), shape)),
                          "T_take")
    axis = _axis("take", axis, len(shape), shape)
    b = batch_dims % len(ishape) if batch_dims < 0 else batch_dims
    if b > axis or ishape[:b] != shape[:b]:
        raise ValueError(f"take: batch_dims={batch_dims} needs the leading axes of indices {ishape} to be those "
                         f"of a {shape}, up to axis {axis}")
    m = len(ishape) - b

    def body(*i):
        pick = _fix_index("take", indices(*i[:b], *i[axis:axis + m]), shape[axis], mode)
        return a(*(i[:axis] + (pick,) + i[axis + m:]))

    return _injective(shape[:axis] + ishape[b:] + shape[axis + 1:], body, "T_take")


def gather(data: te.Tensor, axis: int, indices: te.Tensor) -> te.Tensor:
    """``out[i, j, k] = data[i, indices[i, j, k], k]`` for ``axis=1`` (ONNX ``GatherElements``).

    ``indices`` has the rank of ``data`` and no larger extents off ``axis``;
    negative indices count from the end, out-of-range ones are clamped.
    """
    shape = _shape("gather", data)
    indices = _index_tensor("gather", indices)
    ishape = _shape("gather", indices)
    axis = _axis("gather", axis, len(shape), shape)
    bad = len(ishape) != len(shape) or any(a > b for k, (a, b) in enumerate(zip(ishape, shape)) if k != axis)
    if bad:
        raise ValueError(f"gather: indices of shape {ishape} do not fit data of shape {shape} on axis {axis}")

    def body(*i):
        pick = _fix_index("gather", indices(*i), shape[axis], "negative")
        return data(*(i[:axis] + (pick,) + i[axis + 1:]))

    return _injective(ishape, body, "T_gather")


# ---------------------------------------------------------------- tiling ---
def tile(a: te.Tensor, reps) -> te.Tensor:
    """Repeat the whole of ``x`` ``reps[k]`` times along each axis (numpy ``tile``)."""
    shape = _shape("tile", a)
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    if any(not isinstance(r, int) or r < 1 for r in reps):
        raise ValueError(f"tile: reps must be positive ints, got {reps} (shape {shape})")
    n = max(len(shape), len(reps))
    full = (1,) * (n - len(shape)) + shape
    reps = (1,) * (n - len(reps)) + reps
    lead = n - len(shape)
    return _injective([d * r for d, r in zip(full, reps)],
                      lambda *i: a(*[v % d for v, d in zip(i[lead:], shape)]), "T_tile")


def repeat(a: te.Tensor, repeats: int, axis: int) -> te.Tensor:
    """Repeat each element ``repeats`` times along ``axis`` (numpy ``repeat``)."""
    shape = _shape("repeat", a)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeat: repeats must be a positive int, got {repeats!r} (shape {shape})")
    axis = _axis("repeat", axis, len(shape), shape)
    out = list(shape)
    out[axis] *= repeats
    return _injective(out, lambda *i: a(*(i[:axis] + (i[axis] // repeats,) + i[axis + 1:])), "T_repeat")



# ------------------------------------------------------ blocked layouts ---
def _parse_layout(op: str, layout: str) -> list:
    """``"NCHW16c"`` -> ``[("N", 0), ("C", 0), ("H", 0), ("W", 0), ("c", 16)]``."""
    items, digits = [], ""
    for ch in layout:
        if ch.isdigit():
            digits += ch
        elif ch.isupper() and not digits:
            items.append((ch, 0))
        elif ch.islower() and digits and int(digits) > 0:
            items.append((ch, int(digits)))
            digits = ""
        else:
            raise ValueError(f"{op}: cannot parse layout {layout!r}")
    primal = [a for a, f in items if not f]
    subs = [a.upper() for a, f in items if f]
    if digits or len(set(primal)) != len(primal) or any(a not in primal for a in subs) \
            or len(set(subs)) != len(subs):
        raise ValueError(f"{op}: cannot parse layout {layout!r}")
    return items


def layout_transform(array: te.Tensor, src_layout: str, dst_layout: str) -> te.Tensor:
    """Re-lay ``x`` from ``src_layout`` to ``dst_layout`` (``"NCHW"`` <-> ``"NCHW16c"``).

    An upper-case letter is a whole axis; ``16c`` is the inner block of axis ``C``
    (``C`` then counts blocks)::

        NCHW -> NCHW16c:  out[n, co, h, w, ci] = array[n, co*16 + ci, h, w]
    """
    op = "layout_transform"
    shape = _shape(op, array)
    src, dst = _parse_layout(op, src_layout), _parse_layout(op, dst_layout)
    if len(src) != len(shape) or sorted(a for a, f in src if not f) != sorted(a for a, f in dst if not f):
        raise ValueError(f"{op}: cannot transform shape {shape} from {src_layout!r} to {dst_layout!r}")
    src_block = {a.upper(): f for a, f in src if f}
    dst_block = {a.upper(): f for a, f in dst if f}
    full = {a: d * src_block.get(a, 1) for (a, f), d in zip(src, shape) if not f}
    for a, f in dst_block.items():
        if full[a] % f:
            raise ValueError(f"{op}: axis {a} of extent {full[a]} (shape {shape}) does not split by {f}")
    out = [f if f else full[a] // dst_block.get(a, 1) for a, f in dst]

    def body(*i):
        pos = {a if not f else a + "_": v for (a, f), v in zip(dst, i)}
        value = {a: pos[a] * f + pos[a.lower() + "_"] if f else pos[a]
                 for a, f in ((a, dst_block.get(a, 0)) for a in full)}
        return array(*[value[a] // src_block.get(a, 1) if not f else value[a.upper()] % f for a, f in src])

    return _injective(out, body, "T_layout_trans")


# ---------------------------------------------------------------- resize ---
_COORD_MODES = ("half_pixel", "align_corners", "asymmetric")


def resize(x: te.Tensor, size, layout: str = "NCHW", method: str = "nearest_neighbor",
           coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "") -> te.Tensor:
    """Resize the spatial axes of ``x`` to ``size = (out_h, out_w)``.

    The source coordinate of output row ``y`` is ``(y + 0.5) * H/out_h - 0.5``
    (``half_pixel``), ``y * (H-1)/(out_h-1)`` (``align_corners``) or
    ``y * H/out_h`` (``asymmetric``).  ``nearest_neighbor`` rounds it by
    ``rounding_method`` (default: ``"round"`` for align_corners,
    ``"round_prefer_ceil"`` for half_pixel, as torch's ``nearest-exact``, and
    ``"floor"`` for asymmetric, as torch's ``nearest``); ``bilinear``
    interpolates the four neighbours, clamped at the borders.  The compute is
    :func:`topi.image.resize2d`'s; this form keeps torch's nearest defaults (the ONNX importer's op).
    """
    op = "resize"
    shape = _shape(op, x)
    if layout not in ("NCHW", "NHWC") or len(shape) != 4:
        raise ValueError(f"{op}: layout must be 'NCHW' or 'NHWC' for a 4-D tensor, got {layout!r} and shape {shape}")
    size = tuple(size) if not isinstance(size, int) else (size, size)
    if len(size) != 2 or any(not isinstance(s, int) or s < 1 for s in size):
        raise ValueError(f"{op}: size must be two positive ints, got {size} (shape {shape})")
    if method not in ("nearest_neighbor", "bilinear"):
        raise ValueError(f"{op}: method must be 'nearest_neighbor' or 'bilinear', got {method!r}")
    if coordinate_transformation_mode not in _COORD_MODES:
        raise ValueError(f"{op}: coordinate_transformation_mode must be one of {_COORD_MODES}, "
                         f"got {coordinate_transformation_mode!r}")
    default = {"align_corners": "round", "half_pixel": "round_prefer_ceil"}
    rounding = rounding_method or default.get(coordinate_transformation_mode, "floor")
    return image_resize._resize(op, 2, x, None, size, layout, method, coordinate_transformation_mode, rounding,
                                -0.5, 0, 0.0, None)
