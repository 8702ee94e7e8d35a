"""Tensors and the operations that produce them.

A ``Tensor`` is one output of an ``Operation``: a ``PlaceholderOp`` (an input)
or a ``ComputeOp`` (a compute lambda, possibly a reduction, possibly with
several outputs).  Operations are immutable; schedules refer to them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from te import dtype as dt
from te.expr import Expr, IterVar, TensorRead, as_expr, node


class Tensor:
    """One output of an operation; ``A[i, j]`` reads it inside a compute."""

    __slots__ = ("op", "value_index")

    def __init__(self, op: "Operation", value_index: int = 0):
        self.op = op
        self.value_index = value_index

    @property
    def shape(self) -> tuple:
        shapes = getattr(self.op, "output_shapes", None)  # extern/scan outputs differ in shape
        return self.op.shape if shapes is None else shapes[self.value_index]

    @property
    def dtype(self) -> str:
        return self.op.dtypes[self.value_index]

    @property
    def name(self) -> str:
        n = self.op.name
        return n if self.op.num_outputs == 1 else f"{n}.v{self.value_index}"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices) -> "TensorRead | TensorSlice":
        """``A[i, j]``; ``A[i]`` of a 2-d tensor is a :class:`TensorSlice` that ``[j]`` completes
        (classic TVM's chained indexing, ``A[i][j]``)."""
        if not isinstance(indices, tuple):
            indices = (indices,)
        if 0 < len(indices) < len(self.shape) or any(isinstance(i, slice) for i in indices):
            return TensorSlice(self, indices)
        return self(*indices)

    def __iter__(self):
        """Refused: ``list(A)`` would index ``A[0], A[1], ...`` without end (its extent may be symbolic)."""
        raise TypeError(f"tensor '{self.name}' is not iterable: index it inside a compute (A[i]), "
                        "or iterate over its shape")

    def __call__(self, *indices) -> TensorRead:
        if len(indices) != len(self.shape):
            raise IndexError(
                f"tensor '{self.name}' has {len(self.shape)} dimensions "
                f"(shape {tuple(self.shape)}), indexed with {len(indices)} indices"
            )
        idx = []
        for k, i in enumerate(indices):
            e = as_expr(i)
            if not dt.is_int(e.dtype):
                raise TypeError(
                    f"index {k} of tensor '{self.name}' must be an integer expression, "
                    f"got {e} of dtype {e.dtype}"
                )
            idx.append(e)
        return TensorRead(self, tuple(idx), self.dtype)

    def as_scalar_expr(self) -> "TensorRead | None":
        """``A()`` for a 0-d tensor (it then reads as a number in expressions), else None."""
        return self() if len(self.shape) == 0 else None

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Tensor)
            and other.op is self.op
            and other.value_index == self.value_index
        )

    def __hash__(self) -> int:
        return hash((id(self.op), self.value_index))

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        return f"Tensor(name={self.name}, shape=({shape}), dtype={self.dtype})"

    def __bool__(self) -> bool:
        return True



class TensorSlice:
    """``A[i]`` of a tensor with more dimensions: indexing it again adds indices
    (``A[i][j]`` is ``A[i, j]``).  Only a fully indexed slice is an expression.  With
    Python slices (``A[i, 0:16]``) it is a region, what a tensor intrinsic is called on
    (``te.tensor_intrin``)."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, tuple(indices)

    def __getitem__(self, indices):
        if not isinstance(indices, tuple):
            indices = (indices,)
        return self.tensor[self.indices + indices]

    @property
    def dtype(self) -> str:
        return self.tensor.dtype

    def asobject(self):
        """The read of a fully indexed slice."""
        return self.tensor(*self.indices)

    def __repr__(self) -> str:
        return f"{self.tensor.name}[{', '.join(map(str, self.indices))}]"

    def _partial(self, *_):
        raise TypeError(
            f"{self!r} gives {len(self.indices)} of tensor '{self.tensor.name}''s {len(self.tensor.shape)} "
            f"indices; index it fully (for example {self.tensor.name}[{', '.join(f'i{k}' for k in range(len(self.tensor.shape)))}]) "
            f"before using it in an expression"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _partial
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __neg__ = __lt__ = __gt__ = _partial

class Operation:
    """Base of PlaceholderOp and ComputeOp."""

    name: str
    shape: tuple
    dtypes: tuple
    num_outputs: int = 1

    def output(self, i: int) -> Tensor:
        if not 0 <= i < self.num_outputs:
            raise IndexError(f"operation '{self.name}' has {self.num_outputs} outputs, asked for {i}")
        return Tensor(self, i)

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


@dataclass(eq=False, repr=False)
class PlaceholderOp(Operation):
    name: str
    shape: tuple
    dtype: str

    @property
    def dtypes(self) -> tuple:
        return (self.dtype,)

    @property
    def axis(self) -> list:
        return []


@dataclass(eq=False, repr=False)
class ComputeOp(Operation):
    """``out[axis] = body[value_index]`` for every point of the axis domains."""

    name: str
    tag: str
    attrs: dict
    axis: tuple
    reduce_axis: tuple
    body: tuple
    shape: tuple = field(default=())

    def __post_init__(self):
        self.shape = tuple(iv.dom.extent for iv in self.axis)

    @property
    def dtypes(self) -> tuple:
        return tuple(b.dtype for b in self.body)

    @property
    def num_outputs(self) -> int:  # type: ignore[override]
        return len(self.body)

    @property
    def input_tensors(self) -> list[Tensor]:
        from te.visitor import collect_reads

        seen: dict = {}
        for b in self.body:
            for read in collect_reads(b):
                seen.setdefault(read.tensor, None)
        return list(seen)

    @property
    def is_reduction(self) -> bool:
        from te.expr import Reduce

        return isinstance(self.body[0], Reduce)


def shape_exprs(shape) -> tuple:
    """Normalise a user shape (ints, vars, expressions) to a tuple of int expressions."""
    if isinstance(shape, (int, Expr)):
        shape = (shape,)
    out = []
    for k, s in enumerate(shape):
        if isinstance(s, float) and s.is_integer():  # classic tutorials write (N / bn, K, bn)
            s = int(s)
        e = as_expr(s)
        if not dt.is_int(e.dtype):
            raise TypeError(f"shape entry {k} must be an integer, got {s!r}")
        if hasattr(e, "value") and e.value < 0:
            raise ValueError(f"shape entry {k} must be non-negative, got {s!r}")
        out.append(e)
    return tuple(out)


__all__ = ["Tensor", "Operation", "PlaceholderOp", "ComputeOp", "IterVar", "node", "shape_exprs"]
