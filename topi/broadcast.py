"""Binary and ternary operators with numpy broadcasting (classic ``topi.broadcast``).

Shapes are aligned on their last dimension; a dimension of extent 1 (or a
missing leading one) is stretched to the other operand's extent::

    add(A (4, 1, 5), B (3, 1))  ->  C (4, 3, 5)
    C[i, j, k] = A[i, 0, k] + B[j, 0]

A Python number is a ``te.const`` of the tensor's dtype (a float with an
integer tensor gives float32), and the result is tagged ``elemwise``; two
tensors of equal shape give ``elemwise``, otherwise ``broadcast``.  With two
Python numbers (or expressions) the result is an expression, as in TVM.
"""

from __future__ import annotations

from collections.abc import Callable

import te
from te import expr as E
from topi import tag
from topi.utils import get_const_tuple

Operand = te.Tensor | E.Expr | int | float | bool

__all__ = [
    "add",
    "broadcast_shape",
    "broadcast_to",
    "divide",
    "equal",
    "floor_divide",
    "floor_mod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "mod",
    "multiply",
    "not_equal",
    "power",
    "subtract",
    "where",
]


# ------------------------------------------------------------------ shapes --
def _same_extent(a, b) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return a is b or str(a) == str(b)


def _is_one(d) -> bool:
    return isinstance(d, int) and d == 1


def _fmt(shape) -> str:
    shape = tuple(shape)
    return str(shape) if len(shape) != 1 else f"({shape[0]},)"


def broadcast_shape(op: str, *shapes) -> tuple:
    """The numpy broadcast of ``shapes`` (tuples of ints or extents).

    Raises ``ValueError`` naming ``op`` and the shapes that do not broadcast.
    """
    shapes = [get_const_tuple(s) for s in shapes]
    ndim = max((len(s) for s in shapes), default=0)
    out: list = []
    for k in range(ndim):
        dim = 1
        for s in shapes:
            d = s[len(s) - ndim + k] if len(s) - ndim + k >= 0 else 1
            if _is_one(d):
                continue
            if _is_one(dim) or _same_extent(dim, d):
                dim = d
            else:
                listed = " and ".join(_fmt(x) for x in shapes)
                raise ValueError(f"{op}: cannot broadcast shapes {listed}")
        out.append(dim)
    return tuple(out)


def _broadcast_index(t: te.Tensor, out_shape: tuple, indices: tuple) -> tuple:
    """Indices of ``t`` for output point ``indices``: leading dims dropped, 1-dims read at 0."""
    shape = get_const_tuple(t.shape)
    lead = len(out_shape) - len(shape)
    idx = []
    for k, d in enumerate(shape):
        stretched = _is_one(d) and not _is_one(out_shape[lead + k])
        idx.append(0 if stretched else indices[lead + k])
    return tuple(idx)


def _read(x, out_shape: tuple, indices: tuple):
    if isinstance(x, te.Tensor):
        return x(*_broadcast_index(x, out_shape, indices))
    return x


# ----------------------------------------------------------------- builder --
def _scalar_like(value, like: te.Tensor) -> E.Expr:
    """A Python number as a constant of ``like``'s dtype (float32 for a float with ints)."""
    if isinstance(value, E.Expr):
        return value
    if isinstance(value, float) and not te.dtype.is_float(like.dtype):
        return te.const(value, "float32")
    if isinstance(value, bool) and not te.dtype.is_bool(like.dtype):
        return te.const(int(value), like.dtype)
    return te.const(value, like.dtype)


def _prepare(op: str, operands) -> tuple[list, list]:
    """Check operand types; return (operands with numbers as constants, tensors)."""
    tensors = [x for x in operands if isinstance(x, te.Tensor)]
    out = []
    for k, x in enumerate(operands):
        if isinstance(x, te.Tensor):
            out.append(x)
        elif isinstance(x, (E.Expr, bool, int, float)):
            out.append(_scalar_like(x, tensors[0]) if tensors else E.as_expr(x))
        else:
            raise TypeError(
                f"{op}: operand {k} must be a te.Tensor, an expression or a Python number, "
                f"got {type(x).__name__}"
            )
    return out, tensors


def _apply(op: str, fcompute: Callable, *operands: Operand):
    """``fcompute`` applied pointwise over the broadcast of ``operands``."""
    vals, tensors = _prepare(op, operands)
    if not tensors:
        return fcompute(*vals)
    shape = broadcast_shape(op, *[t.shape for t in tensors])
    same = all(get_const_tuple(t.shape) == shape for t in tensors)
    kind = tag.ELEMWISE if same else tag.BROADCAST

    def body(*i):
        return fcompute(*[_read(v, shape, i) for v in vals])

    return te.compute(shape, body, name=f"T_{op}", tag=kind)


def _binary(name: str, fn: Callable, doc: str):
    def op(lhs: Operand, rhs: Operand):
        return _apply(name, fn, lhs, rhs)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"""{doc}, with numpy broadcasting.

    Parameters
    ----------
    lhs, rhs : te.Tensor, te.Expr or Python number
        The operands; at least one a tensor for a tensor result.

    Returns
    -------
    te.Tensor or te.Expr
        The broadcast result (tag ``elemwise`` or ``broadcast``).
    """
    return op


# ---------------------------------------------------------------- operators --
def _logical(cls):
    return lambda a, b: E.binary_op(cls, E.as_bool(a), E.as_bool(b))


add = _binary("add", lambda a, b: a + b, "``lhs + rhs``")
subtract = _binary("subtract", lambda a, b: a - b, "``lhs - rhs``")
multiply = _binary("multiply", lambda a, b: a * b, "``lhs * rhs``")
divide = _binary("divide", lambda a, b: a / b,
                 "``lhs / rhs`` (truncating on integers, as TVM's ``div``)")
floor_divide = _binary("floor_divide", lambda a, b: a // b, "``floor(lhs / rhs)``")
mod = _binary("mod", lambda a, b: te.fmod(a, b),
              "``lhs % rhs`` with the sign of ``lhs`` (C ``fmod``/``%``, numpy ``fmod``)")
floor_mod = _binary("floor_mod", lambda a, b: a % b,
                    "``lhs - floor(lhs / rhs) * rhs`` (numpy ``%``)")
power = _binary("power", lambda a, b: te.power(a, b), "``lhs ** rhs`` (integers in float32)")
maximum = _binary("maximum", lambda a, b: E.binary_op(E.Max, a, b), "``max(lhs, rhs)``")
minimum = _binary("minimum", lambda a, b: E.binary_op(E.Min, a, b), "``min(lhs, rhs)``")
equal = _binary("equal", lambda a, b: E.binary_op(E.EQ, a, b), "``lhs == rhs`` (bool)")
not_equal = _binary("not_equal", lambda a, b: E.binary_op(E.NE, a, b), "``lhs != rhs`` (bool)")
less = _binary("less", lambda a, b: E.binary_op(E.LT, a, b), "``lhs < rhs`` (bool)")
less_equal = _binary("less_equal", lambda a, b: E.binary_op(E.LE, a, b), "``lhs <= rhs`` (bool)")
greater = _binary("greater", lambda a, b: E.binary_op(E.GT, a, b), "``lhs > rhs`` (bool)")
greater_equal = _binary("greater_equal", lambda a, b: E.binary_op(E.GE, a, b),
                        "``lhs >= rhs`` (bool)")
logical_and = _binary("logical_and", _logical(E.And), "``lhs and rhs`` (bool)")
logical_or = _binary("logical_or", _logical(E.Or), "``lhs or rhs`` (bool)")
logical_xor = _binary("logical_xor", _logical(E.NE), "``lhs xor rhs`` (bool)")


def logical_not(x: Operand):
    """``not x`` elementwise (bool); non-bool values compare with zero.

    Parameters
    ----------
    x : te.Tensor or te.Expr

    Returns
    -------
    te.Tensor or te.Expr
        A bool tensor tagged ``elemwise``.
    """
    return _apply("logical_not", lambda a: ~E.as_bool(a), x)


def where(condition: Operand, x: Operand, y: Operand):
    """``x`` where ``condition`` holds, else ``y``; all three broadcast together.

    Parameters
    ----------
    condition : te.Tensor or expression
        Non-bool values count as true when non-zero.
    x, y : te.Tensor, te.Expr or Python number
        The two choices; their dtypes are promoted to one.

    Returns
    -------
    te.Tensor
        Of the broadcast shape of the three operands.
    """
    def select(c, a, b):
        return te.if_then_else(E.as_bool(c), a, b)

    # numbers adopt the dtype of the value operands, never the condition's
    like = next((v for v in (x, y) if isinstance(v, te.Tensor)), None)
    x, y = (_value_operand(v, like) for v in (x, y))
    return _apply("where", select, condition, x, y)


def _value_operand(v, like):
    if isinstance(v, te.Tensor) or not isinstance(v, (E.Expr, bool, int, float)):
        return v
    return _scalar_like(v, like) if like is not None else E.as_expr(v)


def broadcast_to(x: te.Tensor, shape) -> te.Tensor:
    """Stretch ``x`` to ``shape`` by numpy broadcasting (``np.broadcast_to``).

    Parameters
    ----------
    x : te.Tensor
    shape : tuple of int
        The target shape; every dimension of ``x`` must be 1 or equal to the
        aligned target dimension.

    Returns
    -------
    te.Tensor
        Tagged ``broadcast``.
    """
    if not isinstance(x, te.Tensor):
        raise TypeError(f"broadcast_to: x must be a te.Tensor, got {type(x).__name__}")
    shape = get_const_tuple((shape,) if isinstance(shape, int) else shape)
    xs = get_const_tuple(x.shape)
    lead = len(shape) - len(xs)
    if lead < 0 or not all(_is_one(d) or _same_extent(d, shape[lead + k]) for k, d in enumerate(xs)):
        raise ValueError(f"broadcast_to: cannot broadcast shape {_fmt(xs)} to {_fmt(shape)}")
    return te.compute(shape, lambda *i: x(*_broadcast_index(x, shape, i)),
                      name="T_broadcast_to", tag=tag.BROADCAST)
