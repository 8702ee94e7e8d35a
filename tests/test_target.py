"""Targets as classic TVM wrote them: parsing, errors, builds for another CPU, the target context."""

import re

import numpy as np
import pytest

import codegen
import graph
import te
from codegen.target import Target, create, host
from graph import GraphBuilder

AVX2 = "llvm -mcpu=x86-64-v3"
HOST_AVX512 = host().has("avx512f")


# ------------------------------------------------------------------ parsing --
@pytest.mark.parametrize("spec, cpu, bits", [
    ("llvm", host().cpu, host().vector_bits),
    ("llvm -mcpu=x86-64-v3", "x86-64-v3", 256),
    ("llvm -mcpu=x86-64-v4", "x86-64-v4", 512),
    ("llvm -mcpu=x86-64", "x86-64", 128),
    ("llvm -mcpu=skylake-avx512 -mattr=-avx512f", "skylake-avx512", 256),
    ("llvm -mcpu=haswell -mattr=-avx2", "haswell", 128),
])
def test_target_strings_parse(spec, cpu, bits):
    t = Target(spec)
    assert (t.cpu, t.vector_bits) == (cpu, bits)
    assert t.lanes("float32") == bits // 32
    again = Target(str(t))  # the canonical text parses to the same target
    assert (again.cpu, again.features) == (t.cpu, t.features)


def test_mattr_alone_edits_the_host_features():
    t = Target("llvm -mattr=+avx2,+fma,-avx512f")
    assert t.cpu == host().cpu
    assert t.has("avx2") and t.has("fma") and not t.has("avx512f") and not t.has("avx512bw")
    assert t.vector_bits == 256 and t.vector_registers == 16
    assert "-avx512f" in t.feature_string.split(",")


def test_a_cpu_llvm_knows_outside_the_table_is_accepted_conservatively():
    t = Target("llvm -mcpu=bdver2")
    assert t.cpu == "bdver2" and t.vector_bits == 128


@pytest.mark.parametrize("spec, word", [
    ("llvm -mcpu=pentium9000", "pentium9000"),
    ("llvm -mattr=+avx9000", "avx9000"),
    ("llvm -mcpu=x86-64-v3 -mattr=+notafeature", "notafeature"),
    ("cuda", "cuda"),
])
def test_unknown_names_are_value_errors_naming_them(spec, word):
    with pytest.raises(ValueError, match=re.escape(repr(word)) if spec != "cuda" else "unsupported target"):
        Target(spec)


def test_feature_without_sign_is_refused():
    with pytest.raises(ValueError, match="must start with '\\+' or '-'"):
        Target("llvm -mattr=avx2")


def test_current_target_nests():
    a, b = Target(AVX2), Target("llvm -mcpu=x86-64")
    assert Target.current(allow_none=True) is None
    with a:
        with b:
            assert Target.current() is b
        assert Target.current() is a
    assert Target.current() is host()
    assert create(None) is host()


# ------------------------------------------------------------------- builds --
def _axpy(n=1003, vec=16):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * 2.5 + B[i], name="C")
    s = te.create_schedule(C.op)
    _, xi = s[C].split(C.op.axis[0], factor=vec)
    s[C].vectorize(xi)
    return s, [A, B, C]


def _run_axpy(f, n=1003):
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype="float32"), rng.random(n, dtype="float32")
    c = np.zeros(n, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a * 2.5 + b, rtol=1e-6)


@pytest.mark.parametrize("target", ["llvm", AVX2, "llvm -mattr=+avx2,+fma,-avx512f",
                                    "llvm -mcpu=x86-64-v3 -mattr=-fma", Target("llvm -mcpu=x86-64")])
def test_build_for_each_target_form_runs_here(target):
    s, args = _axpy()
    f = codegen.build(s, args, target=target)
    _run_axpy(f)
    assert f.target == str(create(target))


def test_avx2_build_uses_no_zmm_register():
    s, args = _axpy()
    asm = codegen.build(s, args, target=AVX2).get_source("asm")
    assert "ymm" in asm and "zmm" not in asm


@pytest.mark.skipif(not HOST_AVX512, reason="the host has no AVX-512")
def test_host_build_of_the_same_kernel_uses_zmm():
    s, args = _axpy()
    assert "zmm" in codegen.build(s, args, target="llvm").get_source("asm")


def test_build_without_target_uses_the_current_one():
    s, args = _axpy()
    with Target(AVX2):
        f = codegen.build(s, args)
    assert f.target == str(Target(AVX2))
    assert "zmm" not in f.get_source("asm")


def test_export_library_for_avx2_loads_and_runs(tmp_path):
    s, args = _axpy()
    f = codegen.build(s, args, target=AVX2)
    path = str(tmp_path / "axpy_avx2.so")
    f.export_library(path)
    _run_axpy(codegen.load_module(path))
    host_built = codegen.build(s, args, target="llvm")
    path2 = str(tmp_path / "axpy_reassembled.so")
    host_built.export_library(path2, target=AVX2)  # the IR assembled again for another CPU
    _run_axpy(codegen.load_module(path2))


def test_build_with_a_bad_target_names_it():
    s, args = _axpy()
    with pytest.raises(ValueError, match="'nehalem2'"):
        codegen.build(s, args, target="llvm -mcpu=nehalem2")


# -------------------------------------------------------------------- graph --
def _graph():
    rng = np.random.default_rng(2)
    b = GraphBuilder()
    x = b.input("data", (1, 3, 11, 9))
    w = b.const(rng.standard_normal((8, 3, 3, 3)).astype("float32") * 0.2, "w")
    y = b.op("relu", b.op("conv2d", x, w, padding=(1, 1, 1, 1)))
    return b.finish(b.op("global_pool", y, pool_type="avg")), rng.standard_normal((1, 3, 11, 9)).astype("float32")


def test_graph_build_for_avx2_matches_the_host_build(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    g, x = _graph()
    want = graph.build(g, target="llvm", jobs=1).create_executor()
    want.run(data=x)
    lib = graph.build(g, target=AVX2, jobs=1)
    assert lib.target == str(Target(AVX2))
    m = lib.create_executor()
    m.run(data=x)
    np.testing.assert_allclose(m.get_output(0), want.get_output(0), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "g.so")
    lib.export_library(path)
    loaded = graph.load_library(path).create_executor()
    loaded.run(data=x)
    np.testing.assert_allclose(loaded.get_output(0), want.get_output(0), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="was built for"):
        lib.export_library(str(tmp_path / "other.so"), target="llvm -mcpu=x86-64")


def test_graph_kernels_are_scheduled_inside_the_target(tmp_path, monkeypatch):
    from graph import compile as gc

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    seen = []
    original = gc.schedule_body

    def spy(body, outs, target):
        seen.append((str(Target.current()), str(target)))
        return original(body, outs, target)

    monkeypatch.setattr(gc, "schedule_body", spy)
    g, _ = _graph()
    graph.build(g, target=AVX2, jobs=1)
    assert seen and set(seen) == {(str(Target(AVX2)), str(Target(AVX2)))}  # handed down, and entered


def test_kernel_cache_is_kept_per_target(tmp_path, monkeypatch):
    from graph.compile import cache_dir

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    assert cache_dir("llvm") != cache_dir(AVX2)


def test_cli_refuses_an_unknown_target(tmp_path, capsys):
    from graph.cli import main

    model = tmp_path / "m.onnx"
    model.write_bytes(b"not a model")
    assert main(["compile", str(model), "--target", "llvm -mcpu=nosuchcpu", "-q"]) == 2
    assert "nosuchcpu" in capsys.readouterr().err


def test_a_schedule_made_for_one_target_and_built_for_another_warns_naming_both():
    """``topi.x86.schedule_conv2d_nchw`` outside ``with Target(...)`` reads the host's vector
    width; built for another CPU the build says so, naming both targets and the fix."""
    import warnings

    import topi

    def conv():
        A, W = te.placeholder((1, 16, 14, 14), name="A"), te.placeholder((32, 16, 3, 3), name="W")
        C = topi.x86.conv2d_nchw_x86(A, W, 1, 1, 1)
        return topi.x86.schedule_conv2d_nchw([C]), [A, W, C]

    s, args = conv()
    assert s.target == str(Target("llvm"))
    other = "llvm -mcpu=x86-64-v4" if Target("llvm").vector_bits < 512 else AVX2
    with pytest.warns(UserWarning, match=r"made for target 'llvm -mcpu=.*' .* built for 'llvm -mcpu=x86-64-v[34].*'; "
                                         r"make the schedule inside `with Target\("):
        codegen.build(s, args, target=other)
    with Target(other):
        s2, args2 = conv()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        codegen.build(s2, args2, target=other)  # made under the target it is built for: silent
