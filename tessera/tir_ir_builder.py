"""``tvm.tir.ir_builder``: build a statement (a tensor intrinsic's body, an extern's code) call by call.

>>> ib = tvm.tir.ir_builder.create()
>>> ib.emit(tvm.tir.call_extern("int32", "gemv_update", cc.access_ptr("w"), ...))
>>> with ib.for_range(0, n, name="i") as i:
...     ib.emit(tvm.tir.call_extern("int32", "f", i))
>>> stmt = ib.get()
"""

from __future__ import annotations

import contextlib

from schedule import stmt as S
from te import expr as E


class IRBuilder:
    """Statements appended in order; ``for_range`` and ``if_scope`` nest the ones made inside."""

    def __init__(self):
        self._stack: list[list] = [[]]

    def emit(self, stmt) -> None:
        """Append a statement (a call becomes an evaluated call)."""
        self._stack[-1].append(stmt if isinstance(stmt, S.Stmt) else S.Evaluate(E.as_expr(stmt)))

    @contextlib.contextmanager
    def for_range(self, begin, end, name: str = "i", dtype: str = "int32", kind: str = "serial"):
        var = E.Var(name, dtype)
        self._stack.append([])
        yield var
        body = S.seq(*self._stack.pop())
        begin, end = E.as_expr(begin), E.as_expr(end)
        kinds = {"serial": S.SERIAL, "parallel": S.PARALLEL, "vectorize": S.VECTORIZED, "unroll": S.UNROLLED}
        self.emit(S.For(var, begin, E.Sub(end, begin, dtype) if not _zero(begin) else end, kinds[kind], body))

    @contextlib.contextmanager
    def if_scope(self, cond):
        self._stack.append([])
        yield
        self.emit(S.IfThenElse(E.as_expr(cond), S.seq(*self._stack.pop())))

    def get(self) -> S.Stmt:
        """The statements emitted, in order."""
        return S.seq(*self._stack[0])


def _zero(e) -> bool:
    return isinstance(e, E.IntImm) and e.value == 0


def create() -> IRBuilder:
    return IRBuilder()


__all__ = ["IRBuilder", "create"]
