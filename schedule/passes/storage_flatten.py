"""storage_flatten: multi-dimensional tensors to flat buffers.

::

    // realize B([i0*8, 10]) in local        allocate B.local[float32 * 10]
    B[i] = A[i, j]                     ->    B.local[(i - i0*8)] = A[((i*m) + j)]

Arguments become the function's buffers (row-major, offset 0); every other
tensor gets an ``Allocate`` sized by its realize bounds, indexed relative to
the region's minimum, with strides padded by ``storage_align`` and its
dimensions laid out in the stage's ``reorder_storage`` order (row-major when none).
"""

from __future__ import annotations

from te import expr as E
from te.tensor import Tensor
from te.visitor import pre_order
from schedule import stmt as S


def arg_buffers(sch, args) -> tuple[dict, list]:
    """``{(op, value_index): (Buffer, mins, strides)}`` and the parameter list."""
    table: dict = {}
    params: list = []
    for a in args:
        if not isinstance(a, Tensor):
            params.append(a)
            continue
        op = sch[a].op if a in sch else a.op  # else: a placeholder that nothing reads
        buf = E.Buffer(a.name if a.op is op else op.output(a.value_index).name, a.dtype, tuple(a.shape))
        zeros = tuple(E.const(0) for _ in a.shape)
        entry = (buf, zeros, _strides(tuple(a.shape), {}))
        table[(op, a.value_index)] = entry
        params.append(buf)
    return table, params


def _strides(shape: tuple, aligns: dict, order: tuple | None = None) -> tuple:
    """Per dimension, its stride: dimensions laid out in ``order`` (outermost first; row-major when
    None), each but the innermost padded to its ``aligns`` entry."""
    order = tuple(range(len(shape))) if order is None else order
    strides = [E.const(1)] * len(shape)
    acc: E.Expr = E.const(1)
    for d in reversed(order):
        if d in aligns and d != order[-1]:
            factor, offset = aligns[d]
            acc = _align(acc, factor, offset)
        strides[d] = acc
        acc = acc * shape[d]
    return tuple(_simp(s) for s in strides)


def _align(stride, factor: int, offset: int):
    """Smallest value >= stride with value % factor == offset."""
    stride = _simp(stride)
    if isinstance(stride, E.IntImm):
        v = stride.value
        return E.const(v + (offset - v) % factor)
    return stride


def _simp(e):
    from te.simplify import simplify

    return simplify(e)


def storage_flatten(body: S.Stmt, ctx: dict) -> S.Stmt:
    table = dict(ctx["buffers"])
    aligns = ctx.get("aligns", {})
    orders = ctx.get("orders", {})

    def key(t: Tensor):
        return (t.op, t.value_index)

    def flat_index(entry, indices) -> E.Expr:
        _, mins, strides = entry
        out: E.Expr = E.const(0)
        for i, m, s in zip(indices, mins, strides):
            out = out + (i - m) * s
        return _simp(out)

    def lookup(t: Tensor):
        entry = table.get(key(t))
        if entry is None:
            raise ValueError(
                f"tensor '{t.name}' is read but neither passed as an argument nor computed; "
                f"add it to the argument list"
            )
        return entry

    def fexpr(e: E.Expr) -> E.Expr:
        def rule(x):
            if isinstance(x, E.TensorRead):
                entry = lookup(x.tensor)
                idx = tuple(fexpr(i) for i in x.indices)
                return E.Load(entry[0], flat_index(entry, idx), x.dtype)
            return None

        return pre_order(e, rule)

    def visit(s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.Realize):
            t = s.tensor
            shape = tuple(r.extent for r in s.bounds)
            st_aligns = aligns.get(t.op, {})
            scoped = s.scope != "global" and not t.name.endswith("." + s.scope)
            buf = E.Buffer(f"{t.name}.{s.scope}" if scoped else t.name, t.dtype, shape, s.scope)
            order = orders.get(t.op)
            strides = _strides(shape, st_aligns, order)
            table[key(t)] = (buf, tuple(r.min for r in s.bounds), strides)
            outer = order[0] if order else 0
            size = _simp(strides[outer] * shape[outer]) if shape else E.const(1)
            return S.Allocate(buf, size, visit(s.body))
        if isinstance(s, S.Provide):
            entry = lookup(s.tensor)
            idx = tuple(fexpr(i) for i in s.indices)
            return S.Store(entry[0], fexpr(s.value), flat_index(entry, idx))
        return S.map_stmt(s, visit, fexpr)

    return visit(body)
