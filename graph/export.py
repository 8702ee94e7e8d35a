"""A built graph as one shared library, and its loader.

The library holds every kernel's object code, the thread-pool runtime, the
execution plan as JSON (symbol ``tessera_graph_plan``) and the folded
constants as one 64-byte aligned blob (symbol ``tessera_graph_constants``,
assembled with ``.incbin`` so 100 MB of weights cost no compile time).
``load_library`` maps it and runs it with no compiler involved: the
constants are numpy views of the library's memory.
"""

from __future__ import annotations

import ctypes
import json
import os
import tempfile

import numpy as np

from codegen.ndarray import ALIGN


def export_library(lib, path: str, target=None) -> None:
    """Write ``lib`` (a ``graph.build.GraphLibrary``) to the shared library ``path``.

    The kernels' object codes, the runtime and the plan are linked by
    ``codegen.service``; the constants join as one ``.incbin`` blob.
    """
    from codegen import service

    if target is not None and str(service.check_target(target)) != lib.target:
        raise ValueError(f"export_library: the graph was built for {lib.target!r}, not {str(service.check_target(target))!r}; "
                         f"build it with graph.build(g, target={str(target)!r}) to export for that CPU")
    plan = lib.execution_plan()
    constants = lib.constants()
    offsets, total = [], 0
    for c in constants:
        offsets.append(total)
        total += (c.nbytes + ALIGN - 1) // ALIGN * ALIGN
    plan["constants"] = [{"offset": o, "shape": list(c.shape), "dtype": str(c.dtype)}
                         for o, c in zip(offsets, constants)]
    objects = [k.obj for k in lib.kernels.values()]
    objects.append(service.runtime_object(lib.target))
    objects.append(service.data_object(service.string_constant_ir("tessera_graph_plan", json.dumps(plan)), lib.target))
    with tempfile.TemporaryDirectory() as tmp:
        blob = os.path.join(tmp, "constants.bin")
        with open(blob, "wb") as fh:
            for off, c in zip(offsets, constants):
                fh.seek(off)
                fh.write(c.tobytes())
            fh.truncate(max(total, 1))
        asm = os.path.join(tmp, "constants.S")
        with open(asm, "w") as fh:
            fh.write(f'.section .rodata\n.balign {ALIGN}\n.globl tessera_graph_constants\n'
                     f'tessera_graph_constants:\n.incbin "{blob}"\n'
                     '.section .note.GNU-stack,"",@progbits\n')
        service.link_shared_library(path, objects, sources=[asm], label="export_library")


class LoadedLibrary:
    """A library written by ``export_library``: ``create_executor()`` runs it."""

    def __init__(self, path: str):
        if not os.path.exists(path):
            raise FileNotFoundError(f"load_library: no such file: {path}")
        try:
            self._dll = ctypes.CDLL(os.path.abspath(path))
        except OSError as err:
            raise OSError(f"load_library: cannot load {path}: {err}") from None
        try:
            text = ctypes.c_char_p.in_dll(self._dll, "tessera_graph_plan").value
        except ValueError:
            raise ValueError(f"load_library: {path} is not a Tessera graph library (no tessera_graph_plan)") from None
        self.plan = json.loads(text.decode())
        base = ctypes.addressof(ctypes.c_char.in_dll(self._dll, "tessera_graph_constants"))
        self._constants = []
        for c in self.plan["constants"]:
            dtype = np.dtype(c["dtype"])
            count = int(np.prod(c["shape"], dtype=np.int64))
            buf = (ctypes.c_char * max(count * dtype.itemsize, 1)).from_address(base + c["offset"])
            arr = np.frombuffer(buf, dtype, count).reshape(c["shape"])
            self._constants.append(arr)
        self.path = path

    def addresses(self) -> dict:
        out = {}
        for call in self.plan["calls"]:
            out[call["symbol"]] = ctypes.cast(getattr(self._dll, call["symbol"]), ctypes.c_void_p).value
        return out

    def create_executor(self):
        from graph.executor import GraphModule

        return GraphModule(self.plan, self._constants, self.addresses(), self)

    def check_param(self, name: str, array) -> None:
        raise ValueError(f"set_input: param {name!r} is folded into the library's constants; "
                         f"re-export the model to change it")


def load_library(path: str) -> LoadedLibrary:
    """Load a graph library written by ``GraphLibrary.export_library``."""
    return LoadedLibrary(path)
