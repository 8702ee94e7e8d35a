"""Names of classic ``tvm.te`` that the project's ``te`` holds elsewhere (``tessera.te`` adds them).

``te.schedule`` (the ``schedule`` package, with :mod:`tessera.classic_schedule`'s names) resolves
as a submodule of ``tessera.te``.
"""

from __future__ import annotations

import te
from te import dtype as dt
from te.extern import ExternOp
from te.scan import ScanOp
from schedule.hybrid import HybridOp


def div(a, b):
    """``a / b``: truncating for integers, true division for floats (classic ``tvm.tir.div``)."""
    a, b = te.expr.as_expr(a), te.expr.as_expr(b)
    return te.truncdiv(a, b) if dt.is_int(a.dtype) and dt.is_int(b.dtype) else a / b


__all__ = ["ExternOp", "HybridOp", "ScanOp", "div"]
