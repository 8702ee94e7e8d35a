"""Expressions of a hybrid script: each Python expression node to a te expression, a Python
value (numbers, tuples, captured constants: folded as Python folds them) or a tensor.

:class:`ExpressionParser` is the half of :class:`~schedule.hybrid.parser.HybridParser` that
reads expressions; it uses the parser's ``symbols``, ``captured`` and ``error``.
"""

from __future__ import annotations

import ast
import operator

import te
from te import dtype as dt
from te import expr as E
from te.simplify import simplify
from schedule import stmt as S
from schedule.hybrid import calls


LOOPS = {"range": S.SERIAL, "parallel": S.PARALLEL, "vectorize": S.VECTORIZED,
         "unroll": S.UNROLLED, "const_range": None}
BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
INTRINSICS = calls.table()


class HybridError(ValueError):
    """A hybrid script the parser refuses: the construct, the function, the file and line."""


class Inlined:
    """A hybrid function called inside another: its body and output tensors."""

    def __init__(self, body: S.Stmt, outputs: list):
        self.body, self.outputs = body, outputs


class ExpressionParser:
    """Expression nodes to values (see the module docstring)."""

    def expr(self, node):
        """The value of an expression node: an expression, a Python value or a tensor."""
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"unsupported expression '{type(node).__name__}' "
                                   f"({ast.unparse(node)[:60]!r})")
        return method(node)

    def expr_Constant(self, node):
        if isinstance(node.value, (bool, int, float, str)):
            return node.value
        raise self.error(node, f"constant {node.value!r}")

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    expr_List = expr_Tuple

    def expr_Name(self, node):
        name = node.id
        if name in self.symbols:
            kind, value = self.symbols[name]
            if kind == "scalar":
                return E.TensorRead(value, (E.const(0),), value.dtype)
            return value
        if name in self.captured:
            return self.captured[name]
        if name in ("True", "False"):
            return name == "True"
        raise self.error(node, f"name '{name}' is not defined (an argument, a loop variable, an "
                               f"assigned variable or a captured constant)")

    def expr_Attribute(self, node):
        value = self.expr(node.value)
        if isinstance(value, te.Tensor) and node.attr in ("shape", "dtype", "name", "ndim"):
            return tuple(value.shape) if node.attr == "shape" else getattr(value, node.attr)
        raise self.error(node, f"attribute '{node.attr}' (a tensor's shape and dtype are read)")

    def expr_Subscript(self, node):
        value = self.expr(node.value)
        if isinstance(value, te.Tensor):
            return E.TensorRead(value, self.indices(value, node), value.dtype)
        if isinstance(value, (list, tuple)):
            idx = self.expr(node.slice)
            for i in idx if isinstance(idx, tuple) else (idx,):
                k = simplify(E.as_expr(i)) if not isinstance(i, int) else i
                k = k.value if isinstance(k, E.IntImm) else k
                if not isinstance(k, int) or not isinstance(value, (list, tuple)):
                    raise self.error(node, f"a list or tuple is indexed by constants, got {idx}")
                value = value[k]
            return value
        raise self.error(node, f"'{ast.unparse(node.value)}' cannot be indexed")

    def indices(self, tensor, node: ast.Subscript) -> tuple:
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out = tuple(E.as_expr(self.expr(i)) for i in idx)
        if len(out) != len(tensor.shape):
            raise self.error(node, f"tensor '{tensor.name}' has {len(tensor.shape)} dimensions, "
                                   f"indexed with {len(out)}")
        for i in out:
            if not dt.is_int(i.dtype):
                raise self.error(node, f"index {i} of '{tensor.name}' is {i.dtype}, not an integer")
        return out

    def expr_BinOp(self, node):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__}")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, a, b, node):
        if isinstance(a, E.Expr) or isinstance(b, E.Expr):
            if op is operator.mod:
                return E.binary_op(E.FloorMod, a, b)
            if op is operator.floordiv:
                return E.binary_op(E.FloorDiv, a, b)
            if op in (operator.or_, operator.and_, operator.xor):
                a, b = E.as_expr(a), E.as_expr(b)
                if dt.is_bool(a.dtype) and dt.is_bool(b.dtype) and op is not operator.xor:
                    return op(a, b)
                name = {operator.or_: "bitwise_or", operator.and_: "bitwise_and",
                        operator.xor: "bitwise_xor"}[op]
                return getattr(te, name)(a, b)
        try:
            return op(a, b)
        except TypeError as err:
            raise self.error(node, f"{ast.unparse(node)[:60]!r}: {err}") from None

    def expr_UnaryOp(self, node):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Not):
            return E.Not(E.as_bool(v)) if isinstance(v, E.Expr) else not v
        if isinstance(node.op, ast.Invert):
            return te.bitwise_not(v) if isinstance(v, E.Expr) else ~v
        raise self.error(node, f"operator {type(node.op).__name__}")

    def expr_Compare(self, node):
        values = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        parts = []
        for op, a, b in zip(node.ops, values, values[1:]):
            fn = COMPARE.get(type(op))
            if fn is None:
                raise self.error(node, f"comparison {type(op).__name__}")
            parts.append(fn(a, b))
        return _all(parts)

    def expr_BoolOp(self, node):
        values = [self.expr(v) for v in node.values]
        return _all(values) if isinstance(node.op, ast.And) else _any(values)

    def expr_IfExp(self, node):
        cond = self.expr(node.test)
        if not isinstance(cond, E.Expr):
            return self.expr(node.body if cond else node.orelse)
        return te.if_then_else(cond, self.expr(node.body), self.expr(node.orelse))

    def expr_Call(self, node):
        if not isinstance(node.func, ast.Name):
            raise self.error(node, f"call of {ast.unparse(node.func)!r} (call intrinsics and "
                                   f"hybrid functions by name)")
        name = node.func.id
        args = [self.expr(a) for a in node.args]
        if node.keywords:
            raise self.error(node, f"keyword arguments to {name}()")
        func = self.captured.get(name) if name not in INTRINSICS else None
        if func is not None and hasattr(func, "inline_into"):
            return func.inline_into(args)
        if name in INTRINSICS:
            try:
                return INTRINSICS[name](name, args)
            except (TypeError, ValueError) as err:
                raise self.error(node, f"{name}(): {err}") from None
        if name in LOOPS or name in ("allocate", "output_tensor"):
            raise self.error(node, f"{name}() is a statement: use it as a loop's range or bind "
                                   f"it to a name")
        raise self.error(node, f"call of '{name}', which is neither an intrinsic "
                               f"({', '.join(sorted(INTRINSICS))}) nor a hybrid script")

    def as_value(self, value, dtype: str, node) -> E.Expr:
        if isinstance(value, (te.Tensor, list, tuple, str)) or value is None:
            raise self.error(node, f"cannot store {value!r} in a {dtype} element")
        return E.cast(E.as_expr(value), dtype) if not isinstance(value, E.Expr) or \
            value.dtype != dtype else value



def _all(values: list):
    """``and`` of conditions: Python truth values fold, expressions build ``te.all``."""
    exprs = []
    for v in values:
        if isinstance(v, E.Expr):
            exprs.append(v)
        elif not v:
            return False
    return te.all(*exprs) if exprs else True


def _any(values: list):
    exprs = []
    for v in values:
        if isinstance(v, E.Expr):
            exprs.append(v)
        elif v:
            return True
    return te.any(*exprs) if exprs else False


__all__ = ["BINOPS", "COMPARE", "INTRINSICS", "LOOPS", "ExpressionParser", "HybridError", "Inlined"]
