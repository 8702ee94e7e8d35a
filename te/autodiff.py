"""Reverse-mode differentiation of te computes (classic ``te.gradient``).

``te.gradient(out, [A, W], head)`` returns ``dA, dW``: for every input, the sum over
``out``'s points of ``head[i] * d out[i] / d A[x]``, as te computes that schedule and
build like any other.  Operations are visited from ``out`` back to the inputs; each
read ``A[g(i, k)]`` of a stage ``out[i] = f(...)`` (``k``: the reduce axes of a sum)
adds the term

    dA[x] = sum over (i, k) with g(i, k) == x of  head[i] * df/dA[g(i, k)]

and the equation ``g(i, k) == x`` is solved where an index is linear in one loop
variable (``i + kh`` gives ``i = x - kh``; ``2*i + kh`` gives ``i = (x - kh) // 2`` where
``(x - kh) % 2 == 0``), so a gradient costs about what the forward stage does instead of
``|out| * |A|``.  A reduction with another reducer (``max``, a product, any
``comm_reducer``) gets its partial derivative per output point from a tuple reduction of
(value, derivative) whose combiner is the reducer's own, differentiated::

    (x, dx) + (y, dy) -> (max(x, y), select(x >= y, dx, dy))

Differentiable: arithmetic, min/max, select, casts between floats, and the float
intrinsics (exp, log, sqrt, pow, tanh, sigmoid, erf, trigonometry; floor, ceil, round,
trunc have derivative 0).  Integer tensors carry no gradient.
"""

from __future__ import annotations

import math

from te import dtype as dt
from te import expr as E
from te import intrin as I
from te.operation import compute, reduce_axis
from te.reduction import CommReducer
from te.reduction import sum as te_sum
from te.simplify import simplify
from te.tensor import ComputeOp, PlaceholderOp, Tensor
from te.visitor import collect_vars, pre_order, substitute, walk


def gradient(output: Tensor, inputs, head: Tensor | None = None) -> list:
    """The adjoints of ``inputs`` (tensors ``output`` depends on) for the adjoint ``head`` of
    ``output``: shape ``prefix + output.shape``, giving results of shape ``prefix + input.shape``.
    Without ``head``, the identity of shape ``output.shape * 2`` (the results are Jacobians)."""
    inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if head is None:
        n = len(output.shape)
        head = compute(tuple(output.shape) * 2, lambda *ij: I.if_then_else(
            I.all(*[ij[d] == ij[n + d] for d in range(n)]) if n else E.const(True),
            E.const(1.0, output.dtype), E.const(0.0, output.dtype)), name=f"{output.op.name}.identity")
    nprefix = len(head.shape) - len(output.shape)
    if nprefix < 0 or not all(_same(a, b) for a, b in zip(head.shape[nprefix:], output.shape)):
        raise ValueError(f"te.gradient: head has shape {tuple(head.shape)}, which must end with the output's "
                         f"shape {tuple(output.shape)}")
    prefix = tuple(head.shape[:nprefix])
    wanted = {_key(t) for t in inputs}
    adjoint = {_key(output): head}
    for op in _reverse_topological(output, wanted):
        for k in range(op.num_outputs):
            adj = adjoint.get(_key(op.output(k)))
            if adj is None:
                continue
            if not isinstance(op, ComputeOp):
                raise ValueError(f"te.gradient: cannot differentiate through '{op.name}' ({type(op).__name__}); "
                                 f"only te.compute stages have a body to differentiate")
            if op.num_outputs != 1:
                raise ValueError(f"te.gradient: cannot differentiate through '{op.name}', a compute with "
                                 f"{op.num_outputs} outputs (a tuple reduction)")
            for t in op.input_tensors:
                if not dt.is_float(t.dtype) or not _depends(t.op, wanted, {}):
                    continue
                for term in _contributions(op, t, adj, prefix):
                    prev = adjoint.get(_key(t))
                    adjoint[_key(t)] = term if prev is None else _add(prev, term)
    out = []
    for t in inputs:
        g = adjoint.get(_key(t))
        if g is None:
            g = compute(prefix + tuple(t.shape), lambda *i, t=t: E.const(0.0, t.dtype), name=f"{t.op.name}.grad")
        out.append(g)
    return out


def _key(t: Tensor) -> tuple:
    return (id(t.op), t.value_index)


def _same(a, b) -> bool:
    a, b = simplify(E.as_expr(a)), simplify(E.as_expr(b))
    return a is b or (isinstance(a, E.IntImm) and isinstance(b, E.IntImm) and a.value == b.value)


def _depends(op, wanted: set, memo: dict) -> bool:
    if id(op) not in memo:
        memo[id(op)] = any(_key(op.output(k)) in wanted for k in range(op.num_outputs)) or any(
            _depends(t.op, wanted, memo) for t in op.input_tensors)
    return memo[id(op)]


def _reverse_topological(output: Tensor, wanted: set) -> list:
    order, seen, memo = [], set(), {}

    def visit(op):
        if id(op) in seen or not _depends(op, wanted, memo):
            return
        seen.add(id(op))
        for t in op.input_tensors:
            visit(t.op)
        order.append(op)

    visit(output.op)
    return [op for op in reversed(order) if not isinstance(op, PlaceholderOp)]


def _add(a: Tensor, b: Tensor) -> Tensor:
    return compute(a.shape, lambda *i: a(*i) + b(*i), name=a.op.name)


# one stage's contributions ---------------------------------------------------------------
def _contributions(op: ComputeOp, t: Tensor, adj: Tensor, prefix: tuple) -> list:
    body = op.body[0]
    if isinstance(body, E.Reduce) and not _is_sum(body.combiner):
        return [_through_reducer(op, body, t, adj, prefix)]
    if isinstance(body, E.Reduce):
        expr, domain, cond = body.source[body.value_index], list(op.axis) + list(body.axis), body.condition
    else:
        expr, domain, cond = body, list(op.axis), E.const(True)
    name = f"{op.name}.grad.{t.op.name}"
    out = []
    for read, partial in _partials(expr, t):
        out.append(_gather(t, read, partial, adj, prefix, op.axis, domain, cond, name))
    return out


def _partials(expr: E.Expr, t: Tensor) -> list:
    """``[(read of t, d expr / d that read)]``, each read of ``t`` taken as its own variable."""
    reads: list = []
    walk(expr, lambda x: reads.append(x) if isinstance(x, E.TensorRead) and x.tensor == t else None)
    if not reads:
        return []
    vars_ = {id(r): E.Var(f"{t.op.name}.read{k}", r.dtype) for k, r in enumerate(reads)}
    back = {v: r for r, v in zip(reads, vars_.values())}
    opened = pre_order(expr, lambda x: vars_.get(id(x)))
    out = []
    for r in reads:
        d = derivative(opened, vars_[id(r)])
        if d is not None:
            out.append((r, simplify(substitute(d, back))))
    return out


def _gather(t, read, partial, adj, prefix, out_axes, domain, cond, name) -> Tensor:
    """``d t[x] += sum over domain with read's index == x of adj[i] * partial``."""

    def fcompute(*idx):
        p, x = idx[:len(prefix)], idx[len(prefix):]
        free = list(domain)
        vmap: dict = {}
        conds = [cond]
        for d, (index, xd) in enumerate(zip(read.indices, x)):
            index = simplify(substitute(index, vmap))
            solved = _solve(index, xd, free)
            if solved is None:
                conds.append(index == xd)
                continue
            iv, value, extra = solved
            free.remove(iv)
            vmap = {k: simplify(substitute(v, {iv.var: value})) for k, v in vmap.items()}
            vmap[iv.var] = value
            conds.extend(extra + [value >= iv.dom.min, value < iv.dom.min + iv.dom.extent])
        axes = [reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), iv.var.name) for iv in free]
        to_axes = {iv.var: a.var for iv, a in zip(free, axes)}
        full = {k: substitute(v, to_axes) for k, v in vmap.items()}
        full.update(to_axes)  # every value now names only x and the new reduce axes
        value = adj(*p, *[simplify(substitute(iv.var, full)) for iv in out_axes]) * substitute(partial, full)
        where = simplify(substitute(_all(conds), full))
        if axes:
            return te_sum(value, axis=axes, where=where)
        return I.if_then_else(where, value, E.const(0.0, value.dtype))

    return compute(prefix + tuple(t.shape), fcompute, name=name)


def _solve(index: E.Expr, x: E.Expr, free: list):
    """``(loop, its value, conditions)`` making ``index == x`` for one free loop ``index`` is
    linear in (coefficient 1 or -1 first), or None."""
    best = None
    for iv in free:
        lin = _linear(index, iv.var)
        if lin is None or lin[0] == 0:
            continue
        if best is None or abs(lin[0]) == 1 < abs(best[1][0]):
            best = (iv, lin)
    if best is None:
        return None
    iv, (c, rest) = best
    if c < 0:
        c, rest, x = -c, -rest, -x
    num = simplify(x - rest)
    if c == 1:
        return iv, num, []
    return iv, simplify(E.FloorDiv(num, E.const(c), num.dtype)), [E.FloorMod(num, E.const(c), num.dtype) == 0]


def _linear(e: E.Expr, v: E.Var):
    """``(c, rest)`` with ``e == c * v + rest`` and ``v`` not in ``rest``, for a constant ``c``."""
    if v not in collect_vars(e):
        return 0, e
    if e is v:
        return 1, E.const(0, e.dtype)
    if isinstance(e, (E.Add, E.Sub)):
        a, b = _linear(e.a, v), _linear(e.b, v)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if isinstance(e, E.Add) else (a[0] - b[0], a[1] - b[1])
    if isinstance(e, E.Mul):
        for s, o in ((e.a, e.b), (e.b, e.a)):
            if isinstance(o, E.IntImm):
                lin = _linear(s, v)
                return None if lin is None else (lin[0] * o.value, lin[1] * o.value)
    return None


def _all(conds: list) -> E.Expr:
    out = E.const(True)
    for c in conds:
        c = simplify(E.as_bool(c))
        if isinstance(c, E.IntImm) and c.value == 1:
            continue
        out = c if isinstance(out, E.IntImm) else E.And(out, c, "bool")
    return out


def _is_sum(c: CommReducer) -> bool:
    r = c.result[0] if len(c.result) == 1 else None
    ident = c.identity[0] if len(c.identity) == 1 else None
    return (isinstance(r, E.Add) and {id(r.a), id(r.b)} == {id(c.lhs[0]), id(c.rhs[0])}
            and isinstance(ident, (E.IntImm, E.FloatImm)) and ident.value == 0)


def _through_reducer(op, body, t, adj, prefix) -> Tensor:
    """A non-sum reduction: its partial derivative per (output point, t point) from a tuple
    reduction whose combiner is the reducer's, differentiated; then gathered over the outputs."""
    c = body.combiner
    if len(c.result) != 1:
        raise ValueError(f"te.gradient: cannot differentiate through '{op.name}', a tuple reduction")
    src = body.source[body.value_index]
    partials = _partials(src, t)
    dtype = src.dtype
    lhs = (E.Var("x", dtype), E.Var("dx", dtype))
    rhs = (E.Var("y", dtype), E.Var("dy", dtype))
    res = substitute(c.result[0], {c.lhs[0]: lhs[0], c.rhs[0]: rhs[0]})
    da, db = derivative(res, lhs[0]), derivative(res, rhs[0])
    dres = _sum_terms([None if da is None else da * lhs[1], None if db is None else db * rhs[1]], dtype)
    combiner = CommReducer(f"{c.name}.grad", lhs, rhs, (res, dres), (c.identity[0], E.const(0.0, dtype)))
    out_axes, nout = list(op.axis), len(op.axis)

    def fpartial(*idx):
        i, x = idx[:nout], idx[nout:]
        axes = [reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), iv.var.name) for iv in body.axis]
        vmap = {iv.var: v for iv, v in zip(out_axes, i)}
        vmap.update({iv.var: a.var for iv, a in zip(body.axis, axes)})
        terms = [I.if_then_else(_all([a == b for a, b in zip(r.indices, x)]), p, E.const(0.0, dtype))
                 for r, p in partials]
        source = (substitute(src, vmap), substitute(_sum_terms(terms, dtype), vmap))
        cond = substitute(body.condition, vmap)
        return tuple(E.Reduce(combiner, source, tuple(axes), cond, k, dtype) for k in range(2))

    part = compute(tuple(op.shape) + tuple(t.shape), fpartial, name=f"{op.name}.partial.{t.op.name}")[1]

    def fcompute(*idx):
        p, x = idx[:len(prefix)], idx[len(prefix):]
        axes = [reduce_axis((iv.dom.min, iv.dom.min + iv.dom.extent), iv.var.name) for iv in out_axes]
        i = [a.var for a in axes]
        if not axes:
            return adj(*p) * part(*x)
        return te_sum(adj(*p, *i) * part(*i, *x), axis=axes)

    return compute(prefix + tuple(t.shape), fcompute, name=f"{op.name}.grad.{t.op.name}")


def _sum_terms(terms: list, dtype: str) -> E.Expr:
    terms = [x for x in terms if x is not None]
    if not terms:
        return E.const(0.0, dtype)
    out = terms[0]
    for x in terms[1:]:
        out = out + x
    return out


# symbolic derivatives ------------------------------------------------------------------
def derivative(e: E.Expr, v: E.Var) -> E.Expr | None:
    """``d e / d v`` for a float variable ``v`` (None: identically 0)."""
    memo: dict = {}

    def d(x):
        if id(x) not in memo:
            memo[id(x)] = _rule(x, v, d)
        return memo[id(x)]

    return d(e)


def _rule(x, v, d):
    if x is v:
        return E.const(1.0, v.dtype)
    if not dt.is_float(x.dtype) or v not in collect_vars(x):
        return None
    if isinstance(x, (E.Add, E.Sub)):
        a, b = d(x.a), d(x.b)
        if b is None:
            return a
        if isinstance(x, E.Add):
            return b if a is None else a + b
        return -b if a is None else a - b
    if isinstance(x, E.Mul):
        return _sum_terms([None if d(x.a) is None else _times(d(x.a), x.b),
                           None if d(x.b) is None else _times(x.a, d(x.b))], x.dtype)
    if isinstance(x, E.Div):
        da, db = d(x.a), d(x.b)
        num = _sum_terms([None if da is None else da * x.b, None if db is None else -(x.a * db)], x.dtype)
        return num / (x.b * x.b)
    if isinstance(x, (E.Min, E.Max)):
        take_a = x.a <= x.b if isinstance(x, E.Min) else x.a >= x.b
        return _select(take_a, d(x.a), d(x.b), x.dtype)
    if isinstance(x, E.Select):
        return _select(x.cond, d(x.true_value), d(x.false_value), x.dtype)
    if isinstance(x, E.Cast):
        inner = d(x.value)
        return None if inner is None else E.cast(inner, x.dtype)
    if isinstance(x, E.Call):
        return _call_rule(x, d)
    raise ValueError(f"te.gradient: cannot differentiate {type(x).__name__} node {x}")


def _times(a, b):
    """``a * b``, without a factor that is the constant 1."""
    if isinstance(a, E.FloatImm) and a.value == 1.0:
        return b
    if isinstance(b, E.FloatImm) and b.value == 1.0:
        return a
    return a * b


def _select(cond, a, b, dtype):
    if a is None and b is None:
        return None
    zero = E.const(0.0, dtype)
    return I.if_then_else(cond, zero if a is None else a, zero if b is None else b)


_ZERO_DERIVATIVE = ("floor", "ceil", "round", "trunc", "nearbyint")


def _call_rule(x: E.Call, d):
    name, args = x.name, x.args
    if name in _ZERO_DERIVATIVE:
        return None
    if name == "pow":
        a, b = args
        da, db = d(a), d(b)
        return _sum_terms([None if da is None else b * I.power(a, b - 1.0) * da,
                           None if db is None else x * I.log(a) * db], x.dtype)
    da = d(args[0])
    if da is None:
        return None
    a = args[0]
    rules = {
        "exp": lambda: x, "exp2": lambda: x * math.log(2.0), "exp10": lambda: x * math.log(10.0),
        "expm1": lambda: x + 1.0, "log": lambda: 1.0 / a, "log2": lambda: 1.0 / (a * math.log(2.0)),
        "log10": lambda: 1.0 / (a * math.log(10.0)), "log1p": lambda: 1.0 / (a + 1.0),
        "sqrt": lambda: 0.5 / x, "rsqrt": lambda: -0.5 * x / a, "tanh": lambda: 1.0 - x * x,
        "sigmoid": lambda: x * (1.0 - x), "fabs": lambda: I.if_then_else(a >= 0.0, 1.0, -1.0),
        "erf": lambda: (2.0 / math.sqrt(math.pi)) * I.exp(-(a * a)),
        "sin": lambda: I.cos(a), "cos": lambda: -I.sin(a), "tan": lambda: 1.0 / (I.cos(a) * I.cos(a)),
        "sinh": lambda: I.cosh(a), "cosh": lambda: I.sinh(a),
        "atan": lambda: 1.0 / (1.0 + a * a), "asin": lambda: I.rsqrt(1.0 - a * a),
        "acos": lambda: -I.rsqrt(1.0 - a * a),
    }
    if name not in rules:
        raise ValueError(f"te.gradient: no derivative for intrinsic '{name}' in {x}")
    return _times(rules[name](), da)


__all__ = ["derivative", "gradient"]
