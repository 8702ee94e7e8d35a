"""topi.workloads: the demo's and the report's kernels compute what their numpy baselines do.

Small sizes that do not divide the split factors; ``work`` is what the rates divide by."""

import numpy as np
import pytest

from topi import workloads as W


def check(k: W.Kernel, rtol: float = 2e-4, atol: float = 1e-4) -> list:
    ins = k.make_inputs()
    k.module(*ins)
    np.testing.assert_allclose(ins[-1], k.reference(*ins[:-1]), rtol=rtol, atol=atol)
    return ins


@pytest.mark.parametrize("step", W.OPT_GEMM_STEPS)
def test_opt_gemm_steps(step):
    k = W.opt_gemm(step, 96)
    check(k, atol=1e-3)
    assert k.work == 2.0 * 96**3


def test_matmul_best_on_a_size_no_tile_divides():
    check(W.matmul_best(50), atol=1e-3)


@pytest.mark.parametrize("make", [
    lambda: W.fused_elementwise(10_001, chunk=1024),
    lambda: W.vector_exp(10_001, chunk=1024),
    lambda: W.row_sum(67, 45, rows_per_task=8),
    lambda: W.copy(10_001, chunk=1024),
    lambda: W.compute_bound(10_001, depth=4, chunk=1024),
])
def test_memory_and_runtime_kernels(make):
    k = make()
    ins = check(k, rtol=1e-3, atol=1e-3)
    if k.unit == "GB/s":
        assert k.work >= ins[0].nbytes  # at least the streamed input


def test_fma_peak_counts_its_flops():
    k = W.fma_peak(tiles=5, K=12)
    check(k, atol=1e-3)
    mr, nr = W.matmul_tile()
    assert k.work == 2.0 * 5 * mr * nr * 12
