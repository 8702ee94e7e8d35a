"""The loop AST: statements of the one IR, their printer and generic traversal.

``schedule_ops`` builds a nest of ``For``/``Provide``/``Realize`` on tensors;
``storage_flatten`` turns it into ``Allocate``/``Store``/``Load`` on flat
buffers; codegen walks the result.  Sequences are flat ``Block`` tuples.
"""

from __future__ import annotations

from typing import Callable

from te import expr as E
from te.expr import node
from te.printer import expr_str
from te.visitor import map_children, pre_order


class Stmt:
    __slots__ = ()

    def __repr__(self) -> str:
        return stmt_str(self)

    __str__ = __repr__


SERIAL, PARALLEL, VECTORIZED, UNROLLED = "serial", "parallel", "vectorized", "unrolled"
THREAD_BOUND = "thread_binding"  # a loop bound to a GPU thread axis (schedule.thread_bind)


@node
class For(Stmt):
    """``for (loop_var, min, extent) { body }`` of a ``kind`` (serial, parallel...)."""

    loop_var: E.Var
    min: E.Expr
    extent: E.Expr
    kind: str
    body: Stmt
    pragmas: tuple = ()


@node
class Block(Stmt):
    stmts: tuple

    def __getitem__(self, k: int) -> Stmt:  # classic SeqStmt indexing (``seq[0]``)
        return self.stmts[k]

    def __len__(self) -> int:
        return len(self.stmts)


@node
class IfThenElse(Stmt):
    cond: E.Expr
    then_case: Stmt
    else_case: Stmt | None = None


@node
class LetStmt(Stmt):
    var: E.Var
    value: E.Expr
    body: Stmt


@node
class Provide(Stmt):
    """``tensor[indices] = value`` before storage flattening."""

    tensor: object
    indices: tuple
    value: E.Expr


@node
class Realize(Stmt):
    """Storage for ``tensor`` over ``bounds`` (one Range per dimension) in ``body``."""

    tensor: object
    bounds: tuple
    scope: str
    body: Stmt


@node
class Produce(Stmt):
    """Marks the statements that compute stage ``name`` (printing only)."""

    name: str
    body: Stmt


@node
class Store(Stmt):
    buffer: E.Buffer
    value: E.Expr
    index: E.Expr


@node
class Allocate(Stmt):
    """``buffer`` of ``extent`` elements, live in ``body``."""

    buffer: E.Buffer
    extent: E.Expr
    body: Stmt


@node
class Evaluate(Stmt):
    value: E.Expr


_EXPRS = {
    For: ("min", "extent"), IfThenElse: ("cond",), LetStmt: ("value",),
    Provide: ("indices", "value"), Realize: (), Produce: (), Store: ("value", "index"),
    Allocate: ("extent",), Evaluate: ("value",), Block: (),
}
_STMTS = {
    For: ("body",), IfThenElse: ("then_case", "else_case"), LetStmt: ("body",),
    Realize: ("body",), Produce: ("body",), Allocate: ("body",), Block: ("stmts",),
}


def seq(*stmts) -> Stmt:
    """A flat Block of the given statements (nested Blocks are spliced, None dropped)."""
    flat: list = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Block):
            flat.extend(s.stmts)
        elif isinstance(s, (list, tuple)):
            flat.extend(seq(*s).stmts if s else ())
        else:
            flat.append(s)
    return flat[0] if len(flat) == 1 else Block(tuple(flat))


def map_stmt(s: Stmt, fstmt: Callable, fexpr: Callable | None = None) -> Stmt:
    """Rebuild ``s`` with ``fstmt`` on child statements and ``fexpr`` on its expressions."""
    changes = {}
    if fexpr is not None:
        for name in _EXPRS[type(s)]:
            v = getattr(s, name)
            nv = tuple(fexpr(x) for x in v) if isinstance(v, tuple) else fexpr(v)
            if (nv is not v) if not isinstance(v, tuple) else any(a is not b for a, b in zip(nv, v)):
                changes[name] = nv
    for name in _STMTS.get(type(s), ()):
        v = getattr(s, name)
        if v is None:
            continue
        if isinstance(v, tuple):
            nv = tuple(fstmt(x) for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                changes[name] = seq(*nv).stmts if isinstance(seq(*nv), Block) else (seq(*nv),)
        else:
            nv = fstmt(v)
            if nv is not v:
                changes[name] = nv
    if not changes:
        return s
    values = {f: getattr(s, f) for f in s.__dataclass_fields__}
    values.update(changes)
    return type(s)(**values)


def transform(s: Stmt, post: Callable[[Stmt], Stmt | None], fexpr: Callable | None = None) -> Stmt:
    """Bottom-up rewrite of statements; ``fexpr`` (if given) maps every expression."""

    def visit(x: Stmt) -> Stmt:
        y = map_stmt(x, visit, fexpr)
        r = post(y)
        return y if r is None else r

    return visit(s)


def rename_tensors(s: Stmt, tmap: dict) -> Stmt:
    """``s`` with every read and store of a tensor keyed ``(id(op), value_index)`` in ``tmap``
    naming the mapped tensor instead (an opaque stage's outputs under its own name)."""
    def rule(x):
        if isinstance(x, E.TensorRead):
            new = tmap.get((id(x.tensor.op), x.tensor.value_index))
            if new is not None:
                return E.TensorRead(new, tuple(pre_order(i, rule) for i in x.indices), x.dtype)
        return None

    def post(x):
        if isinstance(x, Provide):
            new = tmap.get((id(x.tensor.op), x.tensor.value_index))
            if new is not None:
                return Provide(new, x.indices, x.value)
        return None

    return transform(s, post, lambda e: pre_order(e, rule))


def walk_stmt(s: Stmt, fn: Callable[[Stmt], None]) -> None:
    fn(s)
    for name in _STMTS.get(type(s), ()):
        v = getattr(s, name)
        if v is None:
            continue
        for x in v if isinstance(v, tuple) else (v,):
            walk_stmt(x, fn)


def child_stmts(s: Stmt) -> list:
    """The statements directly under ``s``."""
    out = []
    for name in _STMTS.get(type(s), ()):
        v = getattr(s, name)
        if v is not None:
            out.extend(v if isinstance(v, tuple) else (v,))
    return out


def stmt_exprs(s: Stmt) -> list:
    """The expressions directly held by ``s`` (not those of child statements)."""
    out = []
    for name in _EXPRS[type(s)]:
        v = getattr(s, name)
        out.extend(v if isinstance(v, tuple) else (v,))
    return out


def map_stmt_exprs(s: Stmt, fexpr: Callable[[E.Expr], E.Expr]) -> Stmt:
    """Apply ``fexpr`` to every expression of every statement in ``s``."""
    return transform(s, lambda x: None, fexpr)


# printing -------------------------------------------------------------------
def _name_shared(value, pad: str, out: list, loops: dict) -> dict:
    """Print subexpressions used more than once as ``let`` lines; return their names."""
    from te.printer import shared_subexprs

    shared = shared_subexprs(value)
    if not shared:
        return loops
    names: dict = dict(loops)
    for k, sub in enumerate(shared):
        text = expr_str(sub, names)
        names[id(sub)] = f"%{k}"
        out.append(f"{pad}let %{k} = {text}")
    return names


def stmt_str(s: Stmt) -> str:
    lines: list[str] = []
    _print(s, 0, lines, _loop_names(s))
    return "\n".join(lines) + "\n"


def _loop_names(s: Stmt) -> dict:
    """Printed names of loops that shadow an enclosing loop of the same name.

    Two loops named ``i`` are different loops; when one is nested in the other
    (a stage computed at a consumer's loop ``i``), the inner prints as ``i_1``
    so that every printed index names exactly one loop.  Returns ``{id(var): name}``.
    """
    names: dict = {}

    def visit(x: Stmt, scope: dict) -> None:
        v = x.loop_var if isinstance(x, For) else x.var if isinstance(x, LetStmt) else None
        if v is not None:
            name = names.get(id(v), v.name)
            if scope.get(name, v) is not v:
                k = 1
                while f"{v.name}_{k}" in scope:
                    k += 1
                name = names[id(v)] = f"{v.name}_{k}"
            scope = {**scope, name: v}
        for field in _STMTS.get(type(x), ()):
            child = getattr(x, field)
            for c in (child if isinstance(child, tuple) else (child,)):
                if c is not None:
                    visit(c, scope)

    visit(s, {})
    return names


_KIND_WORD = {SERIAL: "for", PARALLEL: "parallel", VECTORIZED: "vectorized", UNROLLED: "unrolled"}


def _print(s: Stmt, depth: int, out: list, names: dict) -> None:
    pad = "  " * depth
    t = type(s)
    if t is Block:
        for x in s.stmts:
            _print(x, depth, out, names)
    elif t is For and s.kind == THREAD_BOUND:  # TVM: the loop is an attribute of the body
        ext = expr_str(s.extent, names)
        out.append(f"{pad}// attr [iter_var({s.loop_var.name}, range(min={expr_str(s.min, names)}, ext={ext}), "
                   f"{dict(s.pragmas).get('thread_tag', s.loop_var.name)})] thread_extent = {ext}")
        _print(s.body, depth, out, names)
    elif t is For:
        word = _KIND_WORD[s.kind]
        out.append(f"{pad}{word} ({names.get(id(s.loop_var), s.loop_var.name)}, {expr_str(s.min, names)}, {expr_str(s.extent, names)}) {{")
        for k, v in s.pragmas:
            out.append(f"{pad}  // pragma {k} = {v}")
        _print(s.body, depth + 1, out, names)
        out.append(pad + "}")
    elif t is IfThenElse:
        out.append(f"{pad}if ({expr_str(s.cond, names)}) {{")
        _print(s.then_case, depth + 1, out, names)
        if s.else_case is not None:
            out.append(pad + "} else {")
            _print(s.else_case, depth + 1, out, names)
        out.append(pad + "}")
    elif t is LetStmt:
        out.append(f"{pad}let {names.get(id(s.var), s.var.name)} = {expr_str(s.value, names)}")
        _print(s.body, depth, out, names)
    elif t is Provide:
        idx = ", ".join(expr_str(i, names) for i in s.indices)
        shared = _name_shared(s.value, pad, out, names)
        out.append(f"{pad}{s.tensor.name}[{idx}] = {expr_str(s.value, shared)}")
    elif t is Realize:
        bounds = ", ".join(f"[{expr_str(r.min, names)}, {expr_str(r.extent, names)}]" for r in s.bounds)
        out.append(f"{pad}// realize {s.tensor.name}([{bounds}]) in {s.scope}")
        _print(s.body, depth, out, names)
    elif t is Produce:
        out.append(f"{pad}produce {s.name} {{")
        _print(s.body, depth + 1, out, names)
        out.append(pad + "}")
    elif t is Store:
        shared = _name_shared(s.value, pad, out, names)
        out.append(f"{pad}{s.buffer.name}[{expr_str(s.index, names)}] = {expr_str(s.value, shared)}")
    elif t is Allocate:
        out.append(f"{pad}allocate {s.buffer.name}[{s.buffer.dtype} * {expr_str(s.extent, names)}]")
        _print(s.body, depth, out, names)
    elif t is Evaluate:
        out.append(f"{pad}{expr_str(s.value, names)}")
    else:
        out.append(f"{pad}{s!r}")


__all__ = [
    "Stmt", "For", "Block", "IfThenElse", "LetStmt", "Provide", "Realize", "Produce",
    "Store", "Allocate", "Evaluate", "seq", "map_stmt", "transform", "walk_stmt",
    "stmt_exprs", "map_stmt_exprs", "stmt_str", "map_children",
]
