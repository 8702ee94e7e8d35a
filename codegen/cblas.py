"""BLAS matrix products as extern stages (classic ``tvm.contrib.cblas``).

``matmul(A, B)`` is a ``te.extern`` stage calling the packed function
``tvm.contrib.cblas.matmul``, registered here: numpy's ``matmul`` (OpenBLAS
sgemm/dgemm for float32/float64) writing straight into the output buffer.
"""

from __future__ import annotations

import numpy as np

from codegen.packed import register_func
from te.extern import call_packed, extern


def matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """``C = op(A) @ op(B)`` with ``op`` a transpose where asked, shape ``(n, m)``."""
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern(
        (n, m),
        [lhs, rhs],
        lambda ins, outs: call_packed("tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb),
        name=kwargs.pop("name", "C"),
        **kwargs,
    )


def batch_matmul(lhs, rhs, transa: bool = False, transb: bool = False, **kwargs):
    """``C[b] = op(A[b]) @ op(B[b])``, shape ``(batch, n, m)``."""
    n = lhs.shape[2] if transa else lhs.shape[1]
    m = rhs.shape[1] if transb else rhs.shape[2]
    return extern(
        (lhs.shape[0], n, m),
        [lhs, rhs],
        lambda ins, outs: call_packed(
            "tvm.contrib.cblas.batch_matmul", ins[0], ins[1], outs[0], transa, transb
        ),
        name=kwargs.pop("name", "C"),
        **kwargs,
    )


def _operand(x, trans) -> np.ndarray:
    a = x.numpy()
    return np.swapaxes(a, -1, -2) if trans else a


@register_func("tvm.contrib.cblas.matmul", override=True)
def _matmul(a, b, c, transa=False, transb=False) -> None:
    np.matmul(_operand(a, transa), _operand(b, transb), out=c.numpy())


@register_func("tvm.contrib.cblas.batch_matmul", override=True)
def _batch_matmul(a, b, c, transa=False, transb=False) -> None:
    np.matmul(_operand(a, transa), _operand(b, transb), out=c.numpy())


__all__ = ["batch_matmul", "matmul"]
