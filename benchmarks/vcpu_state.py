"""Which state is this VM in?  A cache line bounced between the first two CPUs, second by second.

On this host the two vCPUs are now and then moved apart for seconds at a time: a cache line's
round trip between the thread pool's two threads goes from about 115 ns to about 390 ns.
A kernel whose threads hand data to each other pays it (the Winograd convs: 1.45-2.3x slower,
ResNet-50 38.1 against 43.1 ms; a direct conv that repacks its input in the kernel, up to 1.9x);
one that only reads fixed inputs does not (the tuner's yardstick, a direct conv that repacks nothing).  Run this next to, or just before, a benchmark to know which state
its figures come from.  ``--winograd`` also times ResNet-50's Winograd 64->64 @56 with its stages
run apart (the rule config with ``rows=0``, the form that hands intermediates between threads)
against the yardstick each second: their ratio reads about 3 in the near state, 7.5 in the far
one.  (The rule's own config fuses the stages, ``rows=7``, and reads 3.2-3.6 in both; the
space no longer offers ``rows=0`` where fusing is legal, so this tool builds it past the check.)

    python benchmarks/vcpu_state.py --seconds 20
    python benchmarks/vcpu_state.py --seconds 40 --winograd

The probe is the tuner's (``tune/autotvm/measure/vcpus.py``): LLVM IR run on the thread pool's two
threads.  With it a cache line's round trip reads about 115 ns near, about 390 ns apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

def probe():
    """``round_trip_ns(n)``: the runner's state probe (``tune/autotvm/measure/vcpus.py``), ``n``
    round trips per burst, the median of 5 bursts."""
    from graph.cli import set_threads
    from tune.measure import vcpus

    set_threads(2)
    if vcpus.round_trip_ns(100) is None:
        raise SystemExit("vcpu_state: the thread pool has fewer than two threads; the probe needs two")
    return lambda n: vcpus.round_trip_ns(n, 5)


def winograd_ratio():
    """A call giving Winograd 64->64 @56's time (rule config, stages apart) over the yardstick's,
    5 ms windows."""
    import graph
    from graph.onnx.zoo import light_model_path
    from tune import autotvm
    from tune.measure import execute
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
        ns = trip(20000)
        if ns is None:  # the partner thread did not come in time (the CPUs busy with something else)
            print(f"{sec:3d} s: no reading (the pool's second thread did not answer)", flush=True)
            continue
        rows.append((ns, r))
        print(f"{sec:3d} s: round trip CPU 0 <-> 1 {ns:6.1f} ns" + (f"   winograd/yardstick {r:5.2f}" if r else ""),
              flush=True)
    if not rows:
        return rows
    from tune.measure import vcpus

    trips = sorted(ns for ns, _ in rows)
    fastest = min(vcpus.fastest() or trips[0], trips[0])
    print(f"round trip: min {trips[0]:.0f} ns, median {statistics.median(trips):.0f} ns, max {trips[-1]:.0f} ns; "
          f"seconds above {vcpus.APART}x the host's fastest {fastest:.0f} ns (vCPUs apart): "
          f"{sum(not vcpus.near(ns, fastest) for ns in trips)} of {len(trips)}")
    return rows


if __name__ == "__main__":
    main()
