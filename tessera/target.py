"""``tvm.target.Target`` over ``codegen.target.Target`` (CPU targets only)."""

from __future__ import annotations

from codegen import target as _core
from codegen.target import TargetKind, create

GPU_KINDS = (
    "cuda",
    "opencl",
    "rocm",
    "vulkan",
    "metal",
    "nvptx",
    "webgpu",
    "hexagon",
    "sdaccel",
    "aocl",
    "intel_graphics",
    "mali",
    "vpi",
)


def check_cpu_target(target, where: str) -> None:
    """Refuse a GPU target by name: this build compiles for the CPU only."""
    spec = target if isinstance(target, str) else getattr(target, "spec", str(target))
    kind = str(spec).split()[0] if str(spec).split() else ""
    if kind in GPU_KINDS:
        raise ValueError(
            f"{where}: target '{spec}' needs a {kind} code generator, which Tessera does not have "
            f"(it compiles for the CPU through LLVM; a GPU backend is later work). "
            f"Build with target='llvm'."
        )


class Target(_core.Target):
    """``Target("llvm")``, ``Target(target="llvm", host="llvm")``, ``Target("llvm -mcpu=skylake")``."""

    def __init__(self, target="llvm", host=None):
        check_cpu_target(target, "Target")
        if isinstance(target, dict):
            target = target.get("kind", "llvm")
        super().__init__(target, host)

    @staticmethod
    def current(allow_none: bool = False):
        return _core.Target.current(allow_none)


__all__ = ["GPU_KINDS", "Target", "TargetKind", "check_cpu_target", "create"]
