"""``build``: lower (if given a schedule) and compile through ``codegen.service``, wrap in a Module.

Three caches keep rebuilding cheap without pinning code:

* by schedule: the schedule's recorded state, the arguments and the target
  -> the Module (weakly: a Module nobody holds is not kept);
* by IR: the kernel's symbol (name + digest of its IR) and target -> its
  object code (a bounded LRU of bytes; skips LLVM);
* loaded code: the same key -> the loaded code (weakly, so two Modules of
  one kernel share it, and it is unloaded with the last of them).
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections import OrderedDict

from te.tensor import Tensor
from schedule.lower import LoweredFunc
from codegen import service
from codegen.module import Module
from codegen.target import Target, create

KERNEL_CACHE_SIZE = 64  # object codes and IR kept (~10 KiB each)
SCHEDULE_CACHE_SIZE = 256

_kernels: OrderedDict = OrderedDict()
_loaded: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_schedule_cache: dict = {}
_lock = threading.Lock()


def schedule_fingerprint(sch, args, name: str, target: Target) -> tuple:
    """Everything the primitives recorded, by identity, for the schedule cache."""
    parts = [id(sch), name, str(target), tuple(id(a.op) if isinstance(a, Tensor) else id(a) for a in args)]
    for st in sch.stages:
        attrs = tuple(
            (id(iv), a.get("kind"), tuple((k, str(v)) for k, v in a.get("pragmas", ())))
            for iv, a in st.iter_var_attrs.items()
        )
        parts.append((
            id(st.op), tuple(map(id, st.leaf_iter_vars)), len(st.relations), attrs,
            st.attach_type, id(st.attach_stage), id(st.attach_ivar), st.scope,
            tuple(sorted(st.storage_aligns.items())), st.storage_order,
        ))
    return tuple(parts)


def build(sch, args=None, target=None, name: str = "default_function") -> Module:
    """Compile ``sch`` over ``args`` to a callable ``Module`` (classic ``tvm.build``).

    ``target``: ``"llvm"`` (the host), ``"llvm -mcpu=NAME"``,
    ``"llvm -mattr=+avx2,-avx512f"``, a ``Target``, or None for the current
    one (``with Target(...)``; the host outside any).  Lowering runs inside
    ``with target:``; make the schedule inside it too when its choices read
    ``Target.current()``.
    """
    t = service.check_target(target)
    if isinstance(sch, LoweredFunc):
        return build_lowered(sch, t)
    if args is None:
        raise TypeError("build: give the argument list, e.g. build(s, [A, B, C])")
    warn_other_target(sch, t)
    key = schedule_fingerprint(sch, args, name, t)
    with _lock:
        hit = _schedule_cache.get(key)
    if hit is not None and hit[0]() is sch:
        mod = hit[1]()
        if mod is not None:
            return mod
    with t:
        mod = build_lowered(service.lower_for_build(sch, args, name), t)
    with _lock:
        if len(_schedule_cache) >= SCHEDULE_CACHE_SIZE:
            _schedule_cache.clear()
        _schedule_cache[key] = (_weak(sch), weakref.ref(mod))
    return mod


def warn_other_target(sch, target) -> None:
    """Warn when ``sch`` was made by schedules that read another target (``Schedule.target``,
    set by topi's x86 schedules): its vector width and register tiles are that target's."""
    made = getattr(sch, "target", None)
    if made is not None and made != str(target):
        warnings.warn(f"build: the schedule was made for target {made!r} (its vector width and register "
                      f"tiles are that CPU's) but is built for {str(target)!r}; make the schedule inside "
                      f"`with Target({target.spec!r}):` (tessera.target.Target), or build for the target it "
                      f"was made for", stacklevel=3)


def _weak(obj):
    try:
        return weakref.ref(obj)
    except TypeError:  # not weakly referenceable: compare by a strong reference
        return lambda: obj


def build_lowered(lowered, target=None) -> Module:
    """Compile one lowered function for ``target`` and load it (cached by its IR text)."""
    t = create(target)
    with t:
        raw, symbol = service.emit_llvm(lowered)
    specs = tuple(service.param_specs(lowered))
    # the IR does not carry the argument shapes (a keepdims (1, 1, 1) output and a 0-d one
    # flatten alike): the specs are part of the key
    key = (symbol, str(t), specs)
    with _lock:
        kernel = _kernels.get(key)
        if kernel is not None:
            _kernels.move_to_end(key)
    if kernel is None:
        ll, obj = service.compile_ir(raw, t)
        kernel = service.CompiledKernel(lowered.name, symbol, specs, obj, ll, str(t))
        with _lock:
            _kernels[key] = kernel
            if len(_kernels) > KERNEL_CACHE_SIZE:
                _kernels.popitem(last=False)
    with _lock:
        loaded = _loaded.get(key)
        if loaded is None:
            loaded = service.load([kernel], label=lowered.name)
            _loaded[key] = loaded
    return service.module(kernel, loaded)


# private names the tuner's builder used before codegen.service existed
_specs = service.param_specs
_c_name = service.c_name
