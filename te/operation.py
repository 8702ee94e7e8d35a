"""The user-facing constructors: placeholder, compute, reduce_axis, var."""

from __future__ import annotations

import inspect

from te.errors import ComputeError
from te.tag import current_tag
from te import dtype as dt
from te import expr as E
from te.tensor import ComputeOp, PlaceholderOp, Tensor, shape_exprs
from te.tensor_compute import tensor_compute
from te.tensor_intrin import TensorIntrinCall
from te.visitor import walk


def var(name: str = "tindex", dtype: str = "int32") -> E.Var:
    """A symbolic scalar (``te.var("n")``), bound from the arguments at call time."""
    dtype = dt.normalize(dtype)
    return E.Var(name, dtype)


size_var = var


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor of ``shape`` and ``dtype``."""
    op = PlaceholderOp(name, shape_exprs(shape), dt.normalize(dtype))
    return Tensor(op, 0)


def reduce_axis(dom, name: str = "rv") -> E.IterVar:
    """A reduction axis over ``dom``: ``(lo, hi)`` or an extent."""
    if isinstance(dom, E.Range):
        rng = dom
    elif isinstance(dom, (tuple, list)):
        if len(dom) != 2:
            raise ValueError(f"reduce_axis '{name}': dom must be (min, max), got {dom!r}")
        lo, hi = E.as_expr(dom[0]), E.as_expr(dom[1])
        from te.simplify import simplify

        rng = E.Range(lo, simplify(hi - lo))
    else:
        rng = E.Range(E.const(0), E.as_expr(dom))
    return E.IterVar(rng, E.Var(name), E.COMM_REDUCE)


def _lambda_names(fcompute, ndim: int, name: str, fewer: bool = False) -> list[str]:
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return [f"i{k}" for k in range(ndim)]
    params = list(sig.parameters.values())
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{k}" for k in range(ndim)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if fewer and len(required) <= len(positional) < ndim:  # maybe a tensor intrinsic's call (te.tensor_intrin)
        return [p.name for p in positional]
    if not len(required) <= ndim <= len(positional):
        raise ValueError(
            f"compute '{name}': the lambda takes {len(positional)} index arguments "
            f"({', '.join(p.name for p in positional) or 'none'}) but the shape has {ndim} "
            f"dimensions; write one parameter per dimension"
        )
    return [p.name for p in positional[:ndim]]


def compute(shape, fcompute, name: str = "compute", tag: str = "", attrs: dict | None = None):
    """``out[i, j, ...] = fcompute(i, j, ...)`` over ``shape``.

    The axes are named after the lambda's parameters.  ``fcompute`` may return
    a tuple, giving one output tensor per element (all of ``shape``).
    """
    shape = shape_exprs(shape)
    names = _lambda_names(fcompute, len(shape), name, fewer=True)
    axis = tuple(E.IterVar(E.Range(E.const(0), s), E.Var(n)) for n, s in zip(names, shape))
    try:
        result = fcompute(*[iv.var for iv in axis])
    except Exception:
        if len(names) < len(shape):
            _lambda_names(fcompute, len(shape), name)  # raises: one parameter per dimension
        raise
    if isinstance(result, TensorIntrinCall):  # out[i, j, ...] = intrin(regions): a TensorComputeOp
        return tensor_compute(shape, axis, result, name, current_tag(tag), dict(attrs or {}))
    if len(names) < len(shape):
        _lambda_names(fcompute, len(shape), name)  # raises: one parameter per dimension
    outs = tuple(result) if isinstance(result, (tuple, list)) else (result,)
    if not outs:
        raise ValueError(f"compute '{name}': the lambda returned an empty tuple")
    body = tuple(E.as_expr(o) for o in outs)
    reduce_axes = _check_reductions(body, name)
    op = ComputeOp(name, current_tag(tag), dict(attrs or {}), axis, reduce_axes, body)
    tensors = [Tensor(op, k) for k in range(len(body))]
    return tensors[0] if len(tensors) == 1 and not isinstance(result, (tuple, list)) else tensors


def _check_reductions(body: tuple, name: str) -> tuple:
    tops = [b for b in body if isinstance(b, E.Reduce)]
    for b in body:
        nested: list = []
        inner = b.source if isinstance(b, E.Reduce) else (b,)
        for x in inner:
            walk(x, lambda n: nested.append(n) if isinstance(n, E.Reduce) else None)
        if nested:
            raise ComputeError(
                f"compute '{name}': a reduction must be the whole body, not part of an "
                f"expression; compute the reduction in its own stage first"
            )
    if not tops:
        return ()
    if len(tops) != len(body):
        raise ComputeError(f"compute '{name}': all outputs must be reductions, or none")
    first = tops[0]
    for t in tops[1:]:
        if t.combiner is not first.combiner or t.source is not first.source:
            raise ComputeError(f"compute '{name}': the outputs must come from one tuple reduction")
    return first.axis
