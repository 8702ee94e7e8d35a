"""Resizing images: classic ``topi.image.resize1d/2d/3d`` and ``crop_and_resize``.

Every output pixel maps each spatial axis back to a source coordinate
(``scale = in / out``)::

    half_pixel          (x + 0.5) * scale - 0.5
    pytorch_half_pixel  as half_pixel, 0 when out == 1
    tf_half_pixel_for_nn (x + 0.5) * scale
    align_corners       x * (in - 1) / (out - 1)
    asymmetric          x * scale
    tf_crop_and_resize  start * (in - 1) + x * (end - start) * (in - 1) / (out - 1)   (roi)

then samples there: ``nearest_neighbor`` rounds by ``rounding_method``
(default ``round`` with ``align_corners``, else ``floor``, as classic TVM),
``linear`` weights the 2^k neighbours, ``cubic`` the 4^k neighbours (Keys'
kernel with ``bicubic_alpha``; ``bicubic_exclude`` drops taps outside the
image and renormalises).  Read indices are clamped into the image, so any
schedule may vectorize the output; a ``tf_crop_and_resize`` coordinate
outside the image gives ``extrapolation_value``.  The spatial axes are the
``D``, ``H``, ``W`` of the layout, which may block other axes
(``NCHW1n16c``).  Reference: ``topi.testing.resize{1,2,3}d_python``.
"""

from __future__ import annotations

import itertools

import te
from te.errors import OpError
from topi import tag
from topi.utils import get_const_tuple, layout_axes

METHODS = ("nearest_neighbor", "linear", "cubic")
COORD_MODES = ("half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "align_corners", "asymmetric",
               "tf_crop_and_resize")
ROUNDINGS = ("round", "round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
_EPS = 1e-5
F32 = "float32"


def source_coord(x, n_in: int, n_out: int, mode: str, roi: tuple = (0.0, 1.0)):
    """The source coordinate of output position ``x`` (an int expression) along one axis."""
    x = x.astype(F32)
    scale = n_in / n_out
    if mode == "align_corners":
        return x * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    if mode == "asymmetric":
        return x * scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) * scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if n_out == 1:
            return te.const(0.5 * (start + end) * (n_in - 1), F32)
        return start * (n_in - 1) + x * ((end - start) * (n_in - 1) / (n_out - 1))
    if mode == "pytorch_half_pixel" and n_out == 1:
        return te.const(0.0, F32)
    return (x + 0.5) * scale - 0.5


def _clamp(i, n: int):
    return te.max(te.min(i, n - 1), 0)


def nearest_index(c, n: int, rounding: str):
    """The clamped pixel nearest to coordinate ``c`` under ``rounding``."""
    if rounding == "round":
        i = te.round(c)
    elif rounding == "round_prefer_floor":
        i = te.ceil(c - 0.5)
    elif rounding == "round_prefer_ceil":
        i = te.floor(c + 0.5)
    elif rounding == "ceil":
        i = te.ceil(c - _EPS)
    else:
        i = te.floor(c + _EPS)
    return _clamp(i.astype("int32"), n)


def _cubic_weights(t, alpha: float) -> list:
    """Keys' weights of the neighbours at offsets -1, 0, 1, 2 for fraction ``t``."""
    t2, t3 = t * t, t * t * t
    return [alpha * (t3 - 2 * t2 + t), (alpha + 2) * t3 - (3 + alpha) * t2 + 1,
            -(alpha + 2) * t3 + (3 + 2 * alpha) * t2 - alpha * t, -alpha * t3 + alpha * t2]


def _taps(c, n: int, method: str, alpha: float, exclude: bool) -> list:
    """``[(clamped index, weight)]`` of the neighbours of coordinate ``c`` on an axis of extent ``n``."""
    lo = te.floor(c)
    t = c - lo
    base = lo.astype("int32")
    if method == "linear":
        return [(_clamp(base, n), 1.0 - t), (_clamp(base + 1, n), t)]
    weights = _cubic_weights(t, alpha)
    if exclude:
        inside = [te.all(base + j - 1 >= 0, base + j - 1 < n) for j in range(4)]
        weights = [te.if_then_else(ok, w, te.const(0.0, F32)) for ok, w in zip(inside, weights)]
        total = weights[0] + weights[1] + weights[2] + weights[3]
        weights = [w / total for w in weights]
    return [(_clamp(base + j - 1, n), w) for j, w in enumerate(weights)]


def sample(read, coords: list, sizes: list, method: str, rounding: str = "floor", alpha: float = -0.5,
           exclude: bool = False):
    """The value at float ``coords`` (one per spatial axis) of the image ``read(indices)`` loads,
    as a float32 expression."""
    if method == "nearest_neighbor":
        return read([nearest_index(c, n, rounding) for c, n in zip(coords, sizes)]).astype(F32)
    total = None
    for combo in itertools.product(*[_taps(c, n, method, alpha, exclude) for c, n in zip(coords, sizes)]):
        weight = None
        for _, w in combo:
            weight = w if weight is None else weight * w
        term = read([i for i, _ in combo]).astype(F32) * weight
        total = term if total is None else total + term
    return total


def spatial_axes(op: str, data: te.Tensor, layout: str, rank: int) -> list[int]:
    """Positions of the ``rank`` spatial axes (``W``; ``H, W``; ``D, H, W``) of ``layout``."""
    axes = layout_axes(layout)
    dims = "DHW"[3 - rank:]
    if len(axes) != len(data.shape) or any(axes.count(d) != 1 for d in dims) or any(
            c.upper() in dims for c in axes if c.islower()):
        raise OpError(f"{op}: layout {layout!r} does not give the {rank} spatial axes {tuple(dims)} "
                      f"of data of shape {get_const_tuple(data.shape)}")
    return [axes.index(d) for d in dims]


def _check(op: str, method: str, mode: str, rounding: str) -> None:
    if method not in METHODS:
        raise OpError(f"{op}: method must be one of {METHODS}, got {method!r}")
    if mode not in COORD_MODES:
        raise OpError(f"{op}: coordinate_transformation_mode must be one of {COORD_MODES}, got {mode!r}")
    if rounding and rounding not in ROUNDINGS:
        raise OpError(f"{op}: rounding_method must be one of {ROUNDINGS}, got {rounding!r}")


def _resize(op: str, rank: int, data, roi, size, layout, method, mode, rounding, alpha, exclude,
            extrapolation_value, out_dtype):
    method = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic", "tricubic": "cubic"}.get(method, method)
    _check(op, method, mode, rounding)
    axes = spatial_axes(op, data, layout, rank)
    size = (size,) * rank if isinstance(size, int) else tuple(int(s) for s in size)
    if len(size) != rank or min(size) < 1:
        raise OpError(f"{op}: size must be {rank} positive extents, got {size}")
    roi = [float(r) for r in (roi if roi is not None else [])] or [0.0] * rank + [1.0] * rank
    if len(roi) != 2 * rank:
        raise OpError(f"{op}: roi must have {2 * rank} entries (starts, then ends), got {roi}")
    if method == "nearest_neighbor" and not rounding:
        rounding = "round" if mode == "align_corners" else "floor"
    shape = get_const_tuple(data.shape)
    sizes = [shape[a] for a in axes]
    out_shape = list(shape)
    for a, s in zip(axes, size):
        out_shape[a] = s
    out_dtype = out_dtype or data.dtype

    def body(*i):
        coords = [source_coord(i[a], n, m, mode, (roi[j], roi[j + rank]))
                  for j, (a, n, m) in enumerate(zip(axes, sizes, size))]

        def read(pos):
            idx = list(i)
            for a, p in zip(axes, pos):
                idx[a] = p
            return data(*idx)

        v = sample(read, coords, sizes, method, rounding, alpha, bool(exclude))
        if te.dtype.is_int(out_dtype):
            v = te.round(v)
        if mode == "tf_crop_and_resize":
            outside = te.any(*[te.any(c < 0.0, c > float(n - 1)) for c, n in zip(coords, sizes)])
            v = te.if_then_else(outside, te.const(float(extrapolation_value), F32), v)
        return v.astype(out_dtype)

    return te.compute(tuple(out_shape), body, name="resize", tag=tag.INJECTIVE)


def _resize_fn(rank: int, default_layout: str):
    name = f"resize{rank}d"

    def resize(data: te.Tensor, roi, size, layout: str = default_layout, method: str = "linear",
               coordinate_transformation_mode: str = "half_pixel", rounding_method: str = "",
               bicubic_alpha: float = -0.5, bicubic_exclude: int = 0, extrapolation_value: float = 0.0,
               out_dtype=None, output_shape=None) -> te.Tensor:  # noqa: ARG001  (static shapes only)
        return _resize(name, rank, data, roi, size, layout, method, coordinate_transformation_mode,
                       rounding_method, bicubic_alpha, bicubic_exclude, extrapolation_value, out_dtype)

    resize.__name__ = resize.__qualname__ = name
    resize.__doc__ = f"""Resize the {rank} spatial axes of ``data`` (layout ``{default_layout}`` by default) to ``size``
    (classic ``topi.image.{name}``; the rules in :mod:`topi.image.resize`).

    Parameters
    ----------
    data : te.Tensor
    roi : list of float
        Region of interest, {2 * rank} entries (starts, then ends), read with ``tf_crop_and_resize``.
    size : tuple of int
        The output extents of the spatial axes.
    layout : str
        Any layout holding the spatial axes unsplit (``NCHW``, ``NHWC``, ``NCHW1n16c``...).
    method : {{"nearest_neighbor", "linear", "cubic"}}
    coordinate_transformation_mode, rounding_method, bicubic_alpha, bicubic_exclude, extrapolation_value
        As the module docstring says.
    out_dtype : str, optional
        The output dtype (default ``data``'s; an integer output is rounded).

    Returns
    -------
    te.Tensor
        Stage ``resize`` (tag ``injective``).
    """
    return resize


resize1d = _resize_fn(1, "NCW")
resize2d = _resize_fn(2, "NCHW")
resize3d = _resize_fn(3, "NCDHW")


def crop_and_resize(data: te.Tensor, boxes: te.Tensor, box_indices: te.Tensor, crop_size, layout: str = "NCHW",
                    method: str = "bilinear", extrapolation_value: float = 0.0, out_dtype=None) -> te.Tensor:
    """Crop the boxes ``[y1, x1, y2, x2]`` (normalised) of the images ``box_indices`` and resize
    each crop to ``crop_size`` (classic ``topi.image.crop_and_resize``, TensorFlow's op).

    Output pixel ``(y, x)`` of box ``b`` samples image ``box_indices[b]`` at
    ``y1 * (H - 1) + y * (y2 - y1) * (H - 1) / (crop_h - 1)`` (and likewise x); a sample
    outside the image gives ``extrapolation_value``.

    Returns
    -------
    te.Tensor
        ``[num_boxes, crop_h, crop_w, C]`` (NHWC) or ``[num_boxes, C, crop_h, crop_w]`` (NCHW).
    """
    op = "crop_and_resize"
    method = {"bilinear": "linear"}.get(method, method)
    if method not in ("linear", "nearest_neighbor"):
        raise OpError(f"{op}: method must be 'bilinear' or 'nearest_neighbor', got {method!r}")
    if layout not in ("NCHW", "NHWC"):
        raise OpError(f"{op}: layout must be 'NCHW' or 'NHWC', got {layout!r}")
    h_ax, w_ax = spatial_axes(op, data, layout, 2)
    shape = get_const_tuple(data.shape)
    sizes = [shape[h_ax], shape[w_ax]]
    crop = [int(c) for c in crop_size]
    nb = get_const_tuple(boxes.shape)[0]
    c_ax = layout.index("C")
    out_shape = [nb, shape[c_ax], *crop] if layout == "NCHW" else [nb, *crop, shape[c_ax]]
    out_dtype = out_dtype or data.dtype

    def body(*i):
        b = i[0]
        pos = [i[h_ax], i[w_ax]]
        coords = []
        for j, (p, n, m) in enumerate(zip(pos, sizes, crop)):
            lo, hi = boxes(b, j).astype(F32), boxes(b, j + 2).astype(F32)
            n1 = te.const(float(n - 1), F32)
            coords.append(lo * n1 + p.astype(F32) * ((hi - lo) * n1 / te.const(float(m - 1), F32)) if m > 1
                          else (lo + hi) * 0.5 * n1)
        image = _clamp(box_indices(b).astype("int32"), shape[0])

        def read(yx):
            idx = list(i)
            idx[0], idx[h_ax], idx[w_ax] = image, yx[0], yx[1]
            return data(*idx)

        v = sample(read, coords, sizes, method, "round")
        outside = te.any(*[te.any(c < 0.0, c > float(n - 1)) for c, n in zip(coords, sizes)])
        return te.if_then_else(outside, te.const(float(extrapolation_value), F32), v).astype(out_dtype)

    return te.compute(tuple(out_shape), body, name="crop_and_resize", tag=tag.INJECTIVE)
