"""LLVM types of Tessera dtypes (shared by the IR visitor and the instruction helpers)."""

from __future__ import annotations

from llvmlite import ir

from te import dtype as dt

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType(I8)


def memory_type(dtype: str) -> ir.Type:
    """The in-memory element type: bool is a byte, as in numpy."""
    return I8 if dt.element(dtype) == "bool" else llvm_type(dt.element(dtype))


def llvm_type(dtype: str) -> ir.Type:
    """The value type: ``float32x8`` is ``<8 x float>``, bool is ``i1``."""
    base, n = dt.split_lanes(dtype)
    if base == "bool":
        t = I1
    elif base in dt.FLOATS:
        t = {"float16": ir.HalfType(), "float32": ir.FloatType(), "float64": ir.DoubleType()}[base]
    elif base == "handle":
        t = PTR
    else:
        t = ir.IntType(dt.bits(base))
    return ir.VectorType(t, n) if n > 1 else t


__all__ = ["I1", "I8", "I32", "I64", "PTR", "memory_type", "llvm_type"]
