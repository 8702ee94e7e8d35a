"""Classic topi.transform operators (topi.slicing, topi.generate, topi.indexing) against numpy.

Each is built with the x86 and the generic ``schedule_injective`` on guarded buffers
(``helpers.check_build``: NaN guards catch out-of-bounds reads, canaries out-of-bounds
writes), on extents that the vector split (8 float32 lanes) does not divide.
"""

import numpy as np
import pytest
from helpers import check_build
from test_topi_transform import ph, run, sched  # noqa: F401  (sched: the generic and x86 schedules)

import te
import topi
from topi import generic, testing


# ------------------------------------------------------------- slicing ---
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_flip(sched, axis):
    x = ph((3, 13, 5))
    run(sched, topi.flip(x, axis), [x], lambda a: np.flip(a, axis))


def test_reverse_sequence_clamps_lengths(sched):
    x, lengths = ph((4, 11, 3)), ph((4,), "int32", "L")
    data = np.random.default_rng(0).random((4, 11, 3)).astype("float32")
    lens = np.array([-1, 0, 5, 40], "int32")  # < 1 -> 1 (unchanged), > 11 -> 11

    def ref(a, n):
        out = a.copy()
        for b, m in enumerate(np.clip(n, 1, 11)):
            out[b, :m] = a[b, :m][::-1]
        return out

    run(sched, topi.reverse_sequence(x, lengths, seq_axis=1, batch_axis=0), [x, lengths], ref, inputs=[data, lens])
    with pytest.raises(ValueError, match="dimension of batch_axis = 4, and seq_length size = 5"):
        topi.reverse_sequence(x, ph((5,), "int32"), 1, 0)


@pytest.mark.parametrize("begin,end,strides", [([0, 0, 0], [4, -5, 4], [1, -1, 2]), ([1, -1, 0], [9, -12, 5], [2, -3, 1]),
                                               ([-2, 1], [-100, 100], [-1, 3])])
def test_strided_slice_with_tensor_bounds(sched, begin, end, strides):
    """Bounds read at run time: the output extents are vars bound by the output buffer."""
    x = ph((3, 13, 5))
    k = len(begin)
    b, e, s = (ph((k,), "int64", n) for n in "bes")
    out = topi.strided_slice(x, b, e, s)
    data = np.random.default_rng(1).random((3, 13, 5)).astype("float32")
    want = testing.strided_slice_python(data, begin, end, strides)
    dims = {f"T_strided_slice_dynamic_dim{j}": want.shape[j] for j in range(k)}
    bounds = [np.array(v, "int64") for v in (begin, end, strides)]
    run(sched, out, [x, b, e, s], lambda *a: want, inputs=[data, *bounds], var_values=dims)


@pytest.mark.parametrize("vshape,begin,end,strides", [((3, 2, 2), [0, 3, 0], [4, 1, 4], [1, -1, 2]),
                                                      ((1, 4, 3), [1, -1, 0], [4, -14, 3], [2, -3, 1]),
                                                      ((2, 3, 5), [1, 1], [4, 4, 5], None)])
def test_strided_set(sched, vshape, begin, end, strides):
    a, v = ph((3, 11, 5), name="A"), ph(vshape, name="V")
    bt, et = ph((len(begin),), "int32", "b"), ph((len(end),), "int32", "e")
    st = None if strides is None else ph((len(strides),), "int32", "s")
    out = topi.strided_set(a, v, bt, et, st)
    rng = np.random.default_rng(2)
    data, vals = rng.random((3, 11, 5)).astype("float32"), rng.random(vshape).astype("float32")
    bounds = [np.array(x, "int32") for x in (begin, end, strides) if x is not None]
    run(sched, out, [a, v, bt, et] + ([st] if st is not None else []),
        lambda *args: testing.strided_set_python(data, vals, begin, end, strides), inputs=[data, vals, *bounds])


@pytest.mark.parametrize("axis", [0, 1])
def test_sequence_mask(sched, axis):
    shape = (9, 3, 5) if axis == 0 else (3, 9, 5)
    x, lengths = ph(shape), ph((3,), "int32", "L")
    lens = np.array([0, 4, 9], "int32")
    data = np.random.default_rng(3).random(shape).astype("float32")
    run(sched, topi.sequence_mask(x, lengths, -2.0, axis), [x, lengths],
        lambda a, n: testing.sequence_mask(a, n, -2.0, axis), inputs=[data, lens])


def test_strided_slice_size_mode_and_short_strides(sched):
    x = ph((5, 13))
    run(sched, topi.strided_slice(x, [1, 2], [3, -1], slice_mode="size"), [x],
        lambda a: testing.strided_slice_python(a, [1, 2], [3, -1], None, slice_mode="size"))
    run(sched, topi.strided_slice(x, [0, 1], [5, 13], [2]), [x], lambda a: a[0:5:2, 1:13])


# ------------------------------------------------------ made from numbers ---
@pytest.mark.parametrize("args,dtype", [((20,), "float32"), ((1, 20, 1.5), "float32"), ((20, 1, -3), "int32"),
                                        ((1, 20.5), "float64")])
def test_arange(sched, args, dtype):
    run(sched, topi.arange(*args, dtype=dtype), [], lambda: np.arange(*args).astype(dtype))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_one_hot(sched, axis):
    idx = ph((3, 7), "int32", "I")
    out = topi.one_hot(idx, te.const(2.5), -1.0, 9, axis, "float32")
    inds = np.random.default_rng(4).integers(-1, 10, (3, 7)).astype("int32")  # some outside [0, 9)
    run(sched, out, [idx], lambda i: testing.one_hot(i, 2.5, -1.0, 9, axis, "float32"), inputs=[inds])


def test_shape_size_and_expand_like(sched):
    n = te.var("n")
    x = ph((n, 7, 3))
    run(sched, topi.shape(x, "int64"), [x], lambda a: np.array(a.shape, "int64"), var_values={"n": 5})
    run(sched, topi.ndarray_size(x), [x], lambda a: np.array(a.size, "int32"), var_values={"n": 5})
    a, like = ph((5, 7)), ph((5, 6, 7, 9), name="L")
    run(sched, topi.expand_like(a, like, [1, 3]), [a, like], lambda u, v: np.broadcast_to(u[:, None, :, None], v.shape))


@pytest.mark.parametrize("upper,k", [(True, 0), (False, 2), (True, -3)])
def test_trilu(sched, upper, k):
    x = ph((2, 6, 11))
    run(sched, topi.trilu(x, te.const(k, "int32"), upper), [x], lambda a: np.triu(a, k) if upper else np.tril(a, k))


@pytest.mark.parametrize("dshape,k,align", [((2, 3), 0, "RIGHT_LEFT"), ((2, 4, 3), (-1, 2), "LEFT_RIGHT"),
                                            ((2, 4, 3), (-1, 2), "RIGHT_RIGHT"), ((2, 3), 1, "LEFT_LEFT")])
def test_matrix_set_diag(sched, dshape, k, align):
    x, d = ph((2, 3, 4), "int32", "X"), ph(dshape, "int32", "D")
    run(sched, topi.matrix_set_diag(x, d, k, align), [x, d], lambda a, b: testing.matrix_set_diag(a, b, k, align))


# ------------------------------------------------------------- indexing ---
@pytest.mark.parametrize("dtype", ["int32", "float32", "uint8"])
def test_gather_nd_classic_layout(sched, dtype):
    """Index tuples along the first axis of indices (classic TVM); floats truncate."""
    x, idx = ph((3, 4, 13)), ph((2, 3, 2), dtype, "I")
    inds = np.array([[[1, 0], [2, 1], [0, 0]], [[3, 2], [0, 1], [3, 3]]]).astype(dtype)
    if dtype == "float32":
        inds = inds + 0.75
    run(sched, topi.gather_nd(x, idx), [x, idx], testing.gather_nd_python, inputs=[np.random.rand(3, 4, 13).astype("float32"), inds])


def test_adv_index_broadcasts(sched):
    x = ph((10, 15, 5))
    i0, i1 = ph((4, 1), "int64", "i0"), ph((1, 7), "uint8", "i1")
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 10, (4, 1)), rng.integers(0, 15, (1, 7)).astype("uint8")
    run(sched, topi.adv_index(x, [i0, i1]), [x, i0, i1], lambda d, p, q: d[p, q],
        inputs=[rng.random((10, 15, 5)).astype("float32"), a, b])


@pytest.mark.parametrize("idx_dtype", ["int64", "uint16"])
def test_unravel_index(sched, idx_dtype):
    idx, shp = ph((3,), idx_dtype, "I"), ph((4,), "int32", "S")
    flat, dims = np.array([0, 144, 37], idx_dtype), np.array([5, 5, 5, 2], "int32")
    run(sched, topi.unravel_index(idx, shp), [idx, shp], lambda i, s: np.array(np.unravel_index(i, s)),
        inputs=[flat, dims])


def test_sparse_to_dense(sched):
    idx, vals, default = ph((3, 2), "int64", "I"), ph((3,), name="V"), ph((), name="D")
    inds = np.array([[0, 0], [1, 12], [2, 5]], "int64")

    def ref(i, v, d):
        out = np.full((3, 13), d, "float32")
        out[tuple(i.T)] = v
        return out

    run(sched, topi.sparse_to_dense(idx, (3, 13), vals, default), [idx, vals, default], ref,
        inputs=[inds, np.array([1.0, 2.0, 3.0], "float32"), np.array(-1.0, "float32")])
    one, val = ph((), "int32", "I"), ph((), "int32", "V")
    run(sched, topi.sparse_to_dense(one, [11], val), [one, val], lambda i, v: np.where(np.arange(11) == i, v, 0),
        inputs=[np.array(9, "int32"), np.array(7, "int32")])


@pytest.mark.parametrize("mode", ["clip", "wrap", "fast"])
def test_take_modes_and_index_dtypes(sched, mode):
    x, idx = ph((3, 13)), ph((5,), "uint32" if mode == "fast" else "int32", "I")
    inds = np.array([0, 12, 3, 7, 1], "uint32") if mode == "fast" else np.array([-14, 20, -1, 0, 12], "int32")
    run(sched, topi.take(x, idx, axis=1, mode=mode), [x, idx],
        lambda a, i: np.take(a, i, axis=1, mode="raise" if mode == "fast" else mode), inputs=[np.random.rand(3, 13).astype("float32"), inds])


def test_take_batch_dims(sched):
    x, idx = ph((3, 13, 2)), ph((3, 4), "int32", "I")
    inds = np.random.default_rng(6).integers(0, 13, (3, 4)).astype("int32")
    run(sched, topi.take(a=x, indices=idx, axis=1, batch_dims=1), [x, idx],
        lambda a, i: np.stack([a[b, i[b]] for b in range(3)]), inputs=[np.random.rand(3, 13, 2).astype("float32"), inds])


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float16", "int16"), ("uint32", "int32")])
def test_reinterpret(sched, src, dst):
    x = ph((13,), src)
    data = (np.random.default_rng(7).random(13) * 1000).astype(src)
    run(sched, topi.reinterpret(x, dst), [x], lambda a: a.view(dst), inputs=[data])
    with pytest.raises(ValueError, match="same bit width"):
        topi.reinterpret(x, "int8")


def test_einsum_symbolic_extents_broadcast_at_run_time():
    """``K2`` may be 1 when ``K`` is not: the read of B broadcasts then (and never past B)."""
    k, k2, n = te.var("K"), te.var("K2"), te.var("N")
    a, b = ph((2, k), name="A"), ph((k2, n), name="B")
    out = topi.einsum("ij,jk->ik", a, b)
    rng = np.random.default_rng(8)
    for kv, k2v in ((3, 3), (3, 1), (1, 4)):
        inputs = [rng.random((2, kv)).astype("float32"), rng.random((k2v, 5)).astype("float32")]
        check_build(generic.default_schedule(out), [a, b, out], lambda p, q: np.einsum("ij,jk->ik", p, q),
                    inputs=inputs, rtol=1e-5, atol=1e-5)


def test_a_tensor_is_not_iterable():
    """``list(A)`` would index A[0], A[1], ... without end: it is refused at once."""
    with pytest.raises(TypeError, match="tensor 'X' is not iterable"):
        list(ph((3,)))


def test_classic_keyword_names(sched):
    """Classic topi's argument names, as TVM's tests pass them by keyword."""
    x, y = ph((2, 3), name="X"), ph((2, 5), name="Y")
    run(sched, topi.concatenate(a_tuple=[x, y], axis=1), [x, y], lambda a, b: np.concatenate([a, b], 1))
    run(sched, topi.stack(a=[x, x], axis=0), [x], lambda a: np.stack([a, a]))
    run(sched, topi.reshape(a=x, newshape=(3, 2)), [x], lambda a: a.reshape(3, 2))
    run(sched, topi.split(ary=y, indices_or_sections=[2], axis=1), [y], lambda a: tuple(np.split(a, [2], 1)))
    run(sched, topi.layout_transform(array=x, src_layout="NC", dst_layout="CN"), [x], lambda a: a.T)


@pytest.mark.parametrize("make,match", [
    (lambda: topi.strided_set(ph((3, 4)), ph((3,)), ph((2,), "int32"), ph((2,), "int32")),
     r"strided_set: v must have the rank and dtype of a \(3, 4\) float32, got \(3,\) float32"),
    (lambda: topi.strided_slice(ph((3, 4)), ph((3,), "int64"), [1, 2, 3]),
     r"strided_slice: begin has 3 entries for a tensor of rank 2"),
    (lambda: topi.one_hot(ph((3,)), 1.0, 0.0, 4, -1, "float32"), r"one_hot: indices must be integers \(float32\)"),
    (lambda: topi.sequence_mask(ph((4, 3)), ph((4,), "int32"), 0.0, 0),
     r"sequence_mask: valid_length must be integers of shape \(3,\), got \(4,\) int32"),
    (lambda: topi.arange(1, 5, 0), r"arange: step must not be 0"),
    (lambda: topi.matrix_set_diag(ph((2, 3)), ph((4,)), 0), r"matrix_set_diag: diagonal of shape \(4,\) does not fit"),
    (lambda: topi.expand_like(ph((3,)), ph((2, 4)), [0]), r"expand_like: a of shape \(3,\) with new axes \[0\]"),
    (lambda: topi.adv_index(ph((3, 4)), [ph((2,), "int32"), ph((3,), "int32")]), r"adv_index: index shapes"),
    (lambda: topi.sparse_to_dense(ph((2, 3), "int32"), (4, 4), ph((2,))), r"sparse_to_dense: indices \(2, 3\)"),
])
def test_bad_arguments_name_the_operator(make, match):
    with pytest.raises(ValueError, match=match):
        make()
