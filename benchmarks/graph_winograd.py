"""Whole models with and without Winograd convolutions, next to onnxruntime, in one run.

Run ``python benchmarks/graph_winograd.py [MODEL ...] [--repeat 9] [--records log.jsonl]``
(default ``resnet50``).  Per model it builds Tessera twice in this process, once
as ``graph.build`` does by default (3x3 stride-1 convs of >= 64 channels through
``conv2d_winograd.x86``) and once with the build option ``winograd=False`` (every conv direct),
checks both outputs against onnxruntime's, then times the three in interleaved
batches (``codegen.timing.interleaved``: each batch after a 0.25 s pause, 2 threads
each), so the with/without ratio is taken under the same load.  It prints medians,
the spread of the batches ((max - min) / median), the fastest batch of each, and the
ratios Winograd / direct and Tessera / onnxruntime (medians and fastest batches).

``--cpu-time`` runs all three on one thread and times each batch by the calling
thread's CPU time (``time.thread_time``: onnxruntime with one intra-op thread runs
in the caller too), which other processes' load disturbs far less than wall time
on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from graph_models import THREADS, model_path, seeded_feed, select

from codegen.timing import format_time, interleaved, summary
from graph.cli.timing import differences
from graph.cli.timing import ort_session as cli_ort_session


def build(name: str, winograd: bool, records: str | None):
    """The model built with Winograd on or off (the ``winograd`` build option), with ``records`` if given."""
    import graph

    g, params = graph.from_onnx(model_path(name))
    return graph.build(g, params=params, records=records, options={"winograd": winograd})


def winograd_kernels(lib) -> int:
    """The ``conv2d_winograd`` nodes of a built library."""
    return sum(1 for m in lib.kernel_nodes() if m.op == "conv2d_winograd")


def bench(name: str, repeat: int, records: str | None, cpu_time: bool = False) -> dict:
    import codegen

    threads = 1 if cpu_time else THREADS
    codegen.set_num_threads(threads)
    libs = {"winograd": build(name, True, records), "direct": build(name, False, records)}
    feed = seeded_feed(libs["winograd"])
    sess = cli_ort_session(model_path(name), threads)[0]
    ref = sess.run(None, feed)[0]
    fns = {}
    row = {"model": name, "winograd_convs": winograd_kernels(libs["winograd"])}
    for key, lib in libs.items():
        m = lib.create_executor()
        m.set_input(**feed)
        m.run()
        row[f"{key}_agree"] = differences(m.get_output(0), ref)[2]
        fns[key] = m.run
    fns["onnxruntime"] = lambda: sess.run(None, feed)
    samples = (interleaved(fns, repeat, budget=0.3, settle=0.0, clock=time.thread_time) if cpu_time
               else interleaved(fns, repeat))
    row.update(summary(samples))
    return row


def report(r: dict) -> None:
    print(f"{r['model']}: {r['winograd_convs']} Winograd convs; outputs vs onnxruntime: "
          f"winograd {'agree' if r['winograd_agree'] else 'DIFFER'}, direct {'agree' if r['direct_agree'] else 'DIFFER'}")
    for key in ("winograd", "direct", "onnxruntime"):
        print(f"  {key:12} median {format_time(r[key]):>10}  fastest {format_time(r[key + '_best']):>10}  "
              f"spread {r[key + '_spread']:.0%}")
    for a, b in (("winograd", "direct"), ("winograd", "onnxruntime"), ("direct", "onnxruntime")):
        print(f"  {a} / {b}: {r[a] / r[b]:.2f}x (medians), {r[a + '_best'] / r[b + '_best']:.2f}x (fastest batches)")


def main(argv: list | None = None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=["resnet50"], help="model names or substrings")
    parser.add_argument("--repeat", type=int, default=9, help="interleaved batches per system (default 9)")
    parser.add_argument("--records", default=None, help="build both under apply_history_best(records)")
    parser.add_argument("--cpu-time", action="store_true", help="one thread each, timed by thread CPU time")
    args = parser.parse_args(argv)
    rows = []
    for name in select(args.models):
        rows.append(bench(name, args.repeat, args.records, args.cpu_time))
        report(rows[-1])
    how = "1 thread each, thread CPU time" if args.cpu_time else f"{THREADS} threads each, wall time"
    print(f"{how}; interleaved batches in one process (same load for all three)")
    return rows


if __name__ == "__main__":
    main()
