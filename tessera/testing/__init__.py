"""``tvm.testing``: numpy's comparisons, taking NDArrays too."""

import numpy as np

from codegen.ndarray import as_numpy
from tessera.testing import utils


def assert_allclose(actual, desired, rtol: float = 1e-7, atol: float = 1e-7) -> None:
    """``numpy.testing.assert_allclose`` (with TVM's default atol) on arrays or NDArrays."""
    np.testing.assert_allclose(as_numpy(actual), as_numpy(desired), rtol=rtol, atol=atol, verbose=True)


__all__ = ["assert_allclose", "utils"]
