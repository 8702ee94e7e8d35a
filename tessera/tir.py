"""``tvm.tir``: the expression helpers classic schedules use, from ``te``."""

from te import const, floordiv, floormod, if_then_else, indexdiv, indexmod, truncdiv, truncmod
from te import expr as _E
from te.expr import Call, Cast, StringImm, Var
from te.expr import Expr as PrimExpr
from te.extern import call_packed, decl_buffer



class _ClassicImm(type):
    """``tir.IntImm("int32", 3)``: classic TVM's argument order (dtype first) building Tessera's node;
    ``isinstance(x, tir.IntImm)`` is the node's isinstance."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, cls.node)

    def __call__(cls, dtype: str, value, span=None):
        if not isinstance(dtype, str):
            raise TypeError(f"tir.{cls.__name__}(dtype, value): dtype must be a string, got {dtype!r}")
        return const(value, dtype)


class IntImm(metaclass=_ClassicImm):
    """An integer constant: ``IntImm(dtype, value)``."""

    node = _E.IntImm


class FloatImm(metaclass=_ClassicImm):
    """A floating-point constant: ``FloatImm(dtype, value)``."""

    node = _E.FloatImm


Select = if_then_else  # cond ? a : b, both sides evaluated (a node, as TVM's tir.Select)


def call_pure_extern(dtype: str, func_name: str, *args) -> Call:
    """A call of the C function ``func_name`` (``expf`` from libm on the CPU; ``__expf`` is CUDA's)."""
    from te.expr import as_expr

    # a Python number takes the call's dtype: pow(x, 2.0) on float64 passes a double
    args = tuple(const(a, dtype) if isinstance(a, (int, float)) else as_expr(a) for a in args)
    return Call(f"call_pure_extern:{func_name}", args, dtype)


def call_extern(dtype: str, func_name: str, *args) -> Call:
    """A call of the C function ``func_name`` for its effect (a tensor intrinsic's body); pointers
    come from ``buffer.access_ptr(...)``.  The function must be defined in the process (a library
    loaded with ``ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)``)."""
    return call_pure_extern(dtype, func_name, *args)


def call_intrin(dtype: str, func_name: str, *args) -> Call:
    """An intrinsic call (``tir.exp`` is ``te.exp``'s node)."""
    from te.expr import as_expr

    name = func_name.removeprefix("tir.")
    return Call(name, tuple(as_expr(a) for a in args), dtype)


class CallEffectKind:
    """Effect kinds of intrinsics (recorded by ``ir.register_op_attr``)."""

    ExprAnnotation, Pure, ReadState, UpdateState, Opaque = 0, 1, 2, 3, 4


class ForKind:
    """Loop kinds as classic ``tir.ForKind`` names them (``loop.kind == ForKind.PARALLEL``)."""

    SERIAL, PARALLEL, VECTORIZED, UNROLLED = "serial", "parallel", "vectorized", "unrolled"
    THREAD_BINDING = "thread_binding"


from schedule.lower import LoweredFunc as PrimFunc  # noqa: E402
from schedule.stmt import Evaluate, For  # noqa: E402
from tessera import tir_ir_builder as ir_builder  # noqa: E402
from tessera import tir_stmt_functor as stmt_functor  # noqa: E402

__all__ = [
    "Evaluate",
    "PrimExpr",
    "PrimFunc",
    "For",
    "ForKind",
    "stmt_functor",
    "call_extern",
    "ir_builder",
    "Call",
    "CallEffectKind",
    "Cast",
    "FloatImm",
    "IntImm",
    "Select",
    "StringImm",
    "Var",
    "call_intrin",
    "call_packed",
    "call_pure_extern",
    "const",
    "decl_buffer",
    "floordiv",
    "floormod",
    "if_then_else",
    "indexdiv",
    "indexmod",
    "truncdiv",
    "truncmod",
]
