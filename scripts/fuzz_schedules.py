#!/usr/bin/env python3
"""Apply many random schedules (the hypothesis strategies of tests/test_fuzz.py).

Every schedule is built and run on guarded buffers (guard canaries around
every array, outputs pre-filled with a sentinel) and compared with numpy.
Each fuzz test runs in its own process, so a crash (a signal) is counted as
such instead of ending the run.

    python scripts/fuzz_schedules.py                 # >= 10,000 schedules
    python scripts/fuzz_schedules.py --total 600     # a quick share

Prints, per test, the schedules tried, the outcome and the time, then the
totals: schedules, wrong answers (a failing comparison, guard or error check),
crashes (a signal or an unexpected exception).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = [  # (test, its share of TESSERA_FUZZ_EXAMPLES: the symbolic ones run half as many)
    ("test_fuzz_elementwise", 1.0),
    ("test_fuzz_row_reduction", 1.0),
    ("test_fuzz_stencil", 1.0),
    ("test_fuzz_matmul", 1.0),
    ("test_fuzz_elementwise_symbolic", 0.5),
    ("test_fuzz_stencil_symbolic", 0.5),
]


def run_one(test: str, examples: int) -> dict:
    with tempfile.NamedTemporaryFile(prefix="fuzz-count-", delete=False) as f:
        count_file = f.name
    env = dict(os.environ, TESSERA_FUZZ_EXAMPLES=str(examples), TESSERA_FUZZ_COUNT_FILE=count_file)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         f"tests/test_fuzz.py::{test}"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    seconds = time.perf_counter() - t0
    tried = os.path.getsize(count_file)
    os.unlink(count_file)
    text = proc.stdout + proc.stderr
    if proc.returncode < 0:
        outcome = f"crash (signal {-proc.returncode})"
    elif proc.returncode == 0:
        outcome = "ok"
    elif "AssertionError" in text or "Failed: DID NOT RAISE" in text:
        outcome = "wrong"
    else:
        outcome = "crash (exception)"
    return {"test": test, "tried": tried, "outcome": outcome, "seconds": seconds, "log": text}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--total", type=int, default=10_000, help="schedules to try in all")
    args = ap.parse_args(argv)
    per_test = -(-args.total // int(sum(share for _, share in TESTS)))
    results = []
    for test, _ in TESTS:
        r = run_one(test, per_test)
        results.append(r)
        print(f"{r['test']:34s} {r['tried']:7d} schedules  {r['outcome']:20s} {r['seconds']:7.1f} s",
              flush=True)
        if r["outcome"] != "ok":
            print(r["log"][-4000:], flush=True)
    tried = sum(r["tried"] for r in results)
    wrong = sum(r["outcome"] == "wrong" for r in results)
    crashes = sum(r["outcome"].startswith("crash") for r in results)
    print(f"total: {tried} schedules, {wrong} wrong, {crashes} crashes")
    return 0 if wrong == 0 and crashes == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
