"""``tvm.contrib``: ``cc`` (linking), ``utils`` (temporary directories), ``cblas`` (BLAS matmul)."""

from tessera.contrib import cblas, cc, utils

__all__ = ["cblas", "cc", "utils"]
