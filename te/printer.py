"""Text form of expressions, close to classic TVM's printing."""

from __future__ import annotations

from te import expr as E
from te.visitor import children

_SYMBOL = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.Mod: "%",
    E.EQ: "==", E.NE: "!=", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=",
    E.And: "&&", E.Or: "||",
}
_FUNC = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "min", E.Max: "max"}


def shared_subexprs(e) -> list:
    """Non-leaf nodes used more than once in ``e`` (a DAG), children first.

    Printing them once under a name keeps the text linear in the DAG's size
    (``y = x * x; y * y`` nested 64 times would otherwise print 2**64 nodes).
    """
    uses: dict[int, int] = {}
    order: list = []
    seen: set = set()

    def visit(x):
        for c in children(x):
            uses[id(c)] = uses.get(id(c), 0) + 1
            if id(c) not in seen:
                seen.add(id(c))
                visit(c)
        order.append(x)

    visit(e)
    return [x for x in order if uses.get(id(x), 0) > 1 and children(x)]


def expr_str(e, names: dict | None = None) -> str:
    """Print an expression (``((i*1024) + j)``, ``A[i, j]``, ``max(a, b)``).

    ``names`` maps ``id(node)`` to a name printed in place of that node.
    """
    if names:
        hit = names.get(id(e))
        if hit is not None:
            return hit
        return _expr_str(e, lambda x: expr_str(x, names))
    return _expr_str(e, expr_str)


def _expr_str(e, expr_str) -> str:
    t = type(e)
    if t is E.IntImm:
        return str(e.value) if e.dtype in ("int32", "bool") else f"{e.value}{_suffix(e.dtype)}"
    if t is E.FloatImm:
        return f"{e.value!r}f" if e.dtype == "float32" else f"{e.value!r}{_suffix(e.dtype)}"
    if t is E.StringImm:
        return repr(e.value)
    if t is E.Var:
        return e.name
    if t is E.IterVar:
        return e.var.name
    if t in _SYMBOL:
        return f"({expr_str(e.a)} {_SYMBOL[t]} {expr_str(e.b)})"
    if t in _FUNC:
        return f"{_FUNC[t]}({expr_str(e.a)}, {expr_str(e.b)})"
    if t is E.Not:
        return f"!{expr_str(e.a)}"
    if t is E.Select:
        return f"select({expr_str(e.cond)}, {expr_str(e.true_value)}, {expr_str(e.false_value)})"
    if t is E.Cast:
        return f"{e.dtype}({expr_str(e.value)})"
    if t is E.Call:
        return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"
    if t is E.Let:
        return f"(let {e.var.name} = {expr_str(e.value)} in {expr_str(e.body)})"
    if t is E.TensorRead:
        return f"{e.tensor.name}[{', '.join(expr_str(i) for i in e.indices)}]"
    if t is E.Load:
        return f"{e.buffer.name}[{expr_str(e.index)}]"
    if t is E.Ramp:
        return f"ramp({expr_str(e.base)}, {expr_str(e.stride)}, {e.lanes})"
    if t is E.Broadcast:
        return f"x{e.lanes}({expr_str(e.value)})"
    if t is E.Reduce:
        src = ", ".join(expr_str(s) for s in e.source)
        axes = ", ".join(a.var.name for a in e.axis)
        return f"reduce({e.combiner.name}, source=[{src}], axis=[{axes}], where={expr_str(e.condition)}, value_index={e.value_index})"
    return object.__repr__(e)


def _suffix(dtype: str) -> str:
    return {"int64": "i64", "float64": "f64", "float16": "f16"}.get(dtype, f"({dtype})")


def expr_repr(e) -> str:
    """``repr`` of an expression: shared subexpressions first, as ``let %k = ...``."""
    shared = shared_subexprs(e)
    if not shared:
        return expr_str(e)
    names: dict = {}
    lets = []
    for k, node in enumerate(shared):
        lets.append(f"let %{k} = {expr_str(node, names)}")
        names[id(node)] = f"%{k}"
    return "; ".join(lets) + f"; {expr_str(e, names)}"


E._PRINTER[:] = [expr_repr]  # Expr.__repr__ prints through here
