"""Classic TVM's namespaces that Tessera does not have: other targets (CUDA, ROCm, ARM ...) and relay.

Tessera builds for the host CPU through LLVM only.  Classic TVM code names the
schedules of other targets next to the CPU ones (a test's ``{"cpu": (topi.x86.dense_nopack,
...), "gpu": (topi.cuda.dense_small_batch, ...)}`` table, ``tvm.contrib.nvcc.have_fp16``),
so these modules exist to let such code load, as it does in a TVM built without CUDA:
every function of ``topi.cuda``/``topi.gpu``/``topi.arm_cpu``/... raises
:class:`TVMError` when called, naming the function and the one target Tessera has; the
device probes (``nvcc.have_fp16``, ``cudnn.exists`` ...) answer False.

``tvm.relay`` is absent the same way: a test file that imports it loads, and its functions that
use no relay run; any relay call (``relay.var``, ``relay.op.nn.sparse_dense(...)``,
``tvm.relay.random.threefry_key(0)``) raises :class:`TVMError` pointing at Tessera's graph layer
(ONNX import, ``graph.from_onnx``), which is how whole networks come in here.
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


#: classic namespaces that are not targets -> why they refuse, and what to use instead
ABSENT_NAMESPACES = {"tessera.relay": "relay"}
_NOT_TARGETS = {
    "relay": "relay is not part of Tessera; networks come in through the graph layer: "
             "import an ONNX model with graph.from_onnx(onnx.load(path)), then graph.build",
}


def _reason(qualname: str, target: str) -> str:
    if target in _NOT_TARGETS:
        return f"{qualname}: {_NOT_TARGETS[target]}"
    return (f"{qualname}: the {target} target is not built into Tessera, which compiles for the "
            "host CPU only (target 'llvm'); use the topi.x86 / topi.generic function instead")


class Refused:
    """A function of an absent namespace: calling it raises :class:`TVMError`; an attribute of it
    (``relay.op.nn.sparse_dense``, ``relay.TensorType``) is one too, so classic code loads and
    fails only where it calls."""

    def __init__(self, qualname: str, target: str):
        self.__qualname__ = qualname
        self.__name__ = qualname.rsplit(".", 1)[-1]
        self._target = target

    def __call__(self, *args, **kwargs):
        raise TVMError(_reason(self.__qualname__, self._target))

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return Refused(f"{self.__qualname__}.{attr}", self._target)

    def __repr__(self) -> str:
        return f"<absent {self.__qualname__}>"


def _probe(*args, **kwargs) -> bool:
    return False


class AbsentTarget(types.ModuleType):
    """A module of an absent target: any public attribute is a function that refuses when called
    (a submodule of it, ``topi.cuda.x.y``, resolves the same way); ``have_*`` / ``exists`` probes answer False."""

    def __init__(self, name: str, target: str):
        super().__init__(name, _reason(name, target) + " (calls refuse)")
        self.__path__ = []
        self._target = target

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        if attr.startswith("have_") or attr in ("exists", "is_available"):
            return _probe
        return Refused(f"{self.__name__.replace('tessera.', 'tvm.', 1)}.{attr}", self._target)


def target_of(fullname: str) -> str | None:
    """The absent target that the module path ``fullname`` belongs to, or None."""
    for table in (TOPI_TARGETS, CONTRIB_DEVICES, ABSENT_NAMESPACES):
        for prefix, target in table.items():
            if fullname == prefix or fullname.startswith(prefix + "."):
                return target
    return None
