"""Loading object code into the process, and one target machine per target.

The thread-pool runtime is loaded once, into an MCJIT engine kept for the
process, and its symbols are registered process-wide (``llvm.add_symbol``).
Every kernel is loaded into a small engine of its own, which finds the
runtime, libc and libm through those symbols, and is freed when its
:class:`LoadedCode` is garbage-collected: a tuner building thousands of
candidates does not grow.  A graph library is a real shared object
(``codegen.service.load_library`` links it) opened with ``dlopen`` and
closed with ``dlclose`` when its ``LoadedCode`` goes: the dynamic loader
maps it as one contiguous image (an MCJIT engine of many objects had code
and constants mapped > 2 GiB apart now and then).  It calls the runtime
through import stubs (:func:`import_stub_ir`) whose table
:func:`open_library` fills, so the process keeps one thread pool.  Before loading, every symbol the
object code leaves undefined is resolved: one that nothing defines (a
compiler-rt helper LLVM chose) is a ``LinkError`` naming it, at build time,
never a crash at run time.

(An engine per kernel rather than one ORC ``LLJIT`` with a library per
kernel: ORC keeps every JITDylib it ever made, ~10 KiB each, so 10,000
builds grew by 100 MiB; a dropped MCJIT engine gives its memory back.)

Target machines are made per ``codegen.target.Target`` (cached by its text)
with the CPU name *and* the full feature string: a CPU name implies features
that a VM or a ``-mattr`` may take away (SIGILL otherwise).
"""

from __future__ import annotations

import _ctypes
import ctypes
import os
import struct
import threading
import weakref

import llvmlite.binding as llvm
from llvmlite.binding.newpassmanagers import NewPassManager

_lock = threading.RLock()
_state: dict = {}
_machines: dict = {}
RUNTIME_SYMBOLS = ("tessera_parallel_launch", "tessera_set_num_threads", "tessera_get_num_threads",
                   "tessera_run_calls",
                   "__extendhfsf2", "__truncsfhf2", "__truncdfhf2")


class LinkError(RuntimeError):
    """Object code that cannot be loaded: it names a symbol that no library defines."""


def _initialize() -> None:
    if "init" not in _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        llvm.initialize_native_asmparser()
        _state["init"] = True


def target_machine(target=None) -> llvm.TargetMachine:
    """The LLVM target machine of ``target`` (a Target, a string, None: the current one)."""
    from codegen.target import create

    t = create(target)
    key = str(t)
    tm = _machines.get(key)
    if tm is None:
        with _lock:
            _initialize()
            tm = _machines.get(key)
            if tm is None:
                tm = _machines[key] = new_target_machine(t)
    return tm


def new_target_machine(t) -> llvm.TargetMachine:
    """A fresh (uncached) target machine for the Target ``t``.

    Large code model: object code reaches its constants and the runtime through 64-bit
    addresses.  MCJIT's memory manager maps an object's code and constants separately, at
    times more than 2 GiB apart in a long-lived process (thousands of builds, torch loaded),
    which the small model's 32-bit PC-relative references cannot reach (RuntimeDyldELF then
    asserts ``isInt<32>(RealOffset)`` and aborts the process).  llvmlite's own memory manager,
    which maps them together, asserts on the sections RuntimeDyld adds for external calls.
    The large model costs no measurable speed on convs, dense and softmax."""
    _initialize()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu=t.cpu, features=t.feature_string, opt=3, reloc="pic", codemodel="large")


def triple() -> str:
    return target_machine().triple


def data_layout(target=None) -> str:
    return str(target_machine(target).target_data)


def parse(ir_text: str, target=None, context=None) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text, with the triple and data layout of ``target``.

    Each module gets a fresh LLVM context unless ``context`` is given (modules
    linked together must share one): the global context would keep every
    constant and type of every kernel ever built (~3 KiB a kernel).
    """
    _initialize()
    mod = llvm.parse_assembly(ir_text, context if context is not None else llvm.create_context())
    mod.triple = triple()
    mod.data_layout = data_layout(target)
    mod.verify()
    return mod


def optimize(mod: llvm.ModuleRef, target=None) -> None:
    """Run the O3 pipeline with loop and SLP vectorisation on ``mod`` in place."""
    tm = target_machine(target)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = False  # unroll only what the schedule says (explicit unroll, auto_unroll pragma)
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    try:
        mpm.run(mod, pb)
    finally:
        # llvmlite's ModulePassManager inherits ObjectRef's no-op _dispose (MRO), so the
        # pipeline (~30 KiB) would leak on every call: dispose of it explicitly
        NewPassManager._dispose(mpm)
        mpm.detach()


# ----------------------------------------------------------------- the JIT --
def _loader_machine() -> llvm.TargetMachine:
    """A cheap target machine for an engine that only loads object code (the engine owns it)."""
    _initialize()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
        cpu="x86-64", features="", opt=0, reloc="pic", codemodel="default")


def _new_engine(objects: list) -> llvm.ExecutionEngine:
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _loader_machine())
    for obj in objects:
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine


def runtime_engine() -> llvm.ExecutionEngine:
    """The engine holding the thread-pool runtime (loaded once, kept for the process)."""
    with _lock:
        if "runtime" not in _state:
            from codegen.target import host

            obj = runtime_object(host())
            _import_symbols([obj], "tessera runtime")
            engine = _new_engine([obj])
            addresses = {name: engine.get_function_address(name) for name in RUNTIME_SYMBOLS}
            for name, addr in addresses.items():
                llvm.add_symbol(name, addr)
            _state["runtime"] = engine
            _state["runtime_addresses"] = addresses
        return _state["runtime"]


def runtime_object(target) -> bytes:
    """The thread-pool runtime (and half-precision helpers) as object code for ``target``."""
    from codegen.runtime import runtime_llvm_ir

    key = ("runtime", str(target))
    with _lock:
        if key not in _state:
            mod = parse(runtime_llvm_ir(triple(), data_layout(target)), target)
            optimize(mod, target)
            _state[key] = target_machine(target).emit_object(mod)
        return _state[key]


def function_address(name: str) -> int:
    """The address of a runtime function (``tessera_set_num_threads`` ...)."""
    runtime_engine()
    try:
        return _state["runtime_addresses"][name]
    except KeyError:
        raise RuntimeError(f"JIT: the runtime has no function '{name}'") from None


class LoadedCode:
    """Object code loaded into an engine of its own; unloaded when the last reference goes."""

    def __init__(self, engine, addresses: dict, label: str):
        self._engine = engine
        self.addresses = addresses
        self.label = label

    def address(self, symbol: str) -> int:
        return self.addresses[symbol]

    def __repr__(self) -> str:
        return f"LoadedCode({self.label}: {', '.join(self.addresses)})"


def elf_symbols(obj: bytes) -> tuple:
    """(defined, undefined): the global symbols an ELF64 object defines and those it refers to."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2:
        raise LinkError("object code is not ELF64")
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + k * shentsize) for k in range(shnum)]
    defined, undefined = set(), set()
    for _, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        stroff = sections[link][4]
        for k in range(size // entsize):
            st_name, st_info, _, st_shndx = struct.unpack_from("<IBBH", obj, off + k * entsize)
            if not st_name or st_info >> 4 not in (1, 2):  # global or weak, named
                continue
            end = obj.index(b"\0", stroff + st_name)
            (undefined if st_shndx == 0 else defined).add(obj[stroff + st_name:end].decode())
    undefined.discard("_GLOBAL_OFFSET_TABLE_")
    return defined, undefined


def undefined_symbols(objects: list) -> list:
    """The symbols ``objects`` (linked together) refer to but none defines."""
    defined, undefined = set(), set()
    for obj in objects:
        d, u = elf_symbols(obj)
        defined |= d
        undefined |= u
    return sorted(undefined - defined)


def resolve_symbol(name: str) -> int | None:
    """Where a symbol that object code calls lives: the runtime, a symbol registered with
    ``llvm.add_symbol`` (packed-call trampolines) or the process (libc, libm)."""
    runtime = _state.get("runtime_addresses", {})
    if name in runtime:
        return runtime[name]
    addr = llvm.address_of_symbol(name)
    if addr:
        return addr
    try:
        return ctypes.cast(getattr(_process(), name), ctypes.c_void_p).value
    except AttributeError:
        return None


def _process() -> ctypes.CDLL:
    if "process" not in _state:
        _state["process"] = ctypes.CDLL(None)
    return _state["process"]


def _import_symbols(objects: list, label: str) -> None:
    """Register every symbol ``objects`` leave undefined with LLVM; LinkError naming those nobody defines."""
    missing = []
    for name in undefined_symbols(objects):
        addr = resolve_symbol(name)
        if addr is None:
            missing.append(name)
        elif not llvm.address_of_symbol(name):
            llvm.add_symbol(name, addr)
    if missing:
        raise LinkError(f"{label}: the object code calls {', '.join(missing)}, which neither the Tessera "
                        f"runtime nor the process defines (a helper LLVM chose for an operation); "
                        f"nothing was loaded")


def load_objects(objects: list, symbols: list, label: str = "kernel", shared: bool = False) -> LoadedCode:
    """Load ``objects`` (object code bytes) into an engine of their own; the addresses of ``symbols``.

    Every symbol the objects leave undefined is resolved first; one that
    neither the runtime nor the process defines raises ``LinkError`` naming
    it, and nothing is loaded.  The engine, and the code, go with the last
    reference to the returned ``LoadedCode``.

    ``shared``: load into the one process-wide engine instead (each symbol
    once, kept for the process): graph libraries where no C linker exists
    (otherwise a shared object, :func:`open_library`).  Not an engine of
    their own: a library of many objects in one engine had its code and
    constants mapped far apart now and then (more than 2 GiB once the
    address space is fragmented), which a 32-bit PC-relative reference
    cannot reach (RuntimeDyldELF asserts ``isInt<32>(RealOffset)``).
    """
    runtime_engine()
    if shared:
        return _load_shared(objects, symbols, label)
    with _lock:
        _import_symbols(objects, label)
        engine = _new_engine(objects)
    addresses = {s: engine.get_function_address(s) for s in symbols}
    absent = [s for s, a in addresses.items() if not a]
    if absent:
        raise LinkError(f"{label}: the object code does not define {absent}")
    return LoadedCode(engine, addresses, label)


def _load_shared(objects: list, symbols: list, label: str) -> LoadedCode:
    with _lock:
        eng = engine()
        loaded = _state.setdefault("shared_symbols", {})
        new, seen = [], set()
        for obj, sym in zip(objects, symbols):
            if sym not in loaded and sym not in seen:
                seen.add(sym)
                new.append((obj, sym))
        if new:
            _import_symbols([o for o, _ in new], label)
            for obj, _ in new:
                eng.add_object_file(llvm.ObjectFileRef.from_data(obj))
            eng.finalize_object()
            for _, sym in new:
                loaded[sym] = eng.get_function_address(sym)
        absent = [s for s in symbols if not loaded.get(s)]
        if absent:
            raise LinkError(f"{label}: the object code does not define {absent}")
        return LoadedCode(eng, {s: loaded[s] for s in symbols}, label)


# ------------------------------------------------------ shared libraries --
IMPORT_TABLE = "tessera_import_table"
_libraries: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # path -> _Library


def _in_process(name: str) -> bool:
    return hasattr(_process(), name)


def library_imports(objects: list, label: str = "library") -> list:
    """The symbols ``objects`` call that a shared library of them cannot find through the dynamic
    loader: the runtime's (one thread pool per process) and those registered only with LLVM
    (packed-call trampolines).  One that nothing defines is a ``LinkError`` naming it."""
    runtime_engine()
    imports, missing = [], []
    for name in undefined_symbols(objects):
        if name in RUNTIME_SYMBOLS or (not _in_process(name) and llvm.address_of_symbol(name)):
            imports.append(name)
        elif not _in_process(name):
            missing.append(name)
    if missing:
        raise LinkError(f"{label}: the object code calls {', '.join(missing)}, which neither the Tessera "
                        f"runtime nor the process defines (a helper LLVM chose for an operation); "
                        f"nothing was loaded")
    return imports


def import_stub_ir(names: list) -> str:
    """IR (module asm) defining each of ``names`` as a hidden stub that jumps through slot k of
    ``tessera_import_table`` (filled by :func:`open_library` after ``dlopen``)::

        tessera_parallel_launch:  jmp *tessera_import_table+8*k(%rip)
    """
    lines = [".text"]
    for k, name in enumerate(names):
        if not name.replace("_", "a").isalnum():
            raise LinkError(f"import stub: symbol {name!r} is not a C identifier")
        lines += [f".globl {name}", f".hidden {name}", f".type {name},@function", f"{name}:",
                  f"jmpq *.Ltessera_imports+{8 * k}(%rip)", f".size {name}, .-{name}"]
    lines += [".data", ".balign 8", f".globl {IMPORT_TABLE}", f".type {IMPORT_TABLE},@object",
              f"{IMPORT_TABLE}:", ".Ltessera_imports:", *[".quad 0"] * max(len(names), 1),
              f".size {IMPORT_TABLE}, {8 * max(len(names), 1)}"]
    return "".join(f'module asm "{line}"\n' for line in lines)


class _Library:
    """A ``dlopen`` handle (RTLD_NOW | RTLD_LOCAL), ``dlclose``d when this object is collected."""

    def __init__(self, path: str):
        self.path = path
        self.handle = _ctypes.dlopen(path, os.RTLD_NOW | os.RTLD_LOCAL)
        fin = weakref.finalize(self, _ctypes.dlclose, self.handle)
        fin.atexit = False  # at exit the process unmaps everything anyway

    def symbol(self, name: str) -> int:
        return _ctypes.dlsym(self.handle, name)


def open_library(path: str, symbols: list, imports: list, label: str = "library") -> LoadedCode:
    """Open the shared library ``path`` (linked with :func:`import_stub_ir` of ``imports``), point its
    import table at the runtime, and return the addresses of ``symbols``.

    ``OSError`` if it cannot be mapped (a damaged file, a ``noexec`` file system), ``LinkError`` if
    it lacks one of ``symbols``.  The library is closed (``dlclose``) with the last reference to the
    returned ``LoadedCode``; the same path opened again while loaded shares the image.  No code of
    it runs then: the executor holds the library, and a parallel launch returns only after every
    worker has left the outlined body (the pool's threads live in the runtime, not the library).
    """
    runtime_engine()
    with _lock:
        lib = _libraries.get(path)
        if lib is None:
            try:
                lib = _Library(path)
            except OSError as err:
                raise OSError(f"{label}: cannot load {path}: {err}") from None
            if imports:
                table = (ctypes.c_void_p * len(imports)).from_address(lib.symbol(IMPORT_TABLE))
                for k, name in enumerate(imports):
                    table[k] = resolve_symbol(name)
            _libraries[path] = lib
    try:
        addresses = {s: lib.symbol(s) for s in symbols}
    except OSError as err:
        raise LinkError(f"{label}: the library does not define a symbol: {err}") from None
    return LoadedCode(lib, addresses, label)


def engine() -> llvm.ExecutionEngine:
    """An MCJIT engine for code added the old way (``add_object_file``): it finds the runtime
    through the process-wide symbols.  Prefer :func:`load_objects`, which releases the code."""
    with _lock:
        if "engine" not in _state:
            runtime_engine()
            _state["engine"] = _new_engine([])
        return _state["engine"]


__all__ = ["target_machine", "new_target_machine", "parse", "optimize", "runtime_engine", "load_objects",
           "library_imports", "import_stub_ir", "open_library",
           "LoadedCode", "LinkError", "runtime_object", "function_address", "engine", "triple", "data_layout"]
