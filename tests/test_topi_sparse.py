"""Sparse operators (topi.nn.sparse, topi.sparse, tvm.contrib.sparse) against scipy / numpy.

Built on guarded buffers (``helpers.check_build``: NaN guards catch out-of-bounds reads,
canaries out-of-bounds writes), with row counts and block sizes that the parallel and vector
splits do not divide, and with malformed matrices that must not read outside a buffer.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from helpers import check_build

import te
import topi
from topi import generic, x86
from topi.sparse import csrmm, csrmv, dense, placeholder

SCHEDULES = {"generic": generic.schedule_sparse_dense, "x86": x86.schedule_sparse_dense}


def ph(a, name="P"):
    return te.placeholder(a.shape, str(a.dtype), name=name)


def bsr(n, k, bs_r, bs_c, density, seed=0):
    dense = sp.random(n, k, density=density, dtype="float32", random_state=seed).toarray()
    return sp.bsr_matrix(dense, blocksize=(bs_r, bs_c))


@pytest.mark.parametrize("sched", sorted(SCHEDULES))
@pytest.mark.parametrize("fmt,lhs", [("csr", False), ("csr", True), ("bsr", False), ("bsr", True)])
def test_sparse_dense(sched, fmt, lhs):
    w = sp.random(21, 37, density=0.3, format="csr", dtype="float32", random_state=1) if fmt == "csr" \
        else bsr(21, 40, 3, 5, 0.4)
    x = np.random.default_rng(2).random((13, w.shape[1])).astype("float32")  # 13: a vector of 8 and a tail
    args = [ph(x, "X"), ph(w.data, "W_data"), ph(w.indices, "W_indices"), ph(w.indptr, "W_indptr")]
    y = topi.nn.relu(topi.nn.sparse_dense(*args, sparse_lhs=lhs))
    ref = (lambda X, *_: np.maximum(w.toarray() @ X.T, 0)) if lhs else (lambda X, *_: np.maximum(X @ w.toarray().T, 0))
    check_build(SCHEDULES[sched]([y]), [*args, y], ref, inputs=[x, w.data, w.indices, w.indptr], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout,bs_c", [("NHWC", 4), ("NCHW", 4), ("NHWC", 1)])
def test_sparse_conv2d(layout, bs_c):
    w = bsr(12, 16, 3, bs_c, 0.5)
    data = w.data.reshape(w.data.shape[0], 3) if bs_c == 1 else w.data
    shape = (2, 5, 7, 16) if layout == "NHWC" else (2, 16, 5, 7)
    x = np.random.default_rng(3).random(shape).astype("float32")
    args = [ph(x, "X"), ph(data, "W_data"), ph(w.indices, "W_indices"), ph(w.indptr, "W_indptr")]
    y = topi.nn.sparse_conv2d(*args, layout)
    dense = w.toarray()
    ref = (lambda X, *_: X @ dense.T) if layout == "NHWC" else (lambda X, *_: np.einsum("nkhw,ok->nohw", X, dense))
    check_build(x86.schedule_sparse_conv2d([y]), [*args, y], ref, inputs=[x, data, w.indices, w.indptr],
                rtol=1e-5, atol=1e-5)


def test_sparse_add_and_transpose():
    s = sp.random(9, 13, density=0.3, format="csr", dtype="float64", random_state=4)
    d = np.random.default_rng(5).random((9, 13))
    args = [ph(d, "D"), ph(s.data, "S_data"), ph(s.indices, "S_indices"), ph(s.indptr, "S_indptr")]
    z = topi.nn.sparse_add(*args)
    check_build(te.create_schedule(z.op), [*args, z], lambda *_: d + s.toarray(), inputs=[d, s.data, s.indices, s.indptr])
    sq = sp.random(11, 11, density=0.3, format="csr", dtype="float32", random_state=6)
    args = [ph(sq.data, "data"), ph(sq.indices, "indices"), ph(sq.indptr, "indptr")]
    outs = topi.nn.sparse_transpose(*args)
    t = sq.T.tocsr()
    t.sort_indices()
    check_build(generic.schedule_sparse_transpose(outs), [*args, *outs], lambda *_: (t.data, t.indices, t.indptr),
                inputs=[sq.data, sq.indices, sq.indptr])


@pytest.mark.parametrize("bias", [False, True])
def test_csrmv_csrmm_and_dense_on_placeholders(bias):
    """``topi.sparse`` over ``contrib.sparse`` placeholders, the row count a var passed at the call."""
    from tessera.contrib import sparse as tvmsp

    nr, nc, n = te.var("nr"), te.var("nc"), te.var("n")
    a = placeholder((nr, nc), nonzeros=n, dtype="float64", name="A")
    rng = np.random.default_rng(7)
    a_np = np.where(rng.random((5, 7)) < 0.4, rng.random((5, 7)), 0.0)
    arr = tvmsp.array(a_np)
    np.testing.assert_array_equal(arr.numpy(), a_np)
    c_np = rng.random(5)
    for b_np, op in ((rng.random((7, 1)), csrmv), (rng.random((7, 3)), csrmm)):
        b, c = ph(b_np, "B"), te.placeholder((nr,), "float64", name="C")
        d = op(a, b, c if bias else None)
        ref = a_np @ b_np + (c_np[:, None] if bias else 0)
        check_build(te.create_schedule(d.op), [nr, a.data, a.indices, a.indptr, b, c, d], lambda *_: ref,
                    inputs=[arr.data.numpy(), arr.indices.numpy(), arr.indptr.numpy(), b_np, c_np],
                    var_values={"nr": 5})
    w_np = rng.random((3, 7))
    w = ph(w_np, "W")
    ad = placeholder((5, 7), nonzeros=n, dtype="float64", name="AD")
    out = dense(ad, w)
    check_build(te.create_schedule(out.op), [ad.data, ad.indices, ad.indptr, w, out], lambda *_: a_np @ w_np.T,
                inputs=[arr.data.numpy(), arr.indices.numpy(), arr.indptr.numpy(), w_np])


def test_malformed_matrix_reads_nothing_outside():
    """Column indices past the dense operand and an indptr past nnz are clamped: a wrong answer,
    but no read outside a buffer (the NaN guards around X and the weights stay out of Y)."""
    data, indices, indptr = np.ones(4, "float32"), np.array([0, 99, -5, 2], "int32"), np.array([0, 3, 1, 50], "int32")
    x = np.ones((2, 6), "float32")
    args = [ph(x, "X"), ph(data, "W_data"), ph(indices, "W_indices"), ph(indptr, "W_indptr")]
    y = topi.nn.sparse_dense(*args)
    check_build(x86.schedule_sparse_dense([y]), [*args, y], lambda *_: np.array([[3, 0, 3]] * 2, "float32"),
                inputs=[x, data, indices, indptr])


def test_a_reduce_extent_read_from_data_survives_fused_axes():
    """The extent of a reduce axis may name data axes (a CSR row's length); fusing those axes
    rewrites it too (it once named the unfused axis: 'variable i1 is used but never defined')."""
    w = sp.random(10, 9, density=0.4, format="csr", dtype="float32", random_state=8)
    x = np.random.default_rng(9).random((3, 9)).astype("float32")
    args = [ph(x, "X"), ph(w.data, "W_data"), ph(w.indices, "W_indices"), ph(w.indptr, "W_indptr")]
    y = topi.nn.sparse_dense(*args)
    s = te.create_schedule(y.op)
    block = y.op.input_tensors[0]
    fused = s[block].fuse(*block.op.axis[:2])
    s[block].split(fused, factor=4)
    check_build(s, [*args, y], lambda X, *_: X @ w.toarray().T, inputs=[x, w.data, w.indices, w.indptr],
                rtol=1e-5, atol=1e-5)


def test_threefry_wrapping_probe():
    from topi.random import threefry_test_wrapping

    assert threefry_test_wrapping("llvm", None) is True


def test_bad_sparse_arguments():
    from tessera.contrib import sparse as tvmsp

    x = te.placeholder((2, 4), name="X")
    bad = te.placeholder((3, 2, 2, 2), name="W_data")
    ind, ptr = te.placeholder((3,), "int32"), te.placeholder((3,), "int32")
    with pytest.raises(ValueError, match=r"sparse_dense: expects CSR \(1-D data\) or BSR"):
        topi.nn.sparse_dense(x, bad, ind, ptr)
    with pytest.raises(ValueError, match=r"sparse.placeholder: a CSR matrix has two axes, got shape \(3,\)"):
        placeholder((3,))
    with pytest.raises(ValueError, match=r"sparse.array: indptr of 2 and 1 indices for 1 values do not describe"):
        tvmsp.array((np.ones(1), np.zeros(1, "int32"), np.zeros(2, "int32")), shape=(3, 3))
    with pytest.raises(ValueError, match=r"sparse_conv2d: supports 1x1 kernels in NHWC or NCHW"):
        topi.nn.sparse_conv2d(te.placeholder((1, 2, 2, 4)), bad, ind, ptr, "HWNC")
    import tessera as tvm

    assert tvm.contrib.sparse.placeholder is placeholder  # reached as an attribute too
