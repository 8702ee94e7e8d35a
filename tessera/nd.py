"""``tvm.nd``: NDArrays over numpy arrays (``codegen.ndarray``)."""

from codegen.ndarray import NDArray, array, cpu, device, empty

__all__ = ["NDArray", "array", "cpu", "device", "empty"]
