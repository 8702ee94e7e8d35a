"""A seeded fuzzer of random schedules, checked against numpy with guard canaries.

Four workloads (elementwise 2-D, a row reduction, a 1-D/2-D stencil with a
producer stage, a small matmul), each with odd, random shapes.  A random
schedule is a random interleaving of primitives on random stages:

* ``split`` of a random leaf axis (factor or nparts, 1..17),
* ``reorder`` of a random permutation of the leaf axes,
* ``fuse`` of two adjacent leaf axes of the same kind,
* ``vectorize`` / ``unroll`` of the innermost leaf axis (constant extent <= 32),
* ``parallel`` of the outermost leaf axis of the output stage,
* placement of a producer: ``compute_root``, ``compute_inline``, or
  ``compute_at`` a random leaf axis of a stage that reads it,
* up front, optionally, ``cache_write`` of the output and ``cache_read`` of an input;
* ``compute_at`` a stage that reads it only through others (``s[A.local].compute_at(s[C],
  x)`` when ``C.local`` reads ``A.local``), legal when every reader is computed inside.

Two workloads also come with symbolic extents (``te.var``), bound from the arrays.

Every schedule is built and run on guarded buffers (``check_build``).  A
``ScheduleError`` is accepted only where the schedule is legitimately illegal:
a ``compute_at`` axis that a later split/fuse removed from the leaves, and
``compute_inline`` of a reduction; the message must then name the stage.
Derandomised (``derandomize=True``), so CI runs the same schedules every time.
Set ``TESSERA_FUZZ_EXAMPLES`` to run more per workload locally.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import te  # noqa: E402
from te import expr as E  # noqa: E402
from te.tensor import ComputeOp, PlaceholderOp  # noqa: E402
from schedule import ScheduleError  # noqa: E402
from helpers import check_build  # noqa: E402

EXAMPLES = int(os.environ.get("TESSERA_FUZZ_EXAMPLES", "120"))
COUNT_FILE = os.environ.get("TESSERA_FUZZ_COUNT_FILE", "")  # one byte per schedule tried
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
MAX_ANNOTATED_EXTENT = 32


# workloads: (output tensor, argument list, numpy reference) ---------------------------------
def elementwise(m: int, n: int, symbolic: bool = False):
    if symbolic:
        m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.placeholder((m, n), name="B")
    P = te.compute((m, n), lambda i, j: A[i, j] * 2.0 - 1.0, name="P")
    C = te.compute((m, n), lambda i, j: P[i, j] * B[i, j] + P[i, j], name="C")
    return C, [A, B, C], lambda a, b: (a * 2 - 1) * b + (a * 2 - 1)


def row_reduction(m: int, k: int, kind: str):
    A = te.placeholder((m, k), name="A")
    P = te.compute((m, k), lambda i, j: A[i, j] * 1.5 + 0.25, name="P")
    r = te.reduce_axis((0, k), name="r")
    red = {"sum": te.sum, "max": te.max, "min": te.min}[kind]
    R = te.compute((m,), lambda i: red(P[i, r], axis=r), name="R")
    npred = {"sum": np.sum, "max": np.max, "min": np.min}[kind]
    return R, [A, R], lambda a: npred(a.astype("float64") * 1.5 + 0.25, axis=1)


def stencil(dims: int, m: int, n: int, symbolic: bool = False):
    if symbolic:
        m, n = te.var("m"), te.var("n")
    if dims == 1:
        A = te.placeholder((n + 4,), name="A")
        B = te.compute((n + 2,), lambda i: A[i] + A[i + 1] * 2.0 + A[i + 2], name="B")
        C = te.compute((n,), lambda i: B[i] - B[i + 2] * 0.5, name="C")

        def ref(a):
            b = a[:-2] + a[1:-1] * 2 + a[2:]
            return b[:-2] - b[2:] * 0.5

        return C, [A, C], ref
    A = te.placeholder((m + 2, n + 2), name="A")
    B = te.compute((m + 2, n), lambda i, j: A[i, j] + A[i, j + 1] * 2.0 + A[i, j + 2], name="B")
    C = te.compute((m, n), lambda i, j: B[i, j] - B[i + 1, j] + B[i + 2, j] * 0.5, name="C")

    def ref(a):
        b = a[:, :-2] + a[:, 1:-1] * 2 + a[:, 2:]
        return b[:-2] - b[1:-1] + b[2:] * 0.5

    return C, [A, C], ref


def matmul(m: int, n: int, k: int):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    Bp = te.compute((k, n), lambda kk, j: B[kk, j] * 0.5, name="Bp")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * Bp[r, j], axis=r), name="C")
    return C, [A, B, C], lambda a, b: a.astype("float64") @ (b.astype("float64") * 0.5)


# the random schedule ------------------------------------------------------------------------------
def const_extent(iv) -> int | None:
    if iv.dom is None:
        return None
    ext = iv.dom.extent
    return ext.value if isinstance(ext, E.IntImm) else None


class RandomSchedule:
    """Draws primitives from hypothesis ``data`` and applies them, keeping a log."""

    def __init__(self, data, s, out):
        self.data, self.s, self.out = data, s, out
        self.log: list[str] = []
        self.attached: dict = {}  # stage -> (consumer stage, axis) of its last compute_at
        self.expect_error: list = []  # (stage name, reason) for legitimately illegal steps

    def draw(self, strategy, label: str = ""):
        return self.data.draw(strategy, label=label or None)

    def note(self, line: str) -> None:
        self.log.append(line)
        note(line)

    def compute_stages(self):
        return [st_ for st_ in self.s.stages if isinstance(st_.op, ComputeOp)]

    def out_stage(self):
        return self.s[self.out]

    # primitives ------------------------------------------------------------
    def split(self, stage):
        leaves = stage.leaf_iter_vars
        iv = leaves[self.draw(st.integers(0, len(leaves) - 1), "split axis")]
        v = self.draw(st.integers(1, 17), "factor")
        if self.draw(st.booleans(), "nparts?"):
            self.note(f"s[{stage.name}].split({iv.var.name}, nparts={v})")
            stage.split(iv, nparts=v)
        else:
            self.note(f"s[{stage.name}].split({iv.var.name}, factor={v})")
            stage.split(iv, factor=v)

    def reorder(self, stage):
        leaves = list(stage.leaf_iter_vars)
        perm = self.draw(st.permutations(range(len(leaves))), "perm")
        order = [leaves[p] for p in perm]
        self.note(f"s[{stage.name}].reorder({', '.join(iv.var.name for iv in order)})")
        stage.reorder(*order)

    def fuse(self, stage):
        leaves = stage.leaf_iter_vars
        pairs = [k for k in range(len(leaves) - 1) if leaves[k].iter_type == leaves[k + 1].iter_type]
        if not pairs:
            return
        k = self.draw(st.sampled_from(pairs), "fuse at")
        self.note(f"s[{stage.name}].fuse({leaves[k].var.name}, {leaves[k + 1].var.name})")
        stage.fuse(leaves[k], leaves[k + 1])

    def annotate(self, stage, kind: str):
        leaves = stage.leaf_iter_vars
        iv = leaves[0] if kind == "parallel" else leaves[-1]
        ext = const_extent(iv)
        if iv.iter_type == E.COMM_REDUCE and kind != "unroll":
            return
        if kind != "parallel" and (ext is None or ext > MAX_ANNOTATED_EXTENT):
            return
        self.note(f"s[{stage.name}].{kind}({iv.var.name})")
        getattr(stage, kind)(iv)

    def place(self, stage):
        choices = ["root", "at"]
        consumers = [c for c in self.s.consumers(stage) if c.attach_type != "inline"]
        attached_here = any(c is stage for c, _ in self.attached.values() if c is not None)
        if not stage.is_output and not attached_here:
            choices.append("inline")
        kind = self.draw(st.sampled_from(choices), "placement")
        if kind == "at" and not consumers:
            kind = "root"
        if kind == "root":
            self.note(f"s[{stage.name}].compute_root()")
            stage.compute_root()
            self.attached.pop(stage, None)
        elif kind == "inline":
            self.note(f"s[{stage.name}].compute_inline()")
            if stage.op.reduce_axis:
                with pytest.raises(ScheduleError, match=rf"stage '{stage.name}'.*reduction"):
                    stage.compute_inline()
                return
            stage.compute_inline()
            self.attached.pop(stage, None)
        else:
            farther = [c for c in self.compute_stages()
                       if c not in consumers and c.attach_type != "inline"
                       and self.s.reads_transitively(c, stage)]
            if farther and self.draw(st.booleans(), "attach through a reader?"):
                consumers = farther
            cons = consumers[self.draw(st.integers(0, len(consumers) - 1), "consumer")]
            leaves = cons.leaf_iter_vars
            iv = leaves[self.draw(st.integers(0, len(leaves) - 1), "attach axis")]
            self.note(f"s[{stage.name}].compute_at(s[{cons.name}], {iv.var.name})")
            stage.compute_at(cons, iv)
            self.attached[stage] = (cons, iv)

    # the whole schedule --------------------------------------------------------
    def run(self, n_steps: int) -> None:
        s = self.s
        if self.draw(st.booleans(), "cache_write?"):
            self.note(f"s.cache_write({self.out.name}, 'local')")
            s.cache_write(self.out, "local")
        if self.draw(st.booleans(), "cache_read?"):
            inputs = [st_ for st_ in s.stages if isinstance(st_.op, PlaceholderOp) and s.consumers(st_)]
            src = inputs[self.draw(st.integers(0, len(inputs) - 1), "cache_read src")]
            readers = s.consumers(src)
            t = src.op.output(0)
            self.note(f"s.cache_read({src.name}, 'local', {[r.name for r in readers]})")
            s.cache_read(t, "local", [r.op for r in readers])
        for _ in range(n_steps):
            stages = self.compute_stages()
            stage = stages[self.draw(st.integers(0, len(stages) - 1), "stage")]
            ops = ["split", "split", "reorder", "fuse", "vectorize", "unroll"]
            if stage.is_output:
                ops.append("parallel")
            else:
                ops += ["place", "place"]
            op = self.draw(st.sampled_from(ops), "primitive")
            if op in ("vectorize", "unroll", "parallel"):
                self.annotate(stage, op)
            else:
                getattr(self, op)(stage)
        for stage in self.attached:
            # where the stage is now: an attach axis split or fused later moved it (LegalizeInvalidAttach)
            if stage.attach_type == "scope" and not self.honoured(stage, stage.attach_stage, stage.attach_ivar):
                self.expect_error.append(stage.name)

    def readers(self, stage) -> list:
        """Stages that read ``stage`` once inlined stages are substituted."""
        out = []
        for c in self.s.consumers(stage):
            out += self.readers(c) if c.attach_type == "inline" else [c]
        return out

    def honoured(self, stage, cons, iv) -> bool:
        """compute_at(cons, iv) is legal: iv is a leaf, every reader runs inside that loop."""
        if not E.contains(cons.leaf_iter_vars, iv):
            return False
        pos = E.index_of(cons.leaf_iter_vars, iv)
        for r in self.readers(stage):
            cur, axis = r, None
            while cur is not cons:
                if cur.attach_type != "scope":
                    return False
                cur, axis = cur.attach_stage, cur.attach_ivar
            if axis is not None and (not E.contains(cons.leaf_iter_vars, axis)
                                     or E.index_of(cons.leaf_iter_vars, axis) < pos):
                return False
        return True


def fuzz_one(data, workload, rtol: float = 1e-5, atol: float = 1e-5, var_values=None) -> None:
    out, args, ref = workload
    if COUNT_FILE:
        with open(COUNT_FILE, "a") as f:
            f.write(".")
    s = te.create_schedule(out.op)
    rs = RandomSchedule(data, s, out)
    rs.run(data.draw(st.integers(0, 9), label="steps"))
    if rs.expect_error:
        names = "|".join(rs.expect_error)
        with pytest.raises(ScheduleError, match=rf"stage '({names})'"):
            check_build(s, args, ref, rtol=rtol, atol=atol, name="fuzz", var_values=var_values)
        return
    check_build(s, args, ref, rtol=rtol, atol=atol, name="fuzz", var_values=var_values,
                seed=data.draw(st.integers(0, 2**16), label="seed"))


odd = st.integers(1, 29)


@FUZZ
@given(data=st.data(), m=odd, n=st.integers(1, 37))
def test_fuzz_elementwise(data, m, n):
    fuzz_one(data, elementwise(m, n))


@FUZZ
@given(data=st.data(), m=odd, k=st.integers(1, 41), kind=st.sampled_from(["sum", "max", "min"]))
def test_fuzz_row_reduction(data, m, k, kind):
    fuzz_one(data, row_reduction(m, k, kind), rtol=1e-4, atol=1e-4)


@FUZZ
@given(data=st.data(), dims=st.sampled_from([1, 2]), m=st.integers(1, 19), n=st.integers(1, 45))
def test_fuzz_stencil(data, dims, m, n):
    fuzz_one(data, stencil(dims, m, n))


@FUZZ
@given(data=st.data(),
       mnk=st.one_of(st.just((23, 19, 13)), st.tuples(st.integers(1, 23), st.integers(1, 23),
                                                       st.integers(1, 17))))
def test_fuzz_matmul(data, mnk):
    m, n, k = mnk
    fuzz_one(data, matmul(m, n, k), rtol=1e-4, atol=1e-4)


FUZZ_SYMBOLIC = settings(FUZZ, max_examples=max(1, EXAMPLES // 2))


@FUZZ_SYMBOLIC
@given(data=st.data(), m=odd, n=st.integers(1, 37))
def test_fuzz_elementwise_symbolic(data, m, n):
    fuzz_one(data, elementwise(m, n, symbolic=True), var_values={"m": m, "n": n})


@FUZZ_SYMBOLIC
@given(data=st.data(), dims=st.sampled_from([1, 2]), m=st.integers(1, 19), n=st.integers(1, 45))
def test_fuzz_stencil_symbolic(data, dims, m, n):
    fuzz_one(data, stencil(dims, m, n, symbolic=True), var_values={"m": m, "n": n})


def test_fuzz_regression_reduce_outside_fused_axes():
    A = te.placeholder((4, 2), name="A")
    B = te.placeholder((2, 4), name="B")
    r = te.reduce_axis((0, 2), name="r")
    C = te.compute((4, 4), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    fused = s[C].fuse(*C.op.axis)
    s[C].reorder(r, fused)
    check_build(s, [A, B, C], lambda a, b: a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rows, k, cols", [(4, 2, 4), (4, 100, 4), (16, 3, 8), (5, 7, 4), (3, 5, 16)])
def test_fuzz_regression_reduce_outside_fused_axes_shapes(rows, k, cols):
    """The same nest where floormod(fused, cols) is an ``and`` (cols a power of two) and
    where it is not, over reduce extents that do and do not fit one vector.

    LLVM 22.1's loop vectorizer loads ``B[r*cols + (f & (cols-1))]`` as contiguous
    (``or disjoint (r << k), (f & mask)``); codegen.llvm_ir turns its loop vectorizer
    off for loops indexing memory at ``floormod(.. loop var .., 2**k)``."""
    A = te.placeholder((rows, k), name="A")
    B = te.placeholder((k, cols), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((rows, cols), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = te.create_schedule(C.op)
    fused = s[C].fuse(*C.op.axis)
    s[C].reorder(r, fused)
    check_build(s, [A, B, C], lambda a, b: a @ b, rtol=1e-4, atol=1e-4)


def test_no_vectorize_hint_only_on_loops_under_pow2_floormod():
    """codegen marks the fused loop of the regression above (floormod(f, 4) in B's index)
    with llvm.loop.vectorize.enable=false, and nothing in a matmul without floormod."""
    from codegen import service
    from schedule.lower import lower

    def emitted(reorder: bool) -> str:
        A = te.placeholder((4, 2), name="A")
        B = te.placeholder((2, 4), name="B")
        r = te.reduce_axis((0, 2), name="r")
        C = te.compute((4, 4), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
        s = te.create_schedule(C.op)
        if reorder:
            s[C].reorder(r, s[C].fuse(*C.op.axis))
        return service.emit_llvm(lower(s, [A, B, C], name="f"))[0]

    marked = emitted(True)
    assert marked.count("!llvm.loop") == 1
    assert '!"llvm.loop.vectorize.enable", i1 0' in marked
    assert "llvm.loop" not in emitted(False)
