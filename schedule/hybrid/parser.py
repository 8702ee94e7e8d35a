"""Parse a hybrid script's Python AST into the loop AST (classic TVM's hybrid dialect).

The function is read as a program over tensors, not run::

    @te.hybrid.script                            produce c {
    def outer(a, b):                               for (i, 0, 64) {
        c = output_tensor((64, 64), a.dtype)         for (j, 0, 64) {
        for i in range(64):               ->           c[i, j] = (a[i]*b[j])
            for j in range(64):                      }
                c[i, j] = a[i] * b[j]              }
        return c                                 }

Loops: ``range`` (serial), ``parallel``, ``vectorize``, ``unroll``, and ``const_range``
(unrolled here, its variable a Python int).  A loop from ``lo`` runs its variable from 0
and reads ``var + lo``.  Names: an argument (a tensor, an expression, a number or a list
of them), a loop variable, a name bound once to a constant (a constant), a name assigned
any other value (a one-element buffer, realized around the loop that declares it), or a
buffer of ``allocate`` / ``output_tensor``.  Names the function captures (closure, globals)
are read as values; a captured hybrid function called on tensors is inlined, its outputs
becoming buffers of the caller.  Anything else is refused by :class:`HybridError` naming
the construct and its line.
"""

from __future__ import annotations

import ast

import te
from te import dtype as dt
from te import expr as E
from te.simplify import can_prove, const_bounds, simplify, upper_key
from te.visitor import collect_vars
from schedule import stmt as S
from schedule.hybrid import calls
from schedule.hybrid.expressions import BINOPS, LOOPS, ExpressionParser, HybridError, Inlined


class Parsed:
    """What parsing made: the body, the output placeholders (in return order), the tensors
    read or written that are not the script's own, and the script's name."""

    def __init__(self, name: str, body: S.Stmt, outputs: list, inputs: list):
        self.name, self.body, self.outputs, self.inputs = name, body, outputs, inputs


def _scopes(fn: ast.FunctionDef) -> dict:
    """Each assigned name -> (the Name node declaring it, the loop or function around that
    declaration, whether it is assigned again later)."""
    out: dict = {}

    def visit(node, level) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                if child.id in out:
                    decl, lvl, _ = out[child.id]
                    out[child.id] = (decl, lvl, True)
                else:
                    out[child.id] = (child, level, False)
            if isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name):
                if child.target.id in out:
                    decl, lvl, _ = out[child.target.id]
                    out[child.target.id] = (decl, lvl, True)
            if isinstance(child, ast.For):
                visit(child.target, level)
                for stmt in child.body + child.orelse:
                    visit_stmt(stmt, child)
            else:
                visit(child, level)

    def visit_stmt(stmt, level) -> None:
        wrapper = ast.Module(body=[stmt], type_ignores=[])
        visit(wrapper, level)

    for stmt in fn.body:
        visit_stmt(stmt, fn)
    return out


class HybridParser(ExpressionParser, ast.NodeVisitor):
    """One parse of one function on one set of arguments."""

    def __init__(self, source, args: list, captured: dict):
        self.source = source  # schedule.hybrid.script.Source
        self.args = list(args)
        self.captured = captured
        self.symbols: dict = {}  # name -> (kind, value)
        self.outputs: list = []
        self.returned: list | None = None
        self.scopes: dict = {}
        self.scope_of: dict = {}  # id(op) of an allocated buffer -> its storage scope
        self.ranges: dict = {}  # loop and shape variables -> bounds, to prove conditions

    # errors ---------------------------------------------------------------
    def error(self, node, what: str) -> HybridError:
        line = self.source.first_line + getattr(node, "lineno", 1) - 1
        return HybridError(f"hybrid script '{self.source.name}' ({self.source.filename}, line "
                           f"{line}): {what}")

    def generic_visit(self, node):
        raise self.error(node, f"unsupported construct '{type(node).__name__}' "
                               f"({ast.unparse(node)[:60]!r})")

    # the function -----------------------------------------------------------
    def parse(self) -> Parsed:
        fn = self.source.tree
        params = [a.arg for a in fn.args.args]
        if fn.args.vararg or fn.args.kwonlyargs or fn.args.kwarg:
            raise self.error(fn, "*args, keyword-only arguments and **kwargs are not supported")
        if len(params) != len(self.args):
            raise self.error(fn, f"takes {len(params)} arguments ({', '.join(params)}), "
                                 f"got {len(self.args)}")
        self.scopes = _scopes(fn)
        for a in self.args:
            for t in (a if isinstance(a, (list, tuple)) else [a]):
                for d in (t.shape if isinstance(t, te.Tensor) else ()):
                    for v in collect_vars(E.as_expr(d)):
                        self.ranges.setdefault(v, (0, None))  # extents are never negative
        for name, value in zip(params, self.args):
            self.symbols[name] = ("input", value)
        body = self.wrap_realize(fn, self.block(fn.body))
        if self.returned is None:
            raise self.error(fn, "a hybrid script must return its output tensors")
        return Parsed(fn.name, body, self.returned, self.foreign_tensors(body))

    def foreign_tensors(self, body: S.Stmt) -> list:
        """The tensors of the arguments (in order), then the others the body reads or writes
        that are not its own (outputs or buffers realized inside)."""
        from te.visitor import collect_reads

        own = {id(t.op) for t in self.returned}
        S.walk_stmt(body, lambda s: own.add(id(s.tensor.op)) if isinstance(s, S.Realize) else None)
        found: list = []

        def add(t) -> None:
            if isinstance(t, te.Tensor) and id(t.op) not in own and t not in found:
                found.append(t)

        for a in self.args:
            for t in (a if isinstance(a, (list, tuple)) else [a]):
                add(t)

        def visit(s) -> None:
            if isinstance(s, S.Provide):
                add(s.tensor)
            for e in S.stmt_exprs(s):
                for r in collect_reads(e) if isinstance(e, E.Expr) else ():
                    add(r.tensor)

        S.walk_stmt(body, visit)
        return found

    def block(self, stmts: list) -> S.Stmt:
        out = []
        for k, st in enumerate(stmts):
            if k == 0 and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) \
                    and isinstance(st.value.value, str):
                continue  # a docstring
            if self.returned is not None:
                raise self.error(st, "statements after 'return'")
            s = self.visit(st)
            if s is not None:
                out.append(s)
        return S.seq(*out) if out else None

    def wrap_realize(self, level, body):
        """Realize the buffers declared in ``level`` (a loop or the function) around its body;
        they go out of scope there."""
        for name, (decl, lvl, _) in self.scopes.items():
            if lvl is not level or name not in self.symbols:
                continue
            kind, t = self.symbols[name]
            if kind not in ("buffer", "scalar"):
                continue
            del self.symbols[name]
            if body is not None:
                bounds = tuple(E.Range(E.const(0), d) for d in t.shape)
                body = S.Realize(t, bounds, self.scope_of.get(id(t.op), "global"), body)
        return body

    # statements -------------------------------------------------------------
    def visit_Expr(self, node):
        if isinstance(node.value, ast.Constant):
            return None
        raise self.error(node, f"an expression statement ({ast.unparse(node)[:60]!r}) has no "
                               f"effect in a hybrid script")

    def visit_Pass(self, node):
        return None

    def visit_Return(self, node):
        values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        outs = []
        for v in values:
            if not isinstance(v, ast.Name) or self.symbols.get(v.id, (None,))[0] != "output":
                raise self.error(node, "return the tensors made by output_tensor, by name")
            outs.append(self.symbols[v.id][1])
        self.returned = outs
        return None

    def visit_Assert(self, node):
        cond = self.expr(node.test)
        if cond is True or (isinstance(cond, E.Expr) and can_prove(cond, self.ranges)):
            return None
        msg = ast.unparse(node.msg) if node.msg is not None else ast.unparse(node.test)
        raise self.error(node, f"assert {ast.unparse(node.test)!r} ({msg}) does not hold at "
                               f"compile time; run-time asserts are not supported")

    def visit_Assign(self, node):
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment (a = b = ...)")
        target = node.targets[0]
        if isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name) \
                and node.value.func.id in ("allocate", "output_tensor") \
                and node.value.func.id not in self.symbols:
            return self.declare_buffer(target, node.value)
        value = self.expr(node.value)
        if isinstance(value, Inlined):
            return self.bind_call(target, value)
        if isinstance(target, ast.Name):
            return self.assign_name(target, value, node)
        if isinstance(target, ast.Subscript):
            tensor, idx = self.store_target(target)
            return S.Provide(tensor, idx, self.as_value(value, tensor.dtype, node))
        raise self.error(node, f"assignment to {type(target).__name__} "
                               f"({ast.unparse(target)!r})")

    def visit_AugAssign(self, node):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"augmented assignment {type(node.op).__name__}")
        if isinstance(node.target, ast.Name):
            kind, t = self.symbols.get(node.target.id, (None, None))
            if kind != "scalar":
                raise self.error(node, f"'{node.target.id}' is not a variable assigned in the script")
            idx = (E.const(0),)
        else:
            t, idx = self.store_target(node.target)
        old = E.TensorRead(t, idx, t.dtype)
        value = self.binop(op, old, self.expr(node.value), node)
        return S.Provide(t, idx, self.as_value(value, t.dtype, node))

    def declare_buffer(self, target, call):
        if not isinstance(target, ast.Name):
            raise self.error(call, f"bind {call.func.id}(...) to a plain name")
        args = [self.expr(a) for a in call.args]
        kw = {k.arg: self.expr(k.value) for k in call.keywords}
        shape = args[0] if args else kw.get("shape")
        dtype = args[1] if len(args) > 1 else kw.get("dtype", "float32")
        scope = args[2] if len(args) > 2 else kw.get("scope", "global")
        if not isinstance(shape, (tuple, list)):
            raise self.error(call, f"{call.func.id}: the shape must be a tuple, got {shape!r}")
        if not isinstance(dtype, str):
            raise self.error(call, f"{call.func.id}: the dtype must be a string, got {dtype!r}")
        name = target.id
        if name in self.symbols:
            raise self.error(call, f"'{name}' is already defined")
        # an extent computed from the inputs' shapes (a.shape[0] * 4) folds to a constant
        shape = tuple(simplify(e) if isinstance(e, E.Expr) else e for e in shape)
        t = te.placeholder(shape, dt.normalize(dtype), name)
        if call.func.id == "output_tensor":
            self.symbols[name] = ("output", t)
            self.outputs.append(t)
        else:
            self.symbols[name] = ("buffer", t)
            self.scope_of[id(t.op)] = scope
        return None

    def assign_name(self, target: ast.Name, value, node):
        name = target.id
        kind, _ = self.symbols.get(name, (None, None))
        if kind in ("loop", "constloop"):
            raise self.error(node, f"loop variable '{name}' cannot be assigned")
        if kind in ("input", "output", "buffer"):
            raise self.error(node, f"'{name}' names a tensor or an argument; assign its "
                                   f"elements ({name}[...] = ...)")
        decl, _, reassigned = self.scopes[name]
        if kind is None:
            if decl is not target:
                raise self.error(node, f"'{name}' is used outside the loop that declares it")
            if not reassigned and _constant(value):
                self.symbols[name] = ("const", value)
                return None
            dtype = calls.dtype_of(value)
            self.symbols[name] = ("scalar", te.placeholder((1,), dtype, name))
        _, t = self.symbols[name]
        return S.Provide(t, (E.const(0),), self.as_value(value, t.dtype, node))

    def bind_call(self, target, inlined: "Inlined"):
        names = target.elts if isinstance(target, ast.Tuple) else [target]
        if len(names) != len(inlined.outputs) or not all(isinstance(n, ast.Name) for n in names):
            raise self.error(target, f"bind the {len(inlined.outputs)} outputs of the call to "
                                     f"as many names")
        for n, t in zip(names, inlined.outputs):
            self.symbols[n.id] = ("buffer", t)
        return inlined.body

    def store_target(self, target: ast.Subscript):
        tensor = self.expr(target.value)
        if not isinstance(tensor, te.Tensor):
            raise self.error(target, f"'{ast.unparse(target.value)}' is not a tensor")
        return tensor, self.indices(tensor, target)

    def visit_If(self, node):
        cond = self.expr(node.test)
        if not isinstance(cond, E.Expr):
            return self.block(node.body if cond else node.orelse)
        cond = simplify(E.as_bool(cond), self.ranges)
        if isinstance(cond, E.IntImm):
            return self.block(node.body if cond.value else node.orelse)
        then = self.block(node.body) or S.seq()
        other = self.block(node.orelse) if node.orelse else None
        return S.IfThenElse(cond, then, other)

    def visit_For(self, node):
        if node.orelse:
            raise self.error(node, "for ... else")
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "the loop variable must be one name")
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in LOOPS):
            raise self.error(node, f"loops run over {', '.join(LOOPS)}, not "
                                   f"{ast.unparse(it)[:40]!r}")
        args = [self.expr(a) for a in it.args]
        if not 1 <= len(args) <= 2 or it.keywords:
            raise self.error(node, f"{it.func.id}() takes (extent) or (begin, end)")
        lo, hi = (0, args[0]) if len(args) == 1 else args
        name = node.target.id
        if name in self.symbols:
            raise self.error(node, f"loop variable '{name}' shadows a name already defined")
        if it.func.id == "const_range":
            return self.unrolled(node, name, lo, hi)
        ext = simplify(E.as_expr(hi - lo)) if not isinstance(hi - lo, int) else E.const(hi - lo)
        var = E.Var(name, "int32" if not isinstance(ext, E.Expr) else ext.dtype)
        self.symbols[name] = ("loop", var if _is_zero(lo) else var + lo)
        last = simplify(ext - 1, self.ranges)
        self.ranges[var] = (0, const_bounds(last, self.ranges)[1])
        self.ranges[upper_key(var)] = last
        body = self.wrap_realize(node, self.block(node.body))
        del self.symbols[name]
        return S.For(var, E.const(0), ext, LOOPS[it.func.id], body or S.seq())

    def unrolled(self, node, name, lo, hi):
        lo, hi = simplify(E.as_expr(lo)), simplify(E.as_expr(hi))
        if not (isinstance(lo, E.IntImm) and isinstance(hi, E.IntImm)):
            raise self.error(node, f"const_range needs constant bounds, got ({lo}, {hi})")
        out = []
        for k in range(lo.value, hi.value):
            self.symbols[name] = ("constloop", k)
            body = self.wrap_realize(node, self.block(node.body))
            if body is not None:
                out.append(body)
            del self.symbols[name]
        return S.seq(*out) if out else None

def _constant(value) -> bool:
    return isinstance(value, (bool, int, float)) or isinstance(value, (E.IntImm, E.FloatImm))


def _is_zero(x) -> bool:
    return (isinstance(x, int) and x == 0) or (isinstance(x, E.IntImm) and x.value == 0)


__all__ = ["HybridError", "HybridParser", "Inlined", "Parsed"]
