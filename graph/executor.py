"""The graph executor: prebound native calls over preallocated buffers.

Everything that can be decided at build time is: each kernel call is a
``ctypes`` function already bound to the addresses of its buffers (inputs,
folded constants, views into the one memory-planned arena, outputs), so
``run`` is one loop of ``call()`` with no Python work per node beyond it.

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

import numpy as np

from codegen.module import data_pointer


class GraphModule:
    """Runs a :class:`graph.build.GraphLibrary`."""

    def __init__(self, lib):
        self.lib = lib
        graph = lib.graph
        self._arena = np.zeros(max(lib.plan.arena_bytes, 64) + 64, np.uint8)
        base = (-data_pointer(self._arena)) % 64
        self._buffers: dict = {}
        self._inputs = {v.name: np.zeros(v.shape, v.dtype) for v in graph.inputs}
        for v in graph.inputs:
            self._buffers[id(v)] = self._inputs[v.name]
        for node in graph.nodes:
            if node.is_constant:
                self._buffers[id(node.output)] = np.ascontiguousarray(node.attrs["value"])
        outputs = {id(v) for v in graph.outputs}
        for node, key in lib.steps:
            for v in node.outputs:
                if id(v) in lib.alias:
                    src = self._buffers[id(lib.alias[id(v)])]
                    self._buffers[id(v)] = src.reshape(v.shape)
                elif id(v) in outputs:
                    self._buffers.setdefault(id(v), np.zeros(v.shape, v.dtype))
                else:
                    off = base + lib.plan.offsets[id(v)]
                    view = self._arena[off:off + v.nbytes].view(v.dtype).reshape(v.shape)
                    self._buffers[id(v)] = view
        self._outputs = [self._buffers[id(v)] if id(v) in self._buffers else None for v in graph.outputs]
        self._calls = self._bind_calls()

    def _bind_calls(self) -> list:
        addresses = self.lib.addresses()
        calls = []
        for node, key in self.lib.steps:
            if key is None:
                continue
            kernel = self.lib.kernels[key]
            args = [data_pointer(self._buffers[id(v)]) for v in (*node.inputs, *node.outputs)]
            if len(args) != len(kernel.params):
                raise RuntimeError(f"executor: kernel {kernel.label} takes {len(kernel.params)} arguments, "
                                   f"the graph gives {len(args)}")
            fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(args))(addresses[kernel.symbol])
            calls.append(partial(fn, *args))
        return calls

    # inputs ------------------------------------------------------------------
    def set_input(self, key=None, value=None, **inputs) -> None:
        """Copy input arrays in: ``set_input("data", x)`` or ``set_input(data=x, ...)``."""
        if key is not None:
            inputs[key] = value
        for name, array in inputs.items():
            self._set_one(name, array)

    def _set_one(self, name: str, array) -> None:
        buf = self._inputs.get(name)
        if buf is None:
            if name in self.lib.bound_params():
                self.lib.check_param(name, array)
                return
            raise KeyError(f"set_input: the graph has no input {name!r}; inputs: {sorted(self._inputs)}")
        array = np.asarray(array)
        if array.shape != buf.shape:
            raise ValueError(f"set_input: input {name!r} expects shape {buf.shape} {buf.dtype}, got {array.shape}")
        if array.dtype != buf.dtype:
            raise TypeError(f"set_input: input {name!r} expects dtype {buf.dtype}, got {array.dtype} "
                            f"(convert it with .astype('{buf.dtype}'))")
        np.copyto(buf, array)

    def get_input(self, name: str) -> np.ndarray:
        return self._inputs[name]

    # running -----------------------------------------------------------------
    def run(self, **inputs) -> None:
        if inputs:
            self.set_input(**inputs)
        for call in self._calls:
            call()

    def get_output(self, index: int = 0) -> np.ndarray:
        if not 0 <= index < len(self._outputs):
            raise IndexError(f"get_output: output {index} out of range; the graph has {len(self._outputs)} outputs")
        out = self._outputs[index]
        if out is None:  # a graph output that is a constant or an input
            v = self.lib.graph.outputs[index]
            out = self._buffers.get(id(v))
        return np.array(out, copy=True)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    def benchmark(self, number: int = 10, repeat: int = 5) -> list:
        """Seconds per run, ``repeat`` medians-of-``number`` samples."""
        self.run()
        results = []
        for _ in range(repeat):
            t = time.perf_counter()
            for _ in range(number):
                self.run()
            results.append((time.perf_counter() - t) / number)
        return results
