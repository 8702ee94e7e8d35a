"""Sampling an image at arbitrary points: ``grid_sample`` (ONNX GridSample, torch's ``grid_sample``).

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
the image.  Reference: ``topi.testing.grid_sample_python``.
"""

from __future__ import annotations

import itertools

import te
from topi.utils import get_const_tuple

__all__ = ["grid_sample"]

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


def grid_sample(data: te.Tensor, grid: te.Tensor, mode: str = "linear", padding_mode: str = "zeros",
                align_corners: bool = False) -> te.Tensor:
    """Sample ``data`` at the points of ``grid`` (see the module docstring)."""
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
