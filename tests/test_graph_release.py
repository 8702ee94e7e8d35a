"""A graph library's code is a shared object, closed with the last reference to the library.

``graph.build`` links a library's kernels into one shared object (kept in the
kernel cache) and opens it with ``dlopen``; ``dlclose`` runs when the
``GraphLibrary`` and every executor made from it are gone.  The library calls
the process's one thread pool through import stubs.
"""

import ctypes
import gc
import os

import numpy as np
import pytest

import codegen
import graph
from codegen import jit, service
from codegen.jit import LinkError
from graph import GraphBuilder

RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))


def _maps() -> str:
    with open("/proc/self/maps") as fh:
        return fh.read()


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def _shift_relu(k: float, shape=(7, 37)):
    """relu(x + k): each k is a distinct kernel (the scalar is an immediate of its code)."""
    b = GraphBuilder()
    x = b.input("x", shape)
    return b.finish(b.op("relu", b.op("add", x, b.const(np.array([k], "float32"), "c"))))


def _dense_relu(shape, units: int, seed: int = 0):
    """relu(x @ w.T): parallel over rows once the shape is large enough."""
    w = np.random.default_rng(seed).standard_normal((units, shape[1])).astype("float32")
    b = GraphBuilder()
    x = b.input("x", shape)
    return b.finish(b.op("relu", b.op("dense", x, b.const(w, "w")))), w


def _run_shift(lib, k: float, shape=(7, 37)) -> None:
    x = np.linspace(-1, 1, int(np.prod(shape)), dtype="float32").reshape(shape)
    m = lib.create_executor()
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), np.maximum(x + np.float32(k), 0), rtol=1e-6)


def test_library_is_unmapped_with_its_last_reference():
    lib = graph.build(_shift_relu(0.25), jobs=1)
    path = lib._loaded._engine.path
    assert path.endswith(".so") and path in _maps()
    m = lib.create_executor()
    del lib
    gc.collect()
    assert path in _maps()  # the executor holds the library
    x = np.linspace(-1, 1, 7 * 37, dtype="float32").reshape(7, 37)
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), np.maximum(x + np.float32(0.25), 0), rtol=1e-6)
    del m
    gc.collect()
    assert path not in _maps()


def test_a_cached_library_is_opened_again_after_release():
    lib = graph.build(_shift_relu(0.5), jobs=1)
    path = lib._loaded._engine.path
    del lib
    gc.collect()
    assert os.path.exists(path) and path not in _maps()  # closed, kept in the cache
    lib = graph.build(_shift_relu(0.5), jobs=1)
    assert lib._loaded._engine.path == path
    _run_shift(lib, 0.5)


def test_two_libraries_of_the_same_kernels_share_one_image():
    a = graph.build(_shift_relu(0.75), jobs=1)
    b = graph.build(_shift_relu(0.75), jobs=1)
    assert a._loaded._engine is b._loaded._engine and a.addresses() == b.addresses()
    path = a._loaded._engine.path
    del a
    gc.collect()
    assert path in _maps()
    _run_shift(b, 0.75)


@pytest.mark.parametrize("shape", [(7, 37), (65, 99), (130, 67)])
def test_parallel_kernels_use_the_one_thread_pool(shape):
    # (65, 99) and up run parallel: their code calls the runtime through the import stubs
    x = RNG.standard_normal(shape).astype("float32")
    threads = None
    for seed in range(3):
        g, w = _dense_relu(shape, 51, seed)
        lib = graph.build(g, jobs=1)
        m = lib.create_executor()
        m.run(x=x)
        np.testing.assert_allclose(m.get_output(0), np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-4)
        del m, lib
        gc.collect()
        count = len(os.listdir("/proc/self/task"))
        assert threads is None or count == threads, "a library started a thread pool of its own"
        threads = count


def test_a_parallel_library_calls_the_runtime_through_its_stubs():
    g, w = _dense_relu((65, 99), 51)
    lib = graph.build(g, jobs=1)
    imports = jit.library_imports([k.obj for k in lib.kernels.values()])
    assert "tessera_parallel_launch" in imports
    before = codegen.get_num_threads()
    codegen.set_num_threads(1)
    try:
        x = RNG.standard_normal((65, 99)).astype("float32")
        m = lib.create_executor()
        m.run(x=x)
        np.testing.assert_allclose(m.get_output(0), np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-4)
    finally:
        codegen.set_num_threads(before)


def test_distinct_libraries_release_their_memory():
    """1,000 distinct graphs grew RSS by a few MiB (see the report); the process-wide engine kept
    ~15 KiB and 2.5 mappings per library.  40 here, bounded at 8 KiB and 0.5 mappings each.

    RSS is the whole process's: in the full suite a malloc arena once grew by a step of ~1 MiB
    during one round.  A leak grows every round alike, so the quietest of three rounds counts."""
    for k in range(30):  # warm caches and malloc's arenas
        _run_shift(graph.build(_shift_relu(k / 8), jobs=1), k / 8)
    count, rounds = 40, []
    for r in range(3):
        gc.collect()
        rss, maps = _rss_mib(), _maps().count("\n")
        for k in range(30 + r * count, 30 + (r + 1) * count):
            _run_shift(graph.build(_shift_relu(k / 8), jobs=1), k / 8)
        gc.collect()
        rounds.append((_rss_mib() - rss, _maps().count("\n") - maps))
    grown, new_maps = min(g for g, _ in rounds), min(m for _, m in rounds)
    assert grown < count * 8 / 1024, f"{count} libraries grew RSS by {grown:.2f} MiB (rounds {rounds})"
    assert new_maps < count / 2, f"{count} libraries left {new_maps} mappings (rounds {rounds})"


def test_an_exported_library_outlives_the_built_one(tmp_path):
    g, w = _dense_relu((65, 99), 51)
    lib = graph.build(g, jobs=1)
    path = str(tmp_path / "dense.so")
    lib.export_library(path)
    del lib
    gc.collect()
    m = graph.load_library(path).create_executor()
    x = RNG.standard_normal((65, 99)).astype("float32")
    m.run(x=x)
    np.testing.assert_allclose(m.get_output(0), np.maximum(x @ w.T, 0), rtol=1e-4, atol=1e-4)


def test_without_a_linker_libraries_load_into_the_process_engine(monkeypatch):
    monkeypatch.setattr(service, "has_linker", lambda: False)
    lib = graph.build(_shift_relu(1.25), jobs=1)
    assert lib._loaded._engine is jit.engine()
    _run_shift(lib, 1.25)


def test_an_unresolvable_symbol_fails_naming_it():
    ir = ('declare void @tessera_no_such_helper()\n'
          'define void @calls_it() {\n  call void @tessera_no_such_helper()\n  ret void\n}\n')
    _, obj = service.compile_ir(ir)
    with pytest.raises(LinkError, match="tessera_no_such_helper"):
        service.load_library([obj], ["calls_it"], "calls_it")


def test_a_symbol_the_library_lacks_is_named(tmp_path):
    _, obj = service.compile_ir("define void @defined_here() {\n  ret void\n}\n")
    with pytest.raises(LinkError, match="not_defined_here"):
        service.load_library([obj], ["not_defined_here"], "lacks", cache_dir=str(tmp_path))


def test_a_damaged_cached_library_is_linked_anew(tmp_path):
    _, obj = service.compile_ir("define i32 @seven() {\n  ret i32 7\n}\n")
    first = service.load_library([obj], ["seven"], "seven", cache_dir=str(tmp_path))
    path = first._engine.path
    del first
    gc.collect()
    with open(path, "wb") as fh:
        fh.write(b"not an ELF file")
    loaded = service.load_library([obj], ["seven"], "seven", cache_dir=str(tmp_path))
    assert ctypes.CFUNCTYPE(ctypes.c_int32)(loaded.address("seven"))() == 7


def test_half_precision_helpers_come_from_the_runtime():
    # x86-64 without F16C: the casts call __extendhfsf2 / __truncsfhf2, which the runtime defines
    b = GraphBuilder()
    x = b.input("x", (5, 37), "float16")
    y = b.op("exp", b.op("cast", x, dtype="float32"))
    lib = graph.build(b.finish(b.op("cast", y, dtype="float16")), target="llvm -mcpu=x86-64", jobs=1)
    assert {"__extendhfsf2", "__truncsfhf2"} <= set(jit.library_imports([k.obj for k in lib.kernels.values()]))
    xv = np.linspace(-2, 2, 5 * 37).astype("float16").reshape(5, 37)
    m = lib.create_executor()
    m.run(x=xv)
    np.testing.assert_array_equal(m.get_output(0), np.exp(xv.astype("float32")).astype("float16"))


def test_a_library_that_cannot_be_mapped_loads_into_the_process_engine(monkeypatch):
    # e.g. the cache and the temporary directory on noexec file systems: dlopen fails
    def refuse(path, *args):
        raise OSError(f"cannot load {path}: failed to map segment from shared object")

    monkeypatch.setattr(jit, "open_library", refuse)
    with pytest.warns(RuntimeWarning, match="could not be mapped"):
        lib = graph.build(_shift_relu(1.5), jobs=1)
    assert lib._loaded._engine is jit.engine()
    _run_shift(lib, 1.5)
