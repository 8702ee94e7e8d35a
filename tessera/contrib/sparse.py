"""``tvm.contrib.sparse``: CSR matrices, declared (``placeholder``, :mod:`topi.sparse`) and held at
run time (``array``: three NDArrays, ``data``/``indices``/``indptr``, as scipy stores them)."""

from __future__ import annotations

import numpy as np

from codegen.ndarray import array as _nd_array
from topi.sparse import CSRPlaceholderOp, placeholder

INDEX_DTYPE = "int32"  # of indices and indptr, as topi.sparse.placeholder declares them


class CSRNDArray:
    """A CSR matrix at run time: ``data``, ``indices`` (int32) and ``indptr`` (int32) NDArrays and
    its ``shape``; ``numpy()`` is the dense matrix."""

    stype = "csr"

    def __init__(self, arg, device=None, shape=None):
        if isinstance(arg, tuple) and len(arg) == 3:
            data, indices, indptr = (np.asarray(a) for a in arg)
            if shape is None:
                raise ValueError("sparse.array: give the shape of a matrix made from (data, indices, indptr)")
        elif hasattr(arg, "tocsr"):  # a scipy sparse matrix
            csr = arg.tocsr()
            data, indices, indptr, shape = csr.data, csr.indices, csr.indptr, csr.shape
        else:
            dense = np.asarray(arg)
            if dense.ndim != 2:
                raise ValueError(f"sparse.array: a CSR matrix has two axes, got an array of shape {dense.shape}")
            rows, cols = np.nonzero(dense)
            data, indices, shape = dense[rows, cols], cols, dense.shape
            indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
        self.shape = tuple(int(d) for d in shape)
        if len(indptr) != self.shape[0] + 1 or len(indices) != len(data):
            raise ValueError(f"sparse.array: indptr of {len(indptr)} and {len(indices)} indices for {len(data)} "
                             f"values do not describe a CSR matrix of shape {self.shape}")
        self.data = _nd_array(np.ascontiguousarray(data), device)
        self.indices = _nd_array(np.ascontiguousarray(indices, INDEX_DTYPE), device)
        self.indptr = _nd_array(np.ascontiguousarray(indptr, INDEX_DTYPE), device)
        self.dtype = str(self.data.dtype)

    def numpy(self) -> np.ndarray:
        """The dense matrix."""
        out = np.zeros(self.shape, self.dtype)
        indptr, indices, data = self.indptr.numpy(), self.indices.numpy(), self.data.numpy()
        rows = np.repeat(np.arange(self.shape[0]), np.diff(indptr))
        np.add.at(out, (rows, indices), data)
        return out

    asnumpy = numpy


def array(source, device=None, shape=None, stype: str = "csr") -> CSRNDArray:
    """A CSR matrix from a dense numpy array, a scipy sparse matrix or ``(data, indices, indptr)``."""
    if stype != "csr":
        raise ValueError(f"sparse.array: only the 'csr' storage type exists, got {stype!r}")
    return CSRNDArray(source, device, shape)


__all__ = ["CSRNDArray", "CSRPlaceholderOp", "array", "placeholder"]
