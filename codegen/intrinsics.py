"""Scalar and vector arithmetic, casts and math calls as LLVM instructions.

Float math inside vector code uses ``codegen.vecmath`` (inline polynomials,
no per-lane libm call) for float32; other types use LLVM intrinsics.
"""

from __future__ import annotations

from llvmlite import ir

from te import dtype as dt
from codegen.llvm_types import llvm_type

FAST = ("reassoc", "contract")


def _ty(dtype: str) -> ir.Type:
    return llvm_type(dtype)


def _const(t: ir.Type, v) -> ir.Constant:
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [v] * t.count)
    return ir.Constant(t, v)


def binary(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """``x op y`` for operands of ``dtype`` (the operand dtype, not the result's)."""
    if dt.is_float(dtype):
        return _float_binary(b, op, x, y)
    signed = not dt.is_unsigned(dtype) and not dt.is_bool(dtype)
    if op == "Add":
        return b.add(x, y, flags=["nsw"] if signed else [])
    if op == "Sub":
        return b.sub(x, y, flags=["nsw"] if signed else [])
    if op == "Mul":
        return b.mul(x, y, flags=["nsw"] if signed else [])
    if op in ("Div", "Mod", "FloorDiv", "FloorMod") and not _nonzero_const(y):
        # integer division by zero traps on x86: define x / 0 = x % 0 = 0 instead
        zero = _const(y.type, 0)
        is_zero = b.icmp_unsigned("==", y, zero)
        safe = b.select(is_zero, _const(y.type, 1), y)
        return b.select(is_zero, zero, _int_divide(b, op, x, safe, signed))
    if op in ("Div", "Mod", "FloorDiv", "FloorMod"):
        return _int_divide(b, op, x, y, signed)
    if op in ("Min", "Max"):
        cmp = ("<" if op == "Min" else ">")
        c = b.icmp_signed(cmp, x, y) if signed else b.icmp_unsigned(cmp, x, y)
        return b.select(c, x, y)
    if op in _CMP:
        return b.icmp_signed(_CMP[op], x, y) if signed else b.icmp_unsigned(_CMP[op], x, y)
    if op == "And":
        return b.and_(x, y)
    if op == "Or":
        return b.or_(x, y)
    raise ValueError(f"codegen: no integer lowering for {op}")


def _int_divide(b, op, x, y, signed):
    if op == "Div":
        return b.sdiv(x, y) if signed else b.udiv(x, y)
    if op == "Mod":
        return b.srem(x, y) if signed else b.urem(x, y)
    if not signed:
        return b.udiv(x, y) if op == "FloorDiv" else b.urem(x, y)
    return _floor_divmod(b, op, x, y)


def _nonzero_const(y: ir.Value) -> bool:
    if isinstance(y, ir.Constant) and not isinstance(y.type, ir.VectorType):
        return y.constant not in (0, None)
    return False


_CMP = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}


def _floor_divmod(b, op, x, y):
    q = b.sdiv(x, y)
    r = b.srem(x, y)
    zero = _const(x.type, 0)
    # the remainder and the divisor have opposite signs: round towards -inf
    adjust = b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("<", b.xor(r, y), zero))
    if op == "FloorDiv":
        return b.sub(q, b.zext(adjust, x.type) if not isinstance(x.type, ir.VectorType) else b.zext(adjust, x.type))
    return b.add(r, b.select(adjust, y, zero))


def _float_binary(b, op, x, y):
    if op == "Add":
        return b.fadd(x, y, flags=FAST)
    if op == "Sub":
        return b.fsub(x, y, flags=FAST)
    if op == "Mul":
        return b.fmul(x, y, flags=FAST)
    if op == "Div":  # arcp: x / s in a loop may become x * (1 / s), hoisted
        return b.fdiv(x, y, flags=FAST + ("arcp",))
    if op == "Mod":
        return b.frem(x, y)
    if op in ("FloorDiv", "FloorMod"):
        q = call(b, "floor", [b.fdiv(x, y)], None)
        return q if op == "FloorDiv" else b.fsub(x, b.fmul(q, y))
    if op in ("Min", "Max"):
        # compare + select, flagged so LLVM may treat it as a min/max idiom
        # (one vminps/vmaxps, and vectorized reductions); NaN operands give an
        # unspecified one of the two, as C's fmin/fmax under -ffast-math
        c = b.fcmp_ordered("<" if op == "Min" else ">", x, y, flags=("nnan", "nsz"))
        return b.select(c, x, y, flags=("nnan", "nsz"))
    if op == "NE":
        return b.fcmp_unordered("!=", x, y)
    if op in _CMP:
        return b.fcmp_ordered(_CMP[op], x, y)
    raise ValueError(f"codegen: no float lowering for {op}")


def cast(b: ir.IRBuilder, v: ir.Value, src: str, dst: str) -> ir.Value:
    st, tt = _ty(src), _ty(dst)
    if st == tt:
        return v
    if dt.is_bool(dst):
        if dt.is_float(src):
            return b.fcmp_unordered("!=", v, _const(st, 0.0))
        return b.icmp_unsigned("!=", v, _const(st, 0))
    if dt.is_float(src) and dt.is_float(dst):
        if dt.bits(dst) > dt.bits(src):
            return b.fpext(v, tt)
        if dt.bits(src) == 64 and dt.bits(dst) == 16:
            return _double_to_half(b, v, tt)
        return b.fptrunc(v, tt)
    if dt.is_float(src):
        return b.fptosi(v, tt) if dt.is_signed(dst) else b.fptoui(v, tt)
    unsigned_src = dt.is_unsigned(src) or dt.is_bool(src)
    if dt.is_float(dst):
        return b.uitofp(v, tt) if unsigned_src else b.sitofp(v, tt)
    if dt.bits(dst) > dt.bits(src):
        return b.zext(v, tt) if unsigned_src else b.sext(v, tt)
    return b.trunc(v, tt)


def _double_to_half(b: ir.IRBuilder, v: ir.Value, tt: ir.Type) -> ir.Value:
    """double -> half correctly rounded, without the ``__truncdfhf2`` call LLVM would emit
    (scalarised in vector code): round to float *to odd* (truncate, and set the last bit when
    inexact), then float -> half (``vcvtps2ph``).  A float keeps 24 >= 2 * 11 + 2 bits, so
    the two roundings equal one (Boldo and Melquiond)."""
    n = tt.count if isinstance(tt, ir.VectorType) else 0
    f32 = ir.VectorType(ir.FloatType(), n) if n else ir.FloatType()
    i32 = ir.VectorType(ir.IntType(32), n) if n else ir.IntType(32)
    f = b.fptrunc(v, f32)
    back = b.fpext(f, v.type)
    fabs = intrinsic(b.module, "llvm.fabs", v.type, 1)
    inexact = b.fcmp_ordered("!=", back, v)  # false for NaN
    away = b.fcmp_ordered(">", b.call(fabs, [back]), b.call(fabs, [v]))  # rounded away from zero
    bits = b.bitcast(f, i32)
    toward_zero = b.select(away, b.sub(bits, _const(i32, 1)), bits)
    odd = b.select(inexact, b.or_(toward_zero, _const(i32, 1)), bits)
    return b.fptrunc(b.bitcast(odd, f32), tt)


_LLVM_UNARY = {
    "sqrt": "llvm.sqrt", "fabs": "llvm.fabs", "floor": "llvm.floor", "ceil": "llvm.ceil",
    "trunc": "llvm.trunc", "round": "llvm.nearbyint", "nearbyint": "llvm.nearbyint",
    "exp": "llvm.exp", "exp2": "llvm.exp2", "log": "llvm.log", "log2": "llvm.log2",
    "log10": "llvm.log10", "sin": "llvm.sin", "cos": "llvm.cos", "exp10": "llvm.exp10",
}
_LIBM = {"tanh", "erf", "tan", "asin", "acos", "atan", "sinh", "cosh", "log1p", "expm1"}


def call(b: ir.IRBuilder, name: str, args: list, dtype: str | None) -> ir.Value:
    """A math intrinsic on scalar or vector floats."""
    x = args[0]
    t = x.type
    if name == "abs":
        neg = b.sub(_const(t, 0), x)
        return b.select(b.icmp_signed("<", x, _const(t, 0)), neg, x)
    if name == "pow":
        return _pow(b, args)
    if name == "fmod":
        return b.frem(args[0], args[1])
    if name == "isnan":
        return b.fcmp_unordered("uno", x, x)
    if name in _BITWISE:
        return _bitwise(b, name, args, dtype)
    if name == "div_ieee":  # correctly rounded, no fast-math (quantization: topi.nn.qnn)
        return b.fdiv(args[0], args[1])
    if name == "mul_ieee":  # rounded on its own: never contracted into an fma (topi.nn.qnn)
        return b.fmul(args[0], args[1])
    if name == "rsqrt":
        return b.fdiv(_const(t, 1.0), call(b, "sqrt", [x], dtype), flags=FAST)
    from codegen.vecmath import emit_math

    r = emit_math(b, name, args)
    if r is not None:
        return r
    if name == "sigmoid":
        e = call(b, "exp", [b.fsub(_const(t, 0.0), x)], dtype)
        return b.fdiv(_const(t, 1.0), b.fadd(_const(t, 1.0), e))
    if name in _LLVM_UNARY:
        return b.call(intrinsic(b.module, _LLVM_UNARY[name], t, 1), [x])
    if name in _LIBM:
        return _libm(b, name, x)
    raise ValueError(f"codegen: unknown intrinsic '{name}'")


def _pow(b: ir.IRBuilder, args: list) -> ir.Value:
    """``x ** y``: ``x * x`` for the constant exponent 2 (as exact as powf), float32 inline
    (``codegen.vecmath``: a vector stays a vector, where ``llvm.pow`` is one libm call per lane),
    else ``llvm.pow``."""
    from codegen.vecmath import emit_math

    x, y = args
    if isinstance(y, ir.Constant) and not isinstance(y.constant, (list, tuple)) and y.constant == 2.0:
        return b.fmul(x, x)
    r = emit_math(b, "pow", args)
    return r if r is not None else b.call(intrinsic(b.module, "llvm.pow", x.type, 2), args)


_BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right", "popcount"}


def _int_suffix(t: ir.Type) -> str:
    """LLVM's overload suffix of an integer type: ``i32``, ``v8i32``."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}i{t.element.width}"
    return f"i{t.width}"


def _bitwise(b: ir.IRBuilder, name: str, args: list, dtype: str | None) -> ir.Value:
    """Bitwise operations of integers.  ``shift_right`` of an unsigned type is logical, of a
    signed one arithmetic; a shift amount read as unsigned of the width or more (LLVM: poison)
    shifts every bit out: 0, or the sign for an arithmetic right shift."""
    x = args[0]
    if name == "bitwise_not":
        return b.xor(x, _const(x.type, -1))
    if name == "popcount":
        full = f"llvm.ctpop.{_int_suffix(x.type)}"
        fn = b.module.globals.get(full) or ir.Function(b.module, ir.FunctionType(x.type, [x.type]), name=full)
        return b.call(fn, [x])
    y = args[1]
    if name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        return {"bitwise_and": b.and_, "bitwise_or": b.or_, "bitwise_xor": b.xor}[name](x, y)
    scalar = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    width = _const(x.type, scalar.width)
    unsigned = str(dtype or "").startswith("uint")
    past = b.icmp_unsigned(">=", y, width)
    if name == "shift_right" and not unsigned:
        return b.ashr(x, b.select(past, _const(x.type, scalar.width - 1), y))
    shifted = b.shl(x, y) if name == "shift_left" else b.lshr(x, y)
    return b.select(past, _const(x.type, 0), shifted)


LLVM_PREFIX = "llvm.x86."


def llvm_intrinsic(b: ir.IRBuilder, name: str, args: list, dtype: str) -> ir.Value:
    """A call of the target-specific LLVM intrinsic ``name`` (``llvm.x86.avx2.pmadd.ub.sw``),
    declared from its arguments' types and the result's ``dtype``.  The schedule that emits it
    has checked that the target has the instruction (``topi.x86.int8_dot`` reads the
    target's features); LLVM refuses a call whose types are not the intrinsic's."""
    ret = _ty(dtype)
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(ret, [a.type for a in args]), name=name)
    return b.call(fn, args)


def intrinsic(module: ir.Module, name: str, t: ir.Type, nargs: int) -> ir.Function:
    """Declare the overload of an LLVM intrinsic for ``t`` (scalar or vector float)."""
    scalar = t.element if isinstance(t, ir.VectorType) else t
    suffix = {"half": "f16", "float": "f32", "double": "f64"}[str(scalar)]
    if isinstance(t, ir.VectorType):
        suffix = f"v{t.count}{suffix}"
    full = f"{name}.{suffix}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(t, [t] * nargs), name=full)
    return fn


def _libm(b, name, x):
    """Scalar libm call, applied lane by lane for vectors."""
    t = x.type
    scalar = t.element if isinstance(t, ir.VectorType) else t
    fname = name if str(scalar) == "double" else name + "f"
    fn = b.module.globals.get(fname)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(scalar, [scalar]), name=fname)
    if not isinstance(t, ir.VectorType):
        return b.call(fn, [x])
    out = ir.Constant(t, ir.Undefined)
    for k in range(t.count):
        lane = b.extract_element(x, ir.Constant(ir.IntType(32), k))
        out = b.insert_element(out, b.call(fn, [lane]), ir.Constant(ir.IntType(32), k))
    return out
