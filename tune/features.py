"""Features of a schedule for a cost model, read from its loop nest (every tuner shares them).

``itervar`` (default): the schedule's first loop nest is built (``schedule_ops``: the nest ``schedule.lower`` starts
from, before unrolling expands it: a small part of the cost of lowering in full).  For the statement doing the most work, and for each of
its ``DEPTH`` innermost loops::

    log2 extent, kind (serial / parallel / vectorized / unrolled),
    per buffer access (the store, then the loads): loop var used?,
        log2 stride, log2 bytes touched inside this loop, log2 reuse inside it

plus totals over the whole nest (iterations, float ops, parallel and vector
extents, statements).  ``curve``: per access, bytes touched and reuse sampled
at every loop depth (classic TVM's reuse curves).  AutoTVM adds ``knob`` features, the choices themselves
(``tune.autotvm.tuner.xgb_tuner.knob_vector``).
"""

from __future__ import annotations

import math

import numpy as np

from te import expr as E
from te.tensor import Tensor
from te.visitor import collect_vars, walk
from schedule import stmt as S
from schedule.schedule_ops import schedule_ops
from tune.touch_features import (  # noqa: F401 (classic autotvm.feature's per-loop touch features)
    flatten_itervar_feature,
    get_buffer_curve_sample_flatten,
    get_itervar_feature,
    get_itervar_feature_flatten,
)

DEPTH = 8
ACCESSES = 3
KINDS = ("serial", "parallel", "vectorized", "unrolled")
_ARITH = (E.Add, E.Sub, E.Mul, E.Div, E.Min, E.Max, E.Call)


def _log(x: float) -> float:
    return math.log2(x + 1.0)


class _Stmt:
    """One Provide with its enclosing loops (outermost first), its accesses and the
    ``auto_unroll_max_step`` of the loop that carries one (0 when none; ``unroll_at``: its depth)."""

    __slots__ = ("accesses", "flops", "loops", "unroll", "unroll_at")

    def __init__(self, loops, accesses, flops, unroll=(0, 0)):
        self.loops, self.accesses, self.flops = loops, accesses, flops
        self.unroll, self.unroll_at = unroll

    @property
    def iters(self) -> int:
        return math.prod(ext for _, ext, _ in self.loops)


def _extent(loop, ranges) -> int:
    ext = loop.extent
    if isinstance(ext, E.IntImm):
        return max(ext.value, 1)
    r = ranges.get(loop.loop_var) if ranges else None
    try:
        return max(int(r.extent), 1)
    except (AttributeError, TypeError, ValueError):
        return 1


def _deps(e, lets: dict) -> set:
    out: set = set()
    for v in collect_vars(e):
        out |= lets.get(v, {v})
    return out


def _access(tensor, indices, lets) -> tuple:
    shape = []
    for d in tensor.shape:
        try:
            shape.append(int(d))
        except (TypeError, ValueError):
            shape.append(1)
    per_dim = [_deps(i, lets) for i in indices]
    nbytes = max(int(str(tensor.dtype).lstrip("abcdefghijklmnopqrstuvwxyz") or 32) // 8, 1)
    return tensor.op.name, shape, per_dim, nbytes


def collect_statements(body, ranges=None) -> list:
    """Every tensor store of the first nest, with its loops and accesses."""
    out: list = []

    def visit(s, loops, lets, unroll=(0, 0)):
        if isinstance(s, S.For):
            step = dict(s.pragmas).get("auto_unroll_max_step")
            if isinstance(step, (int, float)) and step > 0:
                unroll = (int(step), len(loops))
            visit(s.body, loops + [(s.loop_var, _extent(s, ranges), s.kind)], lets, unroll)
        elif isinstance(s, S.LetStmt):
            visit(s.body, loops, {**lets, s.var: _deps(s.value, lets)}, unroll)
        elif isinstance(s, S.Provide):
            accesses = [_access(s.tensor, s.indices, lets)]
            flops = [0]

            def grab(x):
                if isinstance(x, E.TensorRead):
                    accesses.append(_access(x.tensor, x.indices, lets))
                elif isinstance(x, _ARITH) and str(x.dtype).startswith("float"):
                    flops[0] += 1

            walk(s.value, grab)
            out.append(_Stmt(loops, accesses, flops[0], unroll))
        else:
            for name in ("body", "then_case", "else_case"):
                child = getattr(s, name, None)
                if child is not None:
                    visit(child, loops, lets, unroll)
            for child in getattr(s, "stmts", ()) or ():
                visit(child, loops, lets, unroll)

    visit(body, [], {})
    return out


def _access_curves(st: _Stmt, access) -> list:
    """Per loop (outermost first): (uses var, stride, bytes touched inside, reuse inside)."""
    _, shape, per_dim, nbytes = access
    rows = []
    touched, reuse = 1, 1
    for var, ext, _ in reversed(st.loops):
        dims = [d for d, deps in enumerate(per_dim) if var in deps]
        if dims:
            touched *= ext
            stride = math.prod(shape[dims[-1] + 1 :]) if dims else 0
        else:
            reuse *= ext
            stride = 0
        rows.append((1.0 if dims else 0.0, _log(stride), _log(touched * nbytes), _log(reuse)))
    return rows[::-1]


def _main(stmts: list) -> _Stmt | None:
    return max(stmts, key=lambda s: s.iters * max(s.flops, 1), default=None)


def _totals(stmts: list) -> list:
    iters = sum(s.iters for s in stmts)
    flops = sum(s.iters * s.flops for s in stmts)
    par = max((ext for s in stmts for _, ext, k in s.loops if k == "parallel"), default=0)
    vec = max((ext for s in stmts for _, ext, k in s.loops if k == "vectorized"), default=0)
    unr = max((math.prod(ext for _, ext, k in s.loops if k == "unrolled") for s in stmts), default=0)
    return [_log(iters), _log(flops), _log(par), _log(vec), _log(unr), float(len(stmts))]


def itervar_vector(stmts: list) -> np.ndarray:
    st = _main(stmts)
    per_loop = 1 + len(KINDS) + 4 * ACCESSES
    feats = np.zeros(DEPTH * per_loop, dtype=np.float32)
    if st is not None:
        loops = st.loops[-DEPTH:]
        curves = [_access_curves(st, a)[-DEPTH:] for a in st.accesses[:ACCESSES]]
        for k, (_, ext, kind) in enumerate(loops):
            row = [_log(ext)] + [1.0 if kind == kd else 0.0 for kd in KINDS]
            for a in range(ACCESSES):
                row += list(curves[a][k]) if a < len(curves) else [0.0] * 4
            feats[k * per_loop : (k + 1) * per_loop] = row
        depth = [float(len(st.loops)), _log(st.iters), float(st.flops)]
    else:
        depth = [0.0, 0.0, 0.0]
    return np.concatenate([feats, np.array(depth + _totals(stmts), dtype=np.float32)])


def curve_vector(stmts: list) -> np.ndarray:
    st = _main(stmts)
    out = np.zeros((ACCESSES, DEPTH, 2), dtype=np.float32)
    if st is not None:
        for a, acc in enumerate(st.accesses[:ACCESSES]):
            rows = sorted((r[2], r[3]) for r in _access_curves(st, acc))[-DEPTH:]
            out[a, : len(rows)] = rows
    return np.concatenate([out.ravel(), np.array(_totals(stmts), dtype=np.float32)])


def loop_nest(sch, args) -> tuple:
    """``(body, ranges)``: the first loop nest of ``sch`` over ``args`` (``schedule_ops``, the
    nest ``schedule.lower`` starts from) and its loop ranges."""
    keys = {(a.op, a.value_index) for a in args if isinstance(a, Tensor)}
    return schedule_ops(sch, keys)


def schedule_vector(sch, args, feature_type: str = "itervar") -> np.ndarray:
    """The ``itervar`` or ``curve`` feature vector of ``sch`` over ``args``."""
    if feature_type not in ("itervar", "curve"):
        raise ValueError(f"unknown loop-nest feature_type {feature_type!r}; use itervar or curve")
    stmts = collect_statements(*loop_nest(sch, args))
    return itervar_vector(stmts) if feature_type == "itervar" else curve_vector(stmts)


def _unrolled(st: _Stmt) -> list:
    """What ``auto_unroll_max_step`` unrolls around a store (``schedule.passes.unroll_loops``: the
    serial loops under the pragma's loop whose body runs at most that many times): log2 of the step,
    of the iterations unrolled, and how many loops."""
    if not st.unroll:
        return [0.0, 0.0, 0.0]
    inner, count = 1, 0
    for _, ext, kind in reversed(st.loops[st.unroll_at + 1:]):
        if kind == "vectorized":
            continue
        if kind != "serial" or inner * ext > st.unroll:
            break
        inner *= ext
        count += 1
    return [_log(st.unroll), _log(inner), float(count)]


def store_vectors(sch, args) -> np.ndarray:
    """One row per store of the first loop nest of ``sch`` (the auto_scheduler's "pack-sum" model
    scores a program as the sum of its stores' scores): its ``itervar`` features and what the
    unroll pragma around it unrolls (the nest is read before unrolling)."""
    stmts = collect_statements(*loop_nest(sch, args))
    return np.stack([np.concatenate([itervar_vector([st]), _unrolled(st)]) for st in stmts]
                    or [np.concatenate([itervar_vector([]), np.zeros(3, np.float32)])])


__all__ = ["collect_statements", "curve_vector", "flatten_itervar_feature", "get_buffer_curve_sample_flatten",
           "get_itervar_feature", "get_itervar_feature_flatten", "itervar_vector", "loop_nest", "schedule_vector",
           "store_vectors"]
