"""numpy reference of the narrow-type conversions (:mod:`topi.narrow`), by table search.

Independent of the bit arithmetic it checks: every finite value of a narrow
float is listed (decoded from its fields in float64), and a float rounds to
the nearest entry, a tie going to the even code; the pattern after the
largest finite one stands for the first value past it, so that a tie there
rounds as the format's rounding does.  The semantics are ONNX ``Cast``'s
(see :mod:`topi.narrow`).
"""

from __future__ import annotations

from functools import cache

import numpy as np

from topi.narrow import FORMATS, numpy_dtype, storage_dtype


def decode_python(codes: np.ndarray, fmt: str) -> np.ndarray:
    """float64 values of the bit patterns ``codes`` of the narrow float ``fmt``."""
    f = FORMATS[fmt]
    c = np.asarray(codes).astype(np.int64) & ((1 << f.bits) - 1)
    if f.exponent_only:
        return np.where(c == 0xFF, np.nan, np.exp2(c - 127.0))
    sign = np.where(c >> (f.bits - 1) == 1, -1.0, 1.0)
    e = (c >> f.man_bits) & ((1 << f.exp_bits) - 1)
    m = c & ((1 << f.man_bits) - 1)
    normal = (1 + m / 2.0**f.man_bits) * 2.0 ** (e - f.bias)
    sub = m * 2.0 ** (1 - f.bias - f.man_bits)
    value = sign * np.where(e == 0, sub, normal)
    mag = c & ((1 << (f.bits - 1)) - 1)
    nan = np.copysign(np.nan, sign)
    if f.nan == "fn":
        value = np.where(mag == (1 << (f.bits - 1)) - 1, nan, value)
    elif f.nan == "fnuz":
        value = np.where(c == 1 << (f.bits - 1), nan, value)
    elif f.nan == "ieee":
        top = e == (1 << f.exp_bits) - 1
        value = np.where(top, np.where(m == 0, sign * np.inf, nan), value)
    return value


@cache
def _table(fmt: str) -> tuple:
    """(values, codes) of the non-negative finite codes up to max_code, plus the next one."""
    f = FORMATS[fmt]
    codes = np.arange(f.max_code + 2)
    values = decode_python(np.minimum(codes, f.max_code), fmt)
    ulp = values[-2] - decode_python(np.array([f.max_code - 1]), fmt)[0]
    values[-1] = values[-2] + ulp
    return values, codes


def _encode_exponent(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """``float8_e8m0fnu`` codes of ``x`` by value (``frexp``), independent of the bit fields."""
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.abs(np.asarray(x).astype(np.float32).astype(np.float64))
    finite = np.isfinite(a)
    m, k = np.frexp(np.where(finite, a, 1.0))  # a = m 2^k, m in [0.5, 1)
    normal = a >= 2.0**-126
    floor = np.where(normal, k - 1 + 127, 0)  # the biased exponent of float32
    frac = np.where(normal, 2 * m - 1, a * 2.0**126)  # the mantissa field as a fraction in [0, 1)
    if round_mode == "up":
        step = frac > 0
    elif round_mode == "nearest":
        step = np.where(normal, frac >= 0.5, a > 2.0**-127)
    else:
        step = np.zeros(a.shape, bool)
    if saturate:
        step &= floor != 0xFE
    return np.where(finite, floor + step, 0xFF).astype(np.uint8)


def _encode_float(x: np.ndarray, fmt: str, saturate: bool, round_mode: str = "up") -> np.ndarray:
    f = FORMATS[fmt]
    if f.exponent_only:
        return _encode_exponent(x, saturate, round_mode)
    saturate = saturate and f.bits == 8
    values, codes = _table(fmt)
    x = np.asarray(x).astype(np.float32).astype(np.float64)  # float64 rounds to float32 first, as ml_dtypes
    a = np.abs(x)
    hi = np.clip(np.searchsorted(values, a), 1, len(values) - 1)
    lo = hi - 1
    d_lo, d_hi = a - values[lo], values[hi] - a
    up = (d_hi < d_lo) | ((d_hi == d_lo) & (codes[hi] % 2 == 0))
    code = np.where(up, codes[hi], codes[lo]).astype(np.int64)
    code = np.where(a > values[-1], codes[-1], code)  # beyond the table: overflow
    top = 1 << (f.bits - 1)
    over = code > f.max_code
    if saturate or f.nan == "none":
        code = np.where(over, f.max_code, code)
    elif f.nan == "ieee":
        code = np.where(over, f.max_code + 1, code)
    elif f.nan == "fn":
        code = np.where(over, top - 1, code)
    negative = np.signbit(x)
    out = code + negative * top
    if f.nan == "fnuz":
        out = np.where(code == 0, 0, out)
        if not saturate:
            out = np.where(over, top, out)
    nan = {
        "ieee": (0x7FC0 if f.bits == 16 else 0x7E) + negative * top,
        "fn": top - 1 + negative * top,
        "fnuz": np.full_like(code, top),
        "none": (~negative) * top,
    }[f.nan]
    return np.where(np.isnan(x), nan, out).astype(storage_dtype(fmt))


def _encode_int(x: np.ndarray, fmt: str) -> np.ndarray:
    f = FORMATS[fmt]
    x = np.asarray(x)
    if x.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = np.abs(x) < 2.0**31
            x = np.where(ok, np.trunc(np.where(ok, x, 0)), 0)
    return (x.astype(np.int64) & ((1 << f.bits) - 1)).astype(np.uint8)


def narrow_cast_python(x: np.ndarray, dst: str, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """ONNX ``Cast`` of ``x`` (any numpy or ml_dtypes array) to ``dst``, as a ``dst`` array
    (an ml_dtypes array for a narrow ``dst``; ``round_mode`` concerns ``float8_e8m0fnu``)."""
    x = np.asarray(x)
    src = x.dtype.name
    if src in FORMATS:
        f = FORMATS[src]
        bits = x.view(storage_dtype(src))
        if f.is_float:
            x = decode_python(bits, src).astype(np.float32)
        else:
            v = bits.astype(np.int32) & ((1 << f.bits) - 1)
            x = np.where(f.signed & (v >= 1 << (f.bits - 1)), v - (1 << f.bits), v).astype(np.int32)
    if dst in FORMATS:
        bits = _encode_float(x, dst, saturate, round_mode) if FORMATS[dst].is_float else _encode_int(x, dst)
        return bits.view(numpy_dtype(dst))
    return x.astype(dst)


def rounded_sum_python(x: np.ndarray, fmt: str) -> np.ndarray:
    """numpy's ``sum`` over the last axis (kept) of ``x`` as a ``fmt`` array, one rounding per
    addition in index order, returned as float32."""
    x = np.asarray(x, np.float32).astype(numpy_dtype(fmt))
    total = x[..., :1].copy()
    for j in range(1, x.shape[-1]):
        total = total + x[..., j : j + 1]  # ml_dtypes adds in float32 and rounds to fmt
    return total.astype(np.float32)
