"""Golden loop-nest text: ``str(schedule.lower(...))`` for a few classic schedules.

The expected text lives in ``tests/golden/<name>.txt``; run
``pytest tests/test_golden.py --update-golden`` to rewrite it after an
intended change in lowering, and review the diff.  Besides the whole-text
comparison each test asserts the lines tutorials rely on (loop headers,
``parallel``, ``ramp`` from vectorisation, ``produce``).
"""

from pathlib import Path

import pytest

import te
import schedule

GOLDEN = Path(__file__).parent / "golden"


def check_golden(name: str, text: str, update: bool) -> None:
    path = GOLDEN / f"{name}.txt"
    text = text.rstrip("\n") + "\n"
    if update:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"no golden file {path}; run pytest --update-golden to create it")
    want = path.read_text()
    assert text == want, (
        f"lowered text differs from {path} (run pytest --update-golden if the change is intended)\n"
        f"--- got ---\n{text}--- want ---\n{want}"
    )


def lowered(s, args) -> str:
    return str(schedule.lower(s, args))


def test_split_parallel_vectorize(update_golden):
    A = te.placeholder((1000,), name="A")
    B = te.compute((1000,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=64)
    s[B].parallel(xo)
    s[B].vectorize(xi)
    text = lowered(s, [A, B])
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines[0] == "produce B {"
    assert "parallel (i.outer, 0, 15) {" in lines
    assert "ramp((i.outer * 64), 1, 64)" in text  # the vectorised main loop
    assert "for (i.inner" not in text
    check_golden("split_parallel_vectorize", text, update_golden)


def test_split_divisible(update_golden):
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], factor=32)
    text = lowered(s, [A, B])
    lines = [ln.strip() for ln in text.splitlines()]
    assert "for (i.outer, 0, 32) {" in lines
    assert "for (i.inner, 0, 32) {" in lines
    assert "likely" not in text  # a dividing factor needs no guard
    assert any(ln.startswith("B[") and " = " in ln for ln in lines)
    check_golden("split_divisible", text, update_golden)


def test_tile_unroll(update_golden):
    A = te.placeholder((37, 53), name="A")
    C = te.compute((37, 53), lambda i, j: A[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 16)
    s[C].unroll(yi)
    text = lowered(s, [A, C])
    lines = [ln.strip() for ln in text.splitlines()]
    assert "for (i.outer, 0, 4) {" in lines or "for (i.outer, 0, 5) {" in lines
    assert "for (j.inner" not in text  # unrolled away
    check_golden("tile_unroll", text, update_golden)


def test_fuse_parallel(update_golden):
    A = te.placeholder((37, 53), name="A")
    C = te.compute((37, 53), lambda i, j: A[i, j] * 3.0, name="C")
    s = te.create_schedule(C.op)
    f = s[C].fuse(*C.op.axis)
    s[C].parallel(f)
    text = lowered(s, [A, C])
    assert "parallel (i.j.fused, 0, 1961) {" in [ln.strip() for ln in text.splitlines()]
    check_golden("fuse_parallel", text, update_golden)


def test_compute_at_stencil(update_golden):
    A = te.placeholder((1004,), name="A")
    B = te.compute((1002,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    C = te.compute((1000,), lambda i: B[i] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[B].compute_at(s[C], xo)
    text = lowered(s, [A, C])
    lines = [ln.strip() for ln in text.splitlines()]
    assert lines[0] == "produce C {"
    assert "produce B {" in lines
    assert "for (i.outer, 0, 15) {" in lines
    # B is produced inside C's outer loop: its producer comes after that loop header
    assert lines.index("for (i.outer, 0, 15) {") < lines.index("produce B {")
    check_golden("compute_at_stencil", text, update_golden)


def test_gemm_blocking(update_golden):
    M = N = K = 128
    k = te.reduce_axis((0, K), name="k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    s = te.create_schedule(C.op)
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], 32, 32)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    text = lowered(s, [A, B, C])
    lines = [ln.strip() for ln in text.splitlines()]
    for header in ("for (x.outer, 0, 4) {", "for (y.outer, 0, 4) {", "for (k.outer, 0, 32) {",
                   "for (x.inner, 0, 32) {", "for (k.inner, 0, 4) {"):
        assert header in lines, header
    assert "for (y.inner" not in text
    assert "ramp(" in text
    check_golden("gemm_blocking", text, update_golden)


def test_cache_write_names(update_golden):
    A = te.placeholder((64, 48), name="A")
    k = te.reduce_axis((0, 48), name="k")
    B = te.compute((64,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    BL = s.cache_write(B, "local")
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[BL].compute_at(s[B], xo)
    text = lowered(s, [A, B])
    lines = [ln.strip() for ln in text.splitlines()]
    assert "produce B.local {" in lines
    assert "for (i.outer, 0, 4) {" in lines
    check_golden("cache_write_names", text, update_golden)


def test_print_passes_switch_prints_changed_passes_with_times(monkeypatch, capsys):
    monkeypatch.setenv("TESSERA_PRINT_PASSES", "1")
    A = te.placeholder((100,), name="A")
    B = te.compute((100,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    s[B].vectorize(xi)
    schedule.lower(s, [A, B], name="traced")
    err = capsys.readouterr().err
    assert "// traced: schedule_ops" in err
    assert "// after storage_flatten (" in err and " ms)" in err
    assert "// after partition_loops (" in err
    assert "// after vectorize_loops (" in err
