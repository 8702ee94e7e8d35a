"""``te.hybrid.build``: a schedule's loop nest written back as a hybrid script.

The tensor-level nest (``schedule_ops``: loops, stores, realizes) prints as a Python
function over the inputs that declares and returns the outputs::

    for (i.outer, 0, 16) {                 def hybrid_func(a, b):
      for (i.inner, 0, 4) {                    c = output_tensor((64, 64), 'float32')
        for (j, 0, 64) {           ->          for i_outer in range(16):
          c[i.outer*4 + i.inner, j] = ...          for i_inner in parallel(4):
                                                       for j in range(64):
                                                           c[i_outer * 4 + i_inner, j] = ...
                                               return c

A :class:`HybridModule` holds that source: called on te tensors it parses it again (a
HybridOp), called on numpy arrays it runs it; ``save``/``load`` write and read the text.
"""

from __future__ import annotations

import keyword

from te import dtype as dt
from te import expr as E
from te.tensor import Tensor
from schedule import stmt as S
from schedule.hybrid import runtime
from schedule.hybrid.calls import INTRINSIC_NAMES
from schedule.hybrid.parser import HybridError
from schedule.hybrid.script import HybridFunction, Source
from schedule.schedule_ops import schedule_ops

_LOOP = {S.SERIAL: "range", S.PARALLEL: "parallel", S.VECTORIZED: "vectorize", S.UNROLLED: "unroll"}
_BIN = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.FloorDiv: "//", E.FloorMod: "%", E.EQ: "==",
        E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.And: "and", E.Or: "or"}
_CALL = {"pow": "power", "likely": "likely", "popcount": "popcount", "sigmoid": "sigmoid",
         **{n: n for n in ("sqrt", "rsqrt", "log", "exp", "tanh", "round", "floor", "ceil", "erf")}}


class _Writer:
    def __init__(self, inputs: list, outputs: list):
        self.names: dict = {}  # id(Var) or (id(op), value_index) -> identifier
        self.taken: set = set(INTRINSIC_NAMES) | set(runtime.HYBRID_GLOBALS) | {"range", "len"}
        self.mins: dict = {}  # (id(op), value_index) of a realized tensor -> its region's minimum
        self.lines: list = []
        self.params = [self.name(x) for x in inputs]
        self.outputs = [self.name(x) for x in outputs]

    def name(self, x) -> str:
        key = (id(x.op), x.value_index) if isinstance(x, Tensor) else id(x)
        if key not in self.names:
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in x.name) or "v"
            base = "_" + base if base[0].isdigit() or keyword.iskeyword(base) else base
            ident, k = base, 1
            while ident in self.taken:
                ident, k = f"{base}_{k}", k + 1
            self.taken.add(ident)
            self.names[key] = ident
        return self.names[key]

    # statements -------------------------------------------------------------
    def stmt(self, s, depth: int) -> None:
        pad = "    " * depth
        if isinstance(s, S.Block):
            for x in s.stmts:
                self.stmt(x, depth)
        elif isinstance(s, S.Produce):
            self.stmt(s.body, depth)
        elif isinstance(s, S.Realize):
            t = s.tensor
            shape = ", ".join(self.expr(r.extent) for r in s.bounds) + ("," if len(s.bounds) == 1 else "")
            self.mins[(id(t.op), t.value_index)] = [r.min for r in s.bounds]
            self.lines.append(f"{pad}{self.name(t)} = allocate(({shape}), {t.dtype!r}, {s.scope!r})")
            self.stmt(s.body, depth)
        elif isinstance(s, S.For):
            lo, ext = self.expr(s.min), self.expr(s.extent)
            rng = ext if _zero(s.min) else f"{lo}, {lo} + {ext}"
            self.lines.append(f"{pad}for {self.name(s.loop_var)} in {_LOOP[s.kind]}({rng}):")
            self.stmt(s.body, depth + 1)
        elif isinstance(s, S.IfThenElse):
            self.lines.append(f"{pad}if {self.expr(s.cond)}:")
            self.stmt(s.then_case, depth + 1)
            if s.else_case is not None:
                self.lines.append(f"{pad}else:")
                self.stmt(s.else_case, depth + 1)
        elif isinstance(s, S.LetStmt):
            self.lines.append(f"{pad}{self.name(s.var)} = {self.expr(s.value)}")
            self.stmt(s.body, depth)
        elif isinstance(s, S.Provide):
            self.lines.append(f"{pad}{self.access(s.tensor, s.indices)} = {self.expr(s.value)}")
        else:
            raise HybridError(f"te.hybrid.build: statement {type(s).__name__} has no hybrid form")

    # expressions ------------------------------------------------------------
    def access(self, t: Tensor, indices) -> str:
        mins = self.mins.get((id(t.op), t.value_index))
        if mins is not None:
            indices = [i if _zero(m) else i - m for i, m in zip(indices, mins)]
        return f"{self.name(t)}[{', '.join(self.expr(i) for i in indices)}]"

    def expr(self, e) -> str:
        t = type(e)
        if t is E.IntImm:
            return str(bool(e.value)) if dt.is_bool(e.dtype) else str(e.value)
        if t is E.FloatImm:
            return repr(e.value)
        if t is E.Var:
            return self.name(e)
        if t is E.TensorRead:
            return self.access(e.tensor, e.indices)
        if t in _BIN:
            return f"({self.expr(e.a)} {_BIN[t]} {self.expr(e.b)})"
        if t is E.Div:  # truncating for integers: the quotient rounded toward zero
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} / {b})" if dt.is_float(e.dtype) else f"{e.dtype}({a} / {b})"
        if t is E.Mod:
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} - {e.dtype}({a} / {b}) * {b})"
        if t in (E.Min, E.Max):
            return f"{'min' if t is E.Min else 'max'}({self.expr(e.a)}, {self.expr(e.b)})"
        if t is E.Not:
            return f"(not {self.expr(e.a)})"
        if t is E.Select:
            return f"({self.expr(e.true_value)} if {self.expr(e.cond)} else {self.expr(e.false_value)})"
        if t is E.Cast:
            return f"{e.dtype}({self.expr(e.value)})"
        if t is E.Call and e.name in _CALL:
            return f"{_CALL[e.name]}({', '.join(self.expr(a) for a in e.args)})"
        raise HybridError(f"te.hybrid.build: expression {e} ({t.__name__}) has no hybrid form")


def _zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def dump(stmt: S.Stmt, inputs: list, outputs: list, name: str) -> str:
    """The hybrid script of a tensor-level loop nest over ``inputs`` (tensors and vars)."""
    w = _Writer(inputs, outputs)
    for t, ident in zip(outputs, w.outputs):
        shape = ", ".join(w.expr(E.as_expr(d)) for d in t.shape) + ("," if len(t.shape) == 1 else "")
        w.lines.append(f"    {ident} = output_tensor(({shape}), {t.dtype!r})")
    w.stmt(stmt, 1)
    w.lines.append(f"    return {', '.join(w.outputs)}")
    return f"def {name}({', '.join(w.params)}):\n" + "\n".join(w.lines) + "\n"


def build(sch, inputs, outputs, name: str = "hybrid_func") -> "HybridModule":
    """Write the loop nest of ``sch`` as a hybrid script (classic ``te.hybrid.build``)."""
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = list(inputs)
    args = {(t.op, t.value_index) for t in inputs + outputs if isinstance(t, Tensor)}
    stmt, _ = schedule_ops(sch, args)
    return HybridModule(dump(stmt, inputs, outputs, name), name)


class HybridModule:
    """A hybrid script held as source text (``te.hybrid.build``'s result)."""

    def __init__(self, src: str | None = None, name: str | None = None):
        self.src, self.name, self._func = None, name, None
        if src is not None:
            self._set(src)

    def _set(self, src: str) -> None:
        source = Source.of_text(src, f"<hybrid {self.name or 'module'}>")
        scope: dict = {}
        exec(compile(src, source.filename, "exec"), scope)  # noqa: S102 (the module's own text)
        self.src, self.name = src, source.name
        self._func = HybridFunction(scope[source.name], source)

    def __call__(self, *args):
        if self._func is None:
            raise ValueError("HybridModule: nothing loaded; build one or call load(path)")
        return self._func(*args)

    def get_source(self) -> str:
        return self.src

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.src)

    def load(self, path: str) -> None:
        with open(path) as f:
            self._set(f.read())


__all__ = ["HybridModule", "build", "dump"]
