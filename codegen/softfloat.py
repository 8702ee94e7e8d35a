"""Half-precision conversion helpers, in LLVM IR, for the runtime.

LLVM lowers ``fptrunc double -> half`` to a call of ``__truncdfhf2`` on every
x86 CPU without AVX512-FP16, and ``fptrunc``/``fpext`` between float and half
to ``__truncsfhf2``/``__extendhfsf2`` on CPUs without F16C.  Those helpers
live in compiler-rt or libgcc, which a JIT process need not have loaded, so
the runtime defines them (integer code only: they must not call themselves).

* ``__extendhfsf2``: exact (every half is a float).
* ``__truncsfhf2``: round to nearest even; overflow to inf, NaN stays NaN
  (quietened), subnormals through ``|x| + 0.5`` whose ulp is 2^-24.
* ``__truncdfhf2``: double -> float rounded *to odd*, then float -> half: a
  float keeps 24 >= 2 * 11 + 2 bits, so the two roundings equal one correct
  rounding (the same trick the codegen uses inline, ``intrinsics.cast``).
"""

from __future__ import annotations


def _extend_ir() -> str:
    return r"""
define float @__extendhfsf2(half %h) nounwind {
  %b = bitcast half %h to i16
  %x = zext i16 %b to i32
  %sgn = and i32 %x, 32768
  %s = shl i32 %sgn, 16
  %eh = lshr i32 %x, 10
  %e = and i32 %eh, 31
  %m = and i32 %x, 1023
  %ms = shl i32 %m, 13
  %enorm = add i32 %e, 112
  %eb = shl i32 %enorm, 23
  %norm = or i32 %eb, %ms
  %special = or i32 %ms, 2139095040
  %mf = uitofp i32 %m to float
  %sub = fmul float %mf, 0x3E70000000000000
  %subb = bitcast float %sub to i32
  %is_zero_exp = icmp eq i32 %e, 0
  %is_max_exp = icmp eq i32 %e, 31
  %t0 = select i1 %is_max_exp, i32 %special, i32 %norm
  %t1 = select i1 %is_zero_exp, i32 %subb, i32 %t0
  %r = or i32 %t1, %s
  %f = bitcast i32 %r to float
  ret float %f
}
"""


def _trunc_ir() -> str:
    return r"""
define half @__truncsfhf2(float %f) nounwind {
  %x = bitcast float %f to i32
  %sh = lshr i32 %x, 16
  %s = and i32 %sh, 32768
  %a = and i32 %x, 2147483647
  %mant = lshr i32 %a, 13
  %nanm = and i32 %mant, 1023
  %nan0 = or i32 %nanm, 32256
  %is_nan = icmp ugt i32 %a, 2139095040
  %is_inf = icmp uge i32 %a, 1199566848
  %is_norm = icmp uge i32 %a, 947912704
  %r0 = sub i32 %a, 939524096
  %odd0 = lshr i32 %r0, 13
  %odd = and i32 %odd0, 1
  %r1 = add i32 %r0, 4095
  %r2 = add i32 %r1, %odd
  %norm = lshr i32 %r2, 13
  %af = bitcast i32 %a to float
  %sf = fadd float %af, 5.000000e-01
  %sb = bitcast float %sf to i32
  %sub = sub i32 %sb, 1056964608
  %t0 = select i1 %is_norm, i32 %norm, i32 %sub
  %t1 = select i1 %is_inf, i32 31744, i32 %t0
  %t2 = select i1 %is_nan, i32 %nan0, i32 %t1
  %r = or i32 %t2, %s
  %r16 = trunc i32 %r to i16
  %h = bitcast i16 %r16 to half
  ret half %h
}

define half @__truncdfhf2(double %d) nounwind {
  %f = fptrunc double %d to float
  %back = fpext float %f to double
  %inexact = fcmp one double %back, %d
  %ab = call double @llvm.fabs.f64(double %back)
  %ad = call double @llvm.fabs.f64(double %d)
  %away = fcmp ogt double %ab, %ad
  %fi = bitcast float %f to i32
  %down = sub i32 %fi, 1
  %tz = select i1 %away, i32 %down, i32 %fi
  %odd = or i32 %tz, 1
  %ri = select i1 %inexact, i32 %odd, i32 %fi
  %rf = bitcast i32 %ri to float
  %h = call half @__truncsfhf2(float %rf)
  ret half %h
}

declare double @llvm.fabs.f64(double)
"""


def half_helpers_ir() -> str:
    """The three helpers as LLVM IR text (no triple: appended to the runtime module)."""
    return _extend_ir() + _trunc_ir()


__all__ = ["half_helpers_ir"]
