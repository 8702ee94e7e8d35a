"""``tvm.testing.autotvm``: a sample template, task and records, and a runner that measures nothing."""

from __future__ import annotations

import time

import numpy as np

import te
from codegen.target import Target
from tune import autotvm
from tune.measure.measure import MeasureInput, MeasureResult, Runner


class DummyRunner(Runner):
    """A runner that returns a random cost for every candidate without running it."""

    def __init__(self):
        super().__init__(1, 1)

    def run(self, measure_inputs, build_results):
        return [MeasureResult((float(np.random.random()),), 0, 0.2, time.time()) for _ in measure_inputs]


def _matmul_compute(N, L, M, dtype, reduce_extent=None):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, reduce_extent or L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


@autotvm.template("testing/matmul")
def matmul(N, L, M, dtype):
    """A matmul whose two splits are the knobs; with a 1-wide column tile the column axis is not
    split, so configs differ in their number of loops."""
    A, B, C = _matmul_compute(N, L, M, dtype)
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    if cfg["tile_x"].size[-1] > 1:
        xo, xi = cfg["tile_x"].apply(s, C, x)
        s[C].reorder(yo, xo, k, yi, xi)
    else:
        s[C].reorder(yo, k, yi, x)
    return s, [A, B, C]


@autotvm.template("testing/bad_matmul")
def bad_matmul(N, L, M, dtype):
    """``testing/matmul``, except on a target with the key ``bad_device``, where it computes the
    wrong reduction (one term short): what a tuner's correctness check must catch."""
    if "bad_device" in Target.current().keys:
        A, B, C = _matmul_compute(N, L, M, dtype, reduce_extent=L - 1)
        s = te.create_schedule(C.op)
        y, x = s[C].op.axis
        cfg = autotvm.get_config()
        cfg.define_split("tile_y", y, num_outputs=2)
        cfg.define_split("tile_x", x, num_outputs=2)
        return s, [A, B, C]
    return matmul(N, L, M, dtype)


def get_sample_task(n: int = 128) -> tuple:
    """``(task, target)``: ``testing/matmul`` of size ``n`` for the host."""
    target = Target("llvm")
    return autotvm.task.create("testing/matmul", args=(n, n, n, "float32"), target=target), target


def get_sample_records(n: int) -> list:
    """``n`` records of the sample task, costs 1, 2, ... seconds."""
    task, target = get_sample_task()
    space = task.config_space
    return [(MeasureInput(target, task, space.get(i % len(space))), MeasureResult((i + 1,), 0, i, time.time()))
            for i in range(n)]


__all__ = ["DummyRunner", "bad_matmul", "get_sample_records", "get_sample_task", "matmul"]
