"""topi.nn.sparse_dense (x86 schedule) vs scipy.sparse, torch.sparse and a dense OpenBLAS product.

Workloads: ``Y = X @ W.T`` for X of (M, 1024) and a pruned weight W of (1024, 1024) stored as CSR
(density 10%) and as BSR with 16x1 blocks (a pruned transformer layer's shape), for a batch M of 1
and of 64.  Each row is the median of interleaved batches (``codegen.timing.interleaved``: one
batch of each contender in turn, a pause before each); the ratio column is tessera's time over
scipy's, with the spread of tessera's batches.  torch runs with 2 threads.

Run: ``python3 benchmarks/topi_sparse.py``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import codegen
import te
from codegen import timing
from topi import nn, x86

REPEAT = 7
N = K = 1024


def weight(fmt: str, rng) -> sp.spmatrix:
    if fmt == "csr":
        return sp.random(N, K, density=0.1, format="csr", dtype="float32", random_state=rng)
    blocks = sp.random(N // 16, K, density=0.1, format="csr", dtype="float32", random_state=rng)
    dense = np.repeat(blocks.toarray(), 16, axis=0) * rng.random((N, K), dtype=np.float32)
    return sp.bsr_matrix(dense, blocksize=(16, 1))


def tessera(w, m: int):
    x = te.placeholder((m, K), name="X")
    args = [x] + [te.placeholder(a.shape, str(a.dtype), name=n) for a, n in
                  ((w.data, "W_data"), (w.indices, "W_indices"), (w.indptr, "W_indptr"))]
    y = nn.sparse_dense(*args)
    f = codegen.build(x86.schedule_sparse_dense([y]), [*args, y], name="sparse_dense")
    out = np.empty((m, N), np.float32)
    return lambda xs: f(xs, w.data, w.indices, w.indptr, out) or out


def torch_sparse(w):
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(2)
    wt = torch.sparse_csr_tensor(torch.from_numpy(w.tocsr().indptr.astype(np.int64)),
                                 torch.from_numpy(w.tocsr().indices.astype(np.int64)),
                                 torch.from_numpy(w.tocsr().data), size=w.shape)
    return lambda xs: (wt @ torch.from_numpy(xs).T).T


def main() -> None:
    rng = np.random.default_rng(0)
    cols = ["tessera", "scipy", "torch", "dense BLAS"]
    print(f"{'workload':<26}" + "".join(f"{c + ' ms':>15}" for c in cols) + f"{'tessera/scipy':>15}{'spread':>8}")
    for fmt in ("csr", "bsr16x1"):
        w = weight(fmt[:3], rng)
        wd = np.ascontiguousarray(w.toarray().T)
        for m in (1, 64):
            x = rng.random((m, K), dtype=np.float32)
            fns = {"tessera": tessera(w, m), "scipy": lambda xs, w=w: (w @ xs.T).T, "torch": torch_sparse(w),
                   "dense BLAS": lambda xs, wd=wd: xs @ wd}
            fns = {k: v for k, v in fns.items() if v is not None}
            got = fns["tessera"](x)
            np.testing.assert_allclose(got, x @ wd, rtol=1e-4, atol=1e-4)
            runs = timing.interleaved({k: (lambda fn=fn: fn(x)) for k, fn in fns.items()}, repeat=REPEAT)
            med = {k: timing.median(v) for k, v in runs.items()}
            row = "".join(f"{med[c] * 1e3:>15.3f}" if c in med else f"{'-':>15}" for c in cols)
            print(f"{fmt + f' M={m}':<26}{row}{med['tessera'] / med['scipy']:>15.2f}"
                  f"{timing.spread(runs['tessera']):>8.2f}")


if __name__ == "__main__":
    main()
