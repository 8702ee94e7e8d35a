"""One test per error message: schedule primitives and runtime argument checks.

Each message must name the stage, the axis or the argument involved; the
assertions match on those names.
"""

import numpy as np
import pytest

import te
import codegen
import schedule
from schedule import ScheduleError


def ew():
    A = te.placeholder((37, 53), name="A")
    B = te.compute((37, 53), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((37, 53), lambda i, j: B[i, j] * 2.0, name="C")
    return A, B, C


def rowsum():
    A = te.placeholder((37, 53), name="A")
    k = te.reduce_axis((0, 53), name="k")
    R = te.compute((37,), lambda i: te.sum(A[i, k], axis=k), name="R")
    return A, R, k


# schedule errors ---------------------------------------------------------------------
def test_split_axis_twice():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].split(i, factor=8)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*split axis 'i'.*already split into \(i\.outer, i\.inner\)"):
        s[C].split(i, factor=4)


def test_reorder_other_stage_axis():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*reorder axis 'j'.*belongs to stage 'B'"):
        s[C].reorder(B.op.axis[1], B.op.axis[0])


def test_reorder_non_leaf_axis():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].split(j, factor=8)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*reorder axis 'j'.*already split.*Leaf axes of C: \[i, j\.outer, j\.inner\]"):
        s[C].reorder(j, i)


def test_reorder_repeated_axis():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage 'C'.*repeated axis"):
        s[C].reorder(i, i)


def test_fuse_non_adjacent():
    A = te.placeholder((4, 5, 6), name="A")
    B = te.compute((4, 5, 6), lambda x, y, z: A[x, y, z] * 2.0, name="B")
    s = te.create_schedule(B.op)
    x, y, z = B.op.axis
    with pytest.raises(ScheduleError, match=r"stage 'B'.*fuse 'x' and 'z'.*not adjacent"):
        s[B].fuse(x, z)


def test_fuse_wrong_order():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match=r"stage 'C'.*fuse 'j' and 'i'"):
        s[C].fuse(j, i)


def test_fuse_reduce_with_data_axis_is_a_reduce_axis():
    """Classic TVM: a data axis fused with a reduce axis is a reduce loop, not vectorizable."""
    A, R, k = rowsum()
    s = te.create_schedule(R.op)
    fused = s[R].fuse(R.op.axis[0], k)
    with pytest.raises(ScheduleError, match=r"stage 'R'.*vectorize reduce axis 'i.k.fused'.*rfactor"):
        s[R].vectorize(fused)


@pytest.mark.parametrize("prim", ["vectorize", "parallel"])
def test_annotate_reduce_axis(prim):
    A, R, k = rowsum()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match=rf"stage 'R'.*{prim} reduce axis 'k'.*rfactor"):
        getattr(s[R], prim)(k)


@pytest.mark.parametrize("prim", ["vectorize", "parallel"])
def test_annotate_split_reduce_axis(prim):
    A, R, k = rowsum()
    s = te.create_schedule(R.op)
    ko, ki = s[R].split(k, factor=8)
    with pytest.raises(ScheduleError, match=rf"stage 'R'.*{prim} reduce axis 'k.inner'"):
        getattr(s[R], prim)(ki)


def test_compute_at_non_consumer():
    A = te.placeholder((37,), name="A")
    B = te.compute((37,), lambda i: A[i] + 1.0, name="B")
    D = te.compute((37,), lambda i: A[i] * 3.0, name="D")
    C = te.compute((37,), lambda i: B[i] + D[i], name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'B'.*stage 'D'.*does not read 'B'"):
        s[B].compute_at(s[D], D.op.axis[0])


def test_compute_at_itself():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'B'.*compute_at itself"):
        s[B].compute_at(s[B], B.op.axis[0])


def test_compute_at_axis_of_other_stage():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'B'.*axis 'i'.*not an axis of stage 'C'"):
        s[B].compute_at(s[C], B.op.axis[0])


def test_compute_inline_reduction():
    A, R, k = rowsum()
    S = te.compute((37,), lambda i: R[i] * 2.0, name="S")
    s = te.create_schedule(S.op)
    with pytest.raises(ScheduleError, match=r"stage 'R'.*compute_inline a reduction"):
        s[R].compute_inline()


def test_compute_inline_output():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*compute_inline an output"):
        s[C].compute_inline()


def test_compute_inline_placeholder():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"stage 'A'.*placeholder"):
        s[A].compute_inline()


@pytest.mark.parametrize("prim", ["split", "vectorize", "parallel", "unroll", "fuse"])
def test_itervar_from_other_stage(prim):
    A, B, C = ew()
    s = te.create_schedule(C.op)
    iv = B.op.axis[1]
    with pytest.raises(ScheduleError, match=rf"stage 'C'.*{prim} axis 'j'.*belongs to stage 'B'"):
        if prim == "split":
            s[C].split(iv, factor=4)
        elif prim == "fuse":
            s[C].fuse(C.op.axis[0], iv)
        else:
            getattr(s[C], prim)(iv)


@pytest.mark.parametrize("kw", [{"factor": 0}, {"factor": -3}, {"nparts": 0}])
def test_factor_not_positive(kw):
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"split of 'j' in stage 'C'.*> 0"):
        s[C].split(C.op.axis[1], **kw)


def test_split_both_factor_and_nparts():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"split of 'i' in stage 'C'.*exactly one of factor= and nparts="):
        s[C].split(C.op.axis[0], factor=4, nparts=2)


def test_split_neither_factor_nor_nparts():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"split of 'i' in stage 'C'.*exactly one of factor= and nparts="):
        s[C].split(C.op.axis[0])


def test_split_float_factor():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(TypeError, match=r"split of 'i' in stage 'C'.*positive"):
        s[C].split(C.op.axis[0], factor=2.5)


@pytest.mark.parametrize("which", ["cache_read", "cache_write"])
def test_unknown_scope(which):
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"unknown storage scope 'texture'; use one of \('global', 'local', 'shared'"):
        if which == "cache_read":
            s.cache_read(A, "texture", [B])
        else:
            s.cache_write(C, "texture")


def test_cache_read_non_reader():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match=r"cache_read of 'A'.*stage 'C' does not read it"):
        s.cache_read(A, "local", [C])


def test_cache_write_after_splitting_the_reduce_axis():
    A, R, k = rowsum()
    s = te.create_schedule(R.op)
    s[R].split(k, factor=4)
    with pytest.raises(ScheduleError, match=r"stage 'R'.*cannot cache_write.*reduce axis was split.*'k.outer'"):
        s.cache_write(R, "local")


def test_cache_write_with_a_stage_attached_to_a_split_axis():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], xo)
    with pytest.raises(ScheduleError, match=r"stage 'C'.*stage 'B' is computed at its axis 'i.outer'"):
        s.cache_write(C, "local")


def test_unknown_pragma_is_kept_and_ignored_by_codegen():
    """Classic TVM passes pragma names through: an unknown one stays on the loop (printed) and
    code generation ignores it; a key that is not a string is refused."""
    A, B, C = ew()
    s = te.create_schedule(C.op)
    s[C].pragma(C.op.axis[0], "no_such_pragma", 1)
    assert s[C].iter_var_attrs[C.op.axis[0]].pragma_keys[0].value == "no_such_pragma"
    assert "// pragma no_such_pragma = 1" in str(schedule.lower(s, [A, B, C]))
    codegen.build(s, [A, B, C], name="pragma_kept")
    with pytest.raises(TypeError, match=r"pragma on stage 'C': the key must be a non-empty string"):
        s[C].pragma(C.op.axis[0], 3)


def test_tensor_not_in_schedule():
    A, B, C = ew()
    s = te.create_schedule(B.op)
    with pytest.raises(ScheduleError, match=r"tensor 'C' is not part of this schedule"):
        s[C]


def test_rfactor_on_data_axis():
    A, R, k = rowsum()
    s = te.create_schedule(R.op)
    with pytest.raises(ScheduleError, match=r"'R'.*rfactor.*'i'"):
        s.rfactor(R, R.op.axis[0])


# runtime argument errors ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def axpy():
    A = te.placeholder((128, 64), name="A")
    B = te.placeholder((128, 64), name="B")
    C = te.compute((128, 64), lambda i, j: A[i, j] * 2.0 + B[i, j], name="C")
    s = te.create_schedule(C.op)
    return codegen.build(s, [A, B, C], name="axpy")


def arrays(shape=(128, 64), dtype="float32"):
    return [np.zeros(shape, dtype) for _ in range(3)]


def test_too_few_args(axpy):
    a, b, c = arrays()
    with pytest.raises((TypeError, ValueError), match=r"axpy: expects 3 arguments \(A, B, C\), got 2"):
        axpy(a, b)


def test_too_many_args(axpy):
    a, b, c = arrays()
    with pytest.raises((TypeError, ValueError), match=r"axpy: expects 3 arguments.*got 4"):
        axpy(a, b, c, c.copy())


def test_list_instead_of_array(axpy):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"axpy: argument 1 'B' expects a numpy.ndarray.*got list"):
        axpy(a, b.tolist(), c)


def test_none_instead_of_array(axpy):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"axpy: argument 2 'C'.*got NoneType"):
        axpy(a, b, None)


def test_read_only_output(axpy):
    a, b, c = arrays()
    c.setflags(write=False)
    with pytest.raises(ValueError, match=r"axpy: argument 2 'C' is an output.*read-only"):
        axpy(a, b, c)


def test_wrong_dtype(axpy):
    a, b, c = arrays()
    with pytest.raises(TypeError, match=r"axpy: argument 0 'A' expects shape \(128, 64\) float32, got \(128, 64\) float64"):
        axpy(a.astype("float64"), b, c)


def test_wrong_rank(axpy):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"axpy: argument 1 'B'.*rank 2.*rank 1"):
        axpy(a, b.reshape(-1), c)


def test_wrong_shape(axpy):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"axpy: argument 2 'C' expects shape \(128, 64\) float32, got \(128, 65\) float32"):
        axpy(a, b, np.zeros((128, 65), "float32"))


def test_non_contiguous(axpy):
    a, b, c = arrays()
    big = np.zeros((64, 128), "float32")
    with pytest.raises(ValueError, match=r"axpy: argument 0 'A' must be C-contiguous"):
        axpy(big.T, b, c)


def test_non_contiguous_slice(axpy):
    a, b, c = arrays()
    big = np.zeros((128, 128), "float32")
    with pytest.raises(ValueError, match=r"axpy: argument 1 'B' must be C-contiguous"):
        axpy(a, big[:, ::2], c)


def test_output_overlaps_input(axpy):
    a, b, c = arrays()
    with pytest.raises(ValueError, match=r"axpy: output argument 2 'C' overlaps argument 0 'A'"):
        axpy(a, b, a)


@pytest.fixture(scope="module")
def symbolic():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    return codegen.build(s, [A, B, n], name="sym")


def test_symbolic_var_mismatch_between_arrays(symbolic):
    with pytest.raises(ValueError, match=r"sym: argument 1 'B' gives n = 11, but an earlier argument gave n = 10"):
        symbolic(np.zeros(10, "float32"), np.zeros(11, "float32"), 10)


def test_symbolic_var_mismatch_with_int(symbolic):
    with pytest.raises(ValueError, match=r"sym: argument 2 'n' gives n = 12, but an earlier argument gave n = 10"):
        symbolic(np.zeros(10, "float32"), np.zeros(10, "float32"), 12)


def test_symbolic_var_not_int(symbolic):
    with pytest.raises(TypeError, match=r"sym: argument 2 'n' expects an int"):
        symbolic(np.zeros(10, "float32"), np.zeros(10, "float32"), 10.0)


def test_unsupported_target():
    A, B, C = ew()
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"unsupported target 'cuda'"):
        codegen.build(s, [A, C], target="cuda")


def test_compute_at_non_leaf_axis():
    # known at the call: the axis was already split, so it is no longer a loop
    A, B, C = ew()
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=8)
    with pytest.raises(ScheduleError, match=r"stage 'B'.*'i'.*Leaf axes of C: \[i\.outer, i\.inner, j\]"):
        s[B].compute_at(s[C], C.op.axis[0])


def test_compute_at_axis_split_or_fused_afterwards_moves_the_attach_point():
    """As classic TVM's LegalizeInvalidAttach: B moves to the axis that iterates as often as the
    one it was attached to (the inner part of the split; the fused axis)."""
    for change in ("split", "fuse"):
        A, B, C = ew()
        s = te.create_schedule(C.op)
        s[B].compute_at(s[C], C.op.axis[1])
        if change == "split":
            s[C].split(C.op.axis[1], factor=8)
            assert s[B].attach_ivar is s[C].leaf_iter_vars[-1]
        else:
            s[C].fuse(*C.op.axis)
            assert s[B].attach_ivar is s[C].leaf_iter_vars[0]
        assert "for (" in str(schedule.lower(s, [A, C]))


def test_read_outside_shape_is_rejected_at_lower():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i + 1], name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ValueError, match=r"compute 'B' reads A\[\.\.\.\] at dimension 0"):
        schedule.lower(s, [A, B])


def test_guarded_read_outside_shape_is_allowed_and_never_loaded():
    import numpy as np

    n = 1000
    A = te.placeholder((n,), name="A")
    B = te.compute((n + 2,), lambda i: te.if_then_else(te.all(i >= 1, i <= n), A[i - 1], 0.0), name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    f = codegen.build(s, [A, B])
    a = np.random.rand(n).astype("float32")
    b = np.zeros(n + 2, dtype="float32")
    f(a, b)
    np.testing.assert_allclose(b, np.pad(a, 1))


def test_packed_read_past_the_packed_extent_is_rejected():
    N, MR = 100, 12  # 100 rows do not fill whole 12-row panels
    A = te.placeholder((N, N), name="A")
    pA = te.compute((N // MR, N, MR), lambda x, y, z: A[x * MR + z, y], name="packedA")
    k = te.reduce_axis((0, N), "k")
    C = te.compute((N, N), lambda i, j: te.sum(pA[i // MR, k, i % MR] * A[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    with pytest.raises(ValueError, match=r"compute 'C' reads packedA\[\.\.\.\] at dimension 0 .*floordiv\(i, 12\)"):
        codegen.build(s, [A, C])
