"""The ``tessera`` command line (graph/cli/), run in-process through ``main([...])``.

One small ONNX model (conv + relu + flatten + gemm + softmax, 1000 classes)
is built by onnx.helper; each subcommand runs on it, and every error exits
with status 2 and one line on stderr, never a traceback.
"""

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from graph.cli import common, timing
from graph.cli import main

CLASSES = 1000


def tiny_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((4, 3, 3, 3)) * 0.3,
        "b1": rng.standard_normal(4) * 0.1,
        "w2": rng.standard_normal((CLASSES, 256)) * 0.1,
        "b2": rng.standard_normal(CLASSES) * 0.1,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w2", "b2"], ["g"], transB=1),
        helper.make_node("Softmax", ["g"], ["prob"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, CLASSES])],
        [numpy_helper.from_array(w.astype(np.float32), name) for name, w in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """The model in numpy."""
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    patches = np.stack([np.stack([xp[:, i : i + 8, j : j + 8] for j in range(3)], 1) for i in range(3)], 1)
    conv = np.maximum(np.einsum("ocij,cijhw->ohw", w["w1"], patches) + w["b1"][:, None, None], 0)
    logits = conv.reshape(1, -1) @ w["w2"].T + w["b2"]
    e = np.exp(logits - logits.max())
    return e / e.sum()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    model = tiny_model()
    paths = {"dir": d, "model": str(d / "tiny.onnx")}
    onnx.save(model, paths["model"])
    x = np.random.default_rng(7).standard_normal((1, 3, 8, 8)).astype(np.float32)
    paths["x"] = str(d / "x.npy")
    np.save(paths["x"], x)
    paths["expected"] = reference(model, x)
    for name, array in {
        "wide": np.zeros((1, 3, 8, 9), np.float32),
        "f64": np.zeros((1, 3, 8, 8)),
    }.items():
        paths[name] = str(d / f"{name}.npy")
        np.save(paths[name], array)
    (d / "text.onnx").write_text("not a model\n")
    (d / "empty.onnx").write_bytes(b"")
    data = model.SerializeToString()
    (d / "truncated.onnx").write_bytes(data[: len(data) // 3])
    unsupported = helper.make_model(
        helper.make_graph(
            [helper.make_node("StringNormalizer", ["a"], ["b"])],
            "unsupported",
            [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 3])],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    onnx.save(unsupported, str(d / "unsupported.onnx"))
    return paths


def printed_values(line: str) -> np.ndarray:
    """The first values of an output line: ``name: (shape) dtype  [a, b, ...]``."""
    inner = line.split("[", 1)[1].split("]", 1)[0]
    return np.array([float(t) for t in inner.split(",") if t.strip() not in ("", "...")])


def output_line(out: str, name: str = "prob") -> str:
    return next(line for line in out.splitlines() if line.startswith(f"{name}:"))


# ------------------------------------------------------------------ run
def test_run_random_inputs(files, capsys):
    assert main(["run", files["model"], "--repeat", "2"]) == 0
    out, err = capsys.readouterr()
    line = output_line(out)
    assert line.startswith(f"prob: (1, {CLASSES}) float32  [")
    assert " argmax " in line
    assert "latency: " in out and "median" in out
    assert "importing" in err and "random inputs (seed 0): x (1, 3, 8, 8) float32" in err


def test_run_is_seeded(files, capsys):
    lines = []
    for seed in ("1", "1", "2"):
        assert main(["run", files["model"], "-q", "--seed", seed, "--repeat", "1"]) == 0
        out, err = capsys.readouterr()
        assert err == ""
        lines.append(output_line(out))
    assert lines[0] == lines[1] != lines[2]


@pytest.mark.parametrize("spec", ["x={x}", "{x}"])
def test_run_input_from_npy(files, capsys, spec):
    assert main(["run", files["model"], "-q", "--repeat", "1", "--input", spec.format(x=files["x"])]) == 0
    line = output_line(capsys.readouterr().out)
    expected = files["expected"].ravel()
    np.testing.assert_allclose(printed_values(line), expected[:5], rtol=1e-4, atol=1e-7)
    assert f" argmax {int(np.argmax(expected))} " in line


def test_run_profile(files, capsys):
    assert main(["run", files["model"], "-q", "--repeat", "1", "--profile", "--opt-level", "1"]) == 0
    out = capsys.readouterr().out
    assert "Graph pass profile" in out and "fuse_ops" in out
    assert "memory plan:" in out and "naive" in out
    assert "compile profile: built in" in out and "link and load" in out
    assert "kernel (ops)" in out and "kernel calls" in out and "FMA peak" in out


# ------------------------------------------------------------------ bench
def test_bench_against_onnxruntime(files, capsys):
    pytest.importorskip("onnxruntime")
    code = main(
        ["bench", files["model"], "-q", "--repeat", "2", "--number", "3", "--input", f"x={files['x']}"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "output prob: max abs diff" in out and ": agree" in out
    assert out.count("median (min") == 2 and "onnxruntime:" in out
    assert "speed ratio (onnxruntime time / Tessera time):" in out


def test_compare_outputs_reports_disagreement(capsys):
    class Fake:
        def output_names(self):
            return ["y"]

        def get_output(self, k):
            return np.array([1.0, 2.0, 3.0], np.float32)

    assert timing.compare_outputs(Fake(), [np.array([1.0, 2.0, 3.0])]) == 0
    assert timing.compare_outputs(Fake(), [np.array([1.0, 2.0, 3.1])]) == common.EXIT_MISMATCH
    out = capsys.readouterr().out
    assert ": agree" in out and "DIFFER" in out


# ------------------------------------------------------------------ compile
def test_compile_then_run_library(files, capsys):
    lib = str(files["dir"] / "tiny.so")
    assert main(["compile", files["model"], "-o", lib, "-q"]) == 0
    out = capsys.readouterr().out
    assert os.path.getsize(lib) > 0
    assert f"wrote {lib}" in out and "graph.load_library" in out and f"tessera run {lib}" in out
    assert main(["run", lib, "-q", "--repeat", "1", "--input", f"x={files['x']}", "--profile"]) == 0
    out = capsys.readouterr().out
    np.testing.assert_allclose(
        printed_values(output_line(out)), files["expected"].ravel()[:5], rtol=1e-4, atol=1e-7
    )
    assert "memory plan: arena" in out
    assert main(["bench", lib, "-q", "--repeat", "1", "--number", "1"]) == 0
    out = capsys.readouterr().out
    assert "tessera:" in out and "onnxruntime:  not run: a compiled library carries no ONNX model" in out


def test_compile_for_another_cpu(files, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    lib = str(tmp_path / "tiny_avx2.so")
    assert main(["compile", files["model"], "-o", lib, "-q", "--target", "llvm -mcpu=x86-64-v3"]) == 0
    capsys.readouterr()
    assert main(["run", lib, "-q", "--repeat", "1", "--input", f"x={files['x']}"]) == 0
    out = capsys.readouterr().out
    np.testing.assert_allclose(
        printed_values(output_line(out)), files["expected"].ravel()[:5], rtol=1e-4, atol=1e-7
    )
    assert main(["compile", files["model"], "-q", "--target", "llvm -mcpu=nosuchcpu"]) == 2
    assert "--target 'llvm -mcpu=nosuchcpu'" in capsys.readouterr().err


def test_no_winograd_is_the_build_option(files, capsys, monkeypatch, tmp_path):
    """``--no-winograd`` reaches ``graph.build`` as ``options={"winograd": False}``."""
    import graph

    seen, real = [], graph.build
    monkeypatch.setattr(graph, "build", lambda *a, **kw: seen.append(kw.get("options")) or real(*a, **kw))
    for flags in ([], ["--no-winograd"]):
        assert main(["compile", files["model"], "-q", "-o", str(tmp_path / "tiny.so"), *flags]) == 0
    assert seen == [{"winograd": True}, {"winograd": False}]


def test_compile_default_output_name(files, capsys, tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(onnx.load(files["model"]).SerializeToString())
    assert main(["compile", str(model), "-q"]) == 0
    assert (tmp_path / "m.so").exists()


# ------------------------------------------------------------------ errors
ERRORS = [
    (["run", "{dir}/missing.onnx"], "no such file"),
    (["run", "{dir}"], "is a directory"),
    (["run", "{dir}/text.onnx"], "cannot parse"),
    (["run", "{dir}/truncated.onnx"], "truncated"),
    (["bench", "{dir}/empty.onnx"], "empty"),
    (["compile", "{dir}/unsupported.onnx"], "unsupported operators (1 nodes): StringNormalizer 'b'"),
    (["run", "{model}", "--input", "y={x}"], "has no input 'y'; its inputs: x (1, 3, 8, 8) float32"),
    (
        ["run", "{model}", "--input", "x={wide}"],
        "expects (1, 3, 8, 8) float32, the file holds (1, 3, 8, 9) float32",
    ),
    (["run", "{model}", "--input", "x={f64}"], "convert it with .astype('float32')"),
    (["run", "{model}", "--input", "x={dir}/nothing.npy"], "no such file"),
    (["run", "{model}", "--input", "x={dir}/text.onnx"], "is not a .npy file"),
    (["run", "{model}", "--repeat", "0"], "--repeat 0: must be at least 1"),
    (["compile", "{model}", "-o", "{dir}/no/such/dir/m.so"], "no such directory"),
    (["compile", "{model}", "-o", "{model}"], "would overwrite the model"),
]


@pytest.mark.parametrize("argv, message", ERRORS, ids=[m for _, m in ERRORS])
def test_errors_are_one_line_exit_2(files, capsys, argv, message):
    argv = [a.format(**files) for a in argv]
    assert main([*argv, "-q"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("tessera: error: ") and err.count("\n") == 1, err
    assert message in err
    assert "Traceback" not in err + out


def test_compile_refuses_a_library(files, capsys):
    lib = str(files["dir"] / "again.so")
    assert main(["compile", files["model"], "-o", lib, "-q"]) == 0
    capsys.readouterr()
    assert main(["compile", lib, "-q"]) == 2
    assert "already a compiled library" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys):
    assert main(["frobnicate"]) == 2
    assert main(["run"]) == 2
    assert main(["run", "m.onnx", "--opt-level", "7"]) == 2
    assert "usage: tessera" in capsys.readouterr().err


def test_debug_shows_the_exception(files):
    with pytest.raises(common.CliError, match="no such file"):
        main(["run", str(files["dir"] / "missing.onnx"), "-q", "--debug"])


def test_python_dash_m_graph():
    res = subprocess.run(
        [sys.executable, "-m", "graph", "--help"], check=False, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and "usage: tessera" in res.stdout and "compile" in res.stdout




def test_shape_pins_symbolic_dimensions(tmp_path, capsys):
    """A model exported with a dynamic batch runs with --shape; without it the error says how."""
    model = helper.make_model(
        helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "dyn",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 5])]),
        opset_imports=[helper.make_opsetid("", 17)])
    path = str(tmp_path / "dyn.onnx")
    onnx.save(model, path)
    assert main(["run", path, "-q", "--repeat", "1"]) == 2
    assert "--shape NAME=EXTENTS, e.g. --shape x=" in capsys.readouterr().err
    assert main(["run", path, "-q", "--repeat", "1", "--shape", "x=4x3x5"]) == 0
    assert main(["compile", path, "-q", "--shape", "x=2x3x5", "-o", str(tmp_path / "dyn.so")]) == 0
    assert main(["bench", path, "-q", "--repeat", "1", "--number", "1", "--shape", "x=4x3x5"]) == 0
    assert main(["run", path, "-q", "--shape", "x=4by3"]) == 2
    assert "--shape 'x=4by3': expected NAME=EXTENTS" in capsys.readouterr().err
