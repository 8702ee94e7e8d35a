"""Shared libraries: ``export_library`` writes one, ``load_module`` loads it.

The library holds the kernel, the thread-pool runtime and a JSON description
of the parameters (symbol ``tessera_meta``), so loading needs nothing else.
"""

from __future__ import annotations

import ctypes
import json
import os

from codegen import service
from codegen.module import Module, ParamSpec


def object_code(module: Module, what: str = "export_library", target=None) -> bytes:
    """The kernel, the runtime and the parameter description as one object file."""
    if module.compiled is None:
        raise ValueError(f"{what}: this module has no LLVM IR (was it loaded from a library?)")
    return module.compiled.library_object(module.meta(), target, what)


def save_object(module: Module, path: str) -> None:
    """Write the object file; ``link_shared`` (``cc -shared``) makes it a loadable library."""
    data = object_code(module, "save")
    with open(path, "wb") as fh:
        fh.write(data)


def link_shared(path: str, objects: list, options: list = (), cc: str | None = None) -> None:
    """``cc -shared -o path objects -lm -lpthread`` (objects: file paths)."""
    service.link_shared_library(path, [], sources=list(objects), label=f"linking {path}", options=options, cc=cc)


def export_library(module: Module, path: str, target=None) -> None:
    """Write ``module`` as a shared library for ``target`` (default: the one it was built for)."""
    module.export_library(path, target)


def load_module(path: str) -> Module:
    """Load a library written by ``Module.export_library``."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_module: no such file: {path}")
    try:
        lib = ctypes.CDLL(os.path.abspath(path))
    except OSError as err:
        raise OSError(f"load_module: cannot load {path}: {err}") from None
    try:
        ptr = ctypes.c_char_p.in_dll(lib, "tessera_meta_ptr")
    except ValueError:
        raise ValueError(f"load_module: {path} is not a Tessera library (no tessera_meta symbol)") from None
    meta = json.loads(ptr.value.decode())
    params = [
        ParamSpec(p["kind"], p["name"], p["dtype"], tuple(p["shape"]), p["is_output"])
        for p in meta["params"]
    ]
    try:
        addr = ctypes.cast(getattr(lib, meta["symbol"]), ctypes.c_void_p).value
    except AttributeError:
        raise ValueError(f"load_module: {path} lacks the function symbol {meta['symbol']!r}") from None
    return Module(meta["name"], meta["symbol"], params, addr, ll="", keepalive=lib)


__all__ = ["export_library", "load_module", "object_code", "save_object", "link_shared"]
