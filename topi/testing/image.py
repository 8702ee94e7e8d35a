"""numpy references of ``topi.image``'s sampling operators: each output point computed on its own."""

from __future__ import annotations

import itertools

import numpy as np


def _reflect(x: float, lo: float, hi: float) -> float:
    span = hi - lo
    if span <= 0:
        return lo
    if x < lo:
        n, r = divmod(lo - x, span)
        return lo + r if n % 2 == 0 else hi - r
    if x > hi:
        n, r = divmod(x - hi, span)
        return hi - r if n % 2 == 0 else lo + r
    return x


def _keys(t: float) -> list:
    a = -0.75
    w = []
    for u in (t + 1, t, 1 - t, 2 - t):
        u = abs(u)
        w.append(((a + 2) * u - (a + 3)) * u * u + 1 if u <= 1 else ((a * u - 5 * a) * u + 8 * a) * u - 4 * a)
    return w


def grid_sample_onnx_python(data, grid, mode="linear", padding_mode="zeros", align_corners=False,
                            pad_cubic_coords=True) -> np.ndarray:
    """Reference of ``topi.image.grid_sample_onnx`` (same arguments)."""
    n_, c_ = data.shape[:2]
    dims = data.shape[2:]
    k = len(dims)
    bounds = [(0.0, d - 1.0) if align_corners else (-0.5, d - 0.5) for d in dims]
    out = np.zeros(data.shape[:2] + grid.shape[1:-1], data.dtype)
    for n in range(n_):
        for o in np.ndindex(*grid.shape[1:-1]):
            xs = []
            for axis in range(k):
                g, d = float(np.float32(grid[(n, *o, k - 1 - axis)])), dims[axis]
                x = np.float32((g + 1) / 2 * (d - 1) if align_corners else ((g + 1) * d - 1) / 2)
                x = float(np.rint(x)) if mode == "nearest" else float(x)
                lo, hi = bounds[axis]
                if mode == "cubic" and not pad_cubic_coords:
                    pass
                elif padding_mode == "border" and not lo <= x <= hi:
                    x = min(max(x, 0.0), d - 1.0)
                elif padding_mode == "reflection":
                    x = _reflect(x, lo, hi)
                xs.append(x)
            if mode == "nearest":
                taps = [[(int(x), 1.0)] for x in xs]
            elif mode == "linear":
                taps = [[(int(np.floor(x)), 1 - (x - np.floor(x))), (int(np.floor(x)) + 1, x - np.floor(x))] for x in xs]
            else:
                taps = [list(zip(range(int(np.floor(x)) - 1, int(np.floor(x)) + 3), _keys(x - np.floor(x)))) for x in xs]
            for c in range(c_):
                total = 0.0
                for combo in itertools.product(*taps):
                    idx, w, inside = [], 1.0, True
                    for axis, (i, wi) in enumerate(combo):
                        d = dims[axis]
                        inside &= 0 <= i < d
                        if padding_mode == "reflection":
                            i = int(_reflect(float(i), *bounds[axis]))
                        idx.append(min(max(i, 0), d - 1))
                        w *= wi
                    if padding_mode == "zeros" and not inside:
                        continue
                    total += w * float(data[(n, c, *idx)])
                out[(n, c, *o)] = total
    return out


def col2im_python(data, image_shape, block_shape, dilations, pads, strides) -> np.ndarray:
    k = len(image_shape)
    block = int(np.prod(block_shape))
    blocks = [(image_shape[d] + pads[d] + pads[d + k] - dilations[d] * (block_shape[d] - 1) - 1) // strides[d] + 1
              for d in range(k)]
    out = np.zeros((data.shape[0], data.shape[1] // block) + tuple(image_shape), data.dtype)
    for bi, b in enumerate(np.ndindex(*block_shape)):
        for li, q in enumerate(np.ndindex(*blocks)):
            p = [q[d] * strides[d] - pads[d] + b[d] * dilations[d] for d in range(k)]
            if all(0 <= p[d] < image_shape[d] for d in range(k)):
                out[(slice(None), slice(None), *p)] += data[:, bi::block, li][:, : out.shape[1]]
    return out
