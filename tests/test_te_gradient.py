"""te.gradient (reverse-mode autodiff of te computes): built and checked against numpy."""

import numpy as np
import pytest

import te
from helpers import check_build


def test_matmul_gradients_are_the_transposed_products():
    A = te.placeholder((5, 7), name="A")
    B = te.placeholder((7, 3), name="B")
    H = te.placeholder((5, 3), name="H")
    k = te.reduce_axis((0, 7), "k")
    C = te.compute((5, 3), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    dA, dB = te.gradient(C, [A, B], head=H)
    assert tuple(int(d) for d in dA.shape) == (5, 7)
    s = te.create_schedule([dA.op, dB.op])
    check_build(s, [A, B, H, dA, dB], lambda a, b, h: (h @ b.T, a.T @ h), rtol=1e-4, atol=1e-5)


def test_strided_window_gradient_solves_the_index_and_keeps_the_taps():
    X = te.placeholder((11,), name="X")
    W = te.placeholder((3,), name="W")
    H = te.placeholder((5,), name="H")
    k = te.reduce_axis((0, 3), "k")
    Y = te.compute((5,), lambda i: te.sum(X[2 * i + k] * W[k], axis=k), name="Y")
    dX, dW = te.gradient(Y, [X, W], head=H)
    assert len(dX.op.reduce_axis) == 1  # one of (i, k) is solved from 2*i + k == x, not summed

    def ref(x, w, h):
        gx, gw = np.zeros(11, np.float32), np.zeros(3, np.float32)
        for i in range(5):
            for t in range(3):
                gx[2 * i + t] += h[i] * w[t]
                gw[t] += h[i] * x[2 * i + t]
        return gx, gw

    check_build(te.create_schedule([dX.op, dW.op]), [X, W, H, dX, dW], ref, rtol=1e-5)


def test_max_reduction_routes_the_gradient_to_the_maximum():
    A = te.placeholder((4, 6), name="A")
    H = te.placeholder((4,), name="H")
    k = te.reduce_axis((0, 6), "k")
    M = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="M")
    (dA,) = te.gradient(M, [A], head=H)

    def ref(a, h):
        out = np.zeros_like(a)
        out[np.arange(4), a.argmax(axis=1)] = h
        return out

    check_build(te.create_schedule(dA.op), [A, H, dA], ref)


def test_elementwise_intrinsics_and_the_default_head_jacobian():
    A = te.placeholder((6,), name="A")
    Y = te.compute((6,), lambda i: te.exp(A[i]) * te.sigmoid(A[i]) + te.power(A[i], 2.0) - te.floor(A[i]),
                   name="Y")
    (J,) = te.gradient(Y, [A])
    assert tuple(int(d) for d in J.shape) == (6, 6)

    def ref(a):
        sg = 1.0 / (1.0 + np.exp(-a))
        return np.diag(np.exp(a) * sg + np.exp(a) * sg * (1.0 - sg) + 2.0 * a).astype(np.float32)

    check_build(te.create_schedule(J.op), [A, J], ref, inputs=[np.linspace(0.1, 2.0, 6, dtype=np.float32)],
                rtol=1e-4, atol=1e-5)


def test_gradient_refuses_a_head_of_another_shape():
    A = te.placeholder((3,), name="A")
    Y = te.compute((3,), lambda i: A[i] * 2.0, name="Y")
    with pytest.raises(ValueError, match=r"head has shape \(4,\), which must end with the output's shape \(3,\)"):
        te.gradient(Y, [A], head=te.placeholder((4,), name="H"))


def test_gradient_refuses_an_opaque_stage_on_the_way():
    A = te.placeholder((4,), name="A")
    B = te.extern((4,), [A], lambda ins, outs: te.call_packed("f", ins[0], outs[0]), name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    with pytest.raises(ValueError, match=r"cannot differentiate through 'B' \(ExternOp\)"):
        te.gradient(C, [A], head=te.placeholder((4,), name="H"))
