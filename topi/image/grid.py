"""Classic ``topi.image.affine_grid`` and ``grid_sample`` (sampling grids with the coordinates on axis 1).

``affine_grid(theta [N, 2, 3], (H, W))`` is the grid ``[N, 2, H, W]`` of the
target pixels mapped by each affine transform, over ``[-1, 1]`` corner to corner::

    grid[n, k, i, j] = theta[n, k, 0] * x_j + theta[n, k, 1] * y_i + theta[n, k, 2]
    x_j = -1 + 2 j / (W - 1),   y_i = -1 + 2 i / (H - 1)

``grid_sample(data, grid [N, k, O1..Ok])`` samples ``data`` there: the same
operator as :func:`topi.image.sampling.grid_sample_onnx` (whose grid holds the
coordinates last), the grid read through a transposition that is inlined; a bicubic
sample pads each tap, not its coordinate (as torch).
"""

from __future__ import annotations

import te
from te.errors import OpError
from topi import tag
from topi.image.sampling import grid_sample_onnx
from topi.utils import get_const_tuple

METHODS = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic"}
LAYOUTS = ("NCHW", "NCDHW")


def affine_grid(data: te.Tensor, target_shape) -> te.Tensor:
    """The sampling grid ``[N, 2, H, W]`` of the affine transforms ``data [N, 2, 3]`` over a
    target of ``target_shape = (H, W)`` (classic ``topi.image.affine_grid``)."""
    shape = get_const_tuple(data.shape)
    if len(shape) != 3 or shape[1:] != (2, 3) or len(target_shape) != 2:
        raise OpError(f"affine_grid: expects data [N, 2, 3] and target_shape (H, W), got {shape} and "
                      f"{tuple(target_shape)}")
    h, w = (int(d) for d in target_shape)
    dtype = data.dtype

    def step(n: int) -> float:
        return 2.0 / (n - 1) if n > 1 else 0.0

    def body(n, k, i, j):
        y = te.const(-1.0, dtype) + i.astype(dtype) * step(h)
        x = te.const(-1.0, dtype) + j.astype(dtype) * step(w)
        return data[n, k, 0] * x + data[n, k, 1] * y + data[n, k, 2]

    return te.compute((shape[0], 2, h, w), body, name="affine_grid", tag=tag.INJECTIVE)


def grid_sample(data: te.Tensor, grid: te.Tensor, method: str = "bilinear", layout: str = "NCHW",
                padding_mode: str = "zeros", align_corners: bool = True) -> te.Tensor:
    """Sample ``data`` (NCHW or NCDHW) at the points of ``grid [N, k, O1..Ok]`` (classic
    ``topi.image.grid_sample``; coordinates in ``[-1, 1]``, x first).

    Parameters
    ----------
    data : te.Tensor
    grid : te.Tensor
        ``[N, 2, H', W']`` (2-D) or ``[N, 3, D', H', W']`` (3-D).
    method : {"nearest", "bilinear", "bicubic"}
        (bicubic: 2-D only, Keys' kernel with a = -0.75, as torch).
    layout : {"NCHW", "NCDHW"}
    padding_mode : {"zeros", "border", "reflection"}
    align_corners : bool

    Returns
    -------
    te.Tensor
        ``[N, C, O1..Ok]``.
    """
    if method not in METHODS or layout not in LAYOUTS:
        raise OpError(f"grid_sample: method must be one of {tuple(METHODS)} and layout one of {LAYOUTS}, "
                      f"got {method!r} and {layout!r}")
    gshape = get_const_tuple(grid.shape)
    k = len(layout) - 2
    if len(gshape) != k + 2 or gshape[1] != k:
        raise OpError(f"grid_sample: grid must be [N, {k}, ...] for {layout} data, got {gshape}")
    if method == "bicubic" and k == 3:
        raise OpError("grid_sample: bicubic sampling is 2-D only (NCHW)")
    last = te.compute((gshape[0], *gshape[2:], k), lambda n, *o: grid(n, o[-1], *o[:-1]),
                      name="grid_coords_last", tag=tag.INJECTIVE)
    return grid_sample_onnx(data, last, METHODS[method], padding_mode, bool(align_corners), pad_cubic_coords=False)
