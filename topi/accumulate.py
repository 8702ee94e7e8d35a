"""Accumulation dtypes: float16 reductions sum in float32 and round once.

numpy (onnx's reference) and onnxruntime reduce float16 in float32: a dot
product, a sum, a mean or a product is accumulated in float32 and rounded to
float16 once, at the end.  A float16 running sum loses a unit in the last
place every few additions (1024 + 1 is 1024 in float16).  The computes of
``dense``, ``matmul``, ``batch_matmul``, ``softmax`` and the ``sum``/``mean``/
``prod`` reductions therefore reduce in :func:`accumulate_dtype` and round
the result in one elementwise stage of their own (:func:`round_once`)::

    before:  C[i] = sum_k A[i, k]                          // float16 += float16
    after:   C.acc[i] = sum_k float32(A[i, k])             // float32 += float32
             C[i] = float16(C.acc[i])                      // rounded once

Every other dtype accumulates in itself, so the float32 computes are
unchanged.  The reduction stage of a float16 compute keeps the dtype the
schedule's workload key names in ``attrs["out_dtype"]`` (:func:`key_dtype`).
"""

from __future__ import annotations

import te
from te import dtype as dt
from topi import tag

ACCUMULATE = {"float16": "float32"}


def accumulate_dtype(dtype: str) -> str:
    """The dtype a reduction producing ``dtype`` accumulates in (float16 -> float32)."""
    return ACCUMULATE.get(str(dtype), str(dtype))


def widens(dtype: str) -> bool:
    """Whether reductions producing ``dtype`` accumulate in a wider dtype."""
    return accumulate_dtype(dtype) != str(dtype)


def widen(value: te.Expr, dtype: str) -> te.Expr:
    """``value`` in the accumulation dtype of ``dtype`` (unchanged for float32)."""
    acc = accumulate_dtype(dtype)
    return value if value.dtype == acc else value.astype(acc)


def acc_attrs(dtype: str) -> dict | None:
    """Attributes of a widened reduction stage: the dtype its workload key names."""
    return {"out_dtype": str(dtype)} if widens(dtype) else None


def key_dtype(op) -> str:
    """The dtype of a reduction stage's workload key: the dtype it rounds to."""
    return str((op.attrs or {}).get("out_dtype", op.output(0).dtype))


def round_once(t: te.Tensor, dtype: str, name: str | None = None) -> te.Tensor:
    """``t`` rounded to ``dtype`` in an ``elemwise`` stage (``t`` itself when it has that dtype)."""
    if t.dtype == dtype:
        return t
    if not (dt.is_float(dtype) and dt.is_float(t.dtype)):
        raise ValueError(f"round_once: cannot round {t.op.name} ({t.dtype}) to {dtype}")
    return te.compute(t.shape, lambda *i: t(*i).astype(dtype), name=name or f"{t.op.name}_round",
                      tag=tag.ELEMWISE)
