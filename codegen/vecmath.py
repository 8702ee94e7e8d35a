"""Vectorizable float32 transcendental functions emitted inline as LLVM IR.

Every function here emits straight-line, branch-free IR (``select`` instead
of branches, no calls except the ``llvm.fma`` intrinsic) for values of type
``float`` or ``<N x float>``, so a vectorized loop body stays vectorized.

The methods are the classic Cephes / SLEEF ones: Cody-Waite range reduction,
a polynomial evaluated with fused multiply-adds (Horner), and reconstruction
by integer manipulation of the exponent bits.  Special values (``nan``,
``+-inf``, ``+-0``, denormals, overflow and gradual underflow) are handled
as ``libm`` does.  No fast-math flags are set.

Public entry point is :func:`emit_math`.
"""
from __future__ import annotations

import llvmlite.ir as ir

__all__ = ["SUPPORTED", "emit_math"]

_F32 = ir.FloatType()
_I32 = ir.IntType(32)

# exp: Cody-Waite split of ln2 (SLEEF) and 1/ln2.
_LOG2E = 1.44269504088896341
_LN2_HI = 0.693145751953125
_LN2_LO = 1.428606765330187045e-06
_ROUND_MAGIC = 12582912.0  # 1.5 * 2**23: adding it rounds to an integer
# (exp(r) - 1 - r) / r**2 on [-ln2/2, ln2/2] (SLEEF expf), highest first: expm1's.
_EXP_POLY = (1.98527617612853646278381e-4, 1.39304355252534151077271e-3,
             8.33336077630519866943359e-3, 4.16664853692054748535156e-2,
             1.66666671633720397949219e-1, 0.5)
# (exp(r) - 1) / r on [-ln2/2, ln2/2], highest first: exp's.  Degree 6 in all
# (minimax for relative error, float32 coefficients): 3e-9 relative, below
# float32's rounding, where SLEEF's degree 7 above serves expm1 near 0.
_EXP_POLY6 = (1.382102258503437e-3, 8.36866907775402e-3, 4.166826233267784e-2,
              1.666652113199234e-1, 4.999999403953552e-1, 1.0)
# (2**r - 1) / r on [-1/2, 1/2] (SLEEF exp2f), highest first.
_EXP2_POLY = (1.535920892e-4, 1.339262701e-3, 9.618384764e-3,
              5.550347269e-2, 2.402264476e-1, 6.931471825e-1)
# (log(1+f) - f + f**2/2) / f**3 on [sqrt(.5)-1, sqrt(2)-1] (Cephes logf).
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
             -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
             2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)
_LOG_C1 = 0.693359375           # ln2 = C1 + C2, C1 exact in few bits
_LOG_C2 = -2.12194440e-4
_LOG2EA = 0.44269504088896340736  # log2(e) - 1
_LOG2E_LO = 1.92596298909109e-08  # log2(e) - float32(log2(e))
_L10EA, _L10EB = 4.3359375e-1, 7.00731903251827651129e-4    # log10(e)
_L102A, _L102B = 3.0078125e-1, 2.48745663981195213739e-4    # log10(2)
# (tanh(x) - x) / x**3 as polynomial in x**2 on [0, 0.625] (Cephes tanhf).
_TANH_POLY = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
              1.33314422036e-1, -3.33332819422e-1)
# erf(x) = x * P(x**2) / Q(x**2) on [0, 3.92]: a rational minimax fit for relative error
# (Lawson-weighted linearised least squares, coefficients rounded to float32), highest first.
# One branch, no exp: a third of the instructions of x + x*P(x**2) below 1 and 1 - exp(R(x))
# above, at <= 6 ulp (tests/test_vecmath.py) instead of 2.
_ERF_NUM = (1.9929174754906853e-08, -1.9579204035835573e-06, 0.00014181574806571007,
            0.003699789522215724, 0.05056734383106232, 0.19987931847572327, 1.1283791065216064)
_ERF_DEN = (0.000955627707298845, 0.014349399134516716, 0.11497974395751953, 0.5104700922966003, 1.0)
_ERF_ONE = 3.92  # erf(x) rounds to 1.0f for x >= 3.92


class _Emitter:
    """Small helper bundling an IRBuilder with float32 / int32 types.

    Parameters
    ----------
    builder : llvmlite.ir.IRBuilder
        Builder positioned where the code is to be emitted.
    ftype : llvmlite.ir.Type
        ``float`` or ``<N x float>``.
    """

    def __init__(self, builder, ftype):
        self.b = builder
        self.fty = ftype
        if isinstance(ftype, ir.VectorType):
            self.ity = ir.VectorType(_I32, ftype.count)
            self._fma_name = "llvm.fma.v%df32" % ftype.count
        else:
            self.ity = _I32
            self._fma_name = "llvm.fma.f32"

    # -- constants and casts -------------------------------------------
    def f(self, value):
        """Return a float constant splatted to the float type."""
        return ir.Constant(self.fty, float(value))

    def i(self, value):
        """Return an i32 constant splatted to the integer type."""
        return ir.Constant(self.ity, int(value))

    def as_int(self, x):
        """Bitcast float(s) to i32(s)."""
        return self.b.bitcast(x, self.ity)

    def as_float(self, n):
        """Bitcast i32(s) to float(s)."""
        return self.b.bitcast(n, self.fty)

    # -- arithmetic ------------------------------------------------------
    def fma(self, a, b, c):
        """Emit ``llvm.fma(a, b, c)`` = a*b + c with a single rounding."""
        module = self.b.module
        fnty = ir.FunctionType(self.fty, [self.fty] * 3)
        fn = module.globals.get(self._fma_name)
        if fn is None:
            # declared by hand: Module.declare_intrinsic cannot name vector
            # overloads (VectorType has no intrinsic_name in llvmlite 0.50)
            fn = ir.Function(module, fnty, name=self._fma_name)
        elif getattr(fn, "function_type", None) != fnty:
            raise ValueError("module declares %s with type %s, expected %s"
                             % (self._fma_name, fn.type, fnty))
        return self.b.call(fn, [a, b, c])

    def horner(self, x, coeffs):
        """Evaluate a polynomial (coefficients highest degree first)."""
        acc = self.f(coeffs[0])
        for c in coeffs[1:]:
            acc = self.fma(acc, x, self.f(c))
        return acc

    def sel(self, cond, a, b):
        """``cond ? a : b`` where a / b may be Python floats."""
        a = self.f(a) if isinstance(a, (int, float)) else a
        b = self.f(b) if isinstance(b, (int, float)) else b
        return self.b.select(cond, a, b)

    def cmp(self, op, a, b):
        """Ordered float compare (false if either side is NaN)."""
        b = self.f(b) if isinstance(b, (int, float)) else b
        return self.b.fcmp_ordered(op, a, b)

    def isnan(self, x):
        """True where x is NaN."""
        return self.b.fcmp_unordered("uno", x, x)

    def fabs(self, x):
        """|x| by clearing the sign bit."""
        return self.as_float(self.b.and_(self.as_int(x), self.i(0x7FFFFFFF)))

    def copysign(self, mag, x):
        """Set the sign bit of non-negative ``mag`` from ``x``."""
        sign = self.b.and_(self.as_int(x), self.i(-0x80000000))
        return self.as_float(self.b.or_(self.as_int(mag), sign))

    def pow2(self, n):
        """2**n as float for integer n with -126 <= n <= 127."""
        biased = self.b.add(n, self.i(127))
        return self.as_float(self.b.shl(biased, self.i(23)))

    def ldexp(self, y, n):
        """y * 2**n with one final rounding, for |n| <= 2 * 126.

        The scale is split into two normal powers of two, so results in
        the denormal range are rounded correctly and large n overflow to
        inf.
        """
        half = self.b.ashr(n, self.i(1))
        rest = self.b.sub(n, half)
        return self.b.fmul(self.b.fmul(y, self.pow2(half)), self.pow2(rest))

    def clamp(self, x, lo, hi):
        """Clamp to [lo, hi]; NaN becomes ``hi`` (callers fix NaN later)."""
        x = self.sel(self.cmp("<", x, hi), x, hi)
        return self.sel(self.cmp(">", x, lo), x, lo)

    def clamp_nan(self, x, lo=None, hi=None):
        """Clamp to [lo, hi] (None: no bound there) keeping NaN: one ``minps`` / ``maxps``
        each (x86's take their second operand when one is NaN)."""
        if hi is not None:
            x = self.sel(self.cmp(">", x, hi), hi, x)
        if lo is not None:
            x = self.sel(self.cmp("<", x, lo), lo, x)
        return x


# ---------------------------------------------------------------------------
# exponentials
# ---------------------------------------------------------------------------
def _exp_reduce(e, x):
    """Split finite x = n*ln2 + r, |r| <= ln2/2; return (r, n as int)."""
    t = e.fma(x, e.f(_LOG2E), e.f(_ROUND_MAGIC))
    n = e.b.sub(e.as_int(t), e.as_int(e.f(_ROUND_MAGIC)))
    q = e.b.fsub(t, e.f(_ROUND_MAGIC))
    r = e.fma(q, e.f(-_LN2_HI), x)
    r = e.fma(q, e.f(-_LN2_LO), r)
    return r, n


def _expm1_poly(e, r):
    """exp(r) - 1 for |r| <= ln2/2."""
    u = e.horner(r, _EXP_POLY)
    return e.fma(e.b.fmul(r, r), u, r)


EXP_NORMAL_LO = -86.5  # exp(x) >= 2**-125: 2**n normal and the result too, from here up


def _exp(e, x, lo=None, hi=None):
    """exp(x): 21 operations; ``lo`` / ``hi``: bounds the caller knows x keeps (a clamp
    ``codegen.llvm_ir`` read off ``min`` / ``max`` with constants), which drop the clamps and
    the scaling steps they make moot: x <= 0 takes 17, x in [``EXP_NORMAL_LO``, 0] 14.

    The clamps keep NaN, which then flows through the reduction, the polynomial and the
    scaling's multiplies (whatever the integer lanes hold), so no NaN select is needed;
    ``exp(r)`` is one Horner chain of degree 6 ending in ``1 + r * p``.  The scale 2**n:
    for x <= 0 the exponent n lies in [-151, 0], so it is one normal power 2**(n + 64) (an
    exact product) and a constant 2**-64 (the one rounding, into the denormals); from
    ``EXP_NORMAL_LO`` up one power 2**n and the result are normal (no denormal operand or
    result, which costs x86 a microcode assist: twice the time of the whole exp); where
    neither bound is known ``ldexp`` splits an unknown n in two."""
    known_lo = lo is not None and lo >= -104.0
    known_hi = hi is not None and hi <= 104.0
    xc = e.clamp_nan(x, None if known_lo else -104.0, None if known_hi else 104.0)  # beyond: 0 / inf
    r, n = _exp_reduce(e, xc)
    y = e.fma(e.horner(r, _EXP_POLY6), r, e.f(1.0))
    if known_lo and lo >= EXP_NORMAL_LO and known_hi and hi <= 0.0:
        return e.b.fmul(y, e.pow2(n))
    if known_hi and hi <= 0.0:
        return e.b.fmul(e.b.fmul(y, e.pow2(e.b.add(n, e.i(64)))), e.f(2.0 ** -64))
    return e.ldexp(y, n)


def _exp2(e, x):
    """2**x."""
    xc = e.clamp(x, -151.0, 151.0)
    t = e.b.fadd(xc, e.f(_ROUND_MAGIC))
    n = e.b.sub(e.as_int(t), e.as_int(e.f(_ROUND_MAGIC)))
    r = e.b.fsub(xc, e.b.fsub(t, e.f(_ROUND_MAGIC)))  # exact, |r| <= 1/2
    y = e.fma(e.horner(r, _EXP2_POLY), r, e.f(1.0))
    return e.sel(e.isnan(x), x, e.ldexp(y, n))


def _expm1(e, x):
    """exp(x) - 1, accurate near 0."""
    xc = e.clamp(x, -30.0, 89.0)  # expm1(-30) == -1f, expm1(89) == inf
    r, n = _exp_reduce(e, xc)
    p = _expm1_poly(e, r)
    n1 = e.b.select(e.b.icmp_signed(">", n, e.i(127)), e.i(127), n)
    s = e.pow2(n1)  # 2**n1 normal since n1 >= -44
    y = e.fma(s, p, e.b.fsub(s, e.f(1.0)))  # 2**n * (p + 1) - 1
    y = e.b.fmul(y, e.pow2(e.b.sub(n, n1)))  # extra factor 1 or 2
    y = e.sel(e.cmp("==", x, 0.0), x, y)  # keep the sign of zero
    return e.sel(e.isnan(x), x, y)


# ---------------------------------------------------------------------------
# logarithms
# ---------------------------------------------------------------------------
def _log_reduce(e, u, denormals=True):
    """Write positive u = 2**k * (1 + f), sqrt(1/2) <= 1 + f < sqrt(2).

    Returns ``(f, k, z, y)`` with k as int vector, ``z = f*f`` and
    ``y = f**3 * P(f)`` so that ``log(1+f) = f - z/2 + y``.
    """
    kadj = e.i(0)
    if denormals:
        tiny = e.cmp("<", u, 1.1754943508222875e-38)
        u = e.sel(tiny, e.b.fmul(u, e.f(2.0 ** 23)), u)
        kadj = e.b.select(tiny, e.i(-23), kadj)
    ix = e.b.add(e.as_int(u), e.i(0x3F800000 - 0x3F3504F3))
    k = e.b.sub(e.b.ashr(ix, e.i(23)), e.i(127))
    k = e.b.add(k, kadj)
    m = e.b.add(e.b.and_(ix, e.i(0x007FFFFF)), e.i(0x3F3504F3))
    f = e.b.fsub(e.as_float(m), e.f(1.0))
    z = e.b.fmul(f, f)
    y = e.b.fmul(e.b.fmul(f, z), e.horner(f, _LOG_POLY))
    return f, k, z, y


def _log_specials(e, x, y, zero_at=0.0):
    """Apply log's special cases, with the singularity at ``zero_at``."""
    y = e.sel(e.cmp("==", x, float("inf")), float("inf"), y)
    y = e.sel(e.cmp("==", x, zero_at), float("-inf"), y)
    below = e.b.fcmp_unordered("<", x, e.f(zero_at))  # also true for NaN
    return e.sel(below, float("nan"), y)


def _ln_combine(e, f, kf, z, y):
    """log(2**k * (1+f)) = k*ln2 + f - z/2 + y (Cephes ordering)."""
    y = e.fma(kf, e.f(_LOG_C2), y)
    y = e.fma(z, e.f(-0.5), y)
    return e.fma(kf, e.f(_LOG_C1), e.b.fadd(f, y))


def _log(e, x):
    """Natural logarithm."""
    f, k, z, y = _log_reduce(e, x)
    kf = e.b.sitofp(k, e.fty)
    return _log_specials(e, x, _ln_combine(e, f, kf, z, y))


def _log2(e, x):
    """Base-2 logarithm (Cephes log2f: multiply by log2(e) in two parts)."""
    f, k, z, y = _log_reduce(e, x)
    kf = e.b.sitofp(k, e.fty)
    y = e.fma(z, e.f(-0.5), y)
    r = e.b.fmul(y, e.f(_LOG2EA))
    r = e.fma(f, e.f(_LOG2EA), r)
    r = e.b.fadd(e.b.fadd(e.b.fadd(r, y), f), kf)
    return _log_specials(e, x, r)


def _log10(e, x):
    """Base-10 logarithm (Cephes log10f)."""
    f, k, z, y = _log_reduce(e, x)
    kf = e.b.sitofp(k, e.fty)
    y = e.fma(z, e.f(-0.5), y)
    r = e.b.fmul(y, e.f(_L10EB))
    r = e.fma(f, e.f(_L10EB), r)
    r = e.fma(kf, e.f(_L102B), r)
    r = e.fma(y, e.f(_L10EA), r)
    r = e.fma(f, e.f(_L10EA), r)
    r = e.fma(kf, e.f(_L102A), r)
    return _log_specials(e, x, r)


def _log1p(e, x):
    """log(1 + x), accurate near 0 (rounding of 1+x corrected, musl)."""
    u = e.b.fadd(x, e.f(1.0))
    f, k, z, y = _log_reduce(e, u, denormals=False)
    big = e.b.icmp_signed(">=", k, e.i(2))
    c_big = e.b.fsub(e.f(1.0), e.b.fsub(u, x))
    c_small = e.b.fsub(x, e.b.fsub(u, e.f(1.0)))
    c = e.b.fdiv(e.b.select(big, c_big, c_small), u)  # log(1+x) - log(u)
    kf = e.b.sitofp(k, e.fty)
    r = _ln_combine(e, f, kf, z, e.b.fadd(y, c))
    r = e.sel(e.cmp("==", x, 0.0), x, r)  # keep the sign of zero
    return _log_specials(e, x, r, zero_at=-1.0)


# ---------------------------------------------------------------------------
# sigmoid-like functions
# ---------------------------------------------------------------------------
def _tanh(e, x):
    """tanh: odd polynomial for |x| < 0.625, else 1 - 2/(exp(2|x|)+1)."""
    ax = e.fabs(x)
    z = e.b.fmul(ax, ax)
    small = e.fma(e.b.fmul(z, e.horner(z, _TANH_POLY)), ax, ax)
    s = _exp(e, e.b.fadd(ax, ax))  # inf for large |x|: result saturates
    large = e.b.fsub(e.f(1.0), e.b.fdiv(e.f(2.0), e.b.fadd(s, e.f(1.0))))
    mag = e.sel(e.cmp("<", ax, 0.625), small, large)  # NaN -> large -> NaN
    return e.copysign(mag, x)


def _sigmoid(e, x):
    """1/(1+exp(-x)) computed as exp(-|x|) based ratio (no overflow)."""
    nabs = e.as_float(e.b.or_(e.as_int(x), e.i(-0x80000000)))  # -|x|: the sign bit set
    t = _exp(e, nabs, hi=0.0)  # in (0, 1], NaN for NaN
    num = e.sel(e.cmp("<", x, 0.0), t, 1.0)
    return e.b.fdiv(num, e.b.fadd(t, e.f(1.0)))


def _erf(e, x):
    """erf: x * P(x**2) / Q(x**2) with |x| clamped to 3.92 (where erf rounds to 1); 1 beyond."""
    ax = e.fabs(x)
    xb = e.sel(e.cmp(">", ax, _ERF_ONE), _ERF_ONE, ax)  # NaN stays NaN
    t = e.b.fmul(xb, xb)
    r = e.b.fdiv(e.b.fmul(xb, e.horner(t, _ERF_NUM)), e.horner(t, _ERF_DEN))
    mag = e.sel(e.cmp(">=", ax, _ERF_ONE), 1.0, r)
    return e.copysign(mag, x)


# ---------------------------------------------------------------------------
# power
# ---------------------------------------------------------------------------
def _pow(e, x, y):
    """x**y as C99's powf: 2**(y * log2|x|), the exponent carried in two floats.

    log2|x| = k + r_hi + r_lo (k an integer, |r_hi| <= 1/2); the products with y are split
    exactly by fused multiply-adds, so the exponent is off by about |y| * 2**-27 (log(1 + f)'s
    last bit) rather than |y * log2 x| ulps as a plain exp2(y * log2(x)): within 2 ulp of the
    rounded result for |y| <= 20, about |y| / 8 ulp beyond (tests/test_vecmath.py).  Then the
    special cases: a negative x gives NaN unless y is an integer (odd y: the sign of x);
    zeros, infinities and NaNs as powf; pow(x, 0) == pow(1, y) == 1."""
    b = e.b
    ax = e.fabs(x)
    f, k, z, w = _log_reduce(e, ax)
    neg = lambda v: b.fsub(e.f(-0.0), v)  # noqa: E731
    w = e.fma(z, e.f(-0.5), w)
    w = e.fma(e.fma(f, f, neg(z)), e.f(-0.5), w)  # log(1 + f) - f, z's rounding put back
    # log2(1 + f) = (f + w) * log2(e) as r_hi + r_lo: f * log2(e) split exactly by an fma
    a = b.fmul(f, e.f(_LOG2E))
    rest = b.fadd(e.fma(f, e.f(_LOG2E), neg(a)), e.fma(f, e.f(_LOG2E_LO), b.fmul(w, e.f(_LOG2E))))
    r_hi = b.fadd(a, rest)
    r_lo = b.fadd(b.fsub(a, r_hi), rest)
    kf = b.sitofp(k, e.fty)
    p, q = b.fmul(y, kf), b.fmul(y, r_hi)
    lo = b.fadd(b.fadd(e.fma(y, kf, neg(p)), e.fma(y, r_hi, neg(q))), b.fmul(y, r_lo))
    hi = b.fadd(p, q)
    lo = b.fadd(b.fadd(b.fsub(p, hi), q), lo)  # exact sum: |p| >= 2|q| unless k == 0 (then p == 0)
    lo = e.sel(e.cmp("<", e.fabs(hi), 150.0), lo, 0.0)
    hc = e.clamp(hi, -151.0, 151.0)
    t = b.fadd(hc, e.f(_ROUND_MAGIC))
    n = b.sub(e.as_int(t), e.as_int(e.f(_ROUND_MAGIC)))
    rr = b.fadd(b.fsub(hc, b.fsub(t, e.f(_ROUND_MAGIC))), lo)
    res = e.ldexp(e.fma(e.horner(rr, _EXP2_POLY), rr, e.f(1.0)), n)
    # special cases, later ones win
    inf = float("inf")
    ay = e.fabs(y)
    big = e.cmp(">=", ay, 2.0 ** 23)  # every float from 2**23 on is an integer
    s = b.fadd(ay, e.f(2.0 ** 23))  # ulp 1: |y| rounded to an integer, its parity the low bit
    y_int = b.or_(big, e.cmp("==", b.fsub(s, e.f(2.0 ** 23)), ay))
    low = b.and_(e.as_int(e.sel(big, ay, s)), e.i(1))
    odd = b.and_(b.and_(y_int, e.cmp("<", ay, 2.0 ** 24)), b.icmp_signed("==", low, e.i(1)))
    y_pos = e.cmp(">", y, 0.0)
    res = e.sel(e.cmp("==", ax, 0.0), e.sel(y_pos, 0.0, inf), res)
    res = e.sel(e.cmp("==", ax, inf), e.sel(y_pos, inf, 0.0), res)
    grows = b.icmp_unsigned("==", e.cmp(">", ax, 1.0), y_pos)
    at_inf = e.sel(e.cmp("==", ax, 1.0), 1.0, e.sel(grows, inf, 0.0))
    res = e.sel(e.cmp("==", e.fabs(y), inf), at_inf, res)
    negative = b.icmp_signed("<", e.as_int(x), e.i(0))
    res = b.select(b.and_(negative, odd), b.fsub(e.f(-0.0), res), res)
    domain = b.and_(b.and_(e.cmp("<", x, 0.0), e.cmp("!=", ax, inf)), b.not_(y_int))
    res = e.sel(b.or_(domain, b.or_(e.isnan(x), e.isnan(y))), float("nan"), res)
    return e.sel(b.or_(e.cmp("==", y, 0.0), e.cmp("==", x, 1.0)), 1.0, res)


_IMPLS = {
    "exp": _exp,
    "exp2": _exp2,
    "expm1": _expm1,
    "log": _log,
    "log2": _log2,
    "log10": _log10,
    "log1p": _log1p,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "erf": _erf,
}

_BINARY = {"pow": _pow}

#: Names of the functions :func:`emit_math` can emit inline.
SUPPORTED = frozenset(_IMPLS) | frozenset(_BINARY)


def _is_f32(ty):
    """True for ``float`` and ``<N x float>``."""
    if isinstance(ty, ir.VectorType):
        ty = ty.element
    return isinstance(ty, ir.FloatType)


def emit_math(builder, name, args, bounds=None):
    """Emit an inline, branch-free float32 math function.

    Parameters
    ----------
    builder : llvmlite.ir.IRBuilder
        Builder positioned at the insertion point.  Only straight-line
        instructions are emitted (no new basic blocks); the ``llvm.fma``
        intrinsic is declared in ``builder.module`` if needed.
    name : str
        One of :data:`SUPPORTED`: ``exp``, ``exp2``, ``expm1``, ``log``,
        ``log2``, ``log10``, ``log1p``, ``tanh``, ``sigmoid``, ``erf``, and ``pow``
        (two operands).
    args : list of llvmlite.ir.Value
        The operands, of type ``float`` or ``<N x float>`` (any N), all the same.
    bounds : tuple, optional
        ``(lo, hi)`` (either None): a range the caller knows the operand of ``exp`` keeps
        (a NaN aside), so the clamps and scaling steps it makes moot are left out.

    Returns
    -------
    llvmlite.ir.Value or None
        The result (same type as the operand), or ``None`` when ``name`` is
        not supported or the operand is not float32 (e.g. ``double``,
        ``half``); the caller then falls back to intrinsics / libm.

    Raises
    ------
    ValueError
        If a supported function is given other than exactly one argument.
    """
    impl = _IMPLS.get(name) or _BINARY.get(name)
    if impl is None:
        return None
    arity = 2 if name in _BINARY else 1
    if len(args) != arity:
        raise ValueError("%s takes %d argument(s), got %d" % (name, arity, len(args)))
    if not all(_is_f32(a.type) and a.type == args[0].type for a in args):
        return None
    if bounds is not None and name == "exp":
        return _exp(_Emitter(builder, args[0].type), args[0], *bounds)
    return impl(_Emitter(builder, args[0].type), *args)
