"""The commands: ``run``, ``bench``, ``compile`` and ``tune``."""

from __future__ import annotations

import os
import statistics
import sys
import time

from graph import plot
from graph.cli.common import CliError, Log, flat
from graph.cli.model import (build_options, check_target, format_type, import_onnx, is_library, load, prepared,
                             print_profile, random_inputs)
from graph.cli.timing import compare_outputs, format_samples, format_time, interleaved, ort_session, summarize


def cmd_run(args, log: Log) -> int:
    model, m, _ = prepared(args, log)
    for k, name in enumerate(m.output_names()):
        print(summarize(name, m.get_output(k)))
    samples = interleaved({"tessera": m.run}, args.repeat or 5, args.number, settle=0.0)["tessera"]
    print(f"latency: {format_samples(samples)}")
    if args.profile:
        print_profile(model, m)
    return 0


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
        print_profile(model, m)
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
    """Tune every task of the model (``tune.network``), resuming from ``--log``; latency before and after."""
    from graph.tuning import tune_model
    from tune import autotvm, deployed, network

    check_tune_args(args)
    target = check_target(args.target)
    if args.auto_scheduler:
        return cmd_tune_auto_scheduler(args, log, target)
    try:
        records = network.read_log(args.log, target)
    except autotvm.RecordError as err:
        raise CliError(f"--log {args.log}: {err}") from None
    g, params = import_onnx(args.model, log, args.shape)
    log("extracting tasks ...")
    try:
        tasks, before, after, note = tune_model(
            g, params, target, args.trials, args.log, args.tuner.lower(), build_options(args), args.seed,
            None if args.budget is None else 60 * args.budget, records=records,
            stream=None if args.quiet else sys.stderr, log=log)
    except ValueError as err:
        raise CliError(f"{args.model}: {err}") from None
    print(note)
    log("timing the model before and after ...")
    lat = model_latency({"before": before, "after": after}, args.seed)
    print(f"latency before (rule defaults): {format_time(lat['before'])}")
    print(f"latency after (--records {args.log}): {format_time(lat['after'])}  "
          f"({lat['before'] / lat['after']:.2f}x)")
    if args.plot:
        curves = {f"{t.name} x{t.count}": c for t, c in deployed.best_curves(args.log, tasks, target).items()}
        plot.tuning_curves(curves, args.plot, title=f"tuning {os.path.basename(args.log)}")
        print(f"wrote {args.plot}")
    return 0


def cmd_tune_auto_scheduler(args, log: Log, target) -> int:
    """``tessera tune --auto-scheduler``: every fused kernel searched (``graph.auto_schedule``)."""
    from graph.auto_schedule import tune_model

    g, params = import_onnx(args.model, log, args.shape)
    log("extracting tasks and tuning (auto_scheduler) ...")
    start = time.perf_counter()
    sched, before, after = tune_model(g, params, target, args.trials, args.log, build_options(args), args.seed,
                                      None if args.budget is None else 60 * args.budget, verbose=not args.quiet)
    print(f"tuned {len(sched.tasks)} tasks: {sched.trials} trials in the log, in {time.perf_counter() - start:.1f} s, "
          f"log {args.log}")
    lat = model_latency({"before": before, "after": after}, args.seed)
    print(f"latency before (default schedules): {format_time(lat['before'])}")
    print(f"latency after (--records {args.log}): {format_time(lat['after'])}  ({lat['before'] / lat['after']:.2f}x)")
    if args.plot:
        curve: list = []  # per trial: the model's estimated latency after the round that measured it
        for trials, est in sched.curve:
            curve += [est * 1e3 if est < float("inf") else float("nan")] * (trials - len(curve))
        plot.tuning_curves({"estimated latency": curve}, args.plot, title=f"tuning {os.path.basename(args.log)}",
                           unit="latency (ms)")
        print(f"wrote {args.plot}")
    return 0


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
