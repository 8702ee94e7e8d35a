"""The compile service: build, load, release, export; unresolved symbols; casts; foreign arrays."""

import gc
import importlib
import time
import weakref

import numpy as np
import pytest

import codegen
import graph
import schedule
import te
from codegen import service
from codegen.jit import LinkError
from graph import GraphBuilder

N = 37  # divides no split factor below
build_mod = importlib.import_module("codegen.build")  # the module (codegen.build is the function)


def _kernel(k: float, n: int = N):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * k + B[i], name="C")
    return te.create_schedule(C.op), [A, B, C]


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


# ---------------------------------------------------------------- the steps --
def test_lowered_to_object_to_loaded_symbol():
    s, args = _kernel(3.0)
    kernel = service.compile_lowered(schedule.lower(s, args, name="axpy3"))
    assert kernel.obj[:4] == b"\x7fELF" and kernel.symbol.startswith("axpy3_")
    assert kernel.name == "axpy3" and [p.name for p in kernel.params] == ["A", "B", "C"]
    assert f"@{kernel.symbol}(" in kernel.ll
    f = service.module(kernel)
    a, b, c = np.arange(N, dtype="float32"), np.ones(N, "float32"), np.zeros(N, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a * 3 + 1)


def test_module_code_is_released_with_the_last_reference():
    s, args = _kernel(4.0)
    f = codegen.build(s, args, name="released")
    loaded = weakref.ref(f._keepalive)
    g = codegen.build(s, args, name="released")  # same schedule: the same Module
    assert g is f
    del f, g
    gc.collect()
    assert loaded() is None


def test_two_modules_of_one_kernel_share_the_loaded_code():
    s1, args1 = _kernel(5.0)
    f1 = codegen.build(s1, args1, name="shared")
    s2, args2 = _kernel(5.0)
    f2 = codegen.build(s2, args2, name="shared")
    assert f1 is not f2 and f1._keepalive is f2._keepalive


def test_rebuilding_the_same_schedule_is_cheap():
    s, args = _kernel(6.0)
    f = codegen.build(s, args)
    t = time.perf_counter()
    for _ in range(20):
        assert codegen.build(s, args) is f
    assert (time.perf_counter() - t) / 20 < 0.01


def test_distinct_builds_release_their_memory():
    """10,000 distinct builds grew RSS by < 50 MiB (see the README); 400 here, with the same
    bound per build (5 KiB); before the service, each build kept ~100 KiB."""
    a, b, c = np.ones(N, "float32"), np.ones(N, "float32"), np.zeros(N, "float32")

    def one(k):
        s, args = _kernel(float(k))
        f = codegen.build(s, args)
        f(a, b, c)
        assert c[0] == k + 1

    for k in range(100):  # fill the bounded caches, warm malloc's arenas
        one(k)
    gc.collect()
    before = _rss_mib()
    count = 400
    for k in range(100, 100 + count):
        one(k)
    gc.collect()
    grown = _rss_mib() - before
    assert grown < count * 5 / 1024, f"{count} builds grew RSS by {grown:.1f} MiB"
    assert len(build_mod._kernels) <= build_mod.KERNEL_CACHE_SIZE


def test_graph_libraries_of_the_same_kernels_share_one_loaded_image(tmp_path, monkeypatch):
    # a graph library is one shared object (one contiguous image: an MCJIT engine per library had
    # code and constants > 2 GiB apart now and then), cached by content and opened once
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    libs = []
    for _ in range(2):
        b = GraphBuilder()
        x = b.input("x", (3, 5))
        libs.append(graph.build(b.finish(b.op("exp", b.op("relu", x))), jobs=1))
    data = np.linspace(-1, 1, 15, dtype="float32").reshape(3, 5)
    for lib in libs:
        m = lib.create_executor()
        m.run(x=data)
        np.testing.assert_allclose(m.get_output(0), np.exp(np.maximum(data, 0)), rtol=1e-6)
    assert libs[0].addresses() == libs[1].addresses()
    assert libs[0]._loaded._engine is libs[1]._loaded._engine


# ------------------------------------------------------ unresolved symbols --
def test_an_unresolvable_symbol_fails_at_build_naming_it():
    ir = ('declare void @tessera_no_such_helper()\n'
          'define void @calls_it() {\n  call void @tessera_no_such_helper()\n  ret void\n}\n')
    _, obj = service.compile_ir(ir)
    with pytest.raises(LinkError, match="tessera_no_such_helper"):
        service.load_objects([obj], ["calls_it"], "calls_it")
    with pytest.raises(LinkError, match="tessera_no_such_helper"):
        service.link_shared_library("/nonexistent/never.so", [obj])


# -------------------------------------------------------------------- export --
def test_export_goes_through_the_service(tmp_path):
    s, args = _kernel(7.0)
    f = codegen.build(s, args, name="exported")
    path = str(tmp_path / "k.so")
    f.export_library(path)
    g = codegen.load_module(path)
    a, b, c = np.arange(N, dtype="float32"), np.ones(N, "float32"), np.zeros(N, "float32")
    g(a, b, c)
    np.testing.assert_allclose(c, a * 7 + 1)
    with pytest.raises(ValueError, match="loaded from a library"):
        g.export_library(str(tmp_path / "again.so"))


# --------------------------------------------------------------------- casts --
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]


def _source_values(src: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(DTYPES.index(src))
    if src == "bool":
        return rng.integers(0, 2, n).astype(bool)
    if src.startswith("float"):  # in range of every destination (uint8 included), with fractions
        return (rng.uniform(0, 120, n) * (rng.random(n) > 0.1)).astype(src)
    info = np.iinfo(src)
    return rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), n, endpoint=True).astype(src)


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
@pytest.mark.parametrize("src", DTYPES)
def test_every_cast_matches_numpy(src, vector):
    n = 45
    A = te.placeholder((n,), name="A", dtype=src)
    outs = [te.compute((n,), lambda i, d=dst: A[i].astype(d), name=f"to_{dst}") for dst in DTYPES]
    s = te.create_schedule([o.op for o in outs])
    if vector:
        for o in outs:
            _, xi = s[o].split(o.op.axis[0], factor=8)
            s[o].vectorize(xi)
    f = codegen.build(s, [A, *outs], name=f"cast_{src}")
    a = _source_values(src, n)
    results = [np.zeros(n, dst) for dst in DTYPES]
    f(a, *results)
    for dst, got in zip(DTYPES, results):
        with np.errstate(over="ignore"):  # int -> float16 beyond 65504 is inf, in numpy as here
            want = a.astype(dst) if not (src.startswith("float") and dst == "bool") else a != 0
        np.testing.assert_array_equal(got, want, err_msg=f"{src} -> {dst}")


HARD_DOUBLES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.99, 65520.0, 7e4, -7e4,
                         2.0**-25, 2.0**-25 * 1.0000001, 2.0**-24, 3 * 2.0**-25, 6e-8, 1e-300,
                         1 + 2.0**-11, 1 + 2.0**-11 + 2.0**-40, 1 + 3 * 2.0**-11, 1 + 2.0**-11 - 2.0**-40])


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=x86-64"])  # x86-64: no F16C, the runtime's helpers
@pytest.mark.parametrize("src, dst", [("float64", "float16"), ("float32", "float16"),
                                      ("float16", "float32"), ("float16", "float64")])
@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "vector"])
def test_half_conversions_round_correctly(src, dst, target, vector):
    rng = np.random.default_rng(3)
    values = np.concatenate([HARD_DOUBLES, rng.uniform(-7e4, 7e4, 300),
                             rng.uniform(-1, 1, 300) * 10.0 ** rng.integers(-9, 5, 300)])
    with np.errstate(over="ignore"):
        a = values.astype(src)
        want = a.astype(dst)
    n = a.size
    A = te.placeholder((n,), name="A", dtype=src)
    B = te.compute((n,), lambda i: A[i].astype(dst), name="B")
    s = te.create_schedule(B.op)
    if vector:
        _, xi = s[B].split(B.op.axis[0], factor=8)
        s[B].vectorize(xi)
    got = np.zeros(n, dst)
    codegen.build(s, [A, B], target=target)(a, got)
    same = (got.view(f"u{got.itemsize}") == want.view(f"u{want.itemsize}")) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{src} -> {dst}: {a[~same][:4]} gave {got[~same][:4]}, numpy {want[~same][:4]}"


# ------------------------------------------------------------ foreign arrays --
def test_torch_tensors_are_used_in_place():
    torch = pytest.importorskip("torch")
    s, args = _kernel(2.0)
    f = codegen.build(s, args)
    a = torch.arange(N, dtype=torch.float32)
    b = torch.ones(N, dtype=torch.float32)
    c = torch.zeros(N, dtype=torch.float32)
    f(a, b, c)  # the output tensor is written in place: no copy was made
    np.testing.assert_allclose(c.numpy(), np.arange(N) * 2 + 1)
    with pytest.raises(TypeError, match="float32"):
        f(a.double(), b, c)
    with pytest.raises(ValueError, match="C-contiguous"):
        f(torch.zeros(2 * N)[::2], b, c)
    with pytest.raises(ValueError, match="dimension 0"):
        f(torch.zeros(N + 1), b, c)
    with pytest.raises(ValueError, match="overlaps"):
        f(a, b, b)


def test_buffer_protocol_arrays_are_accepted():
    import array

    s, args = _kernel(2.0)
    f = codegen.build(s, args)
    a = array.array("f", range(N))
    c = np.zeros(N, "float32")
    f(a, np.ones(N, "float32"), c)
    np.testing.assert_allclose(c, np.arange(N) * 2 + 1)
    with pytest.raises(ValueError, match="read-only"):
        f(a, np.ones(N, "float32"), memoryview(bytes(4 * N)).cast("f"))


def test_graph_executor_takes_torch_inputs(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", (3, 5))
    m = graph.build(b.finish(b.op("relu", x)), jobs=1).create_executor()
    t = torch.linspace(-1, 1, 15).reshape(3, 5)
    m.run(x=t)
    np.testing.assert_allclose(m.get_output(0), np.maximum(t.numpy(), 0))
    with pytest.raises(TypeError, match="dtype float32"):
        m.set_input("x", t.double())
