"""float16 depthwise_conv2d_nchw accumulates in float32 and rounds once (``topi.accumulate``).

onnx's reference (numpy) sums a float16 convolution window in float32; a float16
running sum drifts by units in the last place.  Inputs lie on a coarse grid, so
the float32 sums are exact in any order and the result must match numpy's
float32 sum rounded once, bit for bit; extents divide no split factor.  The
float32 compute is unchanged (its lowered text is compared in the commit).
"""

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi.testing import depthwise_conv2d_python_nchw

F16 = np.float16


def grid(shape, seed, lo=0.5, hi=1.5, step=1 / 64):
    rng = np.random.default_rng(seed)
    return (lo + rng.integers(0, round((hi - lo) / step) + 1, shape) * step).astype(F16)


@pytest.mark.parametrize("shape,kernel,mult", [((1, 5, 13, 11), 7, 1), ((2, 3, 9, 17), 5, 2)])
def test_depthwise_float16_sums_in_float32(shape, kernel, mult):
    n, c, h, w = shape
    data = te.placeholder(shape, "float16", "data")
    weight = te.placeholder((c, mult, kernel, kernel), "float16", "weight")
    out = topi.nn.depthwise_conv2d_nchw(data, weight, (1, 1), (kernel // 2, kernel // 2), (1, 1))
    assert out.dtype == "float16" and out.op.input_tensors[0].dtype == "float32"
    s = topi.x86.schedule_depthwise_conv2d_nchw([out])
    x, k = grid(shape, 1), grid((c, mult, kernel, kernel), 2)
    p = kernel // 2
    padded = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    want = depthwise_conv2d_python_nchw(padded.astype(np.float32), k.astype(np.float32), 1, 0, 1).astype(F16)
    drift = depthwise_conv2d_python_nchw(padded, k, 1, 0, 1)  # numpy float16 throughout
    assert np.any(drift.astype(F16) != want)  # the shapes make a float16 sum drift
    (got,) = check_build(s, [data, weight, out], lambda *a: want, inputs=[x, k], rtol=0, atol=0)
    np.testing.assert_array_equal(got, want)
