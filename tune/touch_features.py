"""Classic AutoTVM's per-loop touch features (``autotvm.feature.get_itervar_feature`` and kin).

The schedule is lowered to its flattened nest (bounds, loops, ``storage_flatten``, one
simplification: classic ``ana_lower``), then every loop gets, in order of first appearance::

    _attr_   length, nest level, product of the extents down to it, the largest
             count * reuse of a buffer access under it, one-hot annotation
             (blockIdx.x/y/z, threadIdx.x/y/z, unrolled, vectorized, parallel, serial, vthread)
    _arith_  float additions, multiplications, divisions in its innermost body
    A_0 ...  per access of a buffer (the k-th access of A is ``A_k``, in program order):
             stride of the loop's variable in the flat index (0: not used), mod (-1),
             count (elements touched) and reuse (times each is touched) under the loop,
             and the same counted per thread of the enclosing parallel level

For ``C[y, x] = sum(A[y, k] * B[k, x])`` (128 each), loop ``y`` reads ``A_0`` with
stride 128, count 16384 and reuse 128.  ``get_buffer_curve_sample_flatten`` samples, for
each buffer touched at the deepest level, the curves count-reuse, reuse-count,
count-topdown and topdown-count (log2) at ``sample_n`` points.  Tessera's own cost-model
features are ``tune.features``; these are the classic API's.
"""

from __future__ import annotations

import math

import numpy as np

from te import expr as E
from te.visitor import walk
from schedule import stmt as S
from schedule.schedule_ops import schedule_ops

ANNOTATIONS = ("blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y", "threadIdx.z",
               "unrolled", "vectorized", "parallel", "serial", "vthread")
_PARALLEL_LEVEL = {"blockIdx.x": 2, "blockIdx.y": 2, "blockIdx.z": 2, "threadIdx.x": 1, "threadIdx.y": 1,
                   "threadIdx.z": 1, "parallel": 1}


class _Touch:
    __slots__ = ("count", "mod", "reuse", "stride", "thread_count", "thread_reuse")

    def __init__(self, stride: int = 0):
        self.stride, self.mod, self.count, self.reuse = stride, -1, 1, 1
        self.thread_count, self.thread_reuse = 0, 0

    def values(self) -> list:
        return [self.stride, self.mod, self.count, self.reuse, self.thread_count, self.thread_reuse]


class _Loop:
    __slots__ = ("add", "ann", "bottomup", "div", "length", "level", "mul", "order", "topdown", "touch", "var")

    def __init__(self, var, length: int, level: int, ann: str, topdown: int, order: int):
        self.var, self.length, self.level, self.ann, self.topdown, self.order = var, length, level, ann, topdown, order
        self.bottomup, self.add, self.mul, self.div = 0, 0, 0, 0
        self.touch: dict = {}


class TouchAnalysis:
    """The loops of a flattened nest and, per loop, how each buffer access touches memory."""

    def __init__(self, body: S.Stmt):
        self.loops: list = []
        self._stack: list = []
        self._accesses: dict = {}  # buffer name -> accesses so far
        self._topdown = 1
        self._stmt(body)

    # the walk ----------------------------------------------------------------------
    def _stmt(self, s) -> None:
        if isinstance(s, S.For):
            ext = s.extent.value if isinstance(s.extent, E.IntImm) else -1
            ann = dict(s.pragmas).get("thread_tag", "parallel") if s.kind == S.THREAD_BOUND else s.kind
            self._enter(s.loop_var, ext, ann)
            self._stmt(s.body)
            self._exit()
            return
        if isinstance(s, S.Store):
            self._access(s.buffer.name, s.index)
            self._expr(s.value)
            self._expr(s.index)
            return
        for field in S._EXPRS.get(type(s), ()):
            value = getattr(s, field)
            for e in value if isinstance(value, tuple) else (value,):
                if isinstance(e, E.Expr):
                    self._expr(e)
        for field in S._STMTS.get(type(s), ()):
            value = getattr(s, field)
            for child in value if isinstance(value, tuple) else (value,):
                if child is not None:
                    self._stmt(child)

    def _expr(self, e: E.Expr) -> None:
        def visit(x):
            if isinstance(x, E.Load):
                self._access(x.buffer.name, x.index)
            elif self._stack and str(x.dtype).startswith("float"):
                loop = self._stack[-1]
                if isinstance(x, (E.Add, E.Sub)):
                    loop.add += 1
                elif isinstance(x, E.Mul):
                    loop.mul += 1
                elif isinstance(x, (E.Div, E.FloorDiv, E.Mod, E.FloorMod)):
                    loop.div += 1

        walk(e, visit)

    def _enter(self, var, length: int, ann: str) -> None:
        self._topdown *= length
        loop = _Loop(var, length, len(self._stack) + 1, ann, self._topdown, len(self.loops))
        self.loops.append(loop)
        self._stack.append(loop)

    def _access(self, name: str, index: E.Expr) -> None:
        k = self._accesses.get(name, 0)
        self._accesses[name] = k + 1
        key = f"{name}_{k}"
        strides = _strides(index)
        for loop in self._stack:
            loop.touch[key] = _Touch(strides.get(loop.var, 0))

    def _exit(self) -> None:
        loop = self._stack[-1]
        for key, t in loop.touch.items():  # every enclosing loop (itself too) counts or reuses it
            for outer in self._stack:
                if t.stride != 0:
                    outer.touch[key].count *= loop.length
                else:
                    outer.touch[key].reuse *= loop.length
        self._stack.pop()
        if loop.length:
            self._topdown //= loop.length
        loop.bottomup = max((t.count * t.reuse for t in loop.touch.values()), default=-1)
        level = _PARALLEL_LEVEL.get(loop.ann, 0)
        if self._stack and _PARALLEL_LEVEL.get(self._stack[-1].ann, 0) == level + 1:
            for key, t in loop.touch.items():  # the per-thread base of the parallel level above
                for outer in self._stack:
                    if _PARALLEL_LEVEL.get(outer.ann, 0) == level + 1:
                        outer.touch[key].thread_reuse, outer.touch[key].thread_count = -t.reuse, -t.count
        for t in loop.touch.values():
            if t.thread_count < 0:
                t.thread_count, t.thread_reuse = t.count // -t.thread_count, t.reuse // -t.thread_reuse


def _strides(index: E.Expr) -> dict:
    """Each variable's stride in a flat index: its constant factor where written ``v * c``."""
    out: dict = {}
    pending = [1]

    def visit(x):
        if isinstance(x, E.Mul) and isinstance(x.a, E.Var) and isinstance(x.b, E.IntImm):
            pending[0] = x.b.value
        elif isinstance(x, E.Var) and x not in out:
            out[x] = pending[0]
            pending[0] = 1

    walk(index, visit)
    return out


# the classic API ---------------------------------------------------------------------------
def ana_lower(sch, args) -> S.Stmt:
    """The flattened loop nest the features read: bounds, every loop as the schedule made it,
    ``storage_flatten``, one simplification.  As classic TVM's (built as its debug nest), it holds
    reductions' updates and not their initialisation, so these features match classic AutoTVM's."""
    from schedule.lower import pass_context
    from schedule.passes.simplify_stmt import simplify_stmt
    from schedule.passes.storage_flatten import storage_flatten
    from te.tensor import Tensor

    keys = {(a.op, a.value_index) for a in args if isinstance(a, Tensor)}
    body, ranges = schedule_ops(sch, keys, scratch_outputs=True, init=False)
    ctx, _ = pass_context(sch, list(args), ranges)
    return simplify_stmt(storage_flatten(body, ctx), ctx)


def _trans(take_log: bool):
    if not take_log:
        return lambda x: x
    return lambda x: -math.log2(-x + 1) if x < 0 else math.log2(x + 1)


def get_itervar_feature(sch, args, take_log: bool = False) -> list:
    """Per loop (first appearance order): ``[["_itervar_", var], ["_attr_", ...], ["_arith_", ...],
    [buffer access, stride, mod, count, reuse, thread_count, thread_reuse], ...]`` (module doc)."""
    f = _trans(take_log)
    rows = []
    for loop in TouchAnalysis(ana_lower(sch, args)).loops:
        row = [["_itervar_", loop.var],
               ["_attr_", f(loop.length), loop.level, f(loop.topdown), f(loop.bottomup)]
               + [int(loop.ann == a) for a in ANNOTATIONS],
               ["_arith_", f(loop.add), f(loop.mul), f(loop.div)]]
        row += [[key] + [f(v) for v in loop.touch[key].values()] for key in sorted(loop.touch)]
        rows.append(row)
    return rows


def flatten_itervar_feature(fea: list) -> np.ndarray:
    """The numbers of ``get_itervar_feature``'s rows in one vector (the ``_itervar_`` pair dropped)."""
    return np.array([v for row in fea for pair in row[1:] for v in pair[1:]], dtype=np.float32)


def get_itervar_feature_flatten(sch, args, take_log: bool = True) -> np.ndarray:
    return flatten_itervar_feature(get_itervar_feature(sch, args, take_log))


def get_buffer_curve_sample_flatten(sch, args, sample_n: int = 30) -> np.ndarray:
    """For each buffer touched at the deepest loop level (one access per buffer, scope suffixes
    ignored), the curves count->reuse, reuse->count, count->topdown, topdown->count in log2, each
    sampled at ``sample_n`` points as (value, distance past the last knot)."""
    loops = TouchAnalysis(ana_lower(sch, args)).loops
    deepest = max((loop.level for loop in loops), default=0)
    chosen, raw_seen = [], set()
    for loop in reversed(loops):
        if loop.level != deepest:
            continue
        for key in sorted(loop.touch):
            raw = key[:key.rfind("_")].split(".")[0]
            if raw not in raw_seen:
                raw_seen.add(raw)
                chosen.append(key)
    out: list = []
    for key in sorted(chosen):
        count, reuse, top = [0.0], [0.0], [0.0]
        for loop in loops:
            t = loop.touch.get(key)
            if t is not None:
                count.append(math.log2(t.count))
                reuse.append(math.log2(t.reuse))
                top.append(math.log2(loop.topdown))
        count, reuse, top = sorted(count), sorted(reuse), sorted(top)
        for xs, ys in ((count, reuse), (reuse, count), (count, top), (top, count)):
            out += _sample(xs, ys, sample_n)
    return np.array(out, dtype=np.float32)


def _sample(xs: list, ys: list, n: int) -> list:
    out = []
    for i in range(n):
        for j in reversed(range(len(xs))):
            if i > xs[j] - 1e-6:
                out += [ys[j], i - xs[j]]
                break
    return out


__all__ = ["TouchAnalysis", "ana_lower", "flatten_itervar_feature", "get_buffer_curve_sample_flatten",
           "get_itervar_feature", "get_itervar_feature_flatten"]
