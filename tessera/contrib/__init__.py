"""``tvm.contrib``: ``cc`` (linking), ``utils`` (temporary directories), ``cblas`` (BLAS matmul), ``pickle_memoize`` (test references computed once), ``sparse`` (CSR matrices; imported on first use, it loads topi)."""

from tessera.contrib import cblas, cc, pickle_memoize, utils

__all__ = ["cblas", "cc", "pickle_memoize", "utils"]


def __getattr__(name: str):
    """``nvcc``, ``cudnn``, ... (toolchains of devices Tessera does not build for): modules whose
    probes answer False and whose functions refuse (tessera/absent_targets.py)."""
    import importlib

    from tessera import absent_targets

    if name != "sparse" and absent_targets.target_of(f"tessera.contrib.{name}") is None:
        raise AttributeError(f"module 'tessera.contrib' has no attribute '{name}'")
    return importlib.import_module(f"tessera.contrib.{name}")
