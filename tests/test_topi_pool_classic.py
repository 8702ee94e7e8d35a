"""Classic topi pooling: pool3d, adaptive_pool3d, pool_grad, TVM's ceil_mode, tiled-layout refusals.

Numerics against the numpy references (themselves checked against torch's
autograd for the gradient) on extents that no vector width divides.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from te.errors import OpError
from topi import nn
from topi.generic import nn as generic
from topi.testing import adaptive_pool, pool_grad_nchw, poolnd_python
from topi.x86.pooling import schedule_adaptive_pool, schedule_pool

TOL = dict(rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("pool_type,ceil_mode,cip", [("max", False, True), ("avg", True, False), ("avg", False, True)])
def test_pool3d(layout, pool_type, ceil_mode, cip):
    shape = (1, 3, 7, 9, 11) if layout == "NCDHW" else (1, 7, 9, 11, 3)
    X = te.placeholder(shape, name="X")
    kw = dict(kernel=(3, 2, 3), stride=(2, 2, 3), dilation=(1, 2, 1), padding=(1, 0, 2, 1, 1, 0))
    Y = nn.pool3d(X, **kw, pool_type=pool_type, ceil_mode=ceil_mode, layout=layout, count_include_pad=cip)

    def want(x):
        return poolnd_python(x, kw["kernel"], kw["stride"], kw["dilation"], kw["padding"][:3], kw["padding"][3:],
                             pool_type, cip, ceil_mode, layout=layout)

    for sched in (schedule_pool, generic.schedule_pool):
        check_build(sched(Y, layout), [X, Y], want, **TOL)


def test_ceil_mode_classic_and_inside():
    """``True`` keeps a last window that starts in the trailing padding (classic TVM); it holds
    no input tap, so a max gives 0.  ``"inside"`` (PyTorch, ONNX) drops it."""
    X = te.placeholder((1, 2, 31, 10), name="X")
    kw = dict(kernel=3, stride=3, padding=(2, 0, 1, 0), pool_type="max")
    Y = nn.pool2d(X, **kw, ceil_mode=True)
    assert [int(d) for d in Y.shape[2:]] == [12, 4]
    assert [int(d) for d in nn.pool2d(X, **kw, ceil_mode="inside").shape[2:]] == [11, 4]
    got = check_build(schedule_pool(Y), [X, Y], lambda x: poolnd_python(x, (3, 3), (3, 3), (1, 1), (2, 0), (1, 0),
                                                                         "max", True, True), **TOL)[0]
    assert (got[:, :, 11] == 0).all()
    with pytest.raises(OpError, match="pool2d: argument 'ceil_mode' must be one of"):
        nn.pool2d(X, **kw, ceil_mode="up")


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_adaptive_pool3d(layout):
    shape = (1, 3, 9, 7, 11) if layout == "NCDHW" else (1, 9, 7, 11, 3)
    X = te.placeholder(shape, name="X")
    for pool_type in ("max", "avg"):
        Y = nn.adaptive_pool3d(X, (4, 3, 5), pool_type, layout)
        check_build(schedule_adaptive_pool(Y), [X, Y], lambda x: adaptive_pool(x, (4, 3, 5), pool_type, layout), **TOL)


POOL_GRAD_CASES = [
    ((1, 3, 11, 13), 3, 2, (1, 1, 1, 1), "avg", False, False),
    ((2, 2, 10, 9), 2, 2, (1, 2, 1, 2), "avg", True, True),
    ((1, 3, 11, 13), 3, 2, (2, 1, 0, 3), "max", True, True),
    ((1, 2, 9, 12), 4, 3, (0, 0, 0, 0), "max", False, True),
    ((1, 2, 8, 9), 1, 2, (1, 1, 1, 1), "avg", False, False),
]


@pytest.mark.parametrize("case", POOL_GRAD_CASES)
def test_pool_grad(case):
    shape, k, s, pad, pool_type, ceil_mode, cip = case
    A = te.placeholder(shape, name="A")
    B = nn.pool2d(A, (k, k), (s, s), (1, 1), pad, pool_type, ceil_mode, "NCHW", cip)
    G = te.placeholder(tuple(int(d) for d in B.shape), name="G")
    dA = nn.pool_grad(G, A, (k, k), (s, s), pad, pool_type, ceil_mode, cip)
    rng = np.random.default_rng(1)
    a = rng.permutation(np.prod(shape)).reshape(shape).astype("float32")  # distinct: one maximum per window
    g = rng.uniform(0.1, 1, [int(d) for d in G.shape]).astype("float32")
    want = pool_grad_nchw(a, g, (k, k), (s, s), pad, pool_type, ceil_mode, cip)
    check_build(generic.schedule_pool_grad(dA), [A, G, dA], lambda *_: want, inputs=[a, g], **TOL)


@pytest.mark.parametrize("pool_type", ["max", "avg"])
def test_pool_grad_reference_vs_torch(pool_type):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    rng = np.random.default_rng(2)
    a = rng.permutation(2 * 3 * 11 * 10).reshape(2, 3, 11, 10).astype("float32")
    t = torch.from_numpy(a).requires_grad_()
    y = F.max_pool2d(t, 3, 2, 1) if pool_type == "max" else F.avg_pool2d(t, 3, 2, 1, count_include_pad=False)
    g = rng.standard_normal(tuple(y.shape)).astype("float32")
    y.backward(torch.from_numpy(g))
    got = pool_grad_nchw(a, g, (3, 3), (2, 2), (1, 1, 1, 1), pool_type, False, False)
    np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_pool_grad_bad_grads_shape():
    A = te.placeholder((1, 1, 8, 8), name="A")
    with pytest.raises(OpError, match=r"pool_grad: argument 'grads' must have the pooled shape \(1, 1, 4, 4\)"):
        nn.pool_grad(te.placeholder((1, 1, 5, 4)), A, (2, 2), (2, 2), (0, 0, 0, 0), "max")


@pytest.mark.parametrize("fn,shape,layout", [(nn.pool3d, (1, 4, 8, 8, 8), "NCHWD4d"),
                                             (nn.pool2d, (1, 4, 8, 8), "NCHW4h4w"), (nn.pool1d, (1, 4, 8), "NCW4w")])
def test_tiled_spatial_layout_refused(fn, shape, layout):
    nd = len(shape) - 2
    with pytest.raises(OpError, match=f"{fn.__name__}: Unsupported layout {layout}: the spatial axis"):
        fn(te.placeholder(shape), kernel=[2] * nd, stride=[2] * nd, dilation=[1] * nd, padding=[0] * 2 * nd,
           pool_type="avg", layout=layout)
