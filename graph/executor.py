"""The graph executor: prebound native calls over preallocated buffers.

Everything that can be decided at build time is: each kernel call is bound to
the addresses of its buffers (inputs, folded constants, views into the one
memory-planned arena, outputs), so ``run`` is one native call of the runtime's
``tessera_run_calls`` over a table of (kernel, arguments), with no Python work
per node (a kernel of more than ``MAX_CALL_ARGS`` arguments is its own ``ctypes``
call between table segments); the profilers call the kernels one by one.
The executor runs a flat *plan* (buffer slots and calls, see
``GraphLibrary.execution_plan``), the same for a freshly built graph and for
a library loaded with ``graph.load_library``.

API (classic TVM graph runtime)::

    m = lib.create_executor()
    m.set_input("data", x)      # or m.set_input(data=x); params names are accepted too
    m.run()                     # or m.run(data=x)
    y = m.get_output(0)
"""

from __future__ import annotations

import ctypes
import time
from functools import partial
from itertools import groupby

import numpy as np

from codegen.module import as_array, data_pointer
from codegen.ndarray import ALIGN, aligned, aligned_zeros
from codegen.runtime import MAX_CALL_ARGS
from topi.narrow import as_logical, numpy_dtype, storage_dtype


class InputsByName:
    """``set_input`` of an executor: ``set_input("data", x)`` or ``set_input(data=x, ...)``, each pair
    handed to the executor's ``_set_one(name, array)``."""

    def set_input(self, key=None, value=None, **inputs) -> None:
        """Copy input arrays in: ``set_input("data", x)`` or ``set_input(data=x, ...)``."""
        if key is not None:
            inputs[key] = value
        for name, array in inputs.items():
            self._set_one(name, array)


class GraphModule(InputsByName):
    """Runs an execution plan: ``set_input``, ``run``, ``get_output``."""

    def __init__(self, plan, constants: list | None = None, addresses: dict | None = None, lib=None):
        if constants is None:  # GraphModule(lib), as classic TVM's graph_runtime.GraphModule
            lib = plan
            plan, constants, addresses = _plan_of(lib)
        self.lib = lib
        self.plan = plan
        self._arena = aligned_zeros(max(plan["arena_bytes"], ALIGN), np.uint8)
        self._buffers: list = []
        for slot in plan["slots"]:
            shape, dtype, kind = tuple(slot["shape"]), numpy_dtype(slot["dtype"]), slot["kind"]
            if kind in ("input", "output"):
                buf = aligned_zeros(shape, dtype)
            elif kind == "const":
                buf = aligned(constants[slot["index"]])  # the library's own are aligned: no copy
            elif kind == "alias":
                buf = self._buffers[slot["of"]].reshape(shape)
            else:
                off = slot["offset"]
                buf = self._arena[off:off + int(np.prod(shape)) * dtype.itemsize].view(dtype).reshape(shape)
            self._buffers.append(buf)
        self._inputs = {plan["slots"][k]["name"]: self._buffers[k] for k in plan["inputs"]}
        self._params = set(plan.get("params", ()))
        self._calls = [self._bind(call, addresses) for call in plan["calls"]]
        self._steps = self._call_table(plan["calls"], addresses)
        self.ran = False  # set by run(): a profile needs the inputs the model will see

    def _bind(self, call: dict, addresses: dict):
        args = [data_pointer(self._buffers[k]) for k in call["args"]]
        fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(args))(addresses[call["symbol"]])
        return partial(fn, *args)

    def _call_table(self, calls: list, addresses: dict) -> list:
        """``run``'s steps: ``tessera_run_calls`` over each run of kernels of at most
        ``MAX_CALL_ARGS`` arguments (the table, an int64 array, kept alive on the step), a kernel
        with more called alone."""
        from codegen.jit import function_address

        run_calls = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)(function_address("tessera_run_calls"))
        steps = []
        pairs = zip(calls, self._calls)
        for alone, group in groupby(pairs, key=lambda pair: len(pair[0]["args"]) > MAX_CALL_ARGS):
            group = list(group)
            if alone:
                steps += [bound for _, bound in group]
                continue
            table = np.array([word for spec, bound in group
                              for word in (addresses[spec["symbol"]], len(bound.args), *bound.args)], np.uint64)
            step = partial(run_calls, table.ctypes.data, len(group))
            step.table = table
            steps.append(step)
        return steps

    # inputs ------------------------------------------------------------------
    def _set_one(self, name: str, array) -> None:
        buf = self._inputs.get(name)
        if buf is None:
            if name in self._params:
                if self.lib is not None:
                    self.lib.check_param(name, array)
                return
            raise KeyError(f"set_input: the graph has no input {name!r}; inputs: {sorted(self._inputs)}")
        array = np.asarray(as_array(array))  # a torch/DLPack/buffer array: a view, copied once into the input
        if array.dtype != buf.dtype and array.dtype.name == storage_dtype(buf.dtype.name) != buf.dtype.name:
            array = as_logical(array, buf.dtype.name)  # a bfloat16/float8/int4 input given as its bits
        if array.shape != buf.shape:
            raise ValueError(f"set_input: input {name!r} expects shape {buf.shape} {buf.dtype}, got {array.shape}")
        if array.dtype != buf.dtype:
            raise TypeError(f"set_input: input {name!r} expects dtype {buf.dtype}, got {array.dtype} "
                            f"(convert it with .astype('{buf.dtype}'))")
        np.copyto(buf, array)

    def get_input(self, name: str) -> np.ndarray:
        return self._inputs[name]

    @property
    def input_names(self) -> list:
        return list(self._inputs)

    # running -----------------------------------------------------------------
    def run(self, **inputs) -> None:
        for name, array in inputs.items():  # not set_input(**inputs): an input may be named "key" or "value"
            self._set_one(name, array)
        for step in self._steps:
            step()
        self.ran = True

    def get_output(self, index: int = 0) -> np.ndarray:
        outs = self.plan["outputs"]
        if not 0 <= index < len(outs):
            raise IndexError(f"get_output: output {index} out of range; the graph has {len(outs)} outputs")
        return np.array(self._buffers[outs[index]], copy=True)

    @property
    def num_outputs(self) -> int:
        return len(self.plan["outputs"])

    def output_names(self) -> list:
        return [self.plan["slots"][k]["name"] for k in self.plan["outputs"]]

    def profile_kernels(self, number: int = 10, in_place: bool = False) -> list:
        """(label, median seconds) of each kernel call, in execution order: each call timed
        ``number`` times in a row (its data warm in the caches), or, ``in_place``, inside
        ``number`` whole runs of the model, as deployed: every other kernel runs between two of
        its calls, so its weights come from memory and its inputs from whichever thread wrote
        them (ResNet-50's kernels summed 1.14x their time called in a row, Winograd's up to 2x)."""
        labels = [spec["label"] for spec in self.plan["calls"]]
        if in_place:
            return list(zip(labels, map(float, np.median(self.kernel_runs(number), axis=0))))
        self.run()
        clock = time.perf_counter
        out = []
        for call, label in zip(self._calls, labels):
            samples = []
            for _ in range(number):
                t = clock()
                call()
                samples.append(clock() - t)
            out.append((label, float(np.median(samples))))
        return out

    def profile(self, number: int = 10):
        """Each kernel call's share of the model's time, its GFLOP/s or GB/s and its distance to
        the machine's limit, slowest first (``graph.profile``; ``print(m.profile())``).  The
        model must have run once (its inputs set)."""
        from graph.profile import profile_module

        return profile_module(self, number)

    def kernel_runs(self, number: int = 10, between=None, clock=None) -> np.ndarray:
        """Seconds of each kernel call (columns, in execution order) in each of ``number`` whole
        runs of the model (rows), after one run untimed; ``between()``, if given, is called
        after each timed run (such as a reference timed beside the runs).  ``clock``: default
        ``time.perf_counter``; ``time.thread_time`` reads one thread's CPU time (at one thread,
        what other processes on the cores do not inflate)."""
        self.run()
        clock, runs = clock or time.perf_counter, []
        for _ in range(number):
            stamps = [clock()]
            for call in self._calls:
                call()
                stamps.append(clock())
            runs.append(np.diff(stamps))
            if between is not None:
                between()
        return np.array(runs)

    def benchmark(self, number: int = 10, repeat: int = 5) -> list:
        """Seconds per run: ``repeat`` samples, each the mean of ``number`` runs."""
        self.run()
        results = []
        for _ in range(repeat):
            t = time.perf_counter()
            for _ in range(number):
                self.run()
            results.append((time.perf_counter() - t) / number)
        return results


def _plan_of(lib) -> tuple:
    """(plan, constants, addresses) of a built or a loaded library."""
    if hasattr(lib, "execution_plan"):
        return lib.execution_plan(), lib.constants(), lib.addresses()
    if hasattr(lib, "plan") and hasattr(lib, "addresses"):
        return lib.plan, lib._constants, lib.addresses()
    raise TypeError(f"GraphModule: expects a library from graph.build or graph.load_library, "
                    f"got {type(lib).__name__}")
