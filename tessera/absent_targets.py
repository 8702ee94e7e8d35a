"""Classic TVM's namespaces for targets Tessera does not compile for (CUDA, ROCm, ARM ...).

Tessera builds for the host CPU through LLVM only.  Classic TVM code names the
schedules of other targets next to the CPU ones (a test's ``{"cpu": (topi.x86.dense_nopack,
...), "gpu": (topi.cuda.dense_small_batch, ...)}`` table, ``tvm.contrib.nvcc.have_fp16``),
so these modules exist to let such code load, as it does in a TVM built without CUDA:
every function of ``topi.cuda``/``topi.gpu``/``topi.arm_cpu``/... raises
:class:`TVMError` when called, naming the function and the one target Tessera has; the
device probes (``nvcc.have_fp16``, ``cudnn.exists`` ...) answer False.
"""

from __future__ import annotations

import types

from tessera.error import TVMError

#: classic module path -> the target it schedules for
TOPI_TARGETS = {
    "tessera.topi.cuda": "cuda", "tessera.topi.gpu": "gpu", "tessera.topi.rocm": "rocm",
    "tessera.topi.arm_cpu": "arm_cpu", "tessera.topi.mali": "mali", "tessera.topi.bifrost": "bifrost",
    "tessera.topi.intel_graphics": "intel_graphics", "tessera.topi.hls": "hls", "tessera.topi.adreno": "adreno",
    "tessera.topi.hexagon": "hexagon",
}
#: classic contrib modules of device toolchains -> their device
CONTRIB_DEVICES = {
    "tessera.contrib.nvcc": "cuda", "tessera.contrib.cudnn": "cuda", "tessera.contrib.cublas": "cuda",
    "tessera.contrib.rocm": "rocm", "tessera.contrib.miopen": "rocm", "tessera.contrib.rocblas": "rocm",
}


def _refuse(qualname: str, target: str):
    def refused(*args, **kwargs):
        raise TVMError(f"{qualname}: the {target} target is not built into Tessera, which compiles for the "
                       "host CPU only (target 'llvm'); use the topi.x86 / topi.generic function instead")

    refused.__name__ = qualname.rsplit(".", 1)[-1]
    refused.__qualname__ = qualname
    return refused


def _probe(*args, **kwargs) -> bool:
    return False


class AbsentTarget(types.ModuleType):
    """A module of an absent target: any public attribute is a function that refuses when called
    (a submodule of it, ``topi.cuda.x.y``, resolves the same way); ``have_*`` / ``exists`` probes answer False."""

    def __init__(self, name: str, target: str):
        super().__init__(name, f"{name}: the {target} target, which Tessera does not build (calls refuse).")
        self.__path__ = []
        self._target = target

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        if attr.startswith("have_") or attr in ("exists", "is_available"):
            return _probe
        return _refuse(f"{self.__name__.replace('tessera.', 'tvm.', 1)}.{attr}", self._target)


def target_of(fullname: str) -> str | None:
    """The absent target that the module path ``fullname`` belongs to, or None."""
    for table in (TOPI_TARGETS, CONTRIB_DEVICES):
        for prefix, target in table.items():
            if fullname == prefix or fullname.startswith(prefix + "."):
                return target
    return None
