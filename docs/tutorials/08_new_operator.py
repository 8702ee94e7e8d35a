"""Writing a new operator: compute, schedule, numpy reference, check.

topi keeps each operator in three parts, in separate files: the *compute*
(``topi/nn/``: what it calculates, as te expressions), the *schedule*
(``topi/x86/`` or ``topi/generic/``: how it runs on a target) and the *numpy
reference* (``topi/testing/``: what the tests and benchmarks compare with).
This tutorial writes ``logsumexp(x, axis=-1)`` that way, checks it on shapes
that divide no factor of the schedule, and times it against numpy.

Run it with ``python docs/tutorials/08_new_operator.py``.
"""

import os

import numpy as np

import codegen
import schedule
import te
from codegen import timing
from codegen.target import Target

SMALL = os.environ.get("TESSERA_TUTORIAL_SMALL") == "1"


# %% 1. The compute ---------------------------------------------------------------
# log(sum(exp(x))) overflows for large x; subtracting the row maximum first
# is exact in real arithmetic and safe in float32.  Three stages: the row
# maximum, the sum of shifted exponentials, and the result.
def logsumexp(x: te.Tensor) -> te.Tensor:
    rows, cols = x.shape
    k = te.reduce_axis((0, cols), name="k")
    row_max = te.compute((rows,), lambda i: te.max(x[i, k], axis=k), name="row_max")
    k2 = te.reduce_axis((0, cols), name="k2")
    row_sum = te.compute((rows,), lambda i: te.sum(te.exp(x[i, k2] - row_max[i]), axis=k2), name="row_sum")
    return te.compute((rows,), lambda i: te.log(row_sum[i]) + row_max[i], name="logsumexp",
                      tag="logsumexp")


# %% 2. The schedule ----------------------------------------------------------------
# Rows run in parallel; the two reductions of a row are computed at the row
# (its data stays in L1 between them), and their reduce loops are split by
# the target's vector width and unrolled, so that LLVM forms vector lanes
# (float ``+`` and ``max`` may be reassociated).
def schedule_logsumexp(out: te.Tensor, target: Target):
    s = te.create_schedule(out.op)
    row_sum = out.op.input_tensors[0]
    row_max = [t for t in row_sum.op.input_tensors if t.op.name == "row_max"][0]
    (i,) = out.op.axis
    io, ii = s[out].split(i, factor=4)
    s[out].parallel(io)
    s[row_max].compute_at(s[out], ii)
    s[row_sum].compute_at(s[out], ii)
    lanes = target.lanes(out.dtype)
    for stage in (row_max, row_sum):
        (k,) = s[stage].op.reduce_axis
        ko, ki = s[stage].split(k, factor=lanes)
        s[stage].unroll(ki)
    return s


# %% 3. The numpy reference -----------------------------------------------------------
def logsumexp_python(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=-1, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=-1)) + m[..., 0]).astype(x.dtype)


# %% 4. Check on awkward shapes, then time ------------------------------------------------
target = Target("llvm")
rng = np.random.default_rng(0)
for rows, cols in ((1, 1), (7, 13), (33, 1001)):
    X = te.placeholder((rows, cols), name="X")
    Y = logsumexp(X)
    with target:
        s = schedule_logsumexp(Y, target)
    f = codegen.build(s, [X, Y], target=target, name="logsumexp")
    x = (rng.standard_normal((rows, cols)) * 30).astype(np.float32)  # large values: overflow without the shift
    y = np.zeros(rows, np.float32)
    f(x, y)
    np.testing.assert_allclose(y, logsumexp_python(x), rtol=1e-5, atol=1e-5)
print("logsumexp matches numpy on (1, 1), (7, 13), (33, 1001)")
print(schedule.lower(s, [X, Y]))

rows, cols = (64, 1000) if SMALL else (4096, 1000)
X = te.placeholder((rows, cols), name="X")
Y = logsumexp(X)
f = codegen.build(schedule_logsumexp(Y, target), [X, Y], target=target, name="logsumexp_big")
x = rng.standard_normal((rows, cols)).astype(np.float32)
y = np.zeros(rows, np.float32)
runs = timing.interleaved({"tessera": lambda: f(x, y), "numpy": lambda: logsumexp_python(x)},
                          repeat=3 if SMALL else 7)
print(f"{rows}x{cols}: Tessera {timing.format_samples(runs['tessera'])}")
print(f"{' ' * len(f'{rows}x{cols}')}  numpy   {timing.format_samples(runs['numpy'])}")
print(f"numpy time / Tessera time: {timing.paired_ratio(runs, 'numpy', 'tessera').median:.1f}x")

# To make it an operator of the library: the compute goes to topi/nn/, the
# schedule to topi/x86/ (registered for the graph layer in graph/ops), the
# reference to topi/testing/, and a test in tests/test_topi_*.py compares
# them on shapes like the ones above.
