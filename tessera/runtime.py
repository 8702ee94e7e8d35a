"""``tvm.runtime``: a built function as classic TVM's ``runtime.Module``.

``Module`` wraps ``codegen.Module``: it also takes NDArrays (their numpy
arrays are passed, no copy), and it has TVM's ``time_evaluator(entry_name,
dev, number=, repeat=, min_repeat_ms=)``, ``save`` and ``imported_modules``.
"""

from __future__ import annotations

import codegen
from codegen import export as _export
from codegen.ndarray import NDArray, as_numpy, cpu, device


class Module:
    """A built (or loaded) function: ``f(a, b, c)`` on NDArrays or numpy arrays."""

    def __init__(self, mod: codegen.Module):
        self.module = mod

    @property
    def entry_name(self) -> str:
        return self.module.entry_name

    @property
    def imported_modules(self) -> list:
        return []  # CPU code only: no device modules

    @property
    def type_key(self) -> str:
        return "llvm"

    def __call__(self, *args) -> None:
        self.module(*[as_numpy(a) for a in args])

    def time_evaluator(
        self,
        func_name: str | None = None,
        dev=None,
        number: int = 10,
        repeat: int = 1,
        min_repeat_ms: float = 0,
        **_ignored,
    ):
        """A function timing ``number`` calls ``repeat`` times: ``.mean``, ``.results`` in seconds."""
        if func_name is not None and func_name != self.entry_name:
            raise ValueError(
                f"time_evaluator: the module's function is '{self.entry_name}', not '{func_name}'"
            )
        run = self.module.time_evaluator(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
        return lambda *args: run(*[as_numpy(a) for a in args])

    def get_function(self, name: str, query_imports: bool = False) -> Module:
        if name != self.entry_name:
            raise AttributeError(f"module has one function, '{self.entry_name}', not '{name}'")
        return self

    __getitem__ = get_function

    def get_source(self, fmt: str = "") -> str:
        return self.module.get_source(fmt or "ll")

    def save(self, path: str, fmt: str = "") -> None:
        """Object code (``.o``, for ``contrib.cc.create_shared``), or LLVM IR (``.ll``), or assembly (``.s``)."""
        kind = fmt or str(path).rsplit(".", 1)[-1]
        if kind in ("ll", "s", "asm"):
            with open(path, "w") as fh:
                fh.write(self.module.get_source("ll" if kind == "ll" else "asm"))
            return
        _export.save_object(self.module, path)

    def export_library(self, path: str, fcompile=None, **_options) -> None:
        self.module.export_library(str(path))

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"Module(llvm, {self.entry_name})"


class String(str):
    """``tvm.runtime.String``: a Python string with classic ``.value``."""

    @property
    def value(self) -> str:
        return str(self)


def convert(value):
    """Python values as classic TVM objects (``tvm.runtime.convert``): an int becomes an integer
    constant (int64 when it does not fit int32), a float a float32 constant, a bool a boolean one,
    a string a :class:`String`, and lists, tuples and dicts their elements converted."""
    import te

    if isinstance(value, te.expr.Expr) or isinstance(value, te.Tensor):
        return value
    if isinstance(value, bool):
        return te.const(value, "bool")
    if isinstance(value, int):
        return te.const(value, "int32" if -(2**31) <= value < 2**31 else "int64")
    if isinstance(value, float):
        return te.const(value, "float32")
    if isinstance(value, str):
        return String(value)
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if isinstance(value, dict):
        return {k: convert(v) for k, v in value.items()}
    raise TypeError(f"runtime.convert: cannot convert {type(value).__name__} {value!r} to a TVM object")


def load_module(path: str, fmt: str = "") -> Module:
    """Load a library written by ``export_library`` or linked by ``contrib.cc.create_shared``."""
    return Module(codegen.load_module(str(path)))


__all__ = ["Module", "NDArray", "String", "convert", "cpu", "device", "load_module"]
