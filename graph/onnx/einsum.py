"""``Einsum``: a batched matrix product where the subscripts allow, one te reduction otherwise.

The letters of a two-operand equation fall into four roles::

    batch  in A, B and the output      "b" of "bij,bjk->bik"
    m      in A and the output         "i"
    n      in B and the output         "k"
    k      in A and B, not the output  "j"

When every letter has one of these roles (no letter summed inside one operand,
no diagonal), A is transposed to ``[batch, m, k]`` and B to ``[batch, k, n]``,
each group flattened, and one ``batch_matmul`` (``dense`` without batch) computes
the product; the result is reshaped and transposed into the output order.  Any
other equation (one operand, three, traces, diagonals) is the ``einsum`` graph
op: one te reduction (``topi.einsum``).
"""

from __future__ import annotations

import math

from graph.ir import Value
from graph.onnx.context import Context, OnnxNode
from graph.onnx.table import converter
from topi.einsum import parse_subscripts


def _as_matmul(ctx: Context, a: Value, b: Value, ta: str, tb: str, out: str) -> Value | None:
    if len(set(ta)) != len(ta) or len(set(tb)) != len(tb) or len(set(out)) != len(out):
        return None
    batch = [c for c in out if c in ta and c in tb]
    m = [c for c in out if c in ta and c not in tb]
    n = [c for c in out if c in tb and c not in ta]
    k = [c for c in ta if c in tb and c not in out]
    if set(ta) != set(batch + m + k) or set(tb) != set(batch + n + k):
        return None
    ext = {c: d for t, v in ((ta, a), (tb, b)) for c, d in zip(t, v.shape)}
    if any(dict(zip(ta, a.shape))[c] != dict(zip(tb, b.shape))[c] for c in batch + k):
        return None  # broadcast extents: left to the reduction
    size = [math.prod(ext[c] for c in group) for group in (batch, m, n, k)]
    at = ctx.reshape(ctx.transpose(a, [ta.index(c) for c in batch + m + k]), (size[0], size[1], size[3]))
    bt = ctx.reshape(ctx.transpose(b, [tb.index(c) for c in batch + k + n]), (size[0], size[3], size[2]))
    y = ctx.op("batch_matmul", [at, bt])
    order = batch + m + n
    y = ctx.reshape(y, tuple(ext[c] for c in order))
    return ctx.transpose(y, [order.index(c) for c in out])


@converter("Einsum", since=12)
def convert_einsum(ctx: Context, node: OnnxNode) -> list:
    values = [node.input(k) for k in range(len(node.inputs))]
    try:
        terms, out = parse_subscripts(node.required("equation"), [v.shape for v in values])
    except ValueError as err:
        raise node.error(str(err)) from None
    if len(values) == 1 and sorted(terms[0]) == sorted(out) and len(set(out)) == len(out):
        return [ctx.transpose(values[0], [terms[0].index(c) for c in out])]  # a permutation only
    if len(values) == 2 and values[0].dtype.startswith("float") and values[0].dtype == values[1].dtype:
        y = _as_matmul(ctx, values[0], values[1], terms[0], terms[1], out)
        if y is not None:
            return [y]
    return [ctx.op("einsum", values, {"equation": ",".join(terms) + "->" + out})]
