"""Bit-serial and binary operators (classic ``topi.nn.bitpack``, ``bitserial_conv2d_*``,
``binarize_pack``, ``binary_dense``).

Low-bit integers are packed into words one bit-plane at a time: word ``w`` of bit-plane ``b``
holds bit ``b`` of ``L`` consecutive elements (``L`` the word's width), the first element in
the most significant bit.  A product of two low-bit operands is then a sum over bit-planes of
``popcount(a_word & w_word) << (ba + bw)`` (unipolar weights, whose bit 1 means +1 and 0 means
-1: ``(popcount(a & w) - popcount(a & ~w)) << ba``)::

    packed[..., b, ..., w, ...] = OR_k ((data[..., w*L + k, ...] >> b) & 1) << (L - 1 - k)
    conv[n, f, y, x] = sum_{cw, ky, kx, ba, bw} popcount(A[n, ba, cw, y+ky, x+kx] & W[f, bw, cw, ky, kx]) << (ba + bw)

A packed axis whose extent is not a multiple of ``L`` is padded with zero elements, which add
nothing to either popcount.
"""

from __future__ import annotations

import te
from te import dtype as dt
from topi import tag
from topi.nn.conv2d import as_pair, get_pad_tuple
from topi.nn.pad import pad
from topi.utils import get_const_tuple

WIDTHS = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def bitpack(data, bits: int, pack_axis: int, bit_axis: int, pack_type: str = "uint32", name: str = "QuantizeInput"):
    """Bit-planes ``0 .. bits-1`` of the integer ``data`` packed along ``pack_axis`` into
    ``pack_type`` words; the bit-plane axis is inserted at ``bit_axis`` of the result."""
    if pack_type not in WIDTHS:
        raise ValueError(f"bitpack: pack_type={pack_type!r} must be one of {sorted(WIDTHS)}")
    if not (dt.is_int(data.dtype) or dt.is_unsigned(data.dtype)):
        raise TypeError(f"bitpack: expects an integer tensor, got {data.dtype} ('{data.name}')")
    width, shape = WIDTHS[pack_type], list(get_const_tuple(data.shape))
    extent = shape[pack_axis]
    out = list(shape)
    out[pack_axis] = _ceil(extent, width)
    out.insert(bit_axis, bits)
    src_axis = pack_axis + 1 if bit_axis <= pack_axis else pack_axis
    one = te.const(1, pack_type)

    def body(*idx):
        b = idx[bit_axis]
        rest = [i for k, i in enumerate(idx) if k != bit_axis]
        word = None
        for k in range(width):
            src = list(rest)
            src[pack_axis] = idx[src_axis] * width + k
            bit = te.bitwise_and(te.shift_right(data(*src).astype(pack_type), b.astype(pack_type)), one)
            if extent % width:
                bit = te.if_then_else(src[pack_axis] < extent, bit, te.const(0, pack_type))
            term = te.shift_left(bit, te.const(width - 1 - k, pack_type))
            word = term if word is None else te.bitwise_or(word, term)
        return word

    return te.compute(tuple(out), body, name=name, tag="bitpack")


def _bitserial(op, data, kernel, stride, padding, activation_bits, weight_bits, pack_dtype, out_dtype, unipolar,
               layout: str):
    dshape, kshape = get_const_tuple(data.shape), get_const_tuple(kernel.shape)
    if len(dshape) != 4 or len(kshape) != 4:
        raise ValueError(f"{op}: data {dshape} and kernel {kshape} must both be 4-D")
    nchw = layout == "NCHW"
    ic, kic = (dshape[1], kshape[1]) if nchw else (dshape[3], kshape[2])
    if ic != kic:
        raise ValueError(f"{op}: argument kernel of shape {kshape} expects {kic} input channels, but data of "
                         f"shape {dshape} has {ic}")
    kh, kw = kshape[2:] if nchw else kshape[:2]
    (sh, sw) = as_pair(stride, op, "stride")
    top, left, bottom, right = get_pad_tuple(padding, (kh, kw), op)
    if nchw:
        data = pad(data, (0, 0, top, left), (0, 0, bottom, right)) if top + left + bottom + right else data
        a = bitpack(data, activation_bits, pack_axis=1, bit_axis=1, pack_type=pack_dtype)  # [N, ba, CW, H, W]
        w = bitpack(kernel, weight_bits, pack_axis=1, bit_axis=1, pack_type=pack_dtype, name="QuantizeWeight")
        n, _, cw, hp, wp = get_const_tuple(a.shape)
        oc = kshape[0]
    else:
        data = pad(data, (0, top, left, 0), (0, bottom, right, 0)) if top + left + bottom + right else data
        a = bitpack(data, activation_bits, pack_axis=3, bit_axis=4, pack_type=pack_dtype)  # [N, H, W, CW, ba]
        w = bitpack(kernel, weight_bits, pack_axis=2, bit_axis=4, pack_type=pack_dtype,
                    name="QuantizeWeight")  # [KH, KW, CW, F, bw]
        n, hp, wp, cw, _ = get_const_tuple(a.shape)
        oc = kshape[3]
    oh, ow = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    rc, ry, rx = te.reduce_axis((0, cw), "rc"), te.reduce_axis((0, kh), "ry"), te.reduce_axis((0, kw), "rx")
    ba, bw = te.reduce_axis((0, activation_bits), "b1"), te.reduce_axis((0, weight_bits), "b2")

    def term(av, wv, shift):
        if unipolar:
            v = te.popcount(te.bitwise_and(av, wv)).astype(out_dtype) - \
                te.popcount(te.bitwise_and(av, te.bitwise_not(wv))).astype(out_dtype)
        else:
            v = te.popcount(te.bitwise_and(av, wv)).astype(out_dtype)
        return te.shift_left(v, shift.astype(out_dtype))

    if nchw:
        def body(b, f, y, x):
            av, wv = a[b, ba, rc, y * sh + ry, x * sw + rx], w[f, bw, rc, ry, rx]
            return te.sum(term(av, wv, ba + bw), axis=[rc, ry, rx, bw, ba])

        return te.compute((n, oc, oh, ow), body, name=op, tag=op)

    def body_nhwc(b, y, x, f):
        av, wv = a[b, y * sh + ry, x * sw + rx, rc, ba], w[ry, rx, rc, f, bw]
        return te.sum(term(av, wv, ba + bw), axis=[ry, rx, rc, bw, ba])

    return te.compute((n, oh, ow, oc), body_nhwc, name=op, tag=op)


def bitserial_conv2d_nchw(data, kernel, stride, padding, activation_bits: int, weight_bits: int,
                          pack_dtype: str = "uint32", out_dtype: str = "int16", unipolar: bool = True):
    """Bit-serial conv of NCHW ``data`` (``activation_bits``-bit integers) with an OIHW kernel
    (``weight_bits``-bit; unipolar: bit 1 is +1 and 0 is -1); returns ``[N, OC, OH, OW]`` in ``out_dtype``."""
    return _bitserial("bitserial_conv2d_nchw", data, kernel, stride, padding, activation_bits, weight_bits,
                      pack_dtype, out_dtype, unipolar, "NCHW")


def bitserial_conv2d_nhwc(data, kernel, stride, padding, activation_bits: int, weight_bits: int,
                          pack_dtype: str = "uint32", out_dtype: str = "int16", unipolar: bool = True):
    """Bit-serial conv of NHWC ``data`` with an HWIO kernel (see :func:`bitserial_conv2d_nchw`)."""
    return _bitserial("bitserial_conv2d_nhwc", data, kernel, stride, padding, activation_bits, weight_bits,
                      pack_dtype, out_dtype, unipolar, "NHWC")


def binarize_pack(data, axis: int | None = None, name: str = "PackedInput"):
    """The signs of ``data`` (bit 1: ``>= 0``) packed 32 to a ``uint32`` word along ``axis``
    (default: the last; its extent a multiple of 32), first element in the top bit."""
    shape = get_const_tuple(data.shape)
    axis = len(shape) - 1 if axis is None else axis % len(shape)
    if shape[axis] % 32:
        raise ValueError(f"binarize_pack: axis {axis} of data {shape} must be a multiple of 32")
    out = tuple(s // 32 if k == axis else s for k, s in enumerate(shape))
    zero = te.const(0, data.dtype)

    def body(*idx):
        word = None
        for k in range(32):
            src = [i * 32 + k if d == axis else i for d, i in enumerate(idx)]
            bit = te.shift_left((data(*src) >= zero).astype("uint32"), te.const(31 - k, "uint32"))
            word = bit if word is None else te.bitwise_or(word, bit)
        return word

    return te.compute(out, body, name=name, tag="binarize_pack")


def binary_dense(data, weight):
    """``data @ weight.T`` of +-1 matrices packed by :func:`binarize_pack` (``[B, K/32]`` and
    ``[N, K/32]`` ``uint32``): ``K - 2 * popcount(a ^ w)`` summed over words, as float32."""
    if data.dtype != "uint32" or weight.dtype != "uint32":
        raise TypeError(f"binary_dense: expects uint32 packed operands, got {data.dtype} and {weight.dtype}")
    (batch, words), (out_dim, wwords) = get_const_tuple(data.shape), get_const_tuple(weight.shape)
    if words != wwords:
        raise ValueError(f"binary_dense: data {(batch, words)} and weight {(out_dim, wwords)} differ in words")
    k = te.reduce_axis((0, words), "k")
    matmul = te.compute((batch, out_dim), lambda i, j: te.sum(
        te.popcount(te.bitwise_xor(data[i, k], weight[j, k])).astype("int32"), axis=k), tag="binary_dense")
    return te.compute((batch, out_dim), lambda i, j: te.const(32.0 * words, "float32")
                      - te.const(2.0, "float32") * matmul[i, j].astype("float32"), tag=tag.ELEMWISE)
