"""Sampling an image at arbitrary points: ``grid_sample_onnx`` (ONNX GridSample, torch's ``grid_sample``);
also ``col2im``, ``deform_conv2d`` and ONNX's ``roi_align``.

``data [N, C, D1..Dk]`` is sampled at ``grid [N, O1..Om, k]`` (coordinates in
``[-1, 1]``, x first: the last spatial axis); ``out [N, C, O1..Om]``::

    x_pix = (x + 1) / 2 * (D - 1)          align_corners
    x_pix = ((x + 1) * D - 1) / 2          otherwise

``nearest`` rounds half to even and reads one pixel, ``linear`` weights the
2^k neighbours, ``cubic`` the 4^k neighbours (Keys' kernel, a = -0.75).  A
coordinate outside ``[lo, hi]`` (``[0, D - 1]`` with ``align_corners``, else
``[-0.5, D - 0.5]``) is clamped (``border``) or reflected (``reflection``)
first; a neighbour outside the image reads 0 (``zeros``), the edge pixel
(``border``) or its mirror (``reflection``).  Every read index is clamped into
the image.  Reference: ``topi.testing.grid_sample_onnx_python``.
"""

from __future__ import annotations

import itertools
import math

import te
from topi.utils import get_const_tuple, unravel_index

__all__ = ["col2im", "deform_conv2d", "grid_sample_onnx", "roi_align"]

MODES = ("nearest", "linear", "cubic")
PADDINGS = ("zeros", "border", "reflection")
CUBIC_A = -0.75


def _reflect(x, lo: float, hi: float):
    """``x`` reflected at ``lo`` and ``hi`` until inside (float expressions)."""
    span = hi - lo
    if span <= 0:
        return te.const(lo, x.dtype)
    lo_c, hi_c = te.const(lo, x.dtype), te.const(hi, x.dtype)

    def folds(d):
        """(r, even): ``d`` past the border is ``n`` spans and ``r``; an even ``n`` keeps the side."""
        n = te.floor(d / span)
        return d - n * span, te.fmod(n, te.const(2.0, x.dtype)) == te.const(0.0, x.dtype)

    r_lo, even_lo = folds(lo_c - x)
    r_hi, even_hi = folds(x - hi_c)
    below = te.if_then_else(even_lo, lo_c + r_lo, hi_c - r_lo)
    above = te.if_then_else(even_hi, hi_c - r_hi, lo_c + r_hi)
    return te.if_then_else(x < lo_c, below, te.if_then_else(x > hi_c, above, x))


def _cubic(t, k: int):
    """Keys' cubic weight of neighbour ``k`` (0..3 for offsets -1..2) at fraction ``t``."""
    a = CUBIC_A
    if k == 0:
        u = t + 1.0
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    if k == 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1.0
    if k == 2:
        u = 1.0 - t
        return ((a + 2) * u - (a + 3)) * u * u + 1.0
    u = 2.0 - t
    return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a


def grid_sample_onnx(data: te.Tensor, grid: te.Tensor, mode: str = "linear", padding_mode: str = "zeros",
                     align_corners: bool = False, pad_cubic_coords: bool = True) -> te.Tensor:
    """Sample ``data`` at the points of ``grid [N, O1..Om, k]`` (ONNX GridSample's and torch's
    conventions; see the module docstring).  Classic ``topi.image.grid_sample`` takes the
    coordinates on axis 1 (:mod:`topi.image.grid`).  ``pad_cubic_coords=False``: a cubic sample's
    coordinate is not clamped or reflected, only each of its taps (torch and classic TVM; ONNX
    pads the coordinate too)."""
    if mode not in MODES or padding_mode not in PADDINGS:
        raise ValueError(f"grid_sample: mode {mode!r} / padding_mode {padding_mode!r} not in {MODES} / {PADDINGS}")
    dshape, gshape = get_const_tuple(data.shape), get_const_tuple(grid.shape)
    k = len(dshape) - 2
    if gshape[-1] != k or gshape[0] != dshape[0] or len(gshape) != k + 2:
        raise ValueError(f"grid_sample: grid {gshape} does not sample {k}-D data {dshape}")
    dims = dshape[2:]
    cdt = "float32"
    bounds = [(0.0, d - 1.0) if align_corners else (-0.5, d - 0.5) for d in dims]

    def coord(n, o, axis):
        g = grid(n, *o, k - 1 - axis).astype(cdt)
        d = dims[axis]
        x = (g + 1.0) * 0.5 * (d - 1) if align_corners else ((g + 1.0) * d - 1.0) * 0.5
        if mode == "nearest":
            x = te.round(x)
        lo, hi = bounds[axis]
        if mode == "cubic" and not pad_cubic_coords:
            return x
        if padding_mode == "border":
            x = te.if_then_else(te.any(x < lo, x > hi), te.max(te.min(x, te.const(d - 1.0, cdt)),
                                                                 te.const(0.0, cdt)), x)
        elif padding_mode == "reflection":
            x = _reflect(x, lo, hi)
        return x

    def index(i, axis):
        """(clamped read index, inside) of integer position ``i`` on ``axis``."""
        d = dims[axis]
        inside = te.all(i >= 0, i < d)
        if padding_mode == "reflection":
            lo, hi = bounds[axis]
            i = _reflect(i.astype(cdt), lo, hi).astype("int32")
        return te.max(te.min(i, d - 1), 0), inside

    def body(n, c, *o):
        xs = [coord(n, o, axis) for axis in range(k)]
        if mode == "nearest":
            taps = [[(x.astype("int32"), None)] for x in xs]
        else:
            taps = []
            for x in xs:
                x0 = te.floor(x)
                t = x - x0
                base = x0.astype("int32")
                if mode == "linear":
                    taps.append([(base, 1.0 - t), (base + 1, t)])
                else:
                    taps.append([(base + (j - 1), _cubic(t, j)) for j in range(4)])
        total = None
        for combo in itertools.product(*taps):
            reads, weight, conds = [], None, []
            for axis, (i, w) in enumerate(combo):
                idx, inside = index(i, axis)
                reads.append(idx)
                conds.append(inside)
                if w is not None:
                    weight = w if weight is None else weight * w
            v = data(n, c, *reads)
            if padding_mode == "zeros":
                v = te.if_then_else(te.all(*conds), v, te.const(0, data.dtype))
            term = v if weight is None else v * weight.astype(data.dtype)
            total = term if total is None else total + term
        return total

    return te.compute(dshape[:2] + gshape[1:-1], body, name="T_grid_sample", tag="injective")


def col2im(data: te.Tensor, image_shape: tuple, block_shape: tuple, dilations: tuple, pads: tuple,
           strides: tuple) -> te.Tensor:
    """The image whose sliding blocks are the columns of ``data [N, C * prod(block), L]``
    (ONNX Col2Im, torch ``fold``): overlapping entries add.  Written as a gather: each output
    pixel sums, over the block offsets, the column that covers it (if any)::

        out[n, c, p] = sum_b data[n, c * B + b, l(p, b)]   l_d = (p_d + pad_d - b_d * dil_d) / stride_d
    """
    n_, cb, length = get_const_tuple(data.shape)
    k = len(image_shape)
    block = int(math.prod(block_shape))
    blocks = [(image_shape[d] + pads[d] + pads[d + k] - dilations[d] * (block_shape[d] - 1) - 1) // strides[d] + 1
              for d in range(k)]
    if cb % block or length != int(math.prod(blocks)):
        raise ValueError(f"col2im: input {(n_, cb, length)} does not hold blocks {tuple(block_shape)} over "
                         f"{blocks} positions")
    c_ = cb // block
    r = te.reduce_axis((0, block), name="b")

    def body(n, c, *p):
        b = unravel_index(r.var, block_shape)
        conds, flat = [], None
        for d in range(k):
            num = p[d] + pads[d] - b[d] * dilations[d]
            q = num // strides[d]
            conds += [num >= 0, num % strides[d] == 0, q < blocks[d]]
            q = te.max(te.min(q, blocks[d] - 1), 0)
            flat = q if flat is None else flat * blocks[d] + q
        v = data(n, c * block + r.var, flat)
        return te.sum(te.if_then_else(te.all(*conds), v, te.const(0, data.dtype)), axis=r)

    return te.compute((n_, c_) + tuple(image_shape), body, name="T_col2im")


def _bilinear_zero(data, lead: tuple, y, x, height: int, width: int):
    """``data[lead..., y, x]`` interpolated from its four neighbours; a neighbour outside the
    image reads 0 (``y``, ``x`` float expressions)."""
    y0, x0 = te.floor(y), te.floor(x)
    ly, lx = y - y0, x - x0
    yi, xi = y0.astype("int32"), x0.astype("int32")
    total = None
    for dy, wy in ((0, 1.0 - ly), (1, ly)):
        for dx, wx in ((0, 1.0 - lx), (1, lx)):
            yy, xx = yi + dy, xi + dx
            inside = te.all(yy >= 0, yy < height, xx >= 0, xx < width)
            v = data(*lead, te.max(te.min(yy, height - 1), 0), te.max(te.min(xx, width - 1), 0))
            term = te.if_then_else(inside, v * (wy * wx).astype(data.dtype), te.const(0, data.dtype))
            total = term if total is None else total + term
    return total


def deform_conv2d(data: te.Tensor, weight: te.Tensor, offset: te.Tensor, mask: te.Tensor | None, strides: tuple,
                  pads: tuple, dilations: tuple, groups: int = 1, offset_groups: int = 1) -> te.Tensor:
    """Deformable convolution (ONNX DeformConv, torchvision ``deform_conv2d``): each kernel tap
    reads the input bilinearly at its position plus a learned offset, scaled by ``mask``::

        out[n, o, i, j] = sum_{c, kh, kw} w[o, c, kh, kw] * mask[n, g', kh, kw, i, j]
                          * x[n, c, i * sh - ph + kh * dh + dy, j * sw - pw + kw * dw + dx]

    with ``(dy, dx) = offset[n, g', kh, kw, :, i, j]`` for the offset group ``g'`` of ``c``."""
    n_, c_, h_, w_ = get_const_tuple(data.shape)
    oc, cg, kh_, kw_ = get_const_tuple(weight.shape)
    oh, ow = get_const_tuple(offset.shape)[2:]
    per_offset = c_ // offset_groups
    per_group_out = oc // groups
    rc = te.reduce_axis((0, cg), name="rc")
    rh = te.reduce_axis((0, kh_), name="rh")
    rw = te.reduce_axis((0, kw_), name="rw")

    def body(n, o, i, j):
        c = (o // per_group_out) * cg + rc
        og = c // per_offset
        tap = rh * kw_ + rw
        dy = offset(n, (og * kh_ * kw_ + tap) * 2, i, j)
        dx = offset(n, (og * kh_ * kw_ + tap) * 2 + 1, i, j)
        y = (i * strides[0] - pads[0] + rh * dilations[0]).astype(offset.dtype) + dy
        x = (j * strides[1] - pads[1] + rw * dilations[1]).astype(offset.dtype) + dx
        v = _bilinear_zero(data, (n, c), y, x, h_, w_)
        if mask is not None:
            v = v * mask(n, og * kh_ * kw_ + tap, i, j)
        return te.sum(v * weight(o, rc, rh, rw), axis=[rc, rh, rw])

    return te.compute((n_, oc, oh, ow), body, name="T_deform_conv2d")


def roi_align(data: te.Tensor, rois: te.Tensor, batch_indices: te.Tensor, pooled: tuple, spatial_scale: float,
              sampling_ratio: int, mode: str = "avg", half_pixel: bool = True) -> te.Tensor:
    """RoIAlign (ONNX RoiAlign, Mask R-CNN) with a fixed ``sampling_ratio``: each output bin of
    roi ``r`` averages (``mode="avg"``) or maxes ``sampling_ratio^2`` bilinear samples of the
    image ``batch_indices[r]``; ``half_pixel`` shifts the roi by half a pixel, as ONNX's
    ``coordinate_transformation_mode`` says.  A sample more than a pixel outside reads 0."""
    n_, c_, h_, w_ = get_const_tuple(data.shape)
    r_ = get_const_tuple(rois.shape)[0]
    ph_, pw_ = pooled
    g = sampling_ratio
    iy = te.reduce_axis((0, g), name="iy")
    ix = te.reduce_axis((0, g), name="ix")
    f = "float32"
    offset = 0.5 if half_pixel else 0.0

    def coords(r, k):
        return rois(r, k).astype(f) * spatial_scale - offset

    def sample(r, c, b, y, x):
        outside = te.any(y < -1.0, y > float(h_), x < -1.0, x > float(w_))
        y, x = te.max(y, te.const(0.0, f)), te.max(x, te.const(0.0, f))
        y0, x0 = te.floor(y).astype("int32"), te.floor(x).astype("int32")
        y_top, x_top = y0 >= h_ - 1, x0 >= w_ - 1
        y0 = te.if_then_else(y_top, h_ - 1, y0)
        x0 = te.if_then_else(x_top, w_ - 1, x0)
        y = te.if_then_else(y_top, y0.astype(f), y)
        x = te.if_then_else(x_top, x0.astype(f), x)
        y1 = te.if_then_else(y_top, y0, y0 + 1)
        x1 = te.if_then_else(x_top, x0, x0 + 1)
        ly, lx = y - y0.astype(f), x - x0.astype(f)
        at = lambda yy, xx: data(b, c, yy, xx).astype(f)  # noqa: E731
        terms = [(1.0 - ly) * (1.0 - lx) * at(y0, x0), (1.0 - ly) * lx * at(y0, x1),
                 ly * (1.0 - lx) * at(y1, x0), ly * lx * at(y1, x1)]
        value = (terms[0] + terms[1] + terms[2] + terms[3]) if mode == "avg" else \
            te.max(te.max(terms[0], terms[1]), te.max(terms[2], terms[3]))
        return te.if_then_else(outside, te.const(0.0, f), value)

    def body(r, c, ph, pw):
        b = te.max(te.min(batch_indices(r).astype("int32"), n_ - 1), 0)
        start_w, start_h = coords(r, 0), coords(r, 1)
        width, height = coords(r, 2) - start_w, coords(r, 3) - start_h
        if not half_pixel:
            width, height = te.max(width, te.const(1.0, f)), te.max(height, te.const(1.0, f))
        bin_h, bin_w = height / float(ph_), width / float(pw_)
        y = start_h + ph.astype(f) * bin_h + (iy.var.astype(f) + 0.5) * bin_h / float(g)
        x = start_w + pw.astype(f) * bin_w + (ix.var.astype(f) + 0.5) * bin_w / float(g)
        v = sample(r, c, b, y, x)
        if mode == "avg":
            return te.sum(v / float(g * g), axis=[iy, ix])
        return te.max(v, axis=[iy, ix])

    out = te.compute((r_, c_, ph_, pw_), body, name="T_roi_align")
    return te.compute(out.shape, lambda *i: out(*i).astype(data.dtype), name="T_roi_align_cast")
