"""te: the tensor-expression language (classic TVM's ``tvm.te``)."""

from te import dtype
from te import printer  # noqa: F401 (registers the text form of expressions)
from te.expr import (
    Buffer, Call, Cast, Expr, FloatImm, IntImm, IterVar, Range, Reduce, Select, Var,
    const, likely,
)
from te.intrin import *  # noqa: F401,F403
from te.intrin import (
    abs, all, any, fmod, floordiv, floormod, if_then_else, isnan, max_value, min_value,
    power, truncdiv, truncmod,
)
from te.operation import compute, placeholder, reduce_axis, size_var, var
from te.extern import call_packed, decl_buffer, extern, thread_axis
from te.scan import scan
from te.autodiff import gradient
from te.tag import tag_scope
from te.tensor_intrin import TensorIntrin, decl_tensor_intrin
from te.tensor_compute import TensorComputeOp
from te.reduction import CommReducer, comm_reducer
from te.reduction import max as _max_reducer
from te.reduction import min as _min_reducer
from te.reduction import sum
from te.simplify import simplify
from te.tensor import ComputeOp, Operation, PlaceholderOp, Tensor

max = _max_reducer
min = _min_reducer


def create_schedule(ops, keep_record=None):
    """Create a schedule for one operation or a list of them (lazy import of schedule)."""
    from schedule import create_schedule as _create

    return _create(ops, keep_record)
