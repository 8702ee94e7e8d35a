"""Classic TVM behaviour that TVM's own unit tests rely on (issue: classic TVM, second round)."""

import numpy as np
import pytest

import tessera as tvm
from tessera import te


def test_symbolic_split_factor_is_a_build_argument():
    n, f = te.var("n"), te.var("f")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=f)
    assert "for (i.inner, 0, f)" in str(tvm.lower(s, [A, B, n, f]))
    mod = tvm.build(s, [A, B, n, f])
    for size, factor in ((10, 3), (16, 4), (7, 10), (1, 1)):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        mod(a, b, size, factor)
        np.testing.assert_array_equal(b, 2 * a)
    with pytest.raises(TypeError, match="a symbolic factor must be an integer expression"):
        s2 = te.create_schedule(B.op)
        s2[B].split(B.op.axis[0], factor=te.var("x", dtype="float32"))


def test_rfactor_keeps_the_other_reduce_axes():
    n = te.size_var("n")
    k1, k2 = te.reduce_axis((0, n), name="k1"), te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k1, factor=4)
    BF = s.rfactor(B, ki)
    assert BF.op.body[0].axis[0] is k2 and BF.op.body[0].axis[1] is ko
    f = tvm.build(s, [A, B, n])
    a = np.random.default_rng(0).random((6, 6, 6), dtype=np.float32)
    b = np.zeros(6, np.float32)
    f(a, b, 6)
    np.testing.assert_allclose(b, a.sum(axis=(1, 2)), rtol=1e-5)


def test_iter_var_attrs_read_as_classic_iter_types():
    A = te.placeholder((100,), name="A")
    T = te.compute((100,), lambda i: A[i], name="T")
    s = te.create_schedule(T.op)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    s[T].pragma(xo, "pragma1")
    s[T].pragma(xi, "vectorize")  # a pragma named after an annotation is the annotation
    assert s[T].iter_var_attrs[xo].pragma_keys[0].value == "pragma1"
    assert s[T].iter_var_attrs[xi].iter_type == tvm.te.schedule.IterVar.Vectorized
    s[T].unroll(xo)
    assert s[T].iter_var_attrs[xo].iter_type == tvm.te.schedule.IterVar.Unrolled


def test_gpu_memory_scopes_are_memory_on_a_cpu():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "shared", [B])
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[AA].compute_at(s[B], xo)
    assert "A.shared" in str(tvm.lower(s, [A, B]))
    f = tvm.build(s, [A, B])
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_tag_scope_tags_computes_and_does_not_nest():
    A = te.placeholder((4,), name="A")
    with te.tag_scope(tag="gemm"):
        B = te.compute((4,), lambda i: A[i] * 2.0)
        C = te.compute((4,), lambda i: A[i] * 2.0, tag="own")
    assert B.op.tag == "gemm" and C.op.tag == "own"

    @te.tag_scope(tag="conv")
    def conv_like(x):
        return te.compute((4,), lambda i: x[i] + 1.0)

    assert conv_like(A).op.tag == "conv"
    with pytest.raises(ValueError, match=r"tag_scope\('conv'\) inside te.tag_scope\('outer'\): tag scopes do not nest"):
        with te.tag_scope(tag="outer"):
            conv_like(A)


def test_te_schedule_names():
    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((16,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], 4)
    s[B].compute_at(s[C], xo)
    bounds = tvm.te.schedule.InferBound(s)
    assert isinstance(bounds, tvm.container.Map)
    assert bounds[B.op.axis[0]].extent.value == 4
    assert "produce B" in str(tvm.te.schedule.ScheduleOps(s, bounds))
    assert tvm.te.div(te.const(7), te.const(2)).dtype == "int32"


def test_scan_step_reads_the_previous_row_of_an_input_one_shorter():
    """An LSTM-style step reads X[t - 1] with X one row shorter than the scan: the step only runs
    for t >= 1, so the read stays inside X."""
    T, n = 6, 5
    X = te.placeholder((T - 1, n), name="X")
    state = te.placeholder((T, n), name="state")
    init = te.compute((1, n), lambda _, i: te.const(0.0, "float32"), name="init")
    step = te.compute((T, n), lambda t, i: state[t - 1, i] + X[t - 1, i], name="step")
    res = te.scan(init, step, state, inputs=[X])
    s = te.create_schedule(res.op)
    f = tvm.build(s, [X, res])
    x = np.random.default_rng(0).random((T - 1, n), dtype=np.float32)
    out = np.zeros((T, n), np.float32)
    f(x, out)
    np.testing.assert_allclose(out, np.vstack([np.zeros((1, n)), np.cumsum(x, axis=0)]), rtol=1e-6)


def test_runtime_convert():
    assert tvm.runtime.convert(6).value == 6 and tvm.runtime.convert(6).dtype == "int32"
    assert tvm.runtime.convert(2**40).dtype == "int64"
    assert tvm.runtime.convert(1.5).dtype == "float32" and tvm.runtime.convert(True).dtype == "bool"
    assert tvm.runtime.convert("x").value == "x"
    assert [v.value for v in tvm.runtime.convert([1, 2])] == [1, 2]
    assert tvm.runtime.convert({"a": 3})["a"].value == 3
    n = tvm.runtime.convert(6)
    A = te.placeholder((n, 4), name="A")  # a converted int works as a shape
    assert A.shape[0].value == 6
    with pytest.raises(TypeError, match="cannot convert object"):
        tvm.runtime.convert(object())


def test_arith_analyzer_and_stmt_functor():
    n, i = te.size_var("n"), te.var("i")
    ana = tvm.arith.Analyzer()
    e = tvm.tir.stmt_functor.substitute((n * 4 + 3) // 4, {n: 99})
    assert isinstance(ana.simplify(e), tvm.tir.IntImm) and ana.simplify(e).value == 99
    ana.bind(i, tvm.ir.Range(0, 8))
    assert ana.can_prove(i < 8) and not ana.can_prove(i < 7)
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda x: A[x] + 1.0, name="B")
    stmt = tvm.lower(te.create_schedule(B.op), [A, B])["main"].body
    loops = []
    tvm.tir.stmt_functor.post_order_visit(stmt, lambda x: loops.append(x) if isinstance(x, tvm.tir.For) else None)
    assert [lp.loop_var.name for lp in loops] == ["x"] and loops[0].kind == tvm.tir.ForKind.SERIAL


MEMO_CALLS: list = []


def test_pickle_memoize_computes_each_call_once():
    from tessera.contrib.pickle_memoize import memoize

    scale = 3

    @memoize("tests.classic.reference")
    def reference(n):
        MEMO_CALLS.append(n)
        return np.arange(n) * scale

    assert reference(4).tolist() == reference(4).tolist() == [0, 3, 6, 9]
    assert MEMO_CALLS == [4]
    with pytest.raises(TypeError, match="positional arguments only"):
        reference(n=4)


def test_an_output_stage_read_by_another_is_realized_when_not_passed():
    """create_schedule([c.op, d.op]) with d reading c: lowering for [a, d] keeps c internal."""
    a = te.placeholder((6,), name="a")
    c = te.compute((6,), lambda x: a[x] + 1.0, name="c")
    d = te.compute((6,), lambda x: c[x] * 2.0, name="d")
    s = te.create_schedule([c.op, d.op])
    f = tvm.build(s, [a, d])
    out = tvm.nd.array(np.zeros(6, "float32"))
    f(tvm.nd.array(np.arange(6, dtype="float32")), out)
    np.testing.assert_allclose(out.numpy(), (np.arange(6) + 1.0) * 2.0)
    e = te.compute((6,), lambda x: a[x] * 3.0, name="e")
    with pytest.raises(tvm.TVMError, match="output stage 'e' is not in the argument list"):
        tvm.build(te.create_schedule([d.op, e.op]), [a, d])
    # tvm.lower, to look at the nest, computes it into a scratch buffer, as classic TVM's
    assert "allocate e[" in str(tvm.lower(te.create_schedule([d.op, e.op]), [a, d]))


def test_save_json_round_trips_a_schedule_with_shared_nodes():
    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k] * A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], 4)
    s2 = tvm.ir.load_json(tvm.ir.save_json(s))
    assert isinstance(s2, tvm.te.schedule.Schedule) and s2 is not s
    C2 = s2.outputs[0].output(0)
    A2 = C2.op.input_tensors[0]
    n2 = A2.shape[0]
    assert str(tvm.lower(s2, [A2, C2, n2])) == str(tvm.lower(s, [A, C, n]))
    body = C2.op.body[0].source[0]
    assert body.a.tensor.op is body.b.tensor.op  # one placeholder, as before
    f = tvm.build(s2, [A2, C2, n2])
    a = np.arange(48, dtype="float32").reshape(6, 8)
    out = np.zeros(6, "float32")
    f(a, out, 6)
    np.testing.assert_allclose(out, (a * a).sum(axis=1))
    with pytest.raises(TypeError, match="has no JSON form"):
        tvm.ir.save_json(lambda x: x)


def test_shared_memory_bounds_cover_the_threads_that_share_it():
    """A stage in shared memory computed inside a loop bound to threadIdx covers every thread's
    reads (classic InferBound); in local memory, one thread's."""
    A = te.placeholder((64, 64), name="A")
    A1 = te.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="A1")
    A2 = te.compute((64, 64), lambda i, j: A1[i, j] + 3.0, name="A2")
    for scope, rows in (("shared", 32), ("local", 2)):
        s = te.create_schedule(A2.op)
        s[A1].set_scope(scope)
        xo, xi = s[A2].split(A2.op.axis[0], 32)
        tx, xi1 = s[A2].split(xi, nparts=16)
        s[A2].bind(tx, te.thread_axis("threadIdx.x"))
        yo, yi = s[A2].split(A2.op.axis[1], 16)
        s[A2].reorder(xo, tx, yo, xi1, yi)
        s[A1].compute_at(s[A2], yo)
        bounds = tvm.te.schedule.InferBound(s)
        assert bounds[A1.op.axis[0]].extent.value == rows and bounds[A1.op.axis[1]].extent.value == 16
        f = tvm.build(s, [A, A2])  # a bound loop runs serially on the CPU
        a = np.random.default_rng(1).random((64, 64), dtype=np.float32)
        out = np.zeros((64, 64), "float32")
        f(a, out)
        np.testing.assert_allclose(out, a * 2 + 3, rtol=1e-6)


def test_topi_testing_dispatches_schedules_by_target_keys():
    from tessera import topi

    assert tvm.topi.testing.get_injective_schedule("llvm") is topi.x86.schedule_injective
    assert tvm.topi.testing.get_reduce_schedule(tvm.target.Target("llvm -keys=other")) is topi.generic.schedule_reduce
    x = np.random.default_rng(2).random((3, 5), dtype=np.float32)
    tvm.topi.testing.compare_numpy_tvm([x, x], x + x, "llvm", tvm.cpu(), topi.add,
                                       tvm.topi.testing.get_broadcast_schedule("llvm"))
    from tessera.topi.nn.utils import get_pad_tuple

    assert get_pad_tuple("SAME", (3, 3)) == (1, 1, 1, 1)
    assert isinstance(te.var("n") + 1, tvm.tir.PrimExpr) and tvm.te.ScanOp and tvm.te.HybridOp


def test_topi_top_level_names_and_tensor_astype():
    from tessera import topi

    a = te.placeholder((4,), "int32", name="a")
    b = te.placeholder((4,), "int32", name="b")
    c = topi.bitwise_xor(a, b).astype("float32")
    assert c.dtype == "float32" and c.op.tag == topi.tag.ELEMWISE
    s = te.create_schedule(c.op)
    f = tvm.build(s, [a, b, c])
    x, y = np.arange(4, dtype="int32"), np.array([3, 3, 1, 7], "int32")
    out = np.zeros(4, "float32")
    f(x, y, out)
    np.testing.assert_array_equal(out, (x ^ y).astype("float32"))
    assert callable(topi.einsum) and topi.clip and topi.matmul
    assert not tvm.testing.device_enabled("sdaccel") and tvm.device("sdaccel").device_type == 4


def test_schedule_to_module_holds_the_first_loop_nest():
    from tessera.driver.build_module import schedule_to_module

    A = te.placeholder((10,), name="A")
    B = te.compute((10,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], 4)
    mod = schedule_to_module(s, [A, B])
    assert isinstance(mod["main"], tvm.tir.PrimFunc)
    text = str(mod["main"])
    assert "B[((i.outer * 4) + i.inner)] = (A[((i.outer * 4) + i.inner)] + 1.0f)" in text  # before flattening
    assert "likely" in text and text != str(tvm.lower(s, [A, B])["main"])


def test_invalid_compute_is_a_tvm_error_and_a_value_error():
    n = te.size_var("n")
    A = te.placeholder((n, 4), name="A")
    k = te.reduce_axis((0, 4), "k")
    for bad in (lambda i: te.sum(A[i, k], axis=k) + 1, lambda i: (te.sum(A[i, k], axis=k), A[i, 0] + 1)):
        with pytest.raises(tvm._ffi.base.TVMError, match="compute 'B'"):
            te.compute((n,), bad, name="B")
        with pytest.raises(ValueError):
            te.compute((n,), bad, name="B")
