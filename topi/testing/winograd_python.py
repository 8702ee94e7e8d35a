"""numpy reference of Winograd F(m x m, 3 x 3) convolution (``topi.nn.winograd``)."""

from __future__ import annotations

import numpy as np

from topi.nn.winograd import winograd_matrices


def winograd_matrices_numpy(tile: int) -> tuple:
    """``(A^T, B^T, G)`` as float64 arrays."""
    return tuple(np.array(m, dtype=np.float64) for m in winograd_matrices(tile))


def conv2d_winograd_nchw_python(data: np.ndarray, kernel: np.ndarray, padding: tuple, tile: int = 4) -> np.ndarray:
    """3x3 stride-1 NCHW conv by Winograd in float64: pad, tile, ``A^T [(G g G^T) . (B^T d B)] A``.

    ``padding`` is ``(top, left, bottom, right)``; the result equals
    ``topi.testing.conv2d_nchw_python`` up to rounding.
    """
    at, bt, g = winograd_matrices_numpy(tile)
    n, c, h, w = data.shape
    k = kernel.shape[0]
    top, left, bottom, right = padding
    oh, ow = h + top + bottom - 2, w + left + right - 2
    nh, nw = -(-oh // tile), -(-ow // tile)
    d = np.zeros((n, c, nh * tile + 2, nw * tile + 2))
    d[:, :, top:top + h, left:left + w] = data
    u = np.einsum("ar,kcrs,bs->abkc", g, kernel.astype(np.float64), g)
    out = np.zeros((n, k, nh * tile, nw * tile))
    for ty in range(nh):
        for tx in range(nw):
            patch = d[:, :, ty * tile:ty * tile + tile + 2, tx * tile:tx * tile + tile + 2]
            v = np.einsum("ar,ncrs,bs->abnc", bt, patch, bt)
            m = np.einsum("abnc,abkc->abnk", v, u)
            out[:, :, ty * tile:(ty + 1) * tile, tx * tile:(tx + 1) * tile] = np.einsum("ia,abnk,jb->nkij", at, m, at)
    return out[:, :, :oh, :ow].astype(data.dtype)
