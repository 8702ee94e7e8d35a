"""The ``tessera`` facade: classic TVM's top-level names, used as a classic script would.

``import tessera as tvm`` and ``from tessera import te``, then build, run on
NDArrays, time, save/link/load, lower, targets; each flow in its own words.
"""

import os

import numpy as np
import pytest

import tessera as tvm
import tessera.testing
from tessera import te
from tessera.contrib import cc, utils


def _vector_add(n=None):
    n = te.var("n") if n is None else n
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


def test_facade_exposes_the_packages_themselves():
    import schedule
    import te as te_pkg
    import topi

    assert tvm.te.compute is te_pkg.compute and te.placeholder is te_pkg.placeholder
    assert tvm.te.schedule.create_schedule is schedule.create_schedule  # classic te.schedule
    assert tvm.topi.nn.conv2d_nchw is topi.nn.conv2d_nchw  # the package's own objects, under TVM's path
    assert tvm.tir.indexmod is te_pkg.indexmod and tvm.tir.indexdiv is te_pkg.indexdiv
    assert tvm.testing.utils.install_request_hook(depth=3) is None


def test_tuner_names_are_lazy_and_name_the_package():
    try:
        import tune.autotvm  # noqa: F401
    except ImportError:
        with pytest.raises(AttributeError, match="tune.autotvm"):
            _ = tvm.autotvm
    else:
        assert tvm.autotvm.__name__ == "tessera.autotvm"
        assert tvm.autotvm.task.create is tune.autotvm.task.create


@pytest.mark.parametrize("n", [1, 7, 1024, 1027])
def test_build_and_run_on_ndarrays(n):
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=4)
    s[C].parallel(xo)
    s[C].vectorize(xi)
    tgt = tvm.target.Target(target="llvm", host="llvm")
    fadd = tvm.build(s, [A, B, C], tgt, name="myadd")
    assert fadd and fadd.entry_name == "myadd"
    dev = tvm.device(tgt.kind.name, 0)
    assert dev == tvm.cpu(0)
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    assert c.shape == (n,) and c.dtype == "float32"
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    d = np.zeros(n, "float32")  # numpy arrays work too
    fadd(a.numpy(), b.numpy(), d)
    np.testing.assert_allclose(d, a.numpy() + b.numpy())


def test_time_evaluator_with_entry_name_and_device():
    A, B, C = _vector_add(256)
    s = te.create_schedule(C.op)
    f = tvm.build(s, [A, B, C], "llvm", name="add256")
    dev = tvm.cpu(0)
    a, b, c = (tvm.nd.array(np.ones(256, "float32")) for _ in range(3))
    ev = f.time_evaluator(f.entry_name, dev, number=5, repeat=3, min_repeat_ms=1)
    res = ev(a, b, c)
    assert len(res.results) == 3 and res.mean > 0
    np.testing.assert_allclose(c.numpy(), 2.0)
    with pytest.raises(ValueError, match="add256"):
        f.time_evaluator("other", dev)


def test_target_from_enclosing_with_and_lower_text():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    with tvm.target.Target("llvm"):
        f = tvm.build(s, [A, B, C])
    assert f.entry_name == "default_function"
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "for (i, 0, n) {" in text and "C[i] = (A[i] + B[i])" in text
    assert tvm.target.Target("llvm").kind.name == "llvm"


@pytest.mark.parametrize("target", ["cuda", "opencl", "cuda -arch=sm_80"])
def test_gpu_targets_are_refused_by_name(target):
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    kind = target.split()[0]
    with pytest.raises(ValueError, match=f"target '{target}' needs a {kind} code generator"):
        tvm.build(s, [A, B, C], target)
    with pytest.raises(ValueError, match=f"needs a {kind} code generator"):
        tvm.target.Target(target)
    with pytest.raises(ValueError, match="CPU only"):
        tvm.nd.array(np.zeros(3, "float32"), tvm.device(kind, 0))
    assert not tvm.cuda(0).exist and tvm.cl(0) == tvm.opencl(0) and tvm.cpu(0).exist


def test_save_link_load_and_export_library():
    A, B, C = _vector_add()
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], "llvm", name="myadd")
    temp = utils.tempdir()
    fadd.save(temp.relpath("myadd.o"))
    cc.create_shared(temp.relpath("myadd.so"), [temp.relpath("myadd.o")])
    assert temp.listdir() == ["myadd.o", "myadd.so"]
    a = tvm.nd.array(np.arange(10, dtype="float32"))
    b = tvm.nd.array(np.full(10, 2, dtype="float32"))
    c = tvm.nd.empty((10,), "float32")
    fadd1 = tvm.runtime.load_module(temp.relpath("myadd.so"))
    fadd1(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + 2)
    fadd.export_library(temp.relpath("myadd_pack.so"))
    fadd2 = tvm.runtime.load_module(temp.relpath("myadd_pack.so"))
    c.copyfrom(np.zeros(10, "float32"))
    fadd2(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + 2)
    fadd.save(temp.relpath("myadd.ll"))
    with open(temp.relpath("myadd.ll")) as fh:
        assert "define" in fh.read()
    path = temp.temp_dir
    del temp
    assert not os.path.exists(path)


def test_float_shape_that_is_an_exact_integer():
    N, K, bn = 64, 16, 32
    B = te.placeholder((K, N), name="B")
    packed = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    assert tuple(int(d) for d in packed.shape) == (2, 16, 32)
    with pytest.raises(TypeError, match="shape entry 0"):
        te.compute((N / 3, K), lambda x, y: B[y, x], name="bad")


def test_ndarray_behaves_as_tvms():
    x = np.arange(6, dtype="float32").reshape(2, 3)
    a = tvm.nd.array(x)
    assert a.shape == (2, 3) and a.dtype == "float32" and a.device == tvm.cpu(0)
    assert a.numpy() is not x and np.array_equal(a.numpy(), x)  # nd.array copies its input
    b = tvm.nd.empty((2, 3), "float32", tvm.cpu(0))
    a.copyto(b)
    assert np.array_equal(b.numpy(), x)
    with pytest.raises(ValueError, match="shapes must match"):
        a.copyto(tvm.nd.empty((3, 2)))
    c = a.copyto(tvm.cpu(0))
    assert c.numpy() is not a.numpy() and np.array_equal(np.asarray(c), x)


def test_tir_helpers_build_nodes_tutorials_print():
    n = te.var("n")
    idx = te.placeholder((n, n), name="idx", dtype="int32")
    val = te.placeholder((n, n), name="val", dtype="int32")

    def fcombine(x, y):
        lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
        rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), tvm.te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((n,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = te.create_schedule(T0.op)
    f = tvm.build(s, [idx, val, T0, T1])
    v = np.random.default_rng(0).integers(-50, 50, size=(5, 5)).astype("int32")
    i = np.tile(np.arange(5, dtype="int32"), (5, 1))
    t0, t1 = tvm.nd.empty((5,), "int32"), tvm.nd.empty((5,), "int32")
    f(tvm.nd.array(i), tvm.nd.array(v), t0, t1)
    np.testing.assert_array_equal(t1.numpy(), v.max(axis=1))
    np.testing.assert_array_equal(t0.numpy(), v.argmax(axis=1))


def test_ir_registration_hooks_record():
    rule = tvm.ir.register_intrin_lowering("tir.exp", target="cuda", f=lambda op: op, level=99)
    assert tvm.ir.lowering_rules[("tir.exp", "cuda")] == (99, rule)
    tvm.ir.register_op_attr("tir.mylog", "TCallEffectKind", tvm.tir.CallEffectKind.Pure)
    assert tvm.ir.op_attrs[("tir.mylog", "TCallEffectKind")] == tvm.tir.CallEffectKind.Pure


@pytest.mark.parametrize("n", [1, 19, 64])
def test_call_pure_extern_calls_the_c_function(n):
    N = te.var("n")
    A = te.placeholder((N,), name="A")
    B = te.compute(
        A.shape,
        lambda i: (
            tvm.tir.call_pure_extern("float32", "expf", A[i])
            + tvm.tir.call_pure_extern("float64", "pow", A[i].astype("float64"), 2.0).astype("float32")
        ),
        name="B",
    )
    s = te.create_schedule(B.op)
    _, xi = s[B].split(B.op.axis[0], factor=8)
    s[B].vectorize(xi)
    f = tvm.build(s, [A, B])
    a = np.random.default_rng(n).uniform(size=n).astype("float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a) + a * a, rtol=1e-5)
    C = te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", "__expf", A[i]), name="C")
    with pytest.raises(ValueError, match="no C function '__expf' is defined in this process"):
        tvm.build(te.create_schedule(C.op), [A, C])


def test_classic_module_paths_import_and_share_the_projects_objects():
    """``import tvm.topi.testing``, ``from tvm.autotvm.task.space import ...`` and the other module
    paths of classic TVM import, and hold the project's own classes and functions (no copies)."""
    import importlib

    import topi
    import tune.autotvm.space
    import tune.record

    import tessera.topi.testing  # noqa: F401
    from tessera.autotvm.record import ApplyHistoryBest, encode, measure_str_key  # noqa: F401
    from tessera.autotvm.task.space import FallbackConfigEntity, SplitEntity
    from tessera.topi.utils import get_const_tuple

    assert tvm.topi.testing.conv2d_nchw_python is topi.testing.conv2d_nchw_python
    assert SplitEntity is tune.autotvm.space.SplitEntity and FallbackConfigEntity is tune.autotvm.space.FallbackConfigEntity
    assert encode is tune.record.encode and get_const_tuple is topi.utils.get_const_tuple
    for path in ("tessera.topi.nn", "tessera.topi.x86", "tessera.autotvm.task", "tessera.autotvm.measure",
                 "tessera.autotvm.tuner", "tessera.autotvm.tuner.xgboost_cost_model", "tessera.autotvm.feature",
                 "tessera.autotvm.database", "tessera.autotvm.env", "tessera.autotvm.measure.executor"):
        assert importlib.import_module(path) is not None
    assert tvm.autotvm.record.measure_str_key is measure_str_key  # the classic path however it is reached
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tessera.topi.no_such_module")


def test_errors_are_tvm_errors():
    """A refused schedule is both a ``ValueError`` (as before) and classic ``tvm.TVMError``
    (a ``RuntimeError``), with its message unchanged."""
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=2)
    for caught in (tvm.TVMError, tvm.error.TVMError, RuntimeError, ValueError):
        with pytest.raises(caught, match="In schedule for stage 'B': cannot split axis 'i'"):
            s[B].split(B.op.axis[0], factor=2)
    assert issubclass(tvm.error.OpNotImplemented, tvm.TVMError)


def test_absent_targets_load_and_refuse_when_called():
    import tessera as tvm
    from tessera import topi
    from tessera.contrib import nvcc

    table = {"cpu": (topi.x86.schedule_dense,), "gpu": (topi.cuda.dense_small_batch,)}  # loads, as in TVM
    assert nvcc.have_fp16("7.0") is False and tvm.contrib.cudnn.exists() is False
    with pytest.raises(tvm.TVMError, match=r"tvm.topi.cuda.dense_small_batch: the cuda target is not built"):
        table["gpu"][0]()
    import tessera.topi.arm_cpu  # noqa: F401  (importable as a module too)


def test_relay_loads_and_its_calls_point_at_onnx_import():
    import tessera as tvm
    from tessera import relay

    import tessera.relay  # noqa: F401

    var = relay.var  # attributes and nested namespaces load, as in a file that imports relay
    with pytest.raises(tvm.TVMError, match=r"tvm.relay.var: relay is not part of Tessera.*graph.from_onnx"):
        var("x", None)
    with pytest.raises(tvm.TVMError, match=r"tvm.relay.op.nn.sparse_dense: relay is not part of Tessera"):
        relay.op.nn.sparse_dense(None, None)
    with pytest.raises(tvm.TVMError, match=r"tvm.relay.random.threefry_key"):
        tvm.relay.random.threefry_key(0)


def test_pass_context_checks_and_carries_options():
    import tessera as tvm

    assert tvm.transform.PassContext.current().opt_level == 2
    with tvm.transform.PassContext(opt_level=3, disabled_pass=["tir.CommonSubexprElimTIR"]) as ctx:
        assert tvm.transform.PassContext.current() is ctx and ctx.disabled_pass == ["tir.CommonSubexprElimTIR"]
    with pytest.raises(ValueError, match="opt_level must be an integer in 0..4"):
        tvm.transform.PassContext(opt_level=7)
    with pytest.raises(TypeError, match="disabled_pass must be a list of pass names"):
        tvm.transform.PassContext(disabled_pass="tir.X")


def test_build_takes_an_unread_placeholder_and_call_names_its_intrinsic():
    import numpy as np

    import tessera as tvm
    from tessera import te, topi

    a = te.placeholder((4,), "int32", name="a")
    b = topi.isinf(a)  # integers are never infinite: the compute does not read a
    f = tvm.build(te.create_schedule(b.op), [a, b], "llvm")
    out = tvm.nd.array(np.ones(4, "bool"))
    f(tvm.nd.array(np.arange(4, dtype="int32")), out)
    assert not out.numpy().any()
    assert topi.exp(te.placeholder((3,), name="x")).op.body[0].op.name == "tir.exp"


def test_classic_imm_order_and_tophub_context():
    import tessera as tvm
    from tessera import autotvm

    c = tvm.tir.FloatImm("float32", -1.5)
    assert isinstance(c, tvm.tir.FloatImm) and c.value == -1.5 and c.dtype == "float32"
    assert isinstance(tvm.tir.IntImm("int64", 3), tvm.tir.IntImm) and not isinstance(c, tvm.tir.IntImm)
    with pytest.raises(TypeError, match=r"tir.IntImm\(dtype, value\): dtype must be a string"):
        tvm.tir.IntImm(3, "int32")
    with autotvm.tophub.context("llvm") as ctx:  # no download: each workload's rule default
        assert isinstance(ctx, autotvm.FallbackContext)
