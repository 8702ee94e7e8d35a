"""``tvm.contrib``: ``cc`` (linking), ``utils`` (temporary directories), ``cblas`` (BLAS matmul), ``pickle_memoize`` (test references computed once)."""

from tessera.contrib import cblas, cc, pickle_memoize, utils

__all__ = ["cblas", "cc", "pickle_memoize", "utils"]
