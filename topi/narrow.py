"""Storage-only element types: bfloat16, float8, float4 and 4-/2-bit integers.

The compiler computes in the types of :mod:`te.dtype`; the narrow types ONNX
and ml_dtypes define are *stored* types: a kernel holds each element as its
bits in an unsigned integer of the same byte width (``uint16`` for bfloat16,
``uint8`` for the others, one element per byte as ml_dtypes keeps them), and
converts through float32 (or int32 for the integer ones) with integer
arithmetic on those bits.  The graph keeps the logical name (``"bfloat16"``,
``"float8_e4m3fn"``...: ml_dtypes' names) on its values; :func:`storage_dtype`
maps it to the kernel's type.

Conversions follow ONNX's ``Cast`` (its reference: ml_dtypes' ``astype``,
after a clip to the finite range when ``saturate``):

* float32 -> narrow float: round to nearest, ties to even, subnormals
  included; NaN stays NaN (the format's NaN: ``0x7f``/``0x7e``/``0x7fc0`` with
  the sign, ``0x80`` for the ``fnuz`` formats); an overflow (and +-inf) gives
  +-max when ``saturate`` (float8 only: bfloat16 ignores it), else inf where
  the format has one, else NaN.  ``float4_e2m1fn`` has neither: it always saturates, and NaN becomes
  ``0x8`` (``0x0`` for a negative NaN), as ml_dtypes does.  ``fnuz`` formats
  have no -0.
* float64 -> narrow float: through float32, rounded twice as ml_dtypes
  (and so onnx's reference) does: ``2^-134 * (1 + 2^-30)`` becomes bfloat16 0,
  not its smallest subnormal.
* narrow float -> float32: exact.
* ``float8_e8m0fnu`` (ONNX ``FLOAT8E8M0``, an MX block scale) is a bare biased
  exponent: code ``c`` is ``2^(c - 127)``, ``0xff`` is NaN, there is no sign and no
  zero (code 0 is ``2^-127``).  A float becomes the exponent field of its float32
  (the sign dropped), raised by one as ``Cast``'s ``round_mode`` says: ``up`` (the
  default) when any mantissa bit is set, ``nearest`` when the mantissa is at least
  1.5 (a subnormal: above ``2^-127``), ``down`` never; ``saturate`` keeps ``0xfe``
  from rounding into NaN; NaN and inf give NaN.
* float -> 4-/2-bit integer: truncated towards zero to int32 (NaN, inf and
  magnitudes >= 2^31 give 0, as x86's ``cvttss2si`` and ml_dtypes), then
  wrapped: the low bits are kept.  Integer -> 4-/2-bit integer wraps too.

There are no shift or bitwise operators in ``te``: bit fields are read and
written with ``//``, ``%`` and ``*`` by constant powers of two on ``uint32``
(LLVM turns them into shifts and masks); no intermediate exceeds 2^32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import te
from te import dtype as dt
from topi import tag

try:  # optional: gives numpy the narrow dtypes (onnx >= 1.17 depends on it)
    import ml_dtypes
except ImportError:  # pragma: no cover - exercised only without ml_dtypes
    ml_dtypes = None


@dataclass(frozen=True)
class NarrowFormat:
    """One storage-only type: its width and, for floats, its IEEE-like fields.

    ``nan`` says how NaN is encoded: ``"ieee"`` (all-ones exponent, non-zero
    mantissa; an all-ones exponent with a zero mantissa is inf), ``"fn"`` (all
    ones but the sign: finite otherwise, no inf), ``"fnuz"`` (``0x80``: the
    pattern of -0) or ``"none"``.
    """

    name: str
    onnx: str
    bits: int
    storage: str
    is_float: bool
    signed: bool = True
    exp_bits: int = 0
    man_bits: int = 0
    bias: int = 0
    nan: str = "none"
    max_code: int = 0

    @property
    def exponent_only(self) -> bool:
        """``float8_e8m0fnu``: no sign, no mantissa (see the module notes)."""
        return self.nan == "e8m0"

    @property
    def has_inf(self) -> bool:
        return self.nan == "ieee"


def _float(name, onnx, bits, e, m, bias, nan, max_code):
    return NarrowFormat(
        name, onnx, bits, "uint16" if bits == 16 else "uint8", True, True, e, m, bias, nan, max_code
    )


FORMATS = {
    f.name: f
    for f in (
        _float("bfloat16", "BFLOAT16", 16, 8, 7, 127, "ieee", 0x7F7F),
        _float("float8_e4m3fn", "FLOAT8E4M3FN", 8, 4, 3, 7, "fn", 0x7E),
        _float("float8_e4m3fnuz", "FLOAT8E4M3FNUZ", 8, 4, 3, 8, "fnuz", 0x7F),
        _float("float8_e5m2", "FLOAT8E5M2", 8, 5, 2, 15, "ieee", 0x7B),
        _float("float8_e5m2fnuz", "FLOAT8E5M2FNUZ", 8, 5, 2, 16, "fnuz", 0x7F),
        _float("float4_e2m1fn", "FLOAT4E2M1", 4, 2, 1, 1, "none", 0x7),
        NarrowFormat("float8_e8m0fnu", "FLOAT8E8M0", 8, "uint8", True, False, 8, 0, 127, "e8m0", 0xFE),
        NarrowFormat("int4", "INT4", 4, "uint8", False, True),
        NarrowFormat("uint4", "UINT4", 4, "uint8", False, False),
        NarrowFormat("int2", "INT2", 2, "uint8", False, True),
        NarrowFormat("uint2", "UINT2", 2, "uint8", False, False),
    )
}


def is_narrow(dtype) -> bool:
    return str(dtype) in FORMATS


def storage_dtype(dtype: str) -> str:
    """The type a kernel stores ``dtype`` in: ``uint16``/``uint8`` for a narrow type, else ``dtype``."""
    return FORMATS[dtype].storage if dtype in FORMATS else dtype


def numpy_dtype(dtype: str) -> np.dtype:
    """``np.dtype(dtype)``, the narrow types through ml_dtypes (ValueError naming it when absent)."""
    if dtype in FORMATS:
        if ml_dtypes is None:
            raise ValueError(f"the element type {dtype} needs the package ml_dtypes (pip install ml_dtypes)")
        return np.dtype(getattr(ml_dtypes, dtype))
    return np.dtype(dtype)


def as_storage(array: np.ndarray) -> np.ndarray:
    """A narrow-typed array viewed (no copy) as its storage type; any other array unchanged."""
    name = array.dtype.name
    return array.view(storage_dtype(name)) if name in FORMATS else array


def as_logical(array: np.ndarray, dtype: str) -> np.ndarray:
    """A storage-typed array viewed (no copy) as the narrow ``dtype``; unchanged for other types."""
    return array.view(numpy_dtype(dtype)) if dtype in FORMATS else array


# --------------------------------------------------------- expressions ---
def _u32(value) -> te.Expr:
    return te.const(int(value), "uint32")


def decode_float(bits: te.Expr, fmt: str) -> te.Expr:
    """The float32 value of the narrow-float bit pattern ``bits`` (exact)."""
    f = FORMATS[fmt]
    c = bits.astype("uint32")
    if f.name == "bfloat16":
        return te.reinterpret("float32", c * _u32(1 << 16))
    if f.exponent_only:  # 2^(c - 127): c in the exponent field; code 0 is float32's subnormal 2^-127
        bits = te.if_then_else(c == _u32(0), _u32(1 << 22), c * _u32(1 << 23))
        return te.reinterpret("float32", te.if_then_else(c == _u32(0xFF), _u32(0x7FC00000), bits))
    if f.bits < 8:  # one element per byte: the bits above its width are ignored (as ml_dtypes)
        c = c % _u32(1 << f.bits)
    sign = c // _u32(1 << (f.bits - 1))
    e = c // _u32(1 << f.man_bits) % _u32(1 << f.exp_bits)
    m = c % _u32(1 << f.man_bits)
    sign_bit = sign * _u32(1 << 31)
    normal = (e + _u32(127 - f.bias)) * _u32(1 << 23) + m * _u32(1 << (23 - f.man_bits))
    quantum = te.const(2.0 ** (1 - f.bias - f.man_bits), "float32")
    sub = te.reinterpret("uint32", m.astype("float32") * quantum)
    value = te.reinterpret("float32", te.if_then_else(e == _u32(0), sub, normal) + sign_bit)
    nan = te.reinterpret("float32", _u32(0x7FC00000) + sign_bit)  # NaN keeps its sign
    top = (1 << f.exp_bits) - 1
    if f.nan == "fn":
        return te.if_then_else(c % _u32(1 << (f.bits - 1)) == _u32((1 << (f.bits - 1)) - 1), nan, value)
    if f.nan == "fnuz":
        return te.if_then_else(c == _u32(1 << (f.bits - 1)), nan, value)
    if f.nan == "ieee":
        inf = te.reinterpret("float32", _u32(0x7F800000) + sign_bit)
        return te.if_then_else(e == _u32(top), te.if_then_else(m == _u32(0), inf, nan), value)
    return value


def _rne_shift(bits: te.Expr, shift: int) -> te.Expr:
    """``bits / 2^shift`` rounded to nearest, ties to even (``bits + 2^shift`` < 2^32)."""
    half = (1 << (shift - 1)) - 1
    return (bits + _u32(half) + bits // _u32(1 << shift) % _u32(2)) // _u32(1 << shift)


def _round_magnitude(mag: te.Expr, f: NarrowFormat) -> te.Expr:
    """The code of float32 magnitude bits ``mag`` rounded into ``f`` (may exceed ``max_code``).

    A normal of the target: the exponent rebiased in place and the mantissa rounded (its carry
    steps the exponent up).  Below the smallest normal: ``|x| / quantum`` rounded by
    ``nearbyint`` (exact scaling by a power of two).  bfloat16 shares float32's exponent range:
    its subnormals round as the normals, all in integers.
    """
    shift = 23 - f.man_bits
    if f.bias == 127:
        return _rne_shift(mag, shift)
    smallest_normal = _u32((128 - f.bias) << 23)
    rebiased = te.max(mag, smallest_normal) - _u32((127 - f.bias) << 23)
    scaled = te.reinterpret("float32", te.min(mag, smallest_normal))
    quanta = te.nearbyint(scaled * te.const(2.0 ** (f.bias + f.man_bits - 1), "float32"))
    return te.if_then_else(mag >= smallest_normal, _rne_shift(rebiased, shift), quanta.astype("uint32"))


ROUND_MODES = ("up", "down", "nearest")


def _encode_exponent(u: te.Expr, saturate: bool, round_mode: str) -> te.Expr:
    """The ``float8_e8m0fnu`` code of float32 bits ``u`` (see the module notes)."""
    if round_mode not in ROUND_MODES:
        raise ValueError(f"round_mode={round_mode!r} is not one of {', '.join(ROUND_MODES)}")
    e = u // _u32(1 << 23) % _u32(256)
    frac = u % _u32(1 << 23)
    if round_mode == "up":
        step = te.if_then_else(frac > _u32(0), _u32(1), _u32(0))
    elif round_mode == "nearest":  # guard bit set, and a bit below it or a normal (ONNX's reference)
        rest = te.if_then_else(frac % _u32(1 << 22) + e > _u32(0), _u32(1), _u32(0))
        step = frac // _u32(1 << 22) * rest
    else:
        step = _u32(0)
    if saturate:
        step = te.if_then_else(e == _u32(0xFE), _u32(0), step)
    return te.if_then_else(e == _u32(0xFF), _u32(0xFF), e + step).astype("uint8")


def encode_float(x: te.Expr, fmt: str, saturate: bool = True, round_mode: str = "up") -> te.Expr:
    """The bits (in the storage type) of float ``x`` rounded to the narrow float ``fmt``
    (``round_mode`` concerns ``float8_e8m0fnu`` only)."""
    f = FORMATS[fmt]
    saturate = saturate and f.bits == 8  # ONNX: saturate concerns float8 only
    if x.dtype != "float32":
        x = x.astype("float32")
    u = te.reinterpret("uint32", x)
    if f.exponent_only:
        return _encode_exponent(u, saturate, round_mode)
    sign = u // _u32(1 << 31)
    mag = u % _u32(1 << 31)
    code = _round_magnitude(mag, f)
    over = code > _u32(f.max_code)
    top = 1 << (f.bits - 1)
    if saturate or f.nan == "none":
        code = te.if_then_else(over, _u32(f.max_code), code)
    elif f.nan == "ieee":
        code = te.if_then_else(over, _u32(f.max_code + 1), code)  # inf
    elif f.nan == "fn":
        code = te.if_then_else(over, _u32(top - 1), code)  # NaN
    signed = code + sign * _u32(top)
    if f.nan == "fnuz":  # no -0; NaN is 0x80
        signed = te.if_then_else(code == _u32(0), _u32(0), signed)
        if not saturate:
            signed = te.if_then_else(over, _u32(top), signed)
    nan_code = {
        "ieee": _u32(0x7FC0 if f.bits == 16 else 0x7E) + sign * _u32(top),
        "fn": _u32(top - 1) + sign * _u32(top),
        "fnuz": _u32(top),
        "none": (_u32(1) - sign) * _u32(top),
    }[f.nan]
    return te.if_then_else(mag > _u32(0x7F800000), nan_code, signed).astype(f.storage)


def decode_int(bits: te.Expr, fmt: str) -> te.Expr:
    """The int32 value of a 4- or 2-bit integer (the bits above its width are ignored)."""
    f = FORMATS[fmt]
    v = (bits.astype("uint32") % _u32(1 << f.bits)).astype("int32")
    if not f.signed:
        return v
    return te.if_then_else(v >= te.const(1 << (f.bits - 1), "int32"), v - te.const(1 << f.bits, "int32"), v)


def encode_int(x: te.Expr, fmt: str) -> te.Expr:
    """The bits of ``x`` wrapped to a 4- or 2-bit integer: its low bits; a float is truncated to
    int32 first (NaN, inf and magnitudes >= 2^31 give 0)."""
    f = FORMATS[fmt]
    if dt.is_float(x.dtype):
        x = x.astype("float32") if x.dtype == "float16" else x
        ok = te.abs(x) < te.const(2.0**31, x.dtype)  # false for NaN
        x = te.if_then_else(ok, x, te.const(0.0, x.dtype)).astype("int32")
    elif dt.is_bool(x.dtype):
        x = x.astype("int32")
    return te.floormod(x, te.const(1 << f.bits, x.dtype)).astype("uint8")


def convert(x: te.Expr, src: str, dst: str, saturate: bool = True, round_mode: str = "up") -> te.Expr:
    """``x`` of logical type ``src`` (its storage bits when narrow) as ``dst`` (likewise bits).

    Through float32 (int32 from a 4-/2-bit integer); between two types of :mod:`te.dtype` it is
    a plain cast.  ``saturate`` concerns float8 targets only, ``round_mode`` ``float8_e8m0fnu``
    (ONNX ``Cast``)."""
    if src == dst:
        return x
    if src in FORMATS:
        x = decode_float(x, src) if FORMATS[src].is_float else decode_int(x, src)
    if dst in FORMATS:
        return encode_float(x, dst, saturate, round_mode) if FORMATS[dst].is_float else encode_int(x, dst)
    return x if x.dtype == dst else x.astype(dst)


def cast(x: te.Tensor, src: str, dst: str, saturate: bool = True, round_mode: str = "up") -> te.Tensor:
    """Elementwise :func:`convert` of a tensor holding ``src`` (narrow: its storage) to ``dst``.

    Before/after (``src="float8_e4m3fn"``, ``dst="float32"``)::

        for (i, 0, n) {                         for (i, 0, n) {
          T[i] = float32(X[i])          ->        T[i] = decode(uint32(X[i]))  // bits -> float32
        }                                       }
    """
    for name in (src, dst):
        if name not in FORMATS:
            dt.normalize(name)
    if x.dtype != storage_dtype(src):
        raise ValueError(
            f"narrow.cast: a {src} tensor is stored as {storage_dtype(src)}, got {x.name!r} "
            f"of dtype {x.dtype}"
        )
    return te.compute(
        x.shape, lambda *i: convert(x(*i), src, dst, saturate, round_mode), name="T_narrow_cast", tag=tag.ELEMWISE
    )


def to_float32(x_bits: te.Tensor, fmt: str) -> te.Tensor:
    """The float32 values of a tensor of ``fmt`` bits (exact)."""
    return cast(x_bits, fmt, "float32")


def from_float32(x: te.Tensor, fmt: str, saturate: bool = True) -> te.Tensor:
    """The ``fmt`` bits of a float tensor, rounded to nearest even (see the module notes)."""
    return cast(x, x.dtype, fmt, saturate)


def rounded_sum(x: te.Tensor, fmt: str) -> te.Tensor:
    """The sum of float32 ``x`` over its last axis (kept, of extent 1), rounded to the narrow float
    ``fmt`` after every addition, in index order: numpy's ``sum`` on an ml_dtypes array
    (``r(...r(r(x[0] + x[1]) + x[2]) ... + x[n-1])``).  One reduction whose combiner rounds, so
    the rounding is written once, not nested once per element; schedule it without
    reordering the reduction axis (``topi.generic.default_schedule``)."""
    if x.dtype != "float32":
        raise ValueError(f"narrow.rounded_sum: expects float32 values, got {x.name!r} of dtype {x.dtype}")
    k = te.reduce_axis((0, x.shape[-1]), name="k")
    reducer = te.comm_reducer(lambda a, b: decode_float(encode_float(a + b, fmt), fmt),
                              lambda dtype: te.const(0.0, dtype), name=f"{fmt}_sum")
    lead = len(x.shape) - 1
    return te.compute(tuple(x.shape[:-1]) + (1,), lambda *i: reducer(x(*i[:lead], k), axis=k),
                      name="T_rounded_sum")
