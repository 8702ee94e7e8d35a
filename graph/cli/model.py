"""Loading a model for the command line: an ONNX file built (with records and options) or a
compiled library, and its inputs (``.npy`` files or seeded random arrays)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from graph.cli.common import CliError, Log, one_line


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
    import_seconds: float | None = None

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


def parse_shapes(items: list) -> dict:
    """``--shape NAME=1x3x224x224`` (repeatable) as name -> extents; a CliError for a malformed one."""
    out = {}
    for item in items or ():
        name, sep, dims = item.partition("=")
        try:
            extents = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            extents = ()
        if not sep or not name or not extents or min(extents) < 0:
            raise CliError(f"--shape {item!r}: expected NAME=EXTENTS such as x=1x3x224x224")
        out[name] = extents
    return out


def import_onnx(path: str, log: Log, shapes: list | None = None) -> tuple:
    """``(graph, params)`` of an ONNX file with the ``--shape`` pins; a CliError naming what is
    wrong (an input whose extents are symbolic and not pinned among them)."""
    import graph

    if not os.path.exists(path):
        raise CliError(f"no such file: {path}")
    start = time.perf_counter()
    log(f"importing {path} ...")
    try:
        g, params = graph.from_onnx(path, shape=parse_shapes(shapes))
    except FileNotFoundError as err:
        raise CliError(one_line(err)) from None
    except (ValueError, TypeError, NotImplementedError, KeyError) as err:
        raise CliError(f"cannot import {path}: {one_line(err).removeprefix('from_onnx: ')}") from None
    if getattr(g, "is_dynamic", False):
        raise CliError(f"{path} has shapes decided when it runs ({g}); pin its symbolic input dimensions with "
                       f"--shape NAME=EXTENTS, e.g. --shape {g.input_names[0]}=1x3x224x224")
    log(f"imported {g.op_count()} operators in {time.perf_counter() - start:.1f} s")
    return g, params


def applied_records(path: str | None, target):
    """The records of ``--records`` for ``target`` (None without); a CliError when the log
    cannot be read or holds records for another target only."""
    if path is None:
        return None
    from tune import autotvm
    from tune.network import read_log

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
    started = time.perf_counter()
    g, params = import_onnx(path, log, getattr(args, "shape", None))
    imported = time.perf_counter() - started
    log("compiling ...")
    profile = PassProfile() if args.profile else None
    try:
        lib = graph.build(g, target=target, params=params, opt_level=args.opt_level, profile=profile,
                          verbose=not args.quiet, records=records, options=build_options(args))
    except (ValueError, TypeError, NotImplementedError, KeyError) as err:
        raise CliError(f"cannot compile {path}: {one_line(err)}") from None
    log(f"built in {lib.build_seconds:.1f} s: {lib.summary()}")
    inputs = {v.name: (tuple(v.shape), v.dtype) for v in lib.graph.inputs}
    return Loaded(path, lib, inputs, path, profile, lib.build_seconds, imported)


def build_options(args) -> dict:
    """The build options the command line sets (``graph.build(..., options=)``)."""
    return {"winograd": args.winograd}


def print_profile(model: Loaded, executor=None) -> None:
    """The pass profile, the compile profile and the memory plan; with ``executor`` (a model
    that has run), each kernel's share of the time (``graph.profile``)."""
    if model.profile is not None:
        print(model.profile.report())
    if getattr(model.lib, "stage_seconds", None):
        from graph.profile import compile_report

        print(compile_report(model.lib, model.import_seconds))
    plan = getattr(model.lib, "plan", None)
    if hasattr(plan, "report"):
        print(plan.report())
    elif isinstance(plan, dict):
        print(f"memory plan: arena {plan['arena_bytes'] / 2**20:.2f} MiB (from the library)")
    if executor is not None:
        print(executor.profile())


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
