"""``tessera``: run, benchmark, compile and tune ONNX models from the command line.

::

    tessera run model.onnx [--input NAME=FILE.npy ...] [--seed N] [--opt-level N] [--profile]
    tessera bench model.onnx [--repeat N] [--number N] [--threads N]
    tessera compile model.onnx [-o model.so]
    tessera run model.so                 # a library written by ``compile``
    tessera tune model.onnx --trials N --log model.jsonl [--tuner xgb|ga|random|grid] [--budget MIN]
    tessera run|bench|compile model.onnx --records model.jsonl   # built with the tuned configs

``python -m graph`` is the same program.  This module holds the arguments and
``main``; ``commands`` the commands, ``model`` loading models and inputs,
``timing`` the interleaved timing and output comparison, ``common`` errors and
the progress log.  Inputs not given as ``.npy`` files
are random (seeded; shapes and dtypes from the model).  Progress and notes go
to stderr (``--quiet`` silences them), results to stdout.  Every error is one
line on stderr and exit status 2 (``--debug`` shows the traceback instead);
``bench`` exits with 1 when Tessera and onnxruntime disagree.

Timings are medians of batches interleaved between the systems, each batch
after a 0.25 s pause: onnxruntime's and BLAS's worker threads spin after a
call and would steal the cores from whoever runs next.
"""

from __future__ import annotations

import argparse
import sys

from graph.cli.commands import cmd_bench, cmd_compile, cmd_run, cmd_tune
from graph.cli.common import EXIT_ERROR, Log, one_line


# ------------------------------------------------------------------ parser
def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("model", help="an ONNX model (.onnx) or a library written by 'tessera compile' (.so)")
    common.add_argument(
        "--opt-level",
        type=int,
        default=2,
        choices=range(4),
        metavar="N",
        help="graph optimisation level 0-3 (default 2)",
    )
    common.add_argument(
        "--profile", action="store_true",
        help="print the graph pass profile, where the compile time went and the memory plan; run and bench "
             "also print each kernel's share of the time, its GFLOP/s or GB/s and its distance to the "
             "machine's limits"
    )
    common.add_argument(
        "--target",
        default="llvm",
        metavar="TARGET",
        help="the CPU to build for: 'llvm' (this host, default), 'llvm -mcpu=x86-64-v3', "
        "'llvm -mattr=+avx2,+fma,-avx512f' (classic TVM target strings)",
    )
    common.add_argument("--no-winograd", dest="winograd", action="store_false",
                        help="run every convolution direct (no Winograd 3x3 convolutions)")
    common.add_argument("--shape", action="append", default=[], metavar="NAME=1x3x224x224",
                        help="pin the extents of an input with symbolic dimensions (repeatable)")
    common.add_argument("--quiet", "-q", action="store_true", help="no progress or notes on stderr")
    common.add_argument("--debug", action="store_true", help="show the traceback of an error")
    timed = argparse.ArgumentParser(add_help=False)
    timed.add_argument(
        "--input",
        "-i",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="an input from a .npy file (repeatable; NAME may be left out for a one-input model)",
    )
    timed.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    timed.add_argument("--repeat", type=int, default=None, metavar="N", help="timed batches")
    timed.add_argument(
        "--number",
        type=int,
        default=None,
        metavar="N",
        help="runs per batch (default: as many as fit in about 0.1 s)",
    )
    timed.add_argument(
        "--threads", type=int, default=2, metavar="N", help="threads of Tessera and onnxruntime (default 2)"
    )
    recs = argparse.ArgumentParser(add_help=False)
    recs.add_argument("--records", default=None, metavar="LOG.jsonl",
                      help="tuning records (from 'tessera tune'): build with their best configs")
    parser = argparse.ArgumentParser(prog="tessera", description="Run, benchmark, compile and tune ONNX models.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,bench,compile,tune}")
    sub.add_parser("run", parents=[common, timed, recs], help="run a model on random or given inputs")
    sub.add_parser(
        "bench", parents=[common, timed, recs], help="time a model next to onnxruntime and compare outputs"
    )
    comp = sub.add_parser("compile", parents=[common, recs],
                          help="build a model and export it as a shared library")
    comp.add_argument("-o", "--output", default=None, help="the library to write (default: MODEL with .so)")
    add_tune_parser(sub, common)
    return parser


def add_tune_parser(sub, common) -> None:
    tune = sub.add_parser("tune", parents=[common], help="tune every kernel of a model (AutoTVM), log the records")
    tune.add_argument("--trials", type=int, required=True, metavar="N", help="trials in all, spread by flops")
    tune.add_argument("--log", required=True, metavar="LOG.jsonl", help="records to append to (and resume from)")
    tune.add_argument("--tuner", default="xgb", metavar="NAME", help="xgb (default), ga, random or grid")
    tune.add_argument("--budget", type=float, default=None, metavar="MINUTES",
                      help="minutes for the whole tune: the search, its confirmations and the timing of the "
                           "configs the model may deploy")
    tune.add_argument("--plot", default=None, metavar="FILE.png", help="draw best GFLOP/s against trials")
    tune.add_argument("--seed", type=int, default=0, help="seed of the tuners and the inputs (default 0)")
    tune.add_argument("--auto-scheduler", action="store_true",
                      help="search schedules without templates (auto_scheduler, Ansor) for every fused kernel")


def main(argv: list | None = None) -> int:
    """The ``tessera`` program; returns the exit status (0 ok, 1 outputs differ, 2 error)."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse has printed usage and the error
        return int(exit_.code or 0)
    log = Log(args.quiet)
    command = {"run": cmd_run, "bench": cmd_bench, "compile": cmd_compile, "tune": cmd_tune}[args.command]
    try:
        return command(args, log)
    except KeyboardInterrupt:
        print("tessera: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # the one place that turns errors into an exit status
        if args.debug:
            raise
        print(f"tessera: error: {one_line(err)}", file=sys.stderr)
        return EXIT_ERROR
