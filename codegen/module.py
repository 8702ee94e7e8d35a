"""The runtime ``Module``: a compiled kernel called on numpy arrays.

Every argument is checked before memory is touched: count, type, dtype,
rank, shape (binding symbolic extents), C-contiguity, writability of
outputs, and that no output overlaps another argument.
"""

from __future__ import annotations

import ctypes
import json
import numbers
import statistics
import time
import weakref
from dataclasses import dataclass

import numpy as np


def calls_lasting(fn, raw: list, n: int, min_ms: float, clock=time.perf_counter) -> tuple[float, int]:
    """``(seconds per call, calls)``: ``n`` calls of ``fn(*raw)``, doubled (or scaled up)
    until they last ``min_ms`` milliseconds of ``clock`` (at most 2**24 calls)."""
    per_call, n, _ = timed_calls(fn, raw, n, min_ms, clock)
    return per_call, n


def timed_calls(fn, raw: list, n: int, min_ms: float, clock=time.perf_counter, stop_above: float | None = None,
                probe_ms: float = 0.0) -> tuple[float, int, bool]:
    """``(seconds per call, calls, stopped)``: :func:`calls_lasting`'s batches, except that with
    ``stop_above`` the first batch lasting ``probe_ms`` (or ``min_ms`` if shorter; batches scale up
    to it first) ends the timing when it averages above ``stop_above`` seconds (``stopped``)."""
    probe = stop_above is not None
    while True:
        t0 = clock()
        for _ in range(n):
            fn(*raw)
        elapsed = clock() - t0
        if probe and elapsed * 1e3 >= min(probe_ms, min_ms):
            if elapsed / n > stop_above:
                return elapsed / n, n, True
            probe = False
        if elapsed * 1e3 >= min_ms or n >= 1 << 24:
            return elapsed / n, n, False
        target = min(probe_ms, min_ms) if probe else min_ms
        n = max(n * 2, int(n * target / max(elapsed * 1e3, 1e-3)) + 1)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: a buffer (shape entries int | var name | None) or a scalar var."""

    kind: str  # "buffer" | "var"
    name: str
    dtype: str
    shape: tuple = ()
    is_output: bool = False

    def describe(self) -> str:
        if self.kind == "var":
            return f"a {'float' if self.dtype.startswith('float') else 'int'} ({self.dtype})"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"shape ({dims}{',' if len(self.shape) == 1 else ''}) {self.dtype}"


_CTYPE = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "bool": ctypes.c_bool,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}


_pointers: dict = {}


def data_pointer(a: np.ndarray) -> int:
    """The address of ``a``'s data, cached per array (``a.ctypes.data`` costs ~1.5 us)."""
    hit = _pointers.get(id(a))
    if hit is not None and hit[0]() is a:
        return hit[1]
    if len(_pointers) > 4096:
        _pointers.clear()
    ptr = a.ctypes.data
    _pointers[id(a)] = (weakref.ref(a), ptr)
    return ptr


def as_array(a):
    """A CPU array of another library as a numpy view of the same memory (no copy): anything
    speaking DLPack (``numpy.from_dlpack``: torch, jax, cupy on the host) or the buffer
    protocol; numpy arrays and everything else come back unchanged (the checks judge them)."""
    if type(a) is np.ndarray or isinstance(a, (numbers.Number, str, list, tuple)) or a is None:
        return a
    if hasattr(a, "__dlpack__"):
        try:
            return np.from_dlpack(a)
        except (BufferError, RuntimeError, TypeError, ValueError) as err:
            raise TypeError(f"cannot use a {type(a).__name__} as an array through DLPack: {err}") from None
    try:
        view = memoryview(a)
    except TypeError:
        return a
    return np.asarray(view)


class TimeResult:
    """``time_evaluator`` result: seconds per call, one entry per repeat."""

    def __init__(self, results: list[float]):
        self.results = results
        self.mean = sum(results) / len(results)
        self.median = statistics.median(results)
        self.min = min(results)
        self.max = max(results)
        self.std = statistics.pstdev(results) if len(results) > 1 else 0.0

    def __repr__(self) -> str:
        return f"TimeResult(mean={self.mean * 1e3:.4f} ms, median={self.median * 1e3:.4f} ms, repeats={len(self.results)})"


class Module:
    """A built function: ``f(a, b, c)`` runs it on numpy arrays (outputs in place)."""

    def __init__(self, name: str, symbol: str, params: list[ParamSpec], address: int,
                 ll: str = "", keepalive=None, compiled=None):
        self.entry_name = name
        self.symbol = symbol
        self.params = params
        self._ll = ll
        self._keepalive = keepalive  # the loaded code (codegen.jit.LoadedCode, a CDLL): freed with the Module
        self.compiled = compiled  # codegen.service.CompiledKernel (object code, target), None when loaded
        argtypes = [ctypes.c_void_p if p.kind == "buffer" else _CTYPE[p.dtype] for p in params]
        self._fn = ctypes.CFUNCTYPE(None, *argtypes)(address)
        if "tessera_packed_call" in ll:  # codegen.packed: raise what a packed call raised
            from codegen.packed import check_after_calls

            check_after_calls(self)
        self._outputs = [k for k, p in enumerate(params) if p.is_output]
        self._implicit = [p for p in params if p.kind == "implicit"]
        self._user = [p for p in params if p.kind != "implicit"]
        self._np_dtypes = [np.dtype(p.dtype) if p.kind == "buffer" else None for p in params]
        static = all(p.kind == "buffer" and all(isinstance(d, int) for d in p.shape) for p in params)
        self._static = (
            [(np.dtype(p.dtype), tuple(p.shape), p.is_output) for p in params] if static else None
        )

    # calling ---------------------------------------------------------------
    def __call__(self, *args) -> None:
        self._fn(*self._check(args))

    def _check(self, args) -> list:
        """Validate ``args`` and return the raw values to pass (fast path first)."""
        if self._static is not None and len(args) == len(self._static):
            out = []
            for a, (np_dtype, shape, writes) in zip(args, self._static):
                if (type(a) is not np.ndarray or a.shape != shape or a.dtype != np_dtype
                        or not a.flags.c_contiguous or (writes and not a.flags.writeable)):
                    return self._check_slow(args)
                out.append(data_pointer(a))
            for k in self._outputs:
                for j, other in enumerate(args):
                    if j != k and np.may_share_memory(args[k], other):
                        return self._check_slow(args)
            return out
        return self._check_slow(args)

    def _check_slow(self, args) -> list:
        name = self.entry_name
        args = [as_array(a) for a in args]  # torch/DLPack/buffer-protocol arrays: numpy views, no copy
        if len(args) != len(self._user):
            expected = ", ".join(p.name for p in self._user)
            raise TypeError(
                f"{name}: expects {len(self._user)} arguments ({expected}), got {len(args)}"
            )
        bound: dict = {}
        out = []
        exprs: list = []
        for k, (p, a) in enumerate(zip(self._user, args)):
            if p.kind == "var" and p.dtype.startswith("float"):  # te.var("bias", dtype="float32")
                if isinstance(a, bool) or not isinstance(a, numbers.Real):
                    raise TypeError(f"{name}: argument {k} '{p.name}' expects a float, got {a!r}")
                out.append(float(a))
                continue
            if p.kind == "var":
                if isinstance(a, bool) or not isinstance(a, numbers.Integral):
                    raise TypeError(f"{name}: argument {k} '{p.name}' expects an int, got {a!r}")
                a = int(a)
                self._bind(bound, p.name, a, k, p)
                out.append(a)
                continue
            if type(a) is not np.ndarray:
                raise TypeError(
                    f"{name}: argument {k} '{p.name}' expects a numpy.ndarray with {p.describe()}, "
                    f"got {type(a).__name__}"
                )
            if a.dtype != self._np_dtypes[k]:
                raise TypeError(
                    f"{name}: argument {k} '{p.name}' expects {p.describe()}, got "
                    f"{a.shape} {a.dtype}"
                )
            if a.ndim != len(p.shape):
                raise ValueError(
                    f"{name}: argument {k} '{p.name}' expects {p.describe()} (rank {len(p.shape)}), "
                    f"got {a.shape} {a.dtype} (rank {a.ndim})"
                )
            for d, (want, got) in enumerate(zip(p.shape, a.shape)):
                if isinstance(want, int):
                    if want != got:
                        raise ValueError(
                            f"{name}: argument {k} '{p.name}' expects {p.describe()}, got "
                            f"{a.shape} {a.dtype} (dimension {d} differs)"
                        )
                elif isinstance(want, str) and want.isidentifier():
                    self._bind(bound, want, got, k, p)
                elif isinstance(want, str):  # a shape expression such as (8 * m): te.shape solves it
                    exprs.append((want, got, f"{name}: argument {k} '{p.name}' of shape {a.shape}"))
            if not a.flags.c_contiguous:
                raise ValueError(
                    f"{name}: argument {k} '{p.name}' must be C-contiguous; pass np.ascontiguousarray(...)"
                )
            if p.is_output and not a.flags.writeable:
                raise ValueError(f"{name}: argument {k} '{p.name}' is an output but the array is read-only")
            out.append(data_pointer(a))
        for k in self._outputs:
            for j, other in enumerate(args):
                if j != k and self.params[j].kind == "buffer" and np.may_share_memory(args[k], other):
                    raise ValueError(
                        f"{name}: output argument {k} '{self.params[k].name}' overlaps argument "
                        f"{j} '{self.params[j].name}'; pass separate arrays"
                    )
        if exprs:
            from te.shape import bind_shape

            bind_shape(exprs, bound)
        for p in self._implicit:
            out.append(bound[p.name])
        return out

    def _bind(self, bound: dict, var: str, value: int, k: int, p: ParamSpec) -> None:
        old = bound.setdefault(var, value)
        if old != value:
            raise ValueError(
                f"{self.entry_name}: argument {k} '{p.name}' gives {var} = {value}, but an "
                f"earlier argument gave {var} = {old}"
            )
        if value < 0:
            raise ValueError(f"{self.entry_name}: {var} must be non-negative, got {value}")

    # timing ----------------------------------------------------------------
    def time_evaluator(self, func_name: str | None = None, dev=None, number: int = 10,
                       repeat: int = 3, min_repeat_ms: float = 0):
        """A function that times ``number`` calls, ``repeat`` times; seconds per call."""
        if isinstance(func_name, int):  # time_evaluator(10, 3): positional number, repeat
            number, repeat = func_name, dev if isinstance(dev, int) else repeat
        if number <= 0 or repeat <= 0:
            raise ValueError(f"time_evaluator: number and repeat must be > 0, got {number}, {repeat}")

        def run(*args) -> TimeResult:
            raw = self._check(args)
            self._fn(*raw)
            n = number
            results = []
            for _ in range(repeat):
                per_call, n = calls_lasting(self._fn, raw, n, min_repeat_ms)
                results.append(per_call)
            return TimeResult(results)

        return run

    # source and export -----------------------------------------------------
    def get_source(self, fmt: str = "ll") -> str:
        """``"ll"``: the optimised LLVM IR; ``"asm"``: the host assembly."""
        if fmt in ("ll", "llvm"):
            if not self._ll:
                raise ValueError(f"{self.entry_name}: a loaded library carries no LLVM IR")
            return self._ll
        if fmt in ("asm", "s"):
            if self.compiled is None:
                raise ValueError(f"{self.entry_name}: a loaded library carries no LLVM IR")
            return self.compiled.assembly()
        raise ValueError(f"get_source: unknown format {fmt!r}; use 'll' or 'asm'")

    @property
    def target(self) -> str:
        """The text of the target the kernel was built for (``str(codegen.target.Target)``)."""
        return self.compiled.target if self.compiled is not None else ""

    def export_library(self, path: str, target=None) -> None:
        """Write a shared library that ``codegen.load_module(path)`` loads.

        ``target`` (default: the one it was built for) is the CPU the library's
        code is assembled for, e.g. ``"llvm -mcpu=x86-64-v3"``.
        """
        if self.compiled is None:
            raise ValueError(f"export_library: '{self.entry_name}' was loaded from a library and has no "
                             f"code to export; export the module it was built as")
        self.compiled.export_library(path, self.meta(), target)

    def meta(self) -> str:
        return json.dumps({
            "name": self.entry_name,
            "symbol": self.symbol,
            "params": [
                {"kind": p.kind, "name": p.name, "dtype": p.dtype, "shape": list(p.shape), "is_output": p.is_output}
                for p in self.params
            ],
        })

    def __getitem__(self, name: str) -> "Module":
        if name != self.entry_name:
            raise KeyError(f"module has one function, '{self.entry_name}', not '{name}'")
        return self

    def __repr__(self) -> str:
        return f"Module({self.entry_name}({', '.join(p.name for p in self.params)}))"
