"""``build``: lower (if given a schedule), emit LLVM IR, optimise, JIT, wrap.

Two caches make rebuilding cheap: one keyed by the schedule's recorded state
and the arguments (skips lowering), one keyed by the emitted IR text (skips
LLVM).  Both live for the process.
"""

from __future__ import annotations

import hashlib
import threading

from te import expr as E
from te.tensor import Tensor
from schedule.lower import LoweredFunc, lower
from schedule import stmt as S
from codegen import jit
from codegen.llvm_ir import CodeGen
from codegen.module import Module, ParamSpec

_ir_cache: dict = {}
_schedule_cache: dict = {}
_lock = threading.Lock()


def _check_target(target) -> None:
    t = str(target or "llvm").split()[0]
    if t not in ("llvm", "c", "cpu"):
        raise ValueError(f"build: unsupported target {target!r}; this build supports 'llvm' (the host CPU)")


def schedule_fingerprint(sch, args, name: str) -> tuple:
    """Everything the primitives recorded, by identity, for the schedule cache."""
    parts = [id(sch), name, tuple(id(a.op) if isinstance(a, Tensor) else id(a) for a in args)]
    for st in sch.stages:
        attrs = tuple(
            (id(iv), a.get("kind"), tuple((k, str(v)) for k, v in a.get("pragmas", ())))
            for iv, a in st.iter_var_attrs.items()
        )
        parts.append((
            id(st.op), tuple(map(id, st.leaf_iter_vars)), len(st.relations), attrs,
            st.attach_type, id(st.attach_stage), id(st.attach_ivar), st.scope,
            tuple(sorted(st.storage_aligns.items())),
        ))
    return tuple(parts)


def build(sch, args=None, target: str = "llvm", name: str = "default_function") -> Module:
    """Compile ``sch`` over ``args`` to a callable ``Module`` (classic ``tvm.build``)."""
    _check_target(target)
    if isinstance(sch, LoweredFunc):
        return build_lowered(sch)
    if args is None:
        raise TypeError("build: give the argument list, e.g. build(s, [A, B, C])")
    key = schedule_fingerprint(sch, args, name)
    with _lock:
        hit = _schedule_cache.get(key)
    if hit is not None and hit[0] is sch:
        return hit[1]
    mod = build_lowered(lower(sch, args, name=name))
    with _lock:
        _schedule_cache[key] = (sch, mod)
    return mod


def _specs(lowered) -> list[ParamSpec]:
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


def build_lowered(lowered) -> Module:
    """Emit, optimise and JIT one lowered function (cached by its IR text)."""
    gen = CodeGen(lowered.name)
    fn = gen.add_function(lowered)
    raw = str(gen.module)
    digest = hashlib.sha1(raw.encode()).hexdigest()[:16]
    symbol = f"{_c_name(lowered.name)}_{digest}"
    specs = _specs(lowered)
    with _lock:
        hit = _ir_cache.get(digest)
    if hit is None:
        mod = jit.parse(raw.replace(f'@"{fn.name}"(', f'@"{symbol}"('))
        jit.optimize(mod)
        ll = str(mod)
        jit.add_module(mod)
        hit = (ll, jit.function_address(symbol))
        with _lock:
            _ir_cache[digest] = hit
    return Module(lowered.name, symbol, specs, hit[1], ll=hit[0])


def _c_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
