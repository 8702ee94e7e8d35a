"""Narrow-type conversions (``topi.narrow``) against ml_dtypes' ``astype`` (onnx's reference).

Usage::

    python benchmarks/narrow_cast.py [--n 4000000] [--repeat 15] [--threads 1]

Each line: the conversion, Tessera's median (the x86 injective schedule:
vectorized, parallel), ml_dtypes' median, interleaved call by call
(``codegen.timing.interleaved``) so that both see the same load, and ml_dtypes
time / Tessera time.  Outputs are checked
bit for bit (NaN as NaN) before timing.
"""

from __future__ import annotations

import argparse

import ml_dtypes
import numpy as np

import codegen
import te
from codegen import timing
from topi import narrow, x86
from topi.testing.narrow import narrow_cast_python

CASES = [
    ("float32", "bfloat16"),
    ("bfloat16", "float32"),
    ("float32", "float8_e4m3fn"),
    ("float8_e4m3fn", "float32"),
    ("float32", "float8_e5m2fnuz"),
    ("float32", "int4"),
    ("int4", "float32"),
]


def _inputs(src: str, n: int) -> np.ndarray:
    x = (np.random.default_rng(0).standard_normal(n) * 64).astype(np.float32)
    return x if src == "float32" else narrow_cast_python(x, src)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--threads", type=int, default=0, help="0: all CPUs of the process")
    args = ap.parse_args()
    if args.threads:
        codegen.set_num_threads(args.threads)
    print(f"{'conversion':34} {'tessera ms':>10} {'ml_dtypes ms':>12} {'ratio':>6}")
    for src, dst in CASES:
        X = te.placeholder((args.n,), dtype=narrow.storage_dtype(src), name="X")
        Y = narrow.cast(X, src, dst, saturate=False)  # ml_dtypes does not saturate
        f = codegen.build(x86.schedule_injective([Y]), [X, Y], name="narrow_cast")
        x = _inputs(src, args.n)
        xs, y = narrow.as_storage(x), np.empty(args.n, narrow.storage_dtype(dst))
        target = np.dtype(getattr(ml_dtypes, dst)) if dst in narrow.FORMATS else np.dtype(dst)
        want = x.astype(target)
        f(xs, y)
        got = narrow.as_logical(y, dst)
        same = (narrow.as_storage(got) == narrow.as_storage(want)) | np.isnan(want.astype(np.float32))
        assert same.all(), f"{src} -> {dst}: output differs from ml_dtypes"
        runs = timing.interleaved({"tessera": lambda: f(xs, y), "ml_dtypes": lambda: x.astype(target)},
                                  repeat=args.repeat, number=1, settle=0.0)
        a, b = timing.median(runs["tessera"]) * 1e3, timing.median(runs["ml_dtypes"]) * 1e3
        print(f"{src + ' -> ' + dst:34} {a:10.2f} {b:12.2f} {b / a:6.1f}")


if __name__ == "__main__":
    main()
