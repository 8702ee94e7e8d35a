"""Shared libraries: ``export_library`` writes one, ``load_module`` loads it.

The library holds the kernel, the thread-pool runtime and a JSON description
of the parameters (symbol ``tessera_meta``), so loading needs nothing else.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from codegen import jit
from codegen.module import Module, ParamSpec


def _meta_ir(meta: str) -> str:
    data = meta.encode() + b"\0"
    body = "".join(f"\\{b:02X}" for b in data)
    return (
        f'@tessera_meta = constant [{len(data)} x i8] c"{body}"\n'
        f'@tessera_meta_ptr = constant ptr @tessera_meta\n'
    )


def object_code(module: Module, what: str = "export_library") -> bytes:
    """The kernel, the runtime and the parameter description as one object file."""
    from codegen.runtime import runtime_llvm_ir

    if not module._ll:
        raise ValueError(f"{what}: this module has no LLVM IR (was it loaded from a library?)")
    if "tessera_packed_call" in module._ll:
        raise ValueError(
            f"{what}: '{module.entry_name}' calls packed functions (te.extern), which live in this "
            f"Python process; such a kernel cannot be saved to a library"
        )
    linked = jit.parse(module._ll)
    linked.link_in(jit.parse(runtime_llvm_ir(jit.triple(), jit.data_layout())))
    linked.link_in(jit.parse(_meta_ir(module.meta())))
    linked.verify()
    return jit.target_machine().emit_object(linked)


def save_object(module: Module, path: str) -> None:
    """Write the object file; ``link_shared`` (``cc -shared``) makes it a loadable library."""
    data = object_code(module, "save")
    with open(path, "wb") as fh:
        fh.write(data)


def link_shared(path: str, objects: list, options: list = (), cc: str | None = None) -> None:
    """``cc -shared -o path objects -lm -lpthread``."""
    cc = shutil.which(cc or os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError(f"linking {path}: no C compiler/linker (cc, gcc or clang) found")
    cmd = [cc, "-shared", "-o", path, *objects, *options, "-lm", "-lpthread"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"linking {path} failed:\n{res.stderr}")


def export_library(module: Module, path: str) -> None:
    obj = object_code(module)
    with tempfile.TemporaryDirectory() as tmp:
        o = os.path.join(tmp, "kernel.o")
        with open(o, "wb") as fh:
            fh.write(obj)
        link_shared(path, [o])


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


__all__ = ["export_library", "load_module", "llvm"]
