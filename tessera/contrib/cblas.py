"""``tvm.contrib.cblas``: matrix products as extern stages calling a real BLAS (``codegen.cblas``)."""

from codegen.cblas import batch_matmul, matmul

__all__ = ["batch_matmul", "matmul"]
