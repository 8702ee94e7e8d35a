"""Expression nodes of the one IR shared by te, schedule and codegen.

Nodes are frozen, slotted dataclasses with identity equality: two ``Var("i")``
are different variables.  Python operators on expressions build IR (``i == j``
is an ``EQ`` node); ``bool(expr)`` raises, because a compute lambda must not
branch in Python on a symbolic value.  Number promotion happens here, once,
in ``binary_op``; passes never promote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from te import dtype as dt


class Expr:
    """Base of every expression node; carries the operator overloads."""

    __slots__ = ()
    dtype: str

    # arithmetic -----------------------------------------------------------
    def __add__(self, o): return binary_op(Add, self, o)
    def __radd__(self, o): return binary_op(Add, o, self)
    def __sub__(self, o): return binary_op(Sub, self, o)
    def __rsub__(self, o): return binary_op(Sub, o, self)
    def __mul__(self, o): return binary_op(Mul, self, o)
    def __rmul__(self, o): return binary_op(Mul, o, self)
    def __truediv__(self, o): return binary_op(Div, self, o)
    def __rtruediv__(self, o): return binary_op(Div, o, self)
    def __floordiv__(self, o): return binary_op(FloorDiv, self, o)
    def __rfloordiv__(self, o): return binary_op(FloorDiv, o, self)
    def __mod__(self, o): return binary_op(FloorMod, self, o)
    def __rmod__(self, o): return binary_op(FloorMod, o, self)
    def __neg__(self): return binary_op(Sub, const(0, self.dtype), self)
    def __pos__(self): return self

    # comparisons build nodes, never bools --------------------------------
    def __eq__(self, o):  # type: ignore[override]
        return binary_op(EQ, self, o) if _comparable(o) else NotImplemented

    def __ne__(self, o):  # type: ignore[override]
        return binary_op(NE, self, o) if _comparable(o) else NotImplemented

    def __lt__(self, o): return binary_op(LT, self, o)
    def __le__(self, o): return binary_op(LE, self, o)
    def __gt__(self, o): return binary_op(GT, self, o)
    def __ge__(self, o): return binary_op(GE, self, o)
    __hash__ = object.__hash__

    # logic on bool expressions ------------------------------------------
    def __and__(self, o): return binary_op(And, self, o)
    def __rand__(self, o): return binary_op(And, o, self)
    def __or__(self, o): return binary_op(Or, self, o)
    def __ror__(self, o): return binary_op(Or, o, self)
    def __invert__(self): return Not(as_bool(self), dt.with_lanes("bool", dt.lanes(self.dtype)))

    def __bool__(self):
        raise TypeError(
            "a symbolic expression has no Python truth value; use te.all / te.any for "
            "conditions and te.if_then_else(cond, a, b) to select a value"
        )

    def equal(self, other) -> Expr:
        """The node ``self == other`` (classic TVM's ``x.equal(y)``)."""
        return binary_op(EQ, self, other)

    def same_as(self, other) -> bool:
        """Identity, as classic TVM's ``same_as`` (two ``Var("i")`` are not the same)."""
        return self is other

    def astype(self, dtype: str) -> Expr:
        """Cast to ``dtype`` (``x.astype("float16")``)."""
        return cast(self, dtype)

    def __repr__(self) -> str:
        return _PRINTER[0](self) if _PRINTER else object.__repr__(self)

    __str__ = __repr__


_PRINTER: list = []  # te.printer registers the text form here (expr never imports its printer)


def _comparable(o) -> bool:
    """Operands ``==`` builds a node for; anything else compares by identity (False)."""
    import numpy as np

    if isinstance(o, (Expr, bool, int, float, np.generic)):
        return True
    return _scalar_of(o) is not None


def _scalar_of(x) -> Expr | None:
    """A 0-d tensor reads as its value (``A() + 1``): objects offering ``as_scalar_expr``."""
    conv = getattr(x, "as_scalar_expr", None)
    return conv() if callable(conv) else None


def node(cls):
    """Decorator: the IR's frozen, slotted, identity-equal dataclass."""
    return dataclass(frozen=True, eq=False, slots=True, repr=False)(cls)


# leaves ---------------------------------------------------------------------
@node
class IntImm(Expr):
    value: int
    dtype: str = "int32"

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


@node
class FloatImm(Expr):
    value: float
    dtype: str = "float32"

    def __float__(self) -> float:
        return self.value


@node
class StringImm(Expr):
    value: str
    dtype: str = "handle"


@node
class Var(Expr):
    name: str
    dtype: str = "int32"


# binary nodes ---------------------------------------------------------------
@node
class BinaryOp(Expr):
    a: Expr
    b: Expr
    dtype: str


class Add(BinaryOp): __slots__ = ()
class Sub(BinaryOp): __slots__ = ()
class Mul(BinaryOp): __slots__ = ()
class Div(BinaryOp):
    """Float division; truncated division on integers (C semantics, as TVM)."""
    __slots__ = ()
class Mod(BinaryOp):
    """Truncated remainder on integers (C ``%``)."""
    __slots__ = ()
class FloorDiv(BinaryOp): __slots__ = ()
class FloorMod(BinaryOp): __slots__ = ()
class Min(BinaryOp): __slots__ = ()
class Max(BinaryOp): __slots__ = ()


class CmpOp(BinaryOp):
    __slots__ = ()


class EQ(CmpOp):
    """``a == b``; between two variables (or axes) its truth value is identity (TVM)."""
    __slots__ = ()

    def __bool__(self):
        return _identity(self, equal=True)


class NE(CmpOp):
    __slots__ = ()

    def __bool__(self):
        return _identity(self, equal=False)


def _identity(e: CmpOp, equal: bool) -> bool:
    """``iv in leaf_iter_vars``, ``axes.index(iv)``, ``tuple(axes) == (xo, xi)``; two constants
    compare by value (``bounds[iv].extent == 16``, folded as classic TVM folds it)."""
    if isinstance(e.a, Var) and isinstance(e.b, Var):
        return (e.a is e.b) == equal
    if isinstance(e.a, (IntImm, FloatImm)) and isinstance(e.b, (IntImm, FloatImm)):
        return (e.a.value == e.b.value) == equal
    return Expr.__bool__(e)



class LT(CmpOp): __slots__ = ()
class LE(CmpOp): __slots__ = ()
class GT(CmpOp): __slots__ = ()
class GE(CmpOp): __slots__ = ()
class And(BinaryOp): __slots__ = ()
class Or(BinaryOp): __slots__ = ()


@node
class Not(Expr):
    a: Expr
    dtype: str = "bool"


@node
class Select(Expr):
    """``cond ? true_value : false_value`` (both sides may be evaluated)."""

    cond: Expr
    true_value: Expr
    false_value: Expr
    dtype: str


@node
class Cast(Expr):
    value: Expr
    dtype: str


@node
class Call(Expr):
    """A pure intrinsic: ``exp``, ``log``, ``likely``, ``fma``..."""

    name: str
    args: tuple
    dtype: str

    @property
    def op(self) -> "IntrinsicOp":
        """The called intrinsic under classic TVM's name (``call.op.name == "tir.exp"``)."""
        return IntrinsicOp("tir." + self.name)


@dataclass(frozen=True)
class IntrinsicOp:
    """The name of an intrinsic a :class:`Call` calls, as classic TVM's ``Op`` (``tir.exp``)."""

    name: str


@node
class Let(Expr):
    var: Var
    value: Expr
    body: Expr
    dtype: str


# tensor-level and buffer-level access --------------------------------------
@node
class TensorRead(Expr):
    """``A[i, j]`` on a te Tensor, before storage flattening."""

    tensor: Any
    indices: tuple
    dtype: str


@node
class Reduce(Expr):
    """One output (``value_index``) of a commutative reduction over ``axis``."""

    combiner: Any
    source: tuple
    axis: tuple
    condition: Expr
    value_index: int
    dtype: str


@node
class Buffer:
    """A flat region of memory: an argument or an allocation.

    A buffer declared for a tensor intrinsic (``te.decl_buffer``) may carry ``strides``
    and an ``elem_offset`` (expressions, often variables): when the intrinsic is
    tensorized into a schedule they take the values of the region it covers."""

    name: str
    dtype: str
    shape: tuple
    scope: str = "global"
    strides: tuple = ()
    elem_offset: "Expr | None" = None
    offset_factor: int = 0

    def __repr__(self) -> str:
        return self.name

    def access_ptr(self, access_mask="rw", ptr_type: str = "handle", content_lanes: int = 1, offset=0) -> "Call":
        """A pointer to the buffer's first element (plus ``offset`` elements): classic
        ``Buffer.access_ptr``, an argument of ``call_extern``/``call_packed``."""
        return Call("tvm_access_ptr", (BufferPointer(self), as_expr(offset)), "handle")

    @property
    def data(self) -> "Call":
        return self.access_ptr("rw")


@node
class BufferPointer(Expr):
    """The buffer ``buffer`` named as a pointer (the first argument of ``tvm_access_ptr``)."""

    buffer: Buffer
    dtype: str = "handle"


@node
class Load(Expr):
    """``buffer[index]``; a vector load when ``index`` is a vector."""

    buffer: Buffer
    index: Expr
    dtype: str


@node
class Ramp(Expr):
    """The vector ``base, base + stride, ..., base + (lanes-1)*stride``."""

    base: Expr
    stride: Expr
    lanes: int
    dtype: str


@node
class Broadcast(Expr):
    value: Expr
    lanes: int
    dtype: str


# ranges and iteration variables ---------------------------------------------
@node
class Range:
    """``[min, min + extent)``; ``dom.min`` and ``dom.extent`` are expressions."""

    min: Expr
    extent: Expr

    def __repr__(self) -> str:
        return f"range(min={self.min}, ext={self.extent})"


DATA_PAR, COMM_REDUCE = 0, 2


@node
class IterVar(Expr):
    """A loop axis of a stage: a domain, a variable and a kind (data or reduce).

    Used inside expressions it stands for its variable.
    """

    dom: Range | None
    var: Var
    iter_type: int = DATA_PAR
    dtype: str = "int32"

    # classic TVM's iteration types (``IterVar.Vectorized``): a stage's annotation of the axis
    # (``s[C].iter_var_attrs[iv].iter_type``) takes the last four
    DataPar = DATA_PAR
    ThreadIndex = 1
    CommReduce = COMM_REDUCE
    Ordered = 3
    Opaque = 4
    Unrolled = 5
    Vectorized = 6
    Parallelized = 7
    Tensorized = 8

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        kind = "reduce" if self.iter_type == COMM_REDUCE else "data"
        return f"iter_var({self.var.name}, {self.dom}, {kind})"


# construction helpers --------------------------------------------------------
def const(value, dtype: str | None = None) -> Expr:
    """A constant; the dtype defaults to int32 for ints and float32 for floats."""
    if isinstance(value, Expr):
        return value if dtype is None else cast(value, dtype)
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise TypeError(f"cannot make a constant of {value!r} ({type(value).__name__})")
    dtype = dt.normalize(dtype)
    if dt.lanes(dtype) > 1:
        scalar = const(value, dt.element(dtype))
        return Broadcast(scalar, dt.lanes(dtype), dtype)
    if dt.is_float(dtype):
        return FloatImm(float(value), dtype)
    return IntImm(int(value), dtype)


def as_expr(x) -> Expr:
    """Convert a Python number, an IterVar or an expression to an expression."""
    if isinstance(x, IterVar):
        return x.var
    if isinstance(x, Expr):
        return x
    if isinstance(x, (bool, int, float)):
        return const(x)
    import numpy as np

    if isinstance(x, np.generic):
        return const(x.item(), x.dtype.name)
    scalar = _scalar_of(x)
    if scalar is not None:
        return scalar
    raise TypeError(f"expected an expression or a number, got {x!r} ({type(x).__name__})")


def cast(x, dtype: str) -> Expr:
    x = as_expr(x)
    dtype = dt.normalize(dtype)
    n = dt.lanes(x.dtype)
    if dt.lanes(dtype) == 1 and n > 1:
        dtype = dt.with_lanes(dtype, n)
    if x.dtype == dtype:
        return x
    if isinstance(x, (IntImm, FloatImm)) and dt.lanes(dtype) == 1:
        if dt.is_bool(dtype):
            return IntImm(int(bool(x.value)), dtype)
        return const(x.value if dt.is_float(dtype) else int(x.value), dtype)
    return Cast(x, dtype)


def as_bool(x) -> Expr:
    x = as_expr(x)
    if dt.is_bool(x.dtype):
        return x
    return binary_op(NE, x, 0)


def _pair(a, b) -> tuple[Expr, Expr]:
    """Promote two operands to one dtype (Python numbers adopt the other side's)."""
    a_num = isinstance(a, (bool, int, float))
    b_num = isinstance(b, (bool, int, float))
    if a_num and b_num:
        a, b = const(a), const(b)
    elif a_num:
        b = as_expr(b)
        a = _number_like(a, b)
    elif b_num:
        a = as_expr(a)
        b = _number_like(b, a)
    a, b = as_expr(a), as_expr(b)
    if a.dtype != b.dtype:
        target = dt.promote(a.dtype, b.dtype)
        a, b = _to_dtype(a, target), _to_dtype(b, target)
    return a, b


def _number_like(value, other: Expr) -> Expr:
    base = dt.element(other.dtype)
    if isinstance(value, float) and not dt.is_float(base):
        base = "float32"
    if isinstance(value, bool):
        base = base if not dt.is_bool(base) else "bool"
    e = const(value, base)
    return e


def _to_dtype(x: Expr, target: str) -> Expr:
    n = dt.lanes(target)
    if dt.element(x.dtype) != dt.element(target):
        x = cast(x, dt.element(target)) if dt.lanes(x.dtype) == 1 else cast(x, target)
    if dt.lanes(x.dtype) == 1 and n > 1:
        x = Broadcast(x, n, target)
    return x


def binary_op(cls, a, b) -> Expr:
    """Build ``cls(a, b)`` after promoting operand dtypes once."""
    a, b = _pair(a, b)
    if cls in (And, Or):
        a, b = as_bool(a), as_bool(b)
        return cls(a, b, a.dtype)
    if issubclass(cls, CmpOp):
        return cls(a, b, dt.with_lanes("bool", dt.lanes(a.dtype)))
    if dt.is_bool(a.dtype) and cls not in (Min, Max):
        a, b = cast(a, "int32"), cast(b, "int32")
    return cls(a, b, a.dtype)


def likely(cond: Expr) -> Expr:
    """Mark a guard the loop partitioner may split off (TVM's ``likely``)."""
    return Call("likely", (as_bool(cond),), "bool")


def index_of(items, x) -> int:
    """Position of ``x`` in ``items`` by identity (``list.index`` would build ``==`` nodes)."""
    for k, y in enumerate(items):
        if y is x:
            return k
    raise ValueError(f"{x!r} is not in the list")


def contains(items, x) -> bool:
    """``x in items`` by identity."""
    return any(y is x for y in items)
