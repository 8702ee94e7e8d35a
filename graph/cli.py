"""``tessera``: run, benchmark, compile and tune ONNX models from the command line.

::

    tessera run model.onnx [--input NAME=FILE.npy ...] [--seed N] [--opt-level N] [--profile]
    tessera bench model.onnx [--repeat N] [--number N] [--threads N]
    tessera compile model.onnx [-o model.so]
    tessera run model.so                 # a library written by ``compile``
    tessera tune model.onnx --trials N --log model.jsonl [--tuner xgb|ga|random|grid] [--budget MIN]
    tessera run|bench|compile model.onnx --records model.jsonl   # built with the tuned configs

``python -m graph`` is the same program.  Inputs not given as ``.npy`` files
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
import os
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

EXIT_ERROR = 2
EXIT_MISMATCH = 1
SETTLE_S = 0.25
PAIR_SETTLE_S = 0.05  # the pause before each function in a paired round
RTOL = 1e-3
ATOL = 1e-5  # times the largest magnitude of the reference output


class CliError(Exception):
    """A user error (bad file, bad --input, unsupported model): one line, exit status 2."""


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
        "--profile", action="store_true", help="print the graph pass profile and the memory plan"
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


def flat(err: BaseException) -> str:
    """The message of ``err`` on one line (a KeyError's without its quotes)."""
    return " ".join(str(err.args[0] if isinstance(err, KeyError) and err.args else err).split())


def one_line(err: BaseException) -> str:
    text = flat(err)
    if isinstance(err, CliError):
        return text
    if isinstance(err, (ValueError, FileNotFoundError, OSError, TypeError, KeyError, NotImplementedError)):
        return text or type(err).__name__
    return f"{type(err).__name__}: {text} (an internal error; rerun with --debug for the traceback)"


class Log:
    """Progress notes on stderr, silenced by ``--quiet``."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, msg: str) -> None:
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ loading
@dataclass
class Loaded:
    """A runnable model: an executor factory, its inputs, and where it came from."""

    path: str
    lib: object  # graph.build.GraphLibrary or graph.export.LoadedLibrary
    inputs: dict  # name -> (shape, dtype)
    onnx_path: str | None
    profile: object = None
    build_seconds: float = 0.0

    def executor(self):
        return self.lib.create_executor()


def is_library(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) == b"\x7fELF"


def load(path: str, args, log: Log) -> Loaded:
    """Import and build an ONNX model, or load a compiled library."""
    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory, not an ONNX model or a Tessera library")
    if is_library(path):
        import graph

        lib = graph.load_library(path)
        slots = [lib.plan["slots"][k] for k in lib.plan["inputs"]]
        inputs = {s["name"]: (tuple(s["shape"]), s["dtype"]) for s in slots}
        log(f"loaded library {path}: {len(lib.plan['calls'])} kernel calls")
        return Loaded(path, lib, inputs, None)
    return build_onnx(path, args, log)


def check_target(spec: str):
    """``--target`` as a Target; a CliError naming what is wrong."""
    from codegen.target import create

    try:
        return create(spec)
    except ValueError as err:
        raise CliError(f"--target {spec!r}: {one_line(err)}") from None


def import_onnx(path: str, log: Log) -> tuple:
    """``(graph, params)`` of an ONNX file; a CliError naming what is wrong."""
    import graph

    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    start = time.perf_counter()
    log(f"importing {path} ...")
    try:
        g, params = graph.from_onnx(path)
    except FileNotFoundError as err:
        raise CliError(one_line(err)) from None
    except (ValueError, TypeError, NotImplementedError, KeyError) as err:
        raise CliError(f"cannot import {path}: {one_line(err).removeprefix('from_onnx: ')}") from None
    log(f"imported {g.op_count()} operators in {time.perf_counter() - start:.1f} s")
    return g, params


def applied_records(path: str | None, target):
    """The records of ``--records`` for ``target`` (None without); a CliError when the log
    cannot be read or holds records for another target only."""
    if path is None:
        return None
    from graph.tuning import read_log
    from tune import autotvm

    if not os.path.exists(path):
        raise CliError(f"--records {path}: no such file")
    try:
        records = read_log(path, target)
    except autotvm.RecordError as err:
        raise CliError(f"--records {path}: {err}") from None
    return autotvm.Records.of(records)


def build_onnx(path: str, args, log: Log) -> Loaded:
    import graph
    from graph.passes import PassProfile

    target = check_target(args.target)
    records = applied_records(getattr(args, "records", None), target)
    g, params = import_onnx(path, log)
    log("compiling ...")
    profile = PassProfile() if args.profile else None
    try:
        lib = graph.build(g, target=target, params=params, opt_level=args.opt_level, profile=profile,
                          verbose=not args.quiet, records=records, options=build_options(args))
    except (ValueError, TypeError, NotImplementedError, KeyError) as err:
        raise CliError(f"cannot compile {path}: {one_line(err)}") from None
    log(f"built in {lib.build_seconds:.1f} s: {lib.summary()}")
    inputs = {v.name: (tuple(v.shape), v.dtype) for v in lib.graph.inputs}
    return Loaded(path, lib, inputs, path, profile, lib.build_seconds)


def build_options(args) -> dict:
    """The build options the command line sets (``graph.build(..., options=)``)."""
    return {"winograd": args.winograd}


def print_profile(model: Loaded) -> None:
    if model.profile is not None:
        print(model.profile.report())
    plan = getattr(model.lib, "plan", None)
    if hasattr(plan, "report"):
        print(plan.report())
    elif isinstance(plan, dict):
        print(f"memory plan: arena {plan['arena_bytes'] / 2**20:.2f} MiB (from the library)")


# ------------------------------------------------------------------ inputs
def parse_input_specs(items: list, inputs: dict) -> dict:
    """``NAME=FILE.npy`` (or ``FILE.npy`` for a one-input model) -> {name: array}, checked."""
    given = {}
    for item in items:
        name, sep, path = item.rpartition("=")
        if not sep:
            if len(inputs) != 1:
                raise CliError(
                    f"--input {item!r}: name the input (NAME=FILE.npy); the model's inputs: {list(inputs)}"
                )
            name = next(iter(inputs))
        if name not in inputs:
            raise CliError(
                f"--input {item!r}: the model has no input {name!r}; its inputs: "
                + ", ".join(f"{n} {format_type(*t)}" for n, t in inputs.items())
            )
        given[name] = check_input(name, read_npy(item, path), *inputs[name])
    return given


def read_npy(item: str, path: str) -> np.ndarray:
    if not os.path.isfile(path):
        raise CliError(f"--input {item!r}: no such file: {path}")
    with open(path, "rb") as fh:
        if fh.read(6) != b"\x93NUMPY":
            raise CliError(
                f"--input {item!r}: {path} is not a .npy file (no NPY header; save it with numpy.save)"
            )
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise CliError(f"--input {item!r}: {path} is not a .npy array file ({one_line(err)})") from None


def check_input(name: str, array, shape: tuple, dtype: str) -> np.ndarray:
    if not isinstance(array, np.ndarray):
        raise CliError(f"--input {name}: expected one array in a .npy file, got {type(array).__name__}")
    if tuple(array.shape) != tuple(shape) or str(array.dtype) != dtype:
        raise CliError(
            f"--input {name}: expects {format_type(shape, dtype)}, the file holds "
            f"{format_type(array.shape, array.dtype)}"
            + (f" (convert it with .astype('{dtype}'))" if tuple(array.shape) == tuple(shape) else "")
        )
    return np.ascontiguousarray(array)


def format_type(shape, dtype) -> str:
    return f"{tuple(int(d) for d in shape)} {dtype}"


def random_inputs(inputs: dict, seed: int) -> dict:
    """Seeded inputs: standard normal floats, small non-negative integers, random booleans."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, (shape, dtype) in inputs.items():
        kind = np.dtype(dtype).kind
        if kind == "f":
            out[name] = rng.standard_normal(shape).astype(dtype)
        elif kind in "iu":
            out[name] = rng.integers(0, 4, size=shape).astype(dtype)
        elif kind == "b":
            out[name] = rng.random(shape) < 0.5
        else:
            raise CliError(f"input {name!r} has dtype {dtype}: give it with --input {name}=FILE.npy")
    return out


def model_inputs(model: Loaded, args, log: Log) -> dict:
    arrays = random_inputs(model.inputs, args.seed)
    given = parse_input_specs(args.input, model.inputs)
    random = [n for n in model.inputs if n not in given]
    if random:
        log(
            f"random inputs (seed {args.seed}): "
            + ", ".join(f"{n} {format_type(*model.inputs[n])}" for n in random)
        )
    arrays.update(given)
    return arrays


# ------------------------------------------------------------------ timing
def interleaved(
    fns: dict, repeat: int = 7, number: int | None = None, settle: float = SETTLE_S, budget: float = 0.1
) -> dict:
    """Seconds per call of each function: ``repeat`` rounds, each one batch of ``number``
    calls per function in turn, every batch after a ``settle`` pause.  Returns name -> samples."""
    counts = {}
    for name, fn in fns.items():
        fn()  # warm-up
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-7)
        counts[name] = number or max(1, min(1000, int(budget / once)))
    samples: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            time.sleep(settle)
            t0 = time.perf_counter()
            for _ in range(counts[name]):
                fn()
            samples[name].append((time.perf_counter() - t0) / counts[name])
    return samples


def paired(fns: dict, seconds: float, times: int = 3, settle: float = PAIR_SETTLE_S) -> dict:
    """Paired rounds for ``seconds``: each round reads the vCPUs' state, then times every function
    as the fastest of ``times`` calls, each function after a ``settle`` pause (onnxruntime's
    threads spin after a call).  Returns ``{"near": [bool per round], name: [seconds per round]}``.

    A ratio taken within one round cancels the machine's drift, which on this VM moves every
    system alike by 20-80% over minutes; see ``paired_ratio``."""
    from tune.measure import vcpus

    for fn in fns.values():
        fn()  # warm-up
    rounds: dict = {"near": [], **{name: [] for name in fns}}
    end = time.perf_counter() + seconds
    while not rounds["near"] or time.perf_counter() < end:
        rounds["near"].append(vcpus.reading()[1] is not False)
        for name, fn in fns.items():
            time.sleep(settle)
            best = float("inf")
            for _ in range(times):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            rounds[name].append(best)
    return rounds


def near_rounds(rounds: dict) -> list:
    """The indices of ``paired``'s rounds in the near state (all of them when none was)."""
    return [i for i, n in enumerate(rounds["near"]) if n] or list(range(len(rounds["near"])))


def paired_ratio(rounds: dict, name: str, base: str) -> tuple:
    """``(median, 25th, 75th percentile, rounds)`` of ``name``'s time over ``base``'s, per round of
    ``paired``, over the rounds in the near state (all of them when none was)."""
    r = [rounds[name][i] / rounds[base][i] for i in near_rounds(rounds)]
    q = np.percentile(r, [50, 25, 75])
    return float(q[0]), float(q[1]), float(q[2]), len(r)


def format_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def format_samples(samples: list) -> str:
    med = statistics.median(samples)
    spread = (max(samples) - min(samples)) / med if med > 0 else 0.0
    return (
        f"{format_time(med)} median (min {format_time(min(samples))}, max {format_time(max(samples))}, "
        f"spread {spread:.0%}, {len(samples)} batches)"
    )


# ------------------------------------------------------------------ outputs
def summarize(name: str, array: np.ndarray) -> str:
    """One line: name, shape, dtype, first values, range; argmax of a 1000-class output."""
    flat = array.reshape(-1)
    first = ", ".join(f"{x:.6g}" if array.dtype.kind == "f" else str(x) for x in flat[:5])
    line = f"{name}: {format_type(array.shape, array.dtype)}  [{first}{', ...' if flat.size > 5 else ''}]"
    if flat.size and array.dtype.kind in "fiub":
        line += f"  min {flat.min():.6g} max {flat.max():.6g}"
    classes = [d for d in array.shape if d != 1]
    if classes == [1000]:
        top = int(np.argmax(flat))
        line += f"  argmax {top} ({flat[top]:.6g})"
    return line


def differences(ours: np.ndarray, ref: np.ndarray) -> tuple:
    """(max abs difference, max relative difference, agree): relative to |ref|, floored at
    1e-3 of the largest |ref| so near-zero elements do not dominate."""
    a, b = ours.astype(np.float64), ref.astype(np.float64)
    if a.shape != b.shape:
        return float("inf"), float("inf"), False
    if a.size == 0:
        return 0.0, 0.0, True
    diff = np.abs(a - b)
    scale = float(np.abs(b).max())
    rel = diff / np.maximum(np.abs(b), 1e-3 * scale + 1e-30)
    agree = bool(np.all(diff <= ATOL * max(scale, 1e-30) + RTOL * np.abs(b))) and bool(
        np.array_equal(np.isnan(a), np.isnan(b))
    )
    return float(np.nanmax(diff)), float(np.nanmax(rel)), agree


# ------------------------------------------------------------------ commands
def set_threads(n: int, lib=None) -> None:
    """Threads of the process JIT's pool and, for a loaded library, of the library's own pool."""
    import ctypes

    import codegen

    if n < 1:
        raise CliError(f"--threads {n}: need at least 1 thread")
    codegen.set_num_threads(n)
    dll = getattr(lib, "_dll", None)  # an exported library links its own copy of the runtime
    if dll is not None and hasattr(dll, "tessera_set_num_threads"):
        dll.tessera_set_num_threads.argtypes = [ctypes.c_int32]
        dll.tessera_set_num_threads(n)


def check_counts(args) -> None:
    for flag in ("repeat", "number"):
        value = getattr(args, flag, None)
        if value is not None and value < 1:
            raise CliError(f"--{flag} {value}: must be at least 1")


def prepared(args, log: Log) -> tuple:
    """The model loaded or built, its executor fed and run once, and the input arrays."""
    check_counts(args)
    set_threads(args.threads)
    model = load(args.model, args, log)
    set_threads(args.threads, model.lib)
    arrays = model_inputs(model, args, log)
    m = model.executor()
    m.set_input(**arrays)
    m.run()
    return model, m, arrays


def cmd_run(args, log: Log) -> int:
    model, m, _ = prepared(args, log)
    for k, name in enumerate(m.output_names()):
        print(summarize(name, m.get_output(k)))
    samples = interleaved({"tessera": m.run}, args.repeat or 5, args.number, settle=0.0)["tessera"]
    print(f"latency: {format_samples(samples)}")
    if args.profile:
        print_profile(model)
    return 0


def ort_session(path: str | None, threads: int, profile: str | None = None) -> tuple:
    """(an onnxruntime session with ``threads`` intra-op threads, None) or (None, why not);
    ``profile``: its profiler on, writing to files of that prefix (``end_profiling`` names one)."""
    if path is None:
        return None, "a compiled library carries no ONNX model"
    try:
        import onnxruntime as ort
    except ImportError:
        return None, "onnxruntime is not installed (pip install onnxruntime)"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: no warnings about unused initializers
    if profile is not None:
        options.enable_profiling, options.profile_file_prefix = True, profile
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]), None
    except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
        return None, f"onnxruntime cannot load the model: {flat(err)}"


def cmd_bench(args, log: Log) -> int:
    model, m, arrays = prepared(args, log)
    fns = {"tessera": m.run}
    sess, why_not = ort_session(model.onnx_path, args.threads)
    status = 0
    if sess is not None:
        feed = {i.name: arrays[i.name] for i in sess.get_inputs() if i.name in arrays}  # not initializers
        try:
            ref = sess.run(None, feed)
        except Exception as err:  # noqa: BLE001 - onnxruntime raises its own exception types
            sess, why_not = None, f"onnxruntime cannot run the model: {flat(err)}"
    if sess is not None:
        fns["onnxruntime"] = lambda: sess.run(None, feed)
        status = compare_outputs(m, ref)
    else:
        print(f"onnxruntime:  not run: {why_not}")
    log(f"timing ({args.threads} threads) ...")
    samples = interleaved(fns, args.repeat or 7, args.number)
    for name, s in samples.items():
        print(f"{name + ':':13} {format_samples(s)}")
    if "onnxruntime" in samples:
        ratio = statistics.median(samples["onnxruntime"]) / statistics.median(samples["tessera"])
        print(f"speed ratio (onnxruntime time / Tessera time): {ratio:.2f}x")
    if args.profile:
        print_profile(model)
    return status


def check_tune_args(args) -> None:
    from tune.autotvm.tuner import TUNERS

    if args.tuner.lower() not in TUNERS:
        raise CliError(f"--tuner {args.tuner!r}: unknown tuner; use one of: xgb, ga, random, grid")
    if args.trials < 1:
        raise CliError(f"--trials {args.trials}: must be at least 1")
    if args.budget is not None and args.budget <= 0:
        raise CliError(f"--budget {args.budget}: must be a positive number of minutes")
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CliError("--plot needs matplotlib: pip install matplotlib") from None
    if os.path.isfile(args.model) and is_library(args.model):
        raise CliError(f"{args.model} is a compiled library; tune takes an ONNX model")


def model_latency(libs: dict, seed: int = 0, repeat: int = 5) -> dict:
    """Name -> median seconds per run of each built library, timed interleaved on the same inputs."""
    fns = {}
    for name, lib in libs.items():
        m = lib.create_executor()
        m.set_input(**random_inputs({v.name: (tuple(v.shape), v.dtype) for v in lib.graph.inputs}, seed))
        fns[name] = m.run
    return {name: statistics.median(s) for name, s in interleaved(fns, repeat).items()}


def cmd_tune(args, log: Log) -> int:
    """Tune every task of the model (``graph.tuning``), resuming from ``--log``; latency before and after."""
    from graph import tuning
    from tune import autotvm

    check_tune_args(args)
    target = check_target(args.target)
    try:
        records = tuning.read_log(args.log, target)
    except autotvm.RecordError as err:
        raise CliError(f"--log {args.log}: {err}") from None
    g, params = import_onnx(args.model, log)
    log("extracting tasks ...")
    tasks = autotvm.task.extract_from_program(g, params, target)
    if not tasks:
        raise CliError(f"{args.model} has no tunable kernels (convolutions, dense layers, softmax)")
    plan = tuning.spread_trials(tasks, args.trials)
    for line in tuning.tune_plan(tasks, plan, records):
        log(line)
    log("building with the rule defaults ...")
    before = tuning.build_with_records(g, params, target, None)
    start = time.perf_counter()
    stream = None if args.quiet else sys.stderr
    option = autotvm.measure_option(builder="local", runner=autotvm.LocalRunner(**tuning.RUNNER_OPTIONS))
    done = tuning.tune_tasks(tasks, plan, args.log, args.tuner.lower(),
                             tuning.search_budget(None if args.budget is None else 60 * args.budget, tasks), records,
                             measure_option=option, stream=stream, seed=args.seed)
    after, again, placed = before, 0, 0
    if os.path.exists(args.log):
        after, again = tuning.confirm_deployed(g, params, target, args.log, tasks, option, stream=stream)
        after, placed = tuning.confirm_in_place(g, params, target, args.log, tasks, stream=stream)
    print(f"tuned {len(tasks)} tasks: {sum(done.values()) + again} trials measured now "
          f"({again} timing the configs the model may deploy, weights out of the caches; {placed} configs "
          f"timed inside whole runs of the model) in {time.perf_counter() - start:.1f} s, log {args.log}")
    log("timing the model before and after ...")
    lat = model_latency({"before": before, "after": after}, args.seed)
    print(f"latency before (rule defaults): {format_time(lat['before'])}")
    print(f"latency after (--records {args.log}): {format_time(lat['after'])}  "
          f"({lat['before'] / lat['after']:.2f}x)")
    print(tuning.records_changed_note(before, after))
    if args.plot:
        tuning.plot_tuning(args.log, tasks, args.plot, target)
        print(f"wrote {args.plot}")
    return 0


def compare_outputs(m, ref: list) -> int:
    """Print the differences of each output from onnxruntime's; EXIT_MISMATCH if any disagree."""
    status = 0
    for k, name in enumerate(m.output_names()):
        ours = m.get_output(k)
        if k >= len(ref):
            print(f"output {name}: onnxruntime has no output {k}")
            status = EXIT_MISMATCH
            continue
        theirs = np.asarray(ref[k])
        abs_d, rel_d, agree = differences(ours, theirs)
        verdict = "agree" if agree else f"DIFFER (rtol {RTOL:g}, atol {ATOL:g} x max|ref|)"
        shapes = "" if ours.shape == theirs.shape else f" shapes {ours.shape} vs {theirs.shape}"
        print(f"output {name}: max abs diff {abs_d:.3g}, max rel diff {rel_d:.3g}{shapes}: {verdict}")
        status = status if agree else EXIT_MISMATCH
    return status


def cmd_compile(args, log: Log) -> int:
    if os.path.isfile(args.model) and is_library(args.model):
        raise CliError(f"{args.model} is already a compiled library; compile takes an ONNX model")
    out = args.output or os.path.splitext(args.model)[0] + ".so"
    if os.path.abspath(out) == os.path.abspath(args.model):
        raise CliError(f"-o {out}: would overwrite the model itself; choose another output path")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise CliError(f"-o {out}: no such directory: {os.path.dirname(os.path.abspath(out))}")
    model = load(args.model, args, log)
    start = time.perf_counter()
    model.lib.export_library(out)
    size = os.path.getsize(out)
    print(
        f"wrote {out} ({size / 2**20:.1f} MiB) in {model.build_seconds + time.perf_counter() - start:.1f} s: "
        f"{model.lib.summary()}"
    )
    print(f"run it:  tessera run {out}")
    print(f"load it: m = graph.load_library({out!r}).create_executor(); m.run(**inputs); m.get_output(0)")
    print("inputs:  " + ", ".join(f"{n} {format_type(*t)}" for n, t in model.inputs.items()))
    if args.profile:
        print_profile(model)
    return 0
