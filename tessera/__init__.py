"""Classic TVM's top-level names over Tessera's packages: ``import tessera as tvm``.

A facade only: every name here is one of ``te``, ``schedule``, ``codegen``,
``topi``, ``graph`` or ``tune``, or a thin adapter over one (``build``
returns a ``runtime.Module`` that also takes NDArrays).  Nothing inside the
project imports ``tessera``.

>>> import tessera as tvm
>>> from tessera import te
"""

from __future__ import annotations

import importlib
import sys

import te
from codegen.ndarray import Device, cl, cpu, cuda, device, metal, opencl, rocm, vulkan
from codegen.packed import get_global_func, register_func
from te.errors import TesseraError as TVMError
from tessera import arith, container, contrib, error, ir, modules, nd, runtime, target, testing, tir, transform
from tessera.driver import build, lower

modules.install()  # tessera.te.*, tessera.topi.*, tessera.autotvm.* ... as real modules (tessera/modules.py)
te = importlib.import_module("tessera.te")  # the te package's own names, plus classic ones (te.schedule)

_LAZY = {"topi": "topi", "autotvm": "tune.autotvm", "auto_scheduler": "tune.auto_scheduler", "graph": "graph",
         "_ffi": "tessera.error"}


def __getattr__(name: str):
    """``topi``, ``autotvm``, ``auto_scheduler`` and ``graph``, imported on first use."""
    if name not in _LAZY:
        raise AttributeError(f"module 'tessera' has no attribute '{name}'")
    try:
        mod = importlib.import_module(f"tessera.{name}")
    except ImportError as err:
        raise AttributeError(
            f"tessera.{name} is the package '{_LAZY[name]}', which cannot be imported here ({err})"
        ) from err
    globals()[name] = mod
    return mod


__all__ = [
    "Device",
    "TVMError",
    "arith",
    "auto_scheduler",
    "autotvm",
    "build",
    "cl",
    "contrib",
    "container",
    "cpu",
    "cuda",
    "device",
    "error",
    "get_global_func",
    "graph",
    "ir",
    "lower",
    "metal",
    "nd",
    "opencl",
    "register_func",
    "rocm",
    "runtime",
    "target",
    "te",
    "testing",
    "tir",
    "transform",
    "topi",
    "vulkan",
]
