"""The part of classic ``tvm.testing.aot`` that tests of the CPU operators use: value ranges of dtypes.
(Tessera has no ahead-of-time C runtime; its modules are loaded in-process.)"""

from __future__ import annotations

import numpy as np


def get_dtype_range(dtype: str) -> tuple:
    """``(min, max)`` representable in ``dtype`` (an integer or float dtype)."""
    kind = np.dtype(dtype).kind
    if kind in ("i", "u"):
        info = np.iinfo(dtype)
    elif kind == "f":
        info = np.finfo(dtype)
    else:
        raise TypeError(f"get_dtype_range: dtype {dtype!r} is neither an integer nor a float type")
    return info.min, info.max
