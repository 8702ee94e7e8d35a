"""codegen: the loop AST to native code through LLVM (llvmlite), and the runtime Module."""

from codegen.build import build, build_lowered
from codegen.export import load_module
from codegen.module import Module, TimeResult


def set_num_threads(n: int) -> None:
    """Threads used by ``parallel`` loops (0 or less: all CPUs of the process)."""
    import ctypes

    from codegen import jit

    fn = ctypes.CFUNCTYPE(None, ctypes.c_int32)(jit.function_address("tessera_set_num_threads"))
    fn(int(n))


def get_num_threads() -> int:
    import ctypes

    from codegen import jit

    fn = ctypes.CFUNCTYPE(ctypes.c_int32)(jit.function_address("tessera_get_num_threads"))
    return int(fn())


__all__ = ["build", "build_lowered", "load_module", "Module", "TimeResult", "set_num_threads", "get_num_threads"]
