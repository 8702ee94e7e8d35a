"""Data types as strings, the way classic TVM spells them.

A dtype is ``"float32"``, ``"int8"``, ``"bool"``...; a vector dtype adds a lane
count: ``"float32x8"``.  Everything here is a small pure function on strings.
"""

from __future__ import annotations

FLOATS = ("float16", "float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
SCALARS = FLOATS + SIGNED + UNSIGNED + ("bool",)

_ALIASES = {"float": "float32", "int": "int32", "double": "float64", "half": "float16"}


def normalize(dtype) -> str:
    """Return the canonical dtype string for ``dtype`` (str, numpy dtype or type).

    Raises ``ValueError`` naming the dtype and the legal choices.
    """
    if not isinstance(dtype, str):
        import numpy as np

        try:
            dtype = np.dtype(dtype).name
        except TypeError:
            raise TypeError(f"dtype must be a string such as 'float32', got {dtype!r}") from None
    dtype = _ALIASES.get(dtype, dtype)
    base, lanes = split_lanes(dtype)
    if base not in SCALARS:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of {', '.join(SCALARS)}")
    return dtype


_SPLIT: dict = {}  # dtype -> (element, lanes): lowering asks millions of times about a few strings


def split_lanes(dtype: str) -> tuple[str, int]:
    """``"float32x8"`` -> ``("float32", 8)``; scalars have one lane."""
    hit = _SPLIT.get(dtype)
    if hit is None:
        hit = (dtype, 1)
        if "x" in dtype:
            base, _, lanes = dtype.partition("x")
            if lanes.isdigit():
                hit = (base, int(lanes))
        if len(_SPLIT) < 4096:
            _SPLIT[dtype] = hit
    return hit


def element(dtype: str) -> str:
    return split_lanes(dtype)[0]


def lanes(dtype: str) -> int:
    return split_lanes(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    base = element(dtype)
    return base if n == 1 else f"{base}x{n}"


_FLOATS, _INTS, _SIGNED, _UNSIGNED = frozenset(FLOATS), frozenset(SIGNED + UNSIGNED), frozenset(SIGNED), frozenset(UNSIGNED)


def is_float(dtype: str) -> bool:
    return element(dtype) in _FLOATS


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (bool excluded)."""
    return element(dtype) in _INTS


def is_signed(dtype: str) -> bool:
    return element(dtype) in _SIGNED


def is_unsigned(dtype: str) -> bool:
    return element(dtype) in _UNSIGNED


def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


_BITS = {"bool": 1, **{d: int("".join(ch for ch in d if ch.isdigit())) for d in SCALARS if d != "bool"}}


def bits(dtype: str) -> int:
    base = element(dtype)
    hit = _BITS.get(base)
    return hit if hit is not None else int("".join(ch for ch in base if ch.isdigit()))


def promote(a: str, b: str) -> str:
    """The dtype of a binary operation on ``a`` and ``b`` (numpy-like, float wins)."""
    if a == b:
        return a
    la, lb = lanes(a), lanes(b)
    n = max(la, lb)
    ea, eb = element(a), element(b)
    if is_float(ea) != is_float(eb):
        base = ea if is_float(ea) else eb
    elif is_bool(ea) or is_bool(eb):
        base = eb if is_bool(ea) else ea
    else:
        base = ea if bits(ea) >= bits(eb) else eb
    return with_lanes(base, n)
