"""Winograd convolution F(m x m, 3 x 3) for 3x3, stride-1 conv2d (classic TVM's ``conv2d_winograd``).

A tile of ``m x m`` outputs comes from an ``alpha x alpha`` input tile,
``alpha = m + 2``, through three transforms (Lavin & Gray)::

    U = G g G^T                   kernel:  [alpha, alpha, K, C]   (once, at build, for a constant)
    V = B^T d B                   input:   [alpha, alpha, P, C]   (P tiles of the padded input)
    M[e, n] = V[e, n] @ U[e, n]   alpha^2 independent [P, C] x [C, K] products
    Y = A^T M A                   output:  m x m per tile

F(4x4, 3x3) does 36 multiplies per 16 outputs per channel pair where the
direct convolution does 144: the products cost 4x fewer flops, the transforms
are linear in the data.

Layouts here (``cb``: input channel block, ``bn``: output channel block; both
padded with zeros, so any channel count works)::

    data_vec[n, C/cb, nH*m + 2, nW*m + 2, cb]     padded, blocked NCHW input
    V[alpha, alpha, Pp, Cp]                       Pp: P padded to a multiple of ``mr``
    U[alpha, alpha, Kp/bn, Cp, bn]                winograd_kernel_transform(_numpy)
    M[alpha, alpha, Pp, Kp/bn, bn]                the batched products
    out[n, k, y, x]                               NCHW (tag ``injective``)

Each transform is written as explicit sums of the non-zero entries of its
matrix, selected by the (unrolled) tile index, so no multiply by zero reaches
the generated code.
"""

from __future__ import annotations

from fractions import Fraction as Fr

import te
from topi import tag
from topi.utils import get_const_tuple

WINOGRAD = "conv2d_winograd"  # tag of the batched product stage
WINOGRAD_PACK = "conv2d_winograd_pack"  # tag of the padded, blocked input (never inlined)

# Lavin & Gray's matrices (points 0, +-1, +-2, infinity for m = 4; 0, +-1, inf for m = 2).
_BT = {
    2: [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
    4: [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]],
}
_G = {
    2: [[1, 0, 0], [Fr(1, 2), Fr(1, 2), Fr(1, 2)], [Fr(1, 2), Fr(-1, 2), Fr(1, 2)], [0, 0, 1]],
    4: [[Fr(1, 4), 0, 0], [Fr(-1, 6), Fr(-1, 6), Fr(-1, 6)], [Fr(-1, 6), Fr(1, 6), Fr(-1, 6)],
        [Fr(1, 24), Fr(1, 12), Fr(1, 6)], [Fr(1, 24), Fr(-1, 12), Fr(1, 6)], [0, 0, 1]],
}
_AT = {
    2: [[1, 1, 1, 0], [0, 1, -1, -1]],
    4: [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
}
TILES = tuple(sorted(_BT))


def winograd_matrices(tile: int) -> tuple:
    """``(A^T, B^T, G)`` of F(tile x tile, 3 x 3) as lists of rows of exact numbers."""
    if tile not in _BT:
        raise ValueError(f"winograd: tile={tile} is not supported; use one of {list(TILES)}")
    return _AT[tile], _BT[tile], _G[tile]


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _combine(row, terms, dtype: str):
    """``sum(row[i] * terms(i))`` over the non-zero entries of ``row`` (+-1 as add/sub)."""
    out = None
    for i, c in enumerate(row):
        if c == 0:
            continue
        t = terms(i)
        if c == 1:
            out = t if out is None else out + t
        elif c == -1:
            out = -t if out is None else out - t
        else:
            t = t * te.const(float(c), dtype)
            out = t if out is None else out + t
    return out


def by_index(idx, rows, terms, dtype: str):
    """``select(idx == 0, combine(rows[0]), select(idx == 1, ...))``; folds once ``idx`` is unrolled."""
    expr = _combine(rows[-1], terms, dtype)
    for j in range(len(rows) - 2, -1, -1):
        expr = te.if_then_else(idx == j, _combine(rows[j], terms, dtype), expr)
    return expr


def winograd_geometry(dshape, pads, tile: int, rows: int = 0) -> tuple:
    """``(OH, OW, nH, nW, P)``: output size, tiles per column/row, tiles in all.

    With ``rows`` (tile rows per block of a fused schedule) ``nH`` is rounded up
    to a multiple of it: the extra tile rows read zero padding and are never
    stored, and every block of ``rows * nW`` tiles lies within one image."""
    n, _, h, w = dshape
    top, left, bottom, right = pads
    oh, ow = h + top + bottom - 2, w + left + right - 2
    nh, nw = _ceil(oh, tile), _ceil(ow, tile)
    if rows:
        nh = _ceil(nh, rows) * rows
    return oh, ow, nh, nw, n * nh * nw


def winograd_kernel_transform(kernel: te.Tensor, tile: int, bn: int | None = None, cp: int | None = None):
    """``U = G g G^T`` of an OIHW ``[K, C, 3, 3]`` kernel, blocked ``[alpha, alpha, Kp/bn, Cp, bn]``.

    ``bn`` (default ``K``) blocks the output channels, ``cp`` (default ``C``)
    pads the input channels; padded entries are zero.  On a constant kernel the
    graph's constant folding evaluates it once (see also
    :func:`winograd_kernel_transform_numpy`, its numpy twin)."""
    k, c, kh, kw = get_const_tuple(kernel.shape)
    if (kh, kw) != (3, 3):
        raise ValueError(f"winograd_kernel_transform: kernel {(k, c, kh, kw)} is not 3x3")
    _, _, g = winograd_matrices(tile)
    alpha, bn, cp = tile + 2, bn or k, cp or c
    dtype = kernel.dtype

    def body(e, n, kc, ci, kb):
        oc = kc * bn + kb
        src_ok = te.all(oc < k, ci < c)
        kk, cc = te.min(oc, k - 1), te.min(ci, c - 1)
        gk = by_index(e, g, lambda r1: by_index(n, g, lambda r2: kernel[kk, cc, r1, r2], dtype), dtype)
        return te.if_then_else(src_ok, gk, te.const(0.0, dtype))

    return te.compute((alpha, alpha, _ceil(k, bn), cp, bn), body, name="winograd_U",
                      tag="winograd_kernel_transform")


def winograd_kernel_transform_numpy(kernel, tile: int, bn: int | None = None, cp: int | None = None):
    """The numpy twin of :func:`winograd_kernel_transform` (float64 products, cast back)."""
    import numpy as np

    k, c, _, _ = kernel.shape
    _, _, g = winograd_matrices(tile)
    bn, cp = bn or k, cp or c
    gm = np.array(g, dtype=np.float64)
    r = kernel.shape[2]
    gk = gm @ kernel.astype(np.float64).reshape(k * c, r, r)  # [KC, alpha, s]: batched small products
    u = (gk @ gm.T).reshape(k, c, gm.shape[0], gm.shape[0]).transpose(2, 3, 0, 1)  # [alpha, alpha, K, C]
    kp = _ceil(k, bn) * bn
    full = np.zeros(u.shape[:2] + (kp, cp))
    full[:, :, :k, :c] = u
    full = full.reshape(u.shape[0], u.shape[1], kp // bn, bn, cp).transpose(0, 1, 2, 4, 3)
    return np.ascontiguousarray(full.astype(kernel.dtype))


def winograd_kernel_shape(kshape, tile: int, bn: int, cb: int) -> tuple:
    """Shape of the transformed kernel of an OIHW ``kshape``: ``[alpha, alpha, Kp/bn, Cp, bn]``."""
    k, c = kshape[0], kshape[1]
    return (tile + 2, tile + 2, _ceil(k, bn), _ceil(c, cb) * cb, bn)


def plain_data_shape(dshape) -> tuple:
    """The NCHW shape of ``[N, C, H, W]`` or blocked ``[N, C/b, H, W, b]`` data."""
    dshape = tuple(int(d) for d in dshape)
    if len(dshape) == 5:
        n, cc, h, w, b = dshape
        return n, cc * b, h, w
    return dshape


def winograd_pack_data(data: te.Tensor, pads: tuple, tile: int, cb: int, rows: int = 0):
    """``data_vec[n, Cp/cb, nH*m + 2, nW*m + 2, cb]``: zero-padded (borders, tiles, channels).

    ``data`` is NCHW or blocked NCHW[b]c (the layout of the convs around it);
    either is re-blocked by ``cb`` in this one stage::

        data_vec[b, cc, y, x, ci] = inside ? data[b, (cc*cb + ci) // db, y - top, x - left, (cc*cb + ci) % db] : 0
    """
    dshape = get_const_tuple(data.shape)
    n, c, h, w = plain_data_shape(dshape)
    top, left, _, _ = pads
    _, _, nh, nw, _ = winograd_geometry((n, c, h, w), pads, tile, rows)
    zero = te.const(0.0, data.dtype)
    db = dshape[4] if len(dshape) == 5 else 0

    def read(b, ch, y, x):
        return data[b, ch, y, x] if not db else data[b, ch // db, y, x, ch % db]

    def body(b, cc, y, x, ci):
        inside = te.all(y >= top, y < top + h, x >= left, x < left + w, cc * cb + ci < c)
        if db == cb and c % cb == 0:
            src = data[b, cc, y - top, x - left, ci]  # the same blocks: only padded
        else:
            ch = cc * cb + ci
            src = read(b, te.min(ch, c - 1) if c % cb else ch, y - top, x - left)
        return te.if_then_else(inside, src, zero)

    return te.compute((n, _ceil(c, cb), nh * tile + 2, nw * tile + 2, cb), body, name="winograd_data_vec",
                      tag=WINOGRAD_PACK)


def winograd_slots(oshape: tuple, mr: int, rows: int = 0) -> tuple:
    """``(Pp, slots)``: the tile slots of ``V`` and ``M``, and of each fused block.

    Apart (``rows`` 0) the ``P`` tiles in order, padded to a multiple of ``mr``
    (slots past ``P`` repeat tile ``P-1``), and ``slots`` is 0.  Fused, block ``i``
    (``rows`` tile rows, ``rows * nW`` tiles) owns slots ``[i*slots, (i+1)*slots)``,
    ``slots`` its tiles padded to a multiple of ``mr`` (repeating its last tile), so a
    block's register tiles never reach into the next block."""
    _, _, nh, nw, p_all = oshape
    if not rows:
        return _ceil(p_all, mr) * mr, 0
    slots = _ceil(rows * nw, mr) * mr
    return p_all // (rows * nw) * slots, slots


def _tile_of_slot(p, nw: int, rows: int, slots: int):
    """``(tile row over all images, tile column)`` of slot ``p`` of a fused layout."""
    j = p % slots
    if slots > rows * nw:
        j = te.min(j, rows * nw - 1)
    return p // slots * rows + j // nw, j % nw


def winograd_input_transform(data_vec: te.Tensor, oshape: tuple, tile: int, p_pad: int, rows: int = 0,
                             slots: int = 0):
    """``V[alpha, alpha, Pp, Cp] = B^T d B`` of every tile slot (:func:`winograd_slots`)."""
    _, ccn, _, _, cb = get_const_tuple(data_vec.shape)
    _, _, nh, nw, p_all = oshape
    _, bt, _ = winograd_matrices(tile)
    alpha, dtype = tile + 2, data_vec.dtype

    def tile_origin(p):
        if slots:
            ty, tx = _tile_of_slot(p, nw, rows, slots)
        else:
            if p_pad > p_all:
                p = te.min(p, p_all - 1)
            ty, tx = p // nw, p % nw  # ty: the tile row over all images (so a block of rows bounds y)
        b = ty // nh
        return b, (ty - b * nh) * tile, tx * tile

    def along_y(p, cc, e, x, ci):  # B^T applied along y
        b, y0, x0 = tile_origin(p)
        return by_index(e, bt, lambda r: data_vec[b, cc, y0 + r, x0 + x, ci], dtype)

    vt = te.compute((p_pad, ccn, alpha, alpha, cb), along_y, name="winograd_V_rows")
    return te.compute(
        (alpha, alpha, p_pad, ccn * cb),
        lambda e, nu, p, c: by_index(nu, bt, lambda r: vt[p, c // cb, e, r, c % cb], dtype),
        name="winograd_V")


def winograd_batched_gemm(v: te.Tensor, u: te.Tensor, out_dtype: str, attrs: dict | None = None):
    """``M[e, n, p, kc, kb] = sum_c V[e, n, p, c] * U[e, n, kc, c, kb]`` (tag ``conv2d_winograd``)."""
    alpha, _, pp, cp = get_const_tuple(v.shape)
    _, _, kcn, ucp, bn = get_const_tuple(u.shape)
    if ucp != cp:
        raise ValueError(f"conv2d_winograd: transformed kernel has {ucp} input channels, the input {cp}")
    c = te.reduce_axis((0, cp), name="c")
    return te.compute(
        (alpha, alpha, pp, kcn, bn),
        lambda e, n, p, kc, kb: te.sum(v[e, n, p, c].astype(out_dtype) * u[e, n, kc, c, kb].astype(out_dtype),
                                       axis=c),
        name="winograd_M", tag=WINOGRAD, attrs=attrs or {})


def winograd_output_transform(m: te.Tensor, oshape: tuple, batch: int, channels: int, tile: int,
                              out_block: int = 0, rows: int = 0, slots: int = 0):
    """``Y = A^T M A`` per tile, written NCHW ``out[n, k, y, x]`` or, with ``out_block``
    ``ob`` (dividing ``channels`` and the product's ``bn``), blocked
    ``out[n, k/ob, y, x, ob]`` (tag ``injective``).  ``rows``, ``slots``: the slot
    layout of ``M`` (:func:`winograd_slots`)."""
    oh, ow, nh, nw, _ = oshape
    _, _, pp, kcn, bn = get_const_tuple(m.shape)
    at, _, _ = winograd_matrices(tile)
    alpha, dtype = tile + 2, m.dtype
    cols = te.compute(  # A^T along the tile's rows
        (pp, kcn, tile, alpha, bn),
        lambda p, kc, vy, nu, kb: by_index(vy, at, lambda e: m[e, nu, p, kc, kb], dtype),
        name="winograd_Y_rows")
    y = te.compute(
        (pp, kcn, tile, tile, bn),
        lambda p, kc, vy, vx, kb: by_index(vx, at, lambda nu: cols[p, kc, vy, nu, kb], dtype),
        name="winograd_Y")

    def tile_of(b, yy, xx):
        ty, tx = b * nh + yy // tile, xx // tile  # ty: the tile row over all images
        if slots:
            blk = ty // rows  # (no ``%``: bounds stay one slot per tile)
            return blk * slots + (ty - blk * rows) * nw + tx
        return ty * nw + tx

    if not out_block:
        return te.compute(
            (batch, channels, oh, ow),
            lambda b, k, yy, xx: y[tile_of(b, yy, xx), k // bn, yy % tile, xx % tile, k % bn],
            name="conv2d_winograd_unpack", tag=tag.INJECTIVE)
    ob = out_block
    if channels % ob or bn % ob:
        raise ValueError(f"conv2d_winograd: output block {ob} must divide the channels ({channels}) and "
                         f"bn ({bn})")
    r = bn // ob
    return te.compute(
        (batch, channels // ob, oh, ow, ob),
        lambda b, kc, yy, xx, kb: y[tile_of(b, yy, xx), kc // r, yy % tile, xx % tile, kc % r * ob + kb],
        name="conv2d_winograd_unpack", tag=tag.INJECTIVE)


def check_winograd_args(dshape, kshape, stride, dilation, groups: int = 1) -> None:
    """Raise ``ValueError`` unless the convolution is 3x3, stride 1, undilated, ungrouped."""
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"conv2d_winograd: expects NCHW data and an OIHW kernel, got {dshape} and {kshape}")
    if tuple(kshape[2:]) != (3, 3) or tuple(stride) != (1, 1) or tuple(dilation) != (1, 1) or groups != 1:
        raise ValueError(f"conv2d_winograd: only 3x3, stride 1, dilation 1, groups 1 convolutions; got kernel "
                         f"{tuple(kshape[2:])}, stride {tuple(stride)}, dilation {tuple(dilation)}, "
                         f"groups {groups}: use topi.x86.conv2d_nchw_x86")
    if dshape[1] != kshape[1]:
        raise ValueError(f"conv2d_winograd: data has {dshape[1]} channels, kernel expects {kshape[1]}")


def conv2d_winograd_nchw(data: te.Tensor, kernel: te.Tensor, padding, tile: int = 4, cb: int = 16,
                         bn: int = 64, mr: int = 4, out_dtype: str | None = None, attrs: dict | None = None,
                         channels: int | None = None, out_block: int = 0, rows: int = 0):
    """NCHW (or NCHW[x]c) 3x3 stride-1 conv by Winograd F(tile x tile, 3x3).

    Parameters
    ----------
    data : te.Tensor
        ``[N, C, H, W]`` or blocked ``[N, C/b, H, W, b]``.
    kernel : te.Tensor
        OIHW ``[K, C, 3, 3]`` (transformed in a stage), or pre-transformed
        ``[alpha, alpha, Kp/bn, Cp, bn]`` (:func:`winograd_kernel_transform_numpy`
        with this ``tile``, ``bn`` and ``Cp = ceil(C/cb)*cb``); the output then
        has ``Kp`` channels.
    padding : int, tuple or str
        As in :func:`topi.nn.conv2d_nchw`.
    tile, cb, bn, mr : int
        Output tile (2 or 4), input/output channel blocks, tiles per register
        row block (the tile slots are padded to a multiple of it: :func:`winograd_slots`).
    channels : int, optional
        Output channels K of a pre-transformed kernel (default ``Kp``).
    out_block : int
        0: NCHW output; else ``[N, K/out_block, OH, OW, out_block]``.
    rows : int
        0: the stages run apart (``P`` padded to a multiple of ``mr``); else a
        fused schedule takes ``rows`` tile rows at a time through all stages, and
        the tile rows are padded to a multiple of it (see :func:`winograd_geometry`).
    """
    from topi.nn.conv2d import get_pad_tuple

    dshape = plain_data_shape(get_const_tuple(data.shape))
    kshape = get_const_tuple(kernel.shape)
    alpha, cp = tile + 2, _ceil(dshape[1], cb) * cb
    if len(kshape) == 5:
        if kshape[:2] != (alpha, alpha) or kshape[3] != cp or kshape[4] != bn:
            raise ValueError(f"conv2d_winograd: pre-transformed kernel {kshape} does not match tile={tile}, "
                             f"bn={bn}, Cp={cp}: expected ({alpha}, {alpha}, Kp/{bn}, {cp}, {bn})")
        channels = channels or kshape[2] * bn
        u = kernel
    else:
        check_winograd_args(dshape, kshape, (1, 1), (1, 1))
        channels = kshape[0]
        u = winograd_kernel_transform(kernel, tile, bn, cp)
    pads = get_pad_tuple(padding, (3, 3), "conv2d_winograd")
    oshape = winograd_geometry(dshape, pads, tile, rows)
    p_pad, slots = winograd_slots(oshape, mr, rows)
    dvec = winograd_pack_data(data, pads, tile, cb, rows)
    v = winograd_input_transform(dvec, oshape, tile, p_pad, rows, slots)
    m = winograd_batched_gemm(v, u, out_dtype or data.dtype, attrs)
    return winograd_output_transform(m, oshape, dshape[0], channels, tile, out_block, rows, slots)
