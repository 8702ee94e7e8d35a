"""The x86 injective schedule: the contiguous suffix it fuses, numerics on shapes that do not divide the vector."""

import numpy as np
import pytest

import codegen
import te
import topi
from topi.generic.injective import inlined_schedule
from topi.x86.injective import contiguous_suffix, schedule_injective

RNG = np.random.default_rng(0)


def shuffle(x, groups: int):
    n, c, h, w = (int(d) for d in x.shape)
    r = topi.reshape(x, (n, groups, c // groups, h, w))
    return topi.reshape(topi.transpose(r, (0, 2, 1, 3, 4)), (n, c, h, w))


@pytest.mark.parametrize(
    "make,shape,fused",
    [
        (lambda x: shuffle(x, 2), (1, 6, 5, 7), 2),  # h and w walk every buffer contiguously
        (lambda x: topi.transpose(x, (0, 1, 3, 2)), (1, 6, 5, 7), 1),  # the last axis strides
        (lambda x: topi.exp(x) * x, (2, 3, 5, 7), 4),  # elementwise: one walk
        (lambda x: topi.strided_slice(x, [0, 1, 0, 0], [1, 5, 5, 7]), (1, 6, 5, 7), 3),
        (lambda x: topi.strided_slice(x, [0, 0, 0, 1], [1, 6, 5, 7]), (1, 6, 5, 7), 1),
    ],
)
def test_contiguous_suffix_and_numerics(make, shape, fused):
    x = te.placeholder(shape, name="x")
    y = make(x)
    s, _ = inlined_schedule([y])
    assert contiguous_suffix(s, y) == fused
    f = codegen.build(schedule_injective([y]), [x, y])
    a = RNG.standard_normal(shape).astype("float32")
    out = np.full(tuple(int(d) for d in y.shape), np.nan, "float32")
    f(a, out)
    ref = codegen.build(topi.generic.schedule_injective([y]), [x, y])
    want = np.empty_like(out)
    ref(a, want)
    np.testing.assert_allclose(out, want, rtol=1e-6)
