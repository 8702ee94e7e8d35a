"""Targets as classic TVM wrote them: ``"llvm"``, ``"llvm -mcpu=NAME"``, ``"llvm -mattr=+avx2,-avx512f"``.

A ``Target`` is an immutable description of the CPU code is built for: its
LLVM CPU name and the full feature string handed to LLVM (the host's real
features for plain ``"llvm"``: a VM may hide AVX-512 that the CPU name
implies).  Schedules read it for their vector width and register budget
(``Target.current().lanes("float32")``, ``.vector_registers``), the compile
service for the target machine, records and cache keys for ``str(target)``.

>>> t = Target("llvm -mcpu=x86-64-v3")
>>> t.vector_bits, t.lanes("float32"), t.vector_registers
(256, 8, 16)
>>> with t:
...     Target.current() is t
True
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# Features implied by the x86-64 micro-architecture levels (psABI), the base of
# every named CPU below; LLVM itself knows the full table, this one only has to
# say which vector extensions a schedule may assume.
_V1 = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2")
_V2 = _V1 + ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = _V2 + ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
CPU_FEATURES: dict[str, tuple] = {
    "x86-64": _V1, "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4,
    "nehalem": _V2, "westmere": _V2, "sandybridge": _V2 + ("avx",), "ivybridge": _V2 + ("avx", "f16c"),
    "haswell": _V3, "broadwell": _V3, "skylake": _V3, "alderlake": _V3, "znver1": _V3, "znver2": _V3,
    "znver3": _V3, "skylake-avx512": _V4, "cascadelake": _V4, "cooperlake": _V4, "cannonlake": _V4,
    "icelake-client": _V4, "icelake-server": _V4, "tigerlake": _V4, "sapphirerapids": _V4,
    "znver4": _V4, "znver5": _V4,
}

_local = threading.local()


@dataclass(frozen=True)
class TargetKind:
    name: str


@dataclass(frozen=True, eq=True)
class Target:
    """An LLVM CPU target (classic ``tvm.target.Target``); ``Target("llvm")`` is the host."""

    spec: str = "llvm"
    host: object = None
    kind: TargetKind = field(init=False)
    cpu: str = field(init=False)
    mattr: tuple = field(init=False)
    features: frozenset = field(init=False)
    keys: tuple = field(init=False)  # operator strategies are looked up by these, in order (topi.strategy)

    def __post_init__(self):
        spec = self.spec.spec if isinstance(self.spec, Target) else str(self.spec or "llvm")
        words = spec.split()
        if not words or words[0] not in ("llvm", "c", "cpu"):
            raise ValueError(f"Target: unsupported target {spec!r}; this build supports 'llvm' "
                             f"(the host CPU), 'llvm -mcpu=NAME' and 'llvm -mattr=+f,-g'")
        cpu, mattr, keys = None, (), ("cpu",)
        for w in words[1:]:
            if w.startswith("-keys="):
                keys = tuple(k for k in w[len("-keys="):].split(",") if k)
                if not keys:
                    raise ValueError(f"Target {spec!r}: -keys= names no key (e.g. -keys=cpu)")
            elif w.startswith("-mcpu="):
                cpu = w[len("-mcpu="):]
            elif w.startswith("-mattr="):
                mattr = tuple(a for a in w[len("-mattr="):].split(",") if a)
            elif w.startswith("-"):
                continue  # classic options (-libs, -opt-level ...) do not change CPU code
        feats = set(_host_features() if cpu is None else _cpu_features(cpu))
        for a in mattr:
            if a[:1] not in "+-" or len(a) < 2:
                raise ValueError(f"Target {spec!r}: feature {a!r} must start with '+' or '-' (e.g. +avx2, -avx512f)")
            _check_feature(a[1:], spec)
            (feats.add if a[0] == "+" else feats.discard)(a[1:])
            if a == "-avx512f":
                feats.difference_update({f for f in feats if f.startswith("avx512")})
            if a == "-avx2" or a == "-avx":
                feats.difference_update({f for f in feats if f.startswith("avx")} | {"fma", "f16c"})
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "kind", TargetKind("llvm"))
        object.__setattr__(self, "cpu", cpu or _host_cpu())
        object.__setattr__(self, "mattr", mattr)
        object.__setattr__(self, "features", frozenset(feats))
        object.__setattr__(self, "keys", keys)

    # ------------------------------------------------------------ queries --
    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def is_host(self) -> bool:
        return self.cpu == _host_cpu() and self.features == frozenset(_host_features())

    @property
    def vector_bits(self) -> int:
        if self.has("avx512f"):
            return 512
        if self.has("avx"):
            return 256
        return 128

    def lanes(self, dtype: str = "float32") -> int:
        """Elements of ``dtype`` in one vector register."""
        bits = {"float64": 64, "int64": 64, "float32": 32, "int32": 32, "float16": 16, "int16": 16,
                "int8": 8, "uint8": 8}.get(str(dtype), 32)
        return self.vector_bits // bits

    @property
    def vector_registers(self) -> int:
        """Architectural vector registers (zmm0-31 with AVX-512, ymm/xmm0-15 otherwise)."""
        return 32 if self.has("avx512f") else 16

    @property
    def feature_string(self) -> str:
        """The LLVM feature string: every known feature, + or - (a CPU name implies features that a
        VM or a ``-mattr`` may take away, so the absent ones are spelt out as ``-f``)."""
        known = _known_features() | self.features
        return ",".join(("+" if f in self.features else "-") + f for f in sorted(known))

    def __str__(self) -> str:
        """Canonical text, for records and cache keys: the CPU name, then the features its name
        implies but this target lacks (``-f``), then every enabled feature (``+f``).  Parsing it
        gives an equal target."""
        implied = set(_implied_features(self.cpu))
        minus = [f"-{f}" for f in sorted(implied - self.features)]
        plus = [f"+{f}" for f in sorted(self.features)]
        keys = "" if self.keys == ("cpu",) else " -keys=" + ",".join(self.keys)
        return f"llvm -mcpu={self.cpu} -mattr=" + ",".join(minus + plus) + keys

    def __repr__(self) -> str:
        return f"Target({self.spec!r})"

    # ------------------------------------------------------------ context --
    def __enter__(self) -> "Target":
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _local.stack.pop()

    @staticmethod
    def current(allow_none: bool = False) -> "Target | None":
        """The innermost ``with Target(...)``; the host target when there is none (unless ``allow_none``)."""
        stack = getattr(_local, "stack", None)
        if stack:
            return stack[-1]
        return None if allow_none else host()


def create(spec) -> Target:
    """``spec`` (a string, a Target or None for the current target) as a Target."""
    if spec is None:
        return Target.current()
    if isinstance(spec, Target):
        return spec
    return _parse_cached(str(spec))


_cache: dict = {}


def _parse_cached(spec: str) -> Target:
    t = _cache.get(spec)
    if t is None:
        t = _cache[spec] = Target(spec)
    return t


def host() -> Target:
    return _parse_cached("llvm")


def _host_cpu() -> str:
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


def _host_features() -> tuple:
    import llvmlite.binding as llvm

    return tuple(k for k, v in llvm.get_host_cpu_features().items() if v)


def _cpu_features(cpu: str) -> tuple:
    """The vector features a schedule may assume for ``cpu``.

    CPUs of the table have theirs; another CPU name that LLVM knows is taken
    as the x86-64 baseline (conservative: its code runs, maybe without SIMD
    it could use; add ``-mattr=+avx2,...``); an unknown name is an error.
    """
    if cpu in CPU_FEATURES:
        return CPU_FEATURES[cpu]
    if cpu == _host_cpu():
        return _host_features()
    if _llvm_rejects(cpu=cpu):
        raise ValueError(f"Target: unknown CPU {cpu!r} (LLVM does not know it); for example: "
                         f"{', '.join(sorted(CPU_FEATURES))}")
    return CPU_FEATURES["x86-64"]


def _implied_features(cpu: str) -> tuple:
    if cpu in CPU_FEATURES:
        return CPU_FEATURES[cpu]
    return _host_features() if cpu == _host_cpu() else CPU_FEATURES["x86-64"]


def _llvm_rejects(cpu: str = "", feature: str = "") -> bool:
    """Whether LLVM's x86 target warns that ``cpu`` or ``+feature`` is not recognised (it
    would ignore it and build for something else)."""
    import os
    import tempfile

    import llvmlite.binding as llvm

    key = ("probe", cpu, feature)
    if key not in _cache:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        with tempfile.TemporaryFile() as tmp:
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            try:
                tm = target.create_target_machine(cpu=cpu or "x86-64", features=f"+{feature}" if feature else "")
                tm.emit_assembly(llvm.parse_assembly(""))
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            _cache[key] = b"is not a recognized" in tmp.read()
    return _cache[key]


def _known_features() -> frozenset:
    import llvmlite.binding as llvm

    if "known" not in _cache:
        _cache["known"] = frozenset(llvm.get_host_cpu_features()) | {f for fs in CPU_FEATURES.values() for f in fs}
    return _cache["known"]


def _check_feature(name: str, spec: str) -> None:
    if name not in _known_features() and _llvm_rejects(feature=name):
        raise ValueError(f"Target {spec!r}: unknown feature {name!r} (LLVM's x86 target does not know it); "
                         f"features are LLVM's names, e.g. +avx2, +fma, -avx512f")


__all__ = ["Target", "TargetKind", "create", "host", "CPU_FEATURES"]
