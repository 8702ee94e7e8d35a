"""Packed functions: a registry of named callables that kernels call back.

``register_func("name")`` registers a Python callable (or a built Module);
``tir.call_packed("name", ...)`` inside ``te.extern`` calls it at run time.
The kernel reaches Python through one C-ABI trampoline (a ``ctypes``
``CFUNCTYPE``), known to the JIT as the external symbol
``tessera_packed_call``::

    int32 tessera_packed_call(i8* name, i32 nargs, i64* values, i32* codes)

Each value is an i64 slot: an int (code 0), a double's bits (code 2), or
the address of an array descriptor (code 7): ``[data, ndim, dtype, shape...]``
of i64.  The trampoline wraps each array's memory in a numpy-backed
``NDArray`` (no copy), looks the function up and calls it.  An exception is
kept, the trampoline returns -1 and the kernel returns at once; the Module
raises it after the call as ``PackedFuncError`` naming the function.
"""

from __future__ import annotations

import ctypes
import math
import struct
import threading

import numpy as np
from llvmlite import ir

from codegen.ndarray import NDArray, as_numpy
from te import dtype as dt
from te import expr as E

SYMBOL = "tessera_packed_call"
DTYPES = (
    "float32",
    "float64",
    "float16",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
)
INT, FLOAT, ARRAY = 0, 2, 7  # TVM's type codes: kDLInt, kDLFloat, kTVMDLTensorHandle

_registry: dict = {}
_errors: list = []
_symbol_added: list = []
_lock = threading.Lock()


class PackedFuncError(RuntimeError):
    """A packed function called by a kernel failed (its exception is the ``__cause__``)."""


# the registry -------------------------------------------------------------------
def register_func(func_name, f=None, override: bool = False):
    """Register ``f`` under ``func_name``; usable as ``@register_func("name")`` (classic TVM)."""
    if callable(func_name) and f is None:
        f, func_name = func_name, func_name.__name__
    if not isinstance(func_name, str):
        raise TypeError(f"register_func: the name must be a string, got {func_name!r}")

    def register(fn):
        if not callable(fn):
            raise TypeError(f"register_func('{func_name}'): {fn!r} is not callable")
        with _lock:
            if func_name in _registry and not override:
                raise ValueError(
                    f"register_func: '{func_name}' is already registered; pass override=True to replace it"
                )
            _registry[func_name] = fn
        return fn

    return register(f) if f is not None else register


def get_global_func(name: str, allow_missing: bool = False):
    """The function registered as ``name``; ``None`` if missing and ``allow_missing``."""
    fn = _registry.get(name)
    if fn is None:
        if allow_missing:
            return None
        raise ValueError(
            f"get_global_func: no function is registered as '{name}'; register one with "
            f"@register_func('{name}') (known: {sorted(_registry)})"
        )
    return lambda *args: _invoke(fn, args)


def list_global_func_names() -> list:
    return sorted(_registry)


def _invoke(fn, args):
    if hasattr(fn, "entry_name") and hasattr(fn, "params"):  # a built codegen.Module: numpy arrays
        return fn(*[as_numpy(a) for a in args])
    return fn(*args)


# the trampoline -------------------------------------------------------------------
def _array_arg(addr: int) -> NDArray:
    head = (ctypes.c_int64 * 3).from_address(addr)
    data, ndim, code = head[0], head[1], head[2]
    shape = tuple((ctypes.c_int64 * ndim).from_address(addr + 24)) if ndim else ()
    dtype = np.dtype(DTYPES[code])
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes == 0:
        return NDArray(np.empty(shape, dtype))
    raw = (ctypes.c_char * nbytes).from_address(data)
    return NDArray(np.frombuffer(raw, dtype=dtype).reshape(shape))


def _trampoline(name_ptr, nargs, values, codes) -> int:
    name = ctypes.string_at(name_ptr).decode()
    try:
        fn = _registry.get(name)
        if fn is None:
            raise LookupError(
                f"packed function '{name}' is not registered; register it with "
                f"@tvm.register_func('{name}') before calling the kernel"
            )
        args = []
        for k in range(nargs):
            code, v = codes[k], values[k]
            if code == ARRAY:
                args.append(_array_arg(v))
            elif code == FLOAT:
                args.append(struct.unpack("<d", struct.pack("<q", v))[0])
            else:
                args.append(int(v))
        _invoke(fn, args)
    except BaseException as err:  # noqa: BLE001 (reported to the caller by the Module)
        with _lock:
            _errors.append((name, err))
        return -1
    return 0


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_int32,
    ctypes.POINTER(ctypes.c_int64),
    ctypes.POINTER(ctypes.c_int32),
)(_trampoline)


def ensure_symbol() -> None:
    """Tell the JIT where ``tessera_packed_call`` is (once per process)."""
    if not _symbol_added:
        import llvmlite.binding as llvm

        llvm.add_symbol(SYMBOL, ctypes.cast(_CALLBACK, ctypes.c_void_p).value)
        _symbol_added.append(True)


def raise_pending(kernel: str) -> None:
    """Raise the first error a packed call recorded during ``kernel``'s last call."""
    with _lock:
        pending = list(_errors)
        _errors.clear()
    if pending:
        name, err = pending[0]
        raise PackedFuncError(
            f"{kernel}: packed function '{name}' raised {type(err).__name__}: {err}"
        ) from err


def check_after_calls(module) -> None:
    """Make ``module`` raise, after each call, what its packed calls raised."""
    raw = module._fn
    name = module.entry_name

    def call(*args):
        raw(*args)
        if _errors:
            raise_pending(name)

    module._fn = call


# codegen ----------------------------------------------------------------------------
I32, I64 = ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType(ir.IntType(8))


def emit_call_packed(gen, e: E.Call) -> ir.Value:
    """``tvm_call_packed(name, args...)``: fill the slots, call the trampoline, return on error."""
    ensure_symbol()
    b = gen.b
    name, args = e.args[0].value, e.args[1:]
    entry = ir.IRBuilder(gen.cur.entry)
    values = entry.alloca(ir.ArrayType(I64, max(len(args), 1)), name="packed_values")
    codes = entry.alloca(ir.ArrayType(I32, max(len(args), 1)), name="packed_codes")
    for k, a in enumerate(args):
        code, slot = _slot(gen, entry, a, name, k)
        b.store(slot, b.gep(values, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
        b.store(
            ir.Constant(I32, code), b.gep(codes, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True)
        )
    fn = gen.declare(SYMBOL, I32, [PTR, I32, PTR, PTR])
    ret = b.call(
        fn,
        [
            _name_constant(gen, name),
            ir.Constant(I32, len(args)),
            b.bitcast(values, PTR),
            b.bitcast(codes, PTR),
        ],
    )
    if isinstance(gen.cur.fn.function_type.return_type, ir.VoidType):
        failed = b.icmp_signed("!=", ret, ir.Constant(I32, 0))
        with b.if_then(failed, likely=False):
            b.ret_void()
    return ret


def _slot(gen, entry, a: E.Expr, name: str, k: int):
    b = gen.b
    if isinstance(a, E.Call) and a.name == "tvm_stack_make_array":
        return ARRAY, _array_descriptor(gen, entry, a)
    base = dt.element(a.dtype)
    v = gen.expr(a)
    if dt.is_float(base):
        if base != "float64":
            v = b.fpext(v, ir.DoubleType())
        return FLOAT, b.bitcast(v, I64)
    if base == "bool":
        return INT, b.zext(v, I64)
    if dt.is_int(base):
        return INT, v if v.type == I64 else (b.zext(v, I64) if dt.is_unsigned(base) else b.sext(v, I64))
    raise TypeError(f"call_packed('{name}'): argument {k} has dtype {a.dtype}, which cannot be passed")


def _array_descriptor(gen, entry, a: E.Call) -> ir.Value:
    b = gen.b
    first, shape = a.args[0], a.args[1:]
    if not isinstance(first, E.Load):
        raise TypeError(f"call_packed: an array argument must start at a buffer element, got {first}")
    desc = entry.alloca(ir.ArrayType(I64, 3 + len(shape)), name="packed_array")
    itemsize = max(1, dt.bits(dt.element(first.buffer.dtype)) // 8)  # bool: one byte, as numpy
    offset = b.mul(gen.as_i64(gen.expr(first.index)), ir.Constant(I64, itemsize))
    ptr = b.gep(b.bitcast(gen.cur.symbols[first.buffer], PTR), [offset], inbounds=True)
    fields = [
        b.ptrtoint(ptr, I64),
        ir.Constant(I64, len(shape)),
        ir.Constant(I64, DTYPES.index(dt.element(first.buffer.dtype))),
    ]
    fields += [gen.as_i64(gen.expr(d)) for d in shape]
    for k, v in enumerate(fields):
        b.store(v, b.gep(desc, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True))
    return b.ptrtoint(desc, I64)


def emit_call_extern(gen, e: E.Call) -> ir.Value:
    """``call_pure_extern:f(args)``: a call of the C function ``f`` the process defines (libm),
    once per lane for a vector; the symbol is resolved when the kernel is loaded."""
    b, name = gen.b, e.name.split(":", 1)[1]
    _check_defined(name)
    args = [gen.expr(a) for a in e.args]
    lanes = dt.lanes(e.dtype)
    ret = gen.type_of(dt.element(e.dtype))
    scalar = [a.type.element if isinstance(a.type, ir.VectorType) else a.type for a in args]
    fn = gen.declare(name, ret, scalar)
    if lanes == 1:
        return b.call(fn, args)
    out = ir.Constant(ir.VectorType(ret, lanes), ir.Undefined)
    for k in range(lanes):
        lane = ir.Constant(I32, k)
        vals = [b.extract_element(a, lane) if isinstance(a.type, ir.VectorType) else a for a in args]
        out = b.insert_element(out, b.call(fn, vals), lane)
    return out


def _check_defined(name: str) -> None:
    """A C function the process defines (libm, libc, a loaded library), else a clear error now."""
    import llvmlite.binding as llvm

    if not (hasattr(ctypes.CDLL(None), name) or llvm.address_of_symbol(name)):
        raise ValueError(
            f"call_pure_extern: no C function '{name}' is defined in this process (libm's expf, "
            f"pow, ... are); on the CPU the name must be a C symbol (CUDA's __expf is not)"
        )


def _name_constant(gen, name: str) -> ir.Value:
    data = bytearray(name.encode() + b"\0")
    ty = ir.ArrayType(ir.IntType(8), len(data))
    g = ir.GlobalVariable(gen.module, ty, name=f"packed_name_{next(gen.counter)}")
    g.global_constant = True
    g.linkage = "private"
    g.initializer = ir.Constant(ty, data)
    return gen.b.bitcast(g, PTR)


__all__ = [
    "SYMBOL",
    "PackedFuncError",
    "check_after_calls",
    "emit_call_packed",
    "get_global_func",
    "list_global_func_names",
    "register_func",
]
