"""Which state is this VM in?  A cache line bounced between the first two CPUs, second by second.

On this host the two vCPUs are now and then moved apart for seconds at a time: a cache line's
round trip between threads pinned to CPU 0 and CPU 1 goes from about 190 ns to about 390 ns.
A kernel whose threads hand data to each other pays it (the Winograd convs: 1.45-2.3x slower,
ResNet-50 38.1 against 43.1 ms); one that only reads fixed inputs does not (the direct conv timed
alone, the tuner's yardstick).  Run this next to, or just before, a benchmark to know which state
its figures come from.  ``--winograd`` also times ResNet-50's Winograd 64->64 @56 with its stages
run apart (the rule config with ``rows=0``, the form that hands intermediates between threads)
against the yardstick each second: their ratio reads about 3 in the near state, 7.5 in the far
one.  (The rule's own config fuses the stages, ``rows=7``, and reads 3.2-3.6 in both; the
space no longer offers ``rows=0`` where fusing is legal, so this tool builds it past the check.)

    python benchmarks/vcpu_state.py --seconds 20
    python benchmarks/vcpu_state.py --seconds 40 --winograd

The probe is 20 lines of C built with the system's ``cc`` (a benchmark-only tool: Python threads
cannot bounce a cache line; nothing in the package needs a C compiler).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

PROBE_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
static _Alignas(64) atomic_long flag;
static long iters;
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void *other(void *arg) {
    pin(1);
    for (long i = 0; i < iters; i++) {
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 1) ;
        atomic_store_explicit(&flag, 2 * i + 2, memory_order_release);
    }
    return 0;
}
double round_trip_ns(long n) {
    pthread_t t; iters = n; atomic_store(&flag, 0);
    cpu_set_t old; pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pin(0);
    pthread_create(&t, 0, other, 0);
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) ;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    pthread_join(t, 0);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
}
"""


def probe():
    """``round_trip_ns(n)`` of the C probe, built into a temporary directory."""
    if not {0, 1} <= os.sched_getaffinity(0):
        raise SystemExit("vcpu_state: needs CPUs 0 and 1 in the affinity mask")
    with tempfile.TemporaryDirectory(prefix="tessera-vcpu-") as tmp:  # the loaded library outlives its file
        src, lib = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe.so")
        with open(src, "w") as fh:
            fh.write(PROBE_C)
        try:
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, src, "-lpthread"], check=True,
                           capture_output=True, text=True)
        except FileNotFoundError:
            raise SystemExit("vcpu_state: no C compiler ('cc') on this machine; the probe needs one") from None
        except subprocess.CalledProcessError as err:
            raise SystemExit(f"vcpu_state: building the probe failed:\n{err.stderr}") from None
        fn = ctypes.CDLL(lib).round_trip_ns
    fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_long]
    return fn


def winograd_ratio():
    """A call giving Winograd 64->64 @56's time (rule config, stages apart) over the yardstick's,
    5 ms windows."""
    import graph
    from graph.onnx.zoo import light_model_path
    from tune import autotvm
    from tune.autotvm.measure import execute
    from tune_deploy import window  # seconds per call over 5 ms

    g, params = graph.from_onnx(light_model_path("resnet50"))
    task = next(t for t in autotvm.task.extract_from_program(g, params, "llvm")
                if t.name == "conv2d_winograd.x86" and t.args[0][1] == 64)
    from tune.autotvm.space import ConfigEntity

    import topi.x86.conv2d_winograd as W

    threads = W._threads
    W._threads = lambda: 1 << 10  # the space refuses rows=0 here (it pays the far state): built anyway, to show it
    try:
        d = task.default_config().to_json_dict()
        d["entity"] = [[k, kind, 0 if k == "rows" else v] for k, kind, v in d["entity"]]
        s, args = task.instantiate(ConfigEntity.from_json_dict(d))
    finally:
        W._threads = threads
    with task.target:
        built = execute.compile_object(s, args, "vcpu_state_winograd", target=task.target)
    mod = execute.load_object(built)
    arrays = execute.random_arguments(built["specs"], 0)
    ybuilt = execute.build_yardstick()
    ymod = execute.load_object(ybuilt)
    yargs = execute.random_arguments(ybuilt["specs"], 0)
    return lambda: window(lambda: mod(*arrays)) / window(lambda: ymod(*yargs))


def main(argv: list | None = None) -> list:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--winograd", action="store_true", help="also the Winograd/yardstick ratio each second")
    a = p.parse_args(argv)
    trip = probe()
    ratio = winograd_ratio() if a.winograd else None
    rows = []
    for sec in range(a.seconds):
        r = None
        if ratio is not None:
            samples, end = [], time.perf_counter() + 0.7
            while time.perf_counter() < end:
                samples.append(ratio())
            r = statistics.median(samples)
        else:
            time.sleep(0.7)
        ns = statistics.median(trip(20000) for _ in range(5))
        rows.append((ns, r))
        print(f"{sec:3d} s: round trip CPU 0 <-> 1 {ns:6.1f} ns" + (f"   winograd/yardstick {r:5.2f}" if r else ""),
              flush=True)
    trips = sorted(ns for ns, _ in rows)
    print(f"round trip: min {trips[0]:.0f} ns, median {statistics.median(trips):.0f} ns, max {trips[-1]:.0f} ns; "
          f"seconds above 1.5x the min (vCPUs apart): {sum(ns > 1.5 * trips[0] for ns in trips)} of {len(trips)}")
    return rows


if __name__ == "__main__":
    main()
