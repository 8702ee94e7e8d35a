"""Schedule primitives: the same computation, many loop nests.

A schedule rewrites the loop nest of a computation without changing what it
computes.  Each primitive below prints the nest it produces, so you can read
the rewrite; every variant is built and checked against numpy.  The names
and semantics are classic TVM's (Halide's equivalents in brackets).

Run it with ``python docs/tutorials/02_schedule_primitives.py``.
"""

import os

import numpy as np

import codegen
import schedule
import te

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"
m, n = (37, 45) if SMALL else (1023, 1021)  # deliberately not multiples of any factor below

A = te.placeholder((m, n), name="A")
B = te.placeholder((m, n), name="B")
rng = np.random.default_rng(0)
a = rng.random((m, n), dtype=np.float32)
b = rng.random((m, n), dtype=np.float32)


def show_and_check(title, s, args, expected, *inputs):
    """Print the loop nest of ``s``, build it, run it and compare with numpy."""
    print(f"\n## {title}")
    print(schedule.lower(s, args))
    f = codegen.build(s, args, name=title.split()[0].replace("-", "_"))
    out = np.zeros(expected.shape, expected.dtype)
    f(*inputs, out)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def elementwise():
    C = te.compute((m, n), lambda i, j: A[i, j] * B[i, j], name="C")
    return C, te.create_schedule(C.op)


# %% split [Halide: split] -------------------------------------------------
# ``split(axis, factor=f)`` turns one loop into an outer and an inner loop;
# ``nparts=p`` fixes the outer extent instead.  A factor that does not divide
# the extent is fine: the last iteration is guarded or peeled.
C, s = elementwise()
xo, xi = s[C].split(C.op.axis[1], factor=16)
show_and_check("split", s, [A, B, C], a * b, a, b)

# %% tile [Halide: tile] ---------------------------------------------------
# ``tile`` splits two axes and orders them (outer, outer, inner, inner): a
# 2-D block that stays in cache.
C, s = elementwise()
yo, xo, yi, xi = s[C].tile(C.op.axis[0], C.op.axis[1], x_factor=8, y_factor=8)
show_and_check("tile", s, [A, B, C], a * b, a, b)

# %% fuse and reorder [Halide: fuse, reorder] --------------------------------
# ``fuse`` joins two adjacent loops into one (``i.j.fused``), for example to
# give a parallel loop more iterations; ``reorder`` permutes leaf loops.
C, s = elementwise()
i, j = C.op.axis
s[C].reorder(j, i)
show_and_check("reorder", s, [A, B, C], a * b, a, b)
C, s = elementwise()
fused = s[C].fuse(*C.op.axis)
show_and_check("fuse", s, [A, B, C], a * b, a, b)

# %% vectorize, parallel, unroll [Halide: vectorize, parallel, unroll] -------
# ``vectorize`` turns the innermost loop into SIMD lanes, ``parallel`` runs a
# loop on the thread pool, ``unroll`` copies the body.  Choose the vector
# width from the target: 8 float32 lanes with AVX2, 16 with AVX-512.
from codegen.target import Target  # noqa: E402

lanes = Target("llvm").lanes("float32")  # the host: 8 with AVX2, 16 with AVX-512
C, s = elementwise()
i, j = C.op.axis
jo, ji = s[C].split(j, factor=lanes)
jo_o, jo_i = s[C].split(jo, factor=2)
s[C].parallel(i)
s[C].unroll(jo_i)
s[C].vectorize(ji)
show_and_check("vectorize-parallel-unroll", s, [A, B, C], a * b, a, b)

# %% compute_at and compute_inline [Halide: compute_at, inline] ----------------
# With two stages, ``B2 = A * 2`` then ``C = B2 + 1``, the default computes
# all of B2 first ("root").  ``compute_at(s[C], axis)`` computes the part of
# B2 that one iteration of C's loop needs, right there (better locality);
# ``compute_inline`` substitutes B2's expression into C (no buffer at all).
B2 = te.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B2")
C = te.compute((m, n), lambda i, j: B2[i, j] + 1.0, name="C")
s = te.create_schedule(C.op)
show_and_check("root", s, [A, C], a * 2 + 1, a)
s = te.create_schedule(C.op)
s[B2].compute_at(s[C], C.op.axis[0])
show_and_check("compute_at", s, [A, C], a * 2 + 1, a)
s = te.create_schedule(C.op)
s[B2].compute_inline()
show_and_check("compute_inline", s, [A, C], a * 2 + 1, a)

# %% cache_write [Halide: update in a wrapper Func] --------------------------
# ``cache_write(C, "local")`` makes C's computation write a small local
# buffer, copied out by C; with ``compute_at`` it becomes a register tile.
k = te.reduce_axis((0, n), name="k")
R = te.compute((m,), lambda i: te.sum(A[i, k] * B[i, k], axis=k), name="R")
s = te.create_schedule(R.op)
RL = s.cache_write(R, "local")
io, ii = s[R].split(R.op.axis[0], factor=4)
s[RL].compute_at(s[R], io)
show_and_check("cache_write", s, [A, B, R], (a * b).sum(axis=1), a, b)

# %% Errors name the stage, the axis and what to do --------------------------
# A schedule that cannot be honoured is refused at the primitive that asked.
C, s = elementwise()
xo, xi = s[C].split(C.op.axis[1], factor=16)
try:
    s[C].split(C.op.axis[1], factor=4)
except schedule.ScheduleError as e:
    print("\nScheduleError:", e)
