"""The compile service: the one path from a lowered function to running code.

::

    lowered function --emit_llvm--> LLVM IR --optimize--> object code (for a Target)
        --load--> LoadedCode (symbol addresses; unloaded with its last reference)
    object codes + runtime --link_shared_library--> one .so (cc)
    object codes + import stubs --load_library--> one .so, dlopen'ed (dlclose with its last reference)

``codegen.build``, the graph layer's kernel compiler (``graph.compile``), both
exporters (``Module.export_library``, ``GraphLibrary.export_library``) and the
tuner's builders call these functions; nothing else drives LLVM.

Each step runs for a ``codegen.target.Target``: the IR is optimised and
assembled by that target's machine (CPU name plus full feature string), and
the target is entered (``with target:``) around scheduling and lowering, so
schedules reading ``Target.current()`` see it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import uuid
import warnings
from dataclasses import dataclass

import llvmlite.binding as llvm

from te import expr as E
from schedule import stmt as S
from codegen import jit
from codegen.jit import LinkError, LoadedCode
from codegen.module import ParamSpec
from codegen.target import Target, create


@dataclass(frozen=True)
class CompiledKernel:
    """One kernel as object code: what a worker process hands back, what a cache stores."""

    name: str  # the entry name (``Module.entry_name``)
    symbol: str  # the exported symbol (name + digest of its IR: unique per kernel)
    params: tuple  # ParamSpec per argument
    obj: bytes
    ll: str  # the optimised LLVM IR
    target: str  # str(Target)

    def assembly(self, target=None) -> str:
        """The assembly of the kernel for ``target`` (default: its own)."""
        return assembly(self.ll, target or self.target)

    def object_for(self, target=None) -> bytes:
        """The object code for ``target``: the built one, or the IR assembled anew for another CPU."""
        t = create(target or self.target)
        return self.obj if str(t) == self.target else jit.target_machine(t).emit_object(jit.parse(self.ll, t))

    def library_object(self, meta: str, target=None, what: str = "export_library") -> bytes:
        """One object file: the kernel, the runtime and ``meta`` (``tessera_meta_ptr``)."""
        _refuse_packed_calls(self, what)
        t = create(target or self.target)
        context = llvm.create_context()
        linked = jit.parse(self.ll, t, context)
        linked.link_in(jit.parse(runtime_ir(t), t, context))
        linked.link_in(jit.parse(string_constant_ir("tessera_meta_ptr", meta), t, context))
        linked.verify()
        return jit.target_machine(t).emit_object(linked)

    def export_library(self, path: str, meta: str, target=None) -> None:
        """A shared library of the kernel, the runtime and ``meta`` for ``target``."""
        _refuse_packed_calls(self, "export_library")
        t = create(target or self.target)
        objects = [self.object_for(t), runtime_object(t), data_object(string_constant_ir("tessera_meta_ptr", meta), t)]
        link_shared_library(path, objects, label=f"export_library({self.name})")


def _refuse_packed_calls(kernel: CompiledKernel, what: str) -> None:
    if "tessera_packed_call" in kernel.ll:
        raise ValueError(f"{what}: '{kernel.name}' calls packed functions (te.extern), which live in this "
                         f"Python process; such a kernel cannot be saved to a library")


def runtime_ir(target=None) -> str:
    """The runtime's LLVM IR text for ``target``."""
    from codegen.runtime import runtime_llvm_ir

    return runtime_llvm_ir(jit.triple(), jit.data_layout(target))


def check_target(target) -> Target:
    """``target`` (a string, a Target, or None for the current one) as a Target; ValueError if unsupported."""
    return create(target)


def c_name(name: str) -> str:
    """``name`` as a C identifier."""
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "kernel"


def param_specs(lowered) -> list:
    """The ``ParamSpec`` of each parameter of a lowered function (outputs: buffers it stores to)."""
    written: set = set()

    def grab(s):
        if isinstance(s, S.Store):
            written.add(s.buffer)

    S.walk_stmt(lowered.body, grab)
    specs = []
    n_user = len(lowered.args)
    for k, p in enumerate(lowered.params):
        if k >= n_user:
            specs.append(ParamSpec("implicit", p.name, p.dtype))
        elif isinstance(p, E.Buffer):
            shape = tuple(_shape_entry(d) for d in p.shape)
            specs.append(ParamSpec("buffer", p.name, p.dtype, shape, p in written))
        else:
            specs.append(ParamSpec("var", p.name, p.dtype))
    return specs


def _shape_entry(d):
    if isinstance(d, E.IntImm):
        return d.value
    if isinstance(d, E.Var):
        return d.name
    from te.shape import shape_text  # (8 * m): solved from the array's shape at call time

    return shape_text(d)


def emit_llvm(lowered, symbol: str | None = None) -> tuple:
    """(IR text, symbol): the lowered function as LLVM IR, its entry named ``symbol``
    (default: its name and a digest of the IR, so distinct kernels never clash)."""
    from codegen.llvm_ir import CodeGen

    gen = CodeGen(lowered.name)
    fn = gen.add_function(lowered)
    raw = str(gen.module)
    if symbol is None:
        symbol = f"{c_name(lowered.name)}_{hashlib.sha1(raw.encode()).hexdigest()[:16]}"
    return raw.replace(f'@"{fn.name}"(', f'@"{symbol}"('), symbol


def compile_ir(ir_text: str, target=None, keep_ll: bool = True) -> tuple:
    """(optimised IR text, object code) of LLVM IR text for ``target``; the text is ""
    unless ``keep_ll`` (printing a large kernel's IR costs as much as a pass)."""
    t = create(target)
    mod = jit.parse(ir_text, t)
    jit.optimize(mod, t)
    return str(mod) if keep_ll else "", jit.target_machine(t).emit_object(mod)


def compile_lowered(lowered, target=None, symbol: str | None = None, keep_ll: bool = True) -> CompiledKernel:
    """A lowered function as object code for ``target`` (IR -> O3 -> object); ``keep_ll``: keep the
    optimised IR text (``get_source``, exporting for another target)."""
    t = create(target)
    raw, symbol = emit_llvm(lowered, symbol)
    ll, obj = compile_ir(raw, t, keep_ll)
    return CompiledKernel(lowered.name, symbol, tuple(param_specs(lowered)), obj, ll, str(t))


def lower_for_build(sch, args, name: str, timings: dict | None = None):
    """The nest every build compiles: ``schedule.lower`` with loops to unroll left as loops that
    LLVM unrolls (``llvm.loop.unroll.full``), not copied in Python as a printed nest shows them;
    copying first makes every later pass and the IR emission scale with the unrolled size.
    Call it inside ``with target:``."""
    from schedule.lower import lower

    return lower(sch, args, name=name, timings=timings, unroll_in_codegen=True)


def compile_schedule(sch, args, name: str = "default_function", target=None,
                     symbol: str | None = None, keep_ll: bool = True) -> CompiledKernel:
    """Lower ``sch`` over ``args`` inside ``with target:`` and compile it."""
    t = create(target)
    with t:
        return compile_lowered(lower_for_build(sch, args, name), t, symbol, keep_ll)


def load(kernels: list, label: str | None = None) -> LoadedCode:
    """Link the kernels' object code into the process JIT as one library.

    The code stays loaded while the returned ``LoadedCode`` is referenced; a
    symbol that nothing defines raises ``LinkError`` naming it.
    """
    label = label or ", ".join(k.name for k in kernels[:3])
    return jit.load_objects([k.obj for k in kernels], [k.symbol for k in kernels], label)


def load_objects(objects: list, symbols: list, label: str = "library", shared: bool = False) -> LoadedCode:
    """Load object codes (bytes) as one library; ``LoadedCode.address(symbol)`` for each of ``symbols``
    (``shared``: into the process-wide engine, kept for the process; see ``jit.load_objects``)."""
    return jit.load_objects(objects, symbols, label, shared)


_stubs: dict = {}  # import names -> object code of their stubs


def cache_root() -> str:
    """Where Tessera keeps what it compiled and measured: ``$TESSERA_CACHE_DIR``, default
    ``~/.cache/tessera`` (the kernel cache)."""
    return os.environ.get("TESSERA_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "tessera")


def load_library(objects: list, symbols: list, label: str = "library", cache_dir: str | None = None) -> LoadedCode:
    """Link object codes into one shared object, ``dlopen`` it and return the addresses of ``symbols``;
    ``dlclose`` with the last reference to the returned ``LoadedCode``.

    The runtime (thread pool, half-precision helpers) is not linked in: the
    library reaches the process's one copy through import stubs
    (``jit.import_stub_ir``).  ``cache_dir``: keep the linked library there,
    named by a digest of its object codes, so a later load only opens it
    (``benchmarks/graph_models.py`` prints cold and cached build times).  Without a
    linker the objects go into the process-wide engine instead, kept for the
    process (``jit.load_objects(shared=True)``).
    """
    if not has_linker():
        return jit.load_objects(objects, symbols, label, shared=True)
    imports = tuple(jit.library_imports(objects, label))
    linked = list(objects)
    if imports:
        if imports not in _stubs:
            _stubs[imports] = data_object(jit.import_stub_ir(list(imports)))
        linked.append(_stubs[imports])
    h = hashlib.sha1()
    for obj in linked:
        h.update(len(obj).to_bytes(8, "little") + obj)
    name = f"lib-{h.hexdigest()[:24]}.so"
    for directory in ([cache_dir] if cache_dir else []) + [None]:
        loaded = _open_linked(linked, name, directory, symbols, list(imports), label)
        if loaded is not None:
            return loaded
    warnings.warn(f"{label}: a linked library could not be mapped (a noexec file system?); loading into the "
                  f"process-wide engine instead (kept for the process)", RuntimeWarning, stacklevel=2)
    return jit.load_objects(objects, symbols, label, shared=True)


def _open_linked(linked: list, name: str, directory: str | None, symbols: list, imports: list,
                 label: str) -> LoadedCode | None:
    """The library ``name`` of the objects ``linked``, opened from ``directory`` (linked there unless
    it is; None: a temporary directory); None where it cannot be linked there or mapped."""
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="tessera-") as tmp:
            path = os.path.join(tmp, f"{uuid.uuid4().hex}-{name}")  # a name never used: dlopen matches by name
            link_shared_library(path, linked, label=label, direct=True)
            return _try_open(path, symbols, imports, label)
    path = os.path.join(directory, name)
    if os.path.exists(path):
        loaded = _try_open(path, symbols, imports, label)
        if loaded is not None:
            return loaded  # else a damaged file: link it anew
    if not os.access(directory, os.W_OK | os.X_OK):
        return None
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    link_shared_library(tmp, linked, label=label, direct=True)
    os.replace(tmp, path)
    return _try_open(path, symbols, imports, label)


def _try_open(path: str, symbols: list, imports: list, label: str) -> LoadedCode | None:
    try:
        return jit.open_library(path, symbols, imports, label)
    except OSError:
        return None


def module(kernel: CompiledKernel, loaded: LoadedCode | None = None):
    """The callable ``codegen.Module`` of a compiled kernel (loading it unless ``loaded`` has it)."""
    from codegen.module import Module

    loaded = loaded or load([kernel])
    return Module(kernel.name, kernel.symbol, list(kernel.params), loaded.address(kernel.symbol),
                  ll=kernel.ll, keepalive=loaded, compiled=kernel)


def assembly(ll: str, target=None) -> str:
    """The target's assembly of optimised IR text."""
    return jit.target_machine(target).emit_assembly(jit.parse(ll, target))


def runtime_object(target=None) -> bytes:
    """The thread-pool runtime as object code for ``target`` (every library links it once)."""
    return jit.runtime_object(create(target))


def data_object(globals_ir: str, target=None) -> bytes:
    """Object code of a module holding only data (IR text of constants: metadata, plans)."""
    return jit.target_machine(target).emit_object(jit.parse(globals_ir, target))


def string_constant_ir(symbol: str, text: str) -> str:
    """IR for ``const char *symbol`` pointing at ``text`` (NUL-terminated)."""
    data = text.encode() + b"\0"
    body = "".join(f"\\{b:02X}" for b in data)
    return (f'@{symbol}_data = constant [{len(data)} x i8] c"{body}"\n'
            f'@{symbol} = constant ptr @{symbol}_data\n')


def c_compiler(cc: str | None = None) -> str:
    """The C compiler that links libraries: ``cc``, else ``$CC``, ``cc``, ``gcc``, ``clang``."""
    cc = shutil.which(cc or os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("export_library: no C compiler/linker (cc, gcc or clang) found to link the library")
    return cc


def has_linker() -> bool:
    """Whether a linker (``ld``, or a C compiler driving one) is there to link shared libraries."""
    if shutil.which("ld"):
        return True
    try:
        c_compiler()
    except RuntimeError:
        return False
    return True


def link_shared_library(path: str, objects: list, sources: list = (), label: str = "export_library",
                        options: list = (), cc: str | None = None, direct: bool = False) -> None:
    """Link object codes (bytes) and files (objects, assembly) into the shared library ``path``.

    A symbol the object codes call that neither they nor the system
    libraries define is an error here, naming it, not when the library loads.
    ``direct``: object codes only, linked by ``ld`` itself where there is one
    (several times faster than through the ``cc`` driver).
    """
    missing = [s for s in undefined_symbols(objects) if not _in_system_libraries(s)]
    if missing:
        raise LinkError(f"{label}: the object code calls {', '.join(missing)}, which no library defines")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for k, obj in enumerate(objects):
            files.append(os.path.join(tmp, f"o{k}.o"))
            with open(files[-1], "wb") as fh:
                fh.write(obj)
        ld = shutil.which("ld") if direct and not sources and cc is None else None
        cmd = [ld or c_compiler(cc), "-shared", "-o", os.path.abspath(path), *sources, *files, *options, "-lm",
               "-lpthread"]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"{label}: linking {path} failed:\n{res.stderr}")


def undefined_symbols(objects: list) -> list:
    return jit.undefined_symbols(objects)


def _in_system_libraries(name: str) -> bool:
    return jit.resolve_symbol(name) is not None and name not in jit.RUNTIME_SYMBOLS


__all__ = ["CompiledKernel", "LoadedCode", "LinkError", "check_target", "c_name", "param_specs", "emit_llvm",
           "compile_ir", "compile_lowered", "compile_schedule", "load", "load_objects", "load_library", "module", "assembly", "runtime_object",
           "data_object", "runtime_ir", "string_constant_ir", "link_shared_library", "undefined_symbols"]
