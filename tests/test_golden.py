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
import codegen
import numpy as np

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


def test_a_short_parallel_loop_is_not_peeled_into_serial_launches():
    """Extent 2 cut 1 + 1 would be two launches of one task each: the loop stays whole, its
    inner loop takes the cut (a longer one is still peeled, as above)."""
    A = te.placeholder((28,), name="A")
    B = te.compute((28,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=16)
    s[B].parallel(xo)
    text = lowered(s, [A, B])
    assert text.count("parallel (") == 1 and "parallel (i.outer, 0, 2) {" in text
    f = codegen.build(s, [A, B])
    a = np.arange(28, dtype="float32")
    b = np.zeros(28, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


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


# the classic schedule_primitives tutorial, on symbolic m, n and on constants ----------
def _tutorial(prim: str, m, n):
    """(schedule, args, numpy reference) of one section of schedule_primitives."""
    if prim in ("compute_at", "compute_inline", "compute_root"):
        A = te.placeholder((m,), name="A")
        B = te.compute((m,), lambda i: A[i] + 1.0, name="B")
        C = te.compute((m,), lambda i: B[i] * 2.0, name="C")
        s = te.create_schedule(C.op)
        s[B].compute_at(s[C], C.op.axis[0])
        if prim == "compute_inline":
            s[B].compute_inline()
        elif prim == "compute_root":
            s[B].compute_root()
        return s, [A, B, C] if prim != "compute_inline" else [A, C], None
    if prim in ("split", "split_nparts", "split_vectorize"):
        A = te.placeholder((m,), name="A")
        B = te.compute((m,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        if prim == "split_nparts":
            s[B].split(B.op.axis[0], nparts=32)
        else:
            xo, xi = s[B].split(B.op.axis[0], factor=32)
            if prim == "split_vectorize":
                s[B].vectorize(xi)
        return s, [A, B], lambda a: a * 2
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    if prim == "fuse":
        s[B].fuse(xi, yi)
    elif prim == "reorder":
        s[B].reorder(xi, yo, xo, yi)
    return s, [A, B], lambda a: a


TUTORIAL = ["split", "split_nparts", "split_vectorize", "tile", "fuse", "reorder",
            "compute_at", "compute_inline", "compute_root"]


@pytest.mark.parametrize("kind", ["symbolic", "constant"])
@pytest.mark.parametrize("prim", TUTORIAL)
def test_schedule_primitives_tutorial(prim, kind, update_golden):
    from helpers import check_build

    m, n = (te.var("m"), te.var("n")) if kind == "symbolic" else (97, 23)
    s, args, ref = _tutorial(prim, m, n)
    text = lowered(s, args)
    produces = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("produce ")]
    assert len(produces) == len(set(produces))  # one nest per stage
    if kind == "symbolic":
        assert "max(" not in text  # bounds simplified: no min(max(...)) clamps
        if prim not in ("split_vectorize", "compute_root"):  # (compute_root: two stages' loops i)
            headers = [ln.split(",")[0].strip() for ln in text.splitlines() if "for (" in ln]
            assert len(headers) == len(set(headers))  # no peeled copy of any loop
    if prim == "compute_at":
        assert "(i + i)" not in text  # the two loops named i never meet in one index
    check_golden(f"tutorial_{prim}_{kind}", text, update_golden)
    var_values = {"m": 97, "n": 23}
    if ref is None:
        args_ref = (lambda a: (a + 1, (a + 1) * 2)) if len(args) == 3 else (lambda a: (a + 1) * 2)
        check_build(s, args, args_ref, var_values=var_values)
    else:
        check_build(s, args, ref, var_values=var_values)


def test_symbolic_vectorized_split_peels_at_floordiv():
    m = te.var("m")
    s, args, _ = _tutorial("split_vectorize", m, None)
    text = lowered(s, args)
    assert "for (i.outer, 0, floordiv(m, 32)) {" in text
    assert "ramp((i.outer * 32), 1, 32)" in text  # the guard-free main body is vector code
    assert "for (i.outer, floordiv(m, 32), (floordiv((m + 31), 32) - floordiv(m, 32))) {" in text


def test_nested_loops_of_one_name_print_apart(update_golden):
    n = te.var("n")
    A = te.placeholder((n, n + 2), name="A")
    B = te.compute((n, n + 2), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + B[i, j + 2], name="C")
    s = te.create_schedule(C.op)
    s[B].compute_at(s[C], C.op.axis[1])
    text = lowered(s, [A, C])
    assert "for (j_1, 0, 3) {" in text and "B[j_1] = (A[(((i * (n + 2)) + j) + j_1)] + 1.0f)" in text
    check_golden("compute_at_shadowed_names", text, update_golden)


@pytest.mark.parametrize("kind", ["symbolic", "constant"])
def test_nest_copies_do_not_multiply_with_split_axes(kind):
    from helpers import check_build

    shape = (te.var("m"), te.var("n"), te.var("p")) if kind == "symbolic" else (37, 29, 23)
    A = te.placeholder(shape, name="A")
    C = te.compute(shape, lambda i, j, k: A[i, j, k] + 1.0, name="C")
    s = te.create_schedule(C.op)
    (io, ii), (jo, ji), (ko, ki) = (s[C].split(ax, factor=8) for ax in C.op.axis)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    text = lowered(s, [A, C])
    stores = text.count("C[")
    # symbolic: one nest with guards; constant: one main body plus one tail per split loop (was 2**3)
    assert stores == (1 if kind == "symbolic" else 4), text
    check_build(s, [A, C], lambda a: a + 1, var_values={"m": 37, "n": 29, "p": 23})
