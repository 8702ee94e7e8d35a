"""Golden loop nests of partition_loops: how many copies of a nest lowering prints.

Issue 10: a 3-D tile with non-dividing constant extents and a vectorized
innermost axis printed 6 copies of the nest (each constant outer loop peeled,
and the vectorized loop's tail peeled again inside every copy).  The rule now:
one guard-free main body plus at most one tail per peeled loop; a plain
constant loop that holds a guard of a vectorized or unrolled loop keeps its
guard (it becomes a ``min`` extent) instead of copying the paying peel.
Rewrite the expected text with ``pytest tests/test_lower_golden.py --update-golden``.
"""

import pytest
from helpers import check_build
from test_golden import check_golden, lowered

import te


def _tile3(shape, factors, inner: str):
    A = te.placeholder(shape, name="A")
    C = te.compute(shape, lambda i, j, k: A[i, j, k] + 1.0, name="C")
    s = te.create_schedule(C.op)
    (io, ii), (jo, ji), (ko, ki) = (s[C].split(ax, factor=f) for ax, f in zip(C.op.axis, factors))
    s[C].reorder(io, jo, ko, ii, ji, ki)
    if inner == "vectorize":
        s[C].vectorize(ki)
    elif inner == "unroll":
        s[C].unroll(ki)
    return s, [A, C]


def _copies(text: str) -> int:
    """Nest copies of a single elementwise stage: runs of stores not separated by a loop
    (an unrolled body is one run, and so is one whose stores sit in ``if`` guards)."""
    runs, in_run, blocks = 0, False, []
    for ln in (x.strip() for x in text.splitlines()):
        if ln.startswith("if ("):
            blocks.append("if")
        elif ln.endswith("{"):
            blocks.append("loop")
            in_run = False
        elif ln == "}":
            if blocks.pop() == "loop":
                in_run = False
        elif ln.startswith("C["):
            runs += not in_run
            in_run = True
    return runs


def test_tile3_vectorized_innermost_golden(update_golden):
    s, args = _tile3((37, 41, 43), (8, 8, 16), "vectorize")
    text = lowered(s, args)
    assert _copies(text) == 2, text  # was 6: the main body and the vectorized loop's tail
    assert "ramp(" in text and ", 1, 16)]" in text and ", 1, 11)]" in text  # both copies are vector code
    assert "likely" not in text  # outer guards became min extents
    assert "for (i.inner, 0, min((37 - (i.outer * 8)), 8)) {" in text
    check_golden("tile3_vectorize", text, update_golden)
    check_build(s, args, lambda a: a + 1)


@pytest.mark.parametrize("shape", [(37, 41, 43), (9, 17, 33), (16, 16, 32), (8, 7, 15), (1, 1, 5)])
@pytest.mark.parametrize("inner", ["vectorize", "unroll", "serial"])
def test_tile3_copies_bounded(shape, inner):
    factors = (8, 8, 16)
    s, args = _tile3(shape, factors, inner)
    text = lowered(s, args)
    tails = [n % f != 0 and n > f for n, f in zip(shape, factors)]
    # one main body plus at most one tail per loop whose split does not divide
    assert _copies(text) <= 1 + sum(tails), text
    if inner != "serial":
        assert "likely" not in text  # guard-free vector or unrolled bodies
    check_build(s, args, lambda a: a + 1)


def test_vectorized_outermost_peel_keeps_inner_constant_peels():
    # the paying peel at the outermost loop: its main body may peel the plain loops
    # (one tail each); its tail holds no second peel
    s, args = _tile3((37, 41, 43), (8, 8, 16), "vectorize")
    C = args[1]
    io, jo, ko, ii, ji, ki = s[C].leaf_iter_vars
    s[C].reorder(ko, io, jo, ii, ji, ki)
    text = lowered(s, args)
    assert _copies(text) <= 4, text
    check_build(s, args, lambda a: a + 1)


def test_unrolled_and_vectorized_guards_peel_once():
    # two loops whose guards pay (j.inner unrolled, k.inner vectorized): the vectorized
    # loop's tail is peeled, the unrolled copies keep their guards, nothing is peeled twice
    A = te.placeholder((37, 41, 43), name="A")
    C = te.compute(A.shape, lambda i, j, k: A[i, j, k] + 1.0, name="C")
    s = te.create_schedule(C.op)
    (io, ii), (jo, ji), (ko, ki) = (s[C].split(ax, factor=f) for ax, f in zip(C.op.axis, (8, 4, 16)))
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[C].unroll(ji)
    s[C].vectorize(ki)
    text = lowered(s, [A, C])
    assert _copies(text) == 2, text  # was 4
    assert "for (j.inner" not in text  # still unrolled (a min extent would keep it a loop)
    assert "if (likely((((j.outer * 4) + 3) < 41))) {" in text
    assert ", 1, 16)]" in text and ", 1, 11)]" in text
    check_build(s, [A, C], lambda a: a + 1)


@pytest.mark.parametrize("n", [19, 16, 5])
def test_inline_zero_padding_taps_are_skipped(n):
    # a 1-D correlation over a zero padding computed inline, tiles of 4 unrolled under the
    # tap loop: guard_zero_terms guards the padding taps, partition_loops peels the border
    # tiles (a head by the lower guard, a tail by the upper one) and cuts the tap loop
    # inside them, so no guard and no select is left and only border tiles are copies
    import numpy as np

    A = te.placeholder((n,), name="A")
    W = te.placeholder((3,), name="W")
    P = te.compute((n + 2,), lambda i: te.if_then_else(te.all(i >= 1, i < n + 1), A[i - 1], 0.0), name="P")
    r = te.reduce_axis((0, 3), name="r")
    B = te.compute((n,), lambda i: te.sum(P[i + r] * W[r], axis=r), name="B")
    s = te.create_schedule(B.op)
    s[P].compute_inline()
    acc = s.cache_write(B, "local")
    io, _ = s[B].split(B.op.axis[0], factor=4)
    s[acc].compute_at(s[B], io)
    s[acc].reorder(s[acc].op.reduce_axis[0], s[acc].op.axis[0])
    s[acc].unroll(s[acc].op.axis[0])
    text = lowered(s, [A, W, B])
    assert "likely" not in text and "select" not in text, text
    assert text.count("produce B.local") <= 3, text  # head, main, tail
    check_build(s, [A, W, B], lambda a, w: np.correlate(np.pad(a, 1), w, "valid"))
