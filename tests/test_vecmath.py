"""Accuracy / special-value tests for the inline float32 math in codegen.vecmath.

Each function is compiled into a kernel ``void f(float* x, float* y, i64 n)``
that processes ``<8 x float>`` vectors and a scalar tail, JIT-compiled with
MCJIT and run through ctypes on numpy arrays.  Errors are measured in ulp
against numpy / math float64 results rounded to float32.
"""
import ctypes
import math
import time

import llvmlite.binding as llvm
import llvmlite.ir as ir
import numpy as np
import pytest

from codegen.vecmath import SUPPORTED, emit_math

F32 = ir.FloatType()
I64 = ir.IntType(64)
VW = 8
FLT_MAX = float(np.finfo(np.float32).max)
FLT_TINY = float(np.finfo(np.float32).tiny)
DENORM_MIN = float(np.float32(2.0 ** -149))


# ---------------------------------------------------------------------------
# references (float64, rounded to float32 by the caller)
# ---------------------------------------------------------------------------
def _sigmoid64(x):
    t = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, t) / (1.0 + t)


_erf64 = np.frompyfunc(math.erf, 1, 1)

REFS = {
    "exp": np.exp,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "tanh": np.tanh,
    "sigmoid": _sigmoid64,
    "erf": lambda x: _erf64(x).astype(np.float64),
}

# max allowed ulp error per function (measured maxima are ~1-2 ulp; erf's one-branch rational
# form, without exp, reaches 6 ulp near 1, see codegen/vecmath.py)
MAX_ULP = {**{name: 4 for name in REFS}, "erf": 6}

# a dense grid over the interesting region of each function
GRIDS = {
    "exp": [(-104.5, 89.0)],
    "exp2": [(-151.0, 129.0)],
    "expm1": [(-20.0, 89.0), (-1.0, 1.0)],
    "log": [(0.0, 4.0), (0.5, 2.0)],
    "log2": [(0.0, 4.0), (0.5, 2.0)],
    "log10": [(0.0, 4.0), (0.5, 2.0)],
    "log1p": [(-1.0, 4.0), (-0.5, 0.5)],
    "tanh": [(-10.0, 10.0), (-1.0, 1.0)],
    "sigmoid": [(-110.0, 20.0), (-5.0, 5.0)],
    "erf": [(-4.5, 4.5), (-1.2, 1.2)],
}


# ---------------------------------------------------------------------------
# kernel construction / JIT
# ---------------------------------------------------------------------------
def _load(builder, ptr, idx, ty):
    return builder.load(builder.gep(ptr, [idx], source_etype=F32), typ=ty,
                        align=4)


def _store(builder, val, ptr, idx):
    builder.store(val, builder.gep(ptr, [idx], source_etype=F32), align=4)


def _loop(builder, fn, start, stop, step, body):
    """Emit ``for (i = start; i + step <= stop; i += step) body(i)``.

    Returns the final value of ``i``.
    """
    pre = builder.block
    head = fn.append_basic_block("head")
    loop = fn.append_basic_block("body")
    done = fn.append_basic_block("done")
    builder.branch(head)
    builder.position_at_end(head)
    i = builder.phi(I64)
    i.add_incoming(start, pre)
    nxt = builder.add(i, ir.Constant(I64, step))
    builder.cbranch(builder.icmp_signed("<=", nxt, stop), loop, done)
    builder.position_at_end(loop)
    body(i)
    builder.branch(head)
    i.add_incoming(nxt, builder.block)
    builder.position_at_end(done)
    return i


def _define_kernel(module, name, width, arity=1):
    """void <name>_<width>(float* x[, float* x2], float* y, i64 n): vector body + tail."""
    ptr = ir.PointerType()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [I64]),
                     name="%s_%d" % (name, width))
    *xs, y, n = fn.args
    builder = ir.IRBuilder(fn.append_basic_block("entry"))

    def body_for(ty):
        def body(i):
            res = emit_math(builder, name, [_load(builder, x, i, ty) for x in xs])
            _store(builder, res, y, i)
        return body

    i = ir.Constant(I64, 0)
    if width > 1:
        i = _loop(builder, fn, i, n, width, body_for(ir.VectorType(F32, width)))
    _loop(builder, fn, i, n, 1, body_for(F32))
    builder.ret_void()


class _Jit:
    """All kernels compiled into one MCJIT engine."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        module = ir.Module(name="vecmath_test")
        for name in NAMES:
            for width in (VW, 1):
                _define_kernel(module, name, width)
        self.ir_text = str(module)
        mod = llvm.parse_assembly(self.ir_text)
        mod.verify()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        tm = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(), opt=3)
        self.engine = llvm.create_mcjit_compiler(mod, tm)
        self.engine.finalize_object()
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_int64)
        self.funcs = {}
        for name in NAMES:
            for width in (VW, 1):
                addr = self.engine.get_function_address("%s_%d" % (name, width))
                self.funcs[name, width] = proto(addr)

    def __call__(self, name, x, width=VW):
        x = np.ascontiguousarray(x, dtype=np.float32)
        y = np.empty_like(x)
        self.funcs[name, width](x.ctypes.data, y.ctypes.data, x.size)
        return y


@pytest.fixture(scope="module")
def jit():
    return _Jit()


# ---------------------------------------------------------------------------
# error measurement
# ---------------------------------------------------------------------------
def _ordered(a):
    """Map float32 values to integers whose difference counts ulps."""
    bits = a.view(np.int32).astype(np.int64)
    mag = bits & 0x7FFFFFFF
    return np.where(bits < 0, -mag, mag)


def ulp_errors(name, x, y):
    """ulp distance of y = f(x) from the float64 reference rounded to f32."""
    with np.errstate(all="ignore"):
        ref = REFS[name](x.astype(np.float64)).astype(np.float32)
    err = np.abs(_ordered(y) - _ordered(ref)).astype(np.float64)
    ynan, rnan = np.isnan(y), np.isnan(ref)
    err[ynan | rnan] = np.inf
    err[ynan & rnan] = 0.0
    return err


def _check(jit, name, x):
    y = jit(name, x)
    err = ulp_errors(name, x, y)
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP[name], (
        "%s(%r) = %r: %s ulp" % (name, x[worst], y[worst], err[worst]))
    return err.max()


def random_floats(count, seed=0):
    """Log-uniform float32 values over the whole finite range, both signs."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 0x7F800000, size=count, dtype=np.int64)
    bits |= rng.integers(0, 2, size=count, dtype=np.int64) << 31
    return bits.astype(np.uint32).view(np.float32)


SPECIALS = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, DENORM_MIN, -DENORM_MIN,
     2 * DENORM_MIN, FLT_TINY, -FLT_TINY, FLT_TINY * 0.5, FLT_MAX, -FLT_MAX,
     1.0, -1.0, 0.5, 2.0, 1e-30, -1e-30, 1e-7, -1e-7, 1e30, -1e30,
     # exp overflow / underflow thresholds and neighbours
     88.72283, 88.722839, 88.7229, 89.0, -87.33654, -87.3366, -103.27893,
     -103.972, -103.9721, -104.0, -150.0, -149.0, -149.5, -126.0, 127.0,
     127.99999, 128.0, 17.0, -17.0, -17.5, 9.0, -9.0, 9.1, 0.625,
     0.62499994, -0.625, 3.92, 3.9199998, -3.92, 0.99999994, 1.0000001,
     -0.99999994, -1.0000001, 44.0, -88.0, -90.0, -100.0],
    dtype=np.float32)


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------
NAMES = sorted(REFS)


def test_supported_names():
    assert set(NAMES) <= SUPPORTED


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ty", [F32, ir.VectorType(F32, 4),
                                ir.VectorType(F32, 16)])
def test_emitted_ir_is_straight_line(name, ty):
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name="g")
    builder = ir.IRBuilder(fn.append_basic_block())
    res = emit_math(builder, name, [fn.args[0]])
    assert res is not None and res.type == ty
    builder.ret(res)
    assert len(fn.blocks) == 1
    text = str(fn)
    for line in text.splitlines():
        if " call " in line:
            assert "@\"llvm.fma." in line or "@llvm.fma." in line, line
    for flag in ("fast", "nnan", "ninf", "nsz", "arcp", "afn", "reassoc"):
        assert " %s " % flag not in text
    llvm.parse_assembly(str(module)).verify()


@pytest.mark.parametrize("ty", [ir.DoubleType(), ir.HalfType(),
                                ir.VectorType(ir.DoubleType(), 4),
                                ir.IntType(32)])
def test_unsupported_types_return_none(ty):
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name="g")
    builder = ir.IRBuilder(fn.append_basic_block())
    assert emit_math(builder, "exp", [fn.args[0]]) is None


def test_unsupported_names_return_none():
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(F32, [F32]), name="g")
    builder = ir.IRBuilder(fn.append_basic_block())
    for name in ("sin", "sqrt", "", "EXP"):
        assert emit_math(builder, name, [fn.args[0]]) is None
    with pytest.raises(ValueError):
        emit_math(builder, "exp", [fn.args[0], fn.args[0]])
    with pytest.raises(ValueError, match="pow takes 2"):
        emit_math(builder, "pow", [fn.args[0]])
    with pytest.raises(ValueError):
        emit_math(builder, "exp", [])


def test_fma_declaration_is_shared():
    module = ir.Module()
    vec = ir.VectorType(F32, 8)
    fn = ir.Function(module, ir.FunctionType(F32, [F32, vec]), name="g")
    builder = ir.IRBuilder(fn.append_basic_block())
    # llvm.fma needs all three operand types ([F32] alone gives f(float))
    scalar_fma = module.declare_intrinsic("llvm.fma", [F32] * 3)
    a = emit_math(builder, "exp", [fn.args[0]])
    b = emit_math(builder, "log", [a])
    v = emit_math(builder, "tanh", [fn.args[1]])
    v = emit_math(builder, "erf", [v])
    builder.ret(builder.fadd(b, builder.extract_element(v, ir.Constant(
        ir.IntType(32), 0))))
    fmas = [g for g in module.globals.values() if "llvm.fma" in g.name]
    assert sorted(g.name for g in fmas) == ["llvm.fma.f32", "llvm.fma.v8f32"]
    assert scalar_fma in fmas
    llvm.parse_assembly(str(module)).verify()


def test_bad_fma_declaration_is_reported():
    module = ir.Module()
    module.declare_intrinsic("llvm.fma", [F32])  # wrong: float(float)
    fn = ir.Function(module, ir.FunctionType(F32, [F32]), name="g")
    builder = ir.IRBuilder(fn.append_basic_block())
    with pytest.raises(ValueError, match="llvm.fma.f32"):
        emit_math(builder, "exp", [fn.args[0]])


@pytest.mark.parametrize("name", NAMES)
def test_vector_matches_scalar(jit, name):
    x = np.concatenate([random_floats(4001, seed=1), SPECIALS])
    x = np.concatenate([x, np.linspace(-5, 5, 999, dtype=np.float32)])
    yv, ys = jit(name, x, VW), jit(name, x, 1)
    same = (yv.view(np.int32) == ys.view(np.int32)) | (np.isnan(yv)
                                                       & np.isnan(ys))
    assert same.all(), x[~same]


@pytest.mark.parametrize("name", NAMES)
def test_random_whole_range(jit, name):
    _check(jit, name, random_floats(1 << 20, seed=hash(name) & 0xFFFF))


@pytest.mark.parametrize("name", NAMES)
def test_special_values(jit, name):
    _check(jit, name, SPECIALS)


@pytest.mark.parametrize("name", NAMES)
def test_dense_grid(jit, name):
    for lo, hi in GRIDS[name]:
        _check(jit, name, np.linspace(lo, hi, 1 << 20, dtype=np.float32))


def test_log_family_near_one_and_denormals(jit):
    one = np.float32(1.0)
    k = np.arange(-20000, 20000)
    near_one = (one.view(np.int32) + k).astype(np.int32).view(np.float32)
    denorms = np.arange(1, 1 << 23, 97, dtype=np.int32).view(np.float32)
    for name in ("log", "log2", "log10", "log1p"):
        _check(jit, name, near_one)
        _check(jit, name, denorms)
    for name in ("expm1", "log1p", "tanh", "erf", "exp", "sigmoid"):
        _check(jit, name, near_one - one)


def test_exact_special_results(jit):
    inf, nan = np.inf, np.nan
    cases = {
        "exp": [(0.0, 1.0), (-inf, 0.0), (inf, inf), (nan, nan),
                (89.0, inf), (-104.0, 0.0), (-1e30, 0.0), (1e30, inf)],
        "exp2": [(0.0, 1.0), (-149.0, DENORM_MIN), (-150.0, 0.0),
                 (-126.0, FLT_TINY), (127.0, 2.0 ** 127), (128.0, inf),
                 (-inf, 0.0), (inf, inf), (nan, nan), (10.0, 1024.0)],
        "expm1": [(0.0, 0.0), (-0.0, -0.0), (-inf, -1.0), (inf, inf),
                  (-30.0, -1.0), (nan, nan), (DENORM_MIN, DENORM_MIN)],
        "log": [(1.0, 0.0), (0.0, -inf), (-0.0, -inf), (-1.0, nan),
                (inf, inf), (-inf, nan), (nan, nan)],
        "log2": [(1.0, 0.0), (8.0, 3.0), (DENORM_MIN, -149.0), (0.0, -inf),
                 (-2.0, nan), (inf, inf), (nan, nan), (2.0 ** 127, 127.0)],
        "log10": [(1.0, 0.0), (0.0, -inf), (-1.0, nan), (inf, inf),
                  (nan, nan)],
        "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -inf), (-2.0, nan),
                  (inf, inf), (-inf, nan), (nan, nan),
                  (DENORM_MIN, DENORM_MIN)],
        "tanh": [(0.0, 0.0), (-0.0, -0.0), (inf, 1.0), (-inf, -1.0),
                 (20.0, 1.0), (-20.0, -1.0), (nan, nan),
                 (DENORM_MIN, DENORM_MIN), (FLT_MAX, 1.0)],
        "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (inf, 1.0), (-inf, 0.0),
                    (nan, nan), (20.0, 1.0), (-200.0, 0.0)],
        "erf": [(0.0, 0.0), (-0.0, -0.0), (inf, 1.0), (-inf, -1.0),
                (4.0, 1.0), (-10.0, -1.0), (nan, nan), (FLT_MAX, 1.0)],
    }
    for name, pairs in cases.items():
        x = np.array([p[0] for p in pairs], dtype=np.float32)
        want = np.array([p[1] for p in pairs], dtype=np.float32)
        got = jit(name, x)
        for xi, gi, wi in zip(x, got, want):
            if np.isnan(wi):
                assert np.isnan(gi), (name, xi, gi)
            else:
                assert gi == wi and np.signbit(gi) == np.signbit(wi), (
                    name, xi, gi, wi)


def test_sigmoid_tail_not_flushed(jit):
    # sigmoid(x) ~ exp(x) for x << 0; must not be flushed to zero early.
    x = np.array([-89.0, -95.0, -100.0, -103.0], dtype=np.float32)
    y = jit("sigmoid", x)
    assert np.all(y > 0)
    assert ulp_errors("sigmoid", x, y).max() <= MAX_ULP["sigmoid"]


def test_exp_throughput(jit):
    """Print exp throughput vs numpy (informational, no assertion)."""
    x = np.random.default_rng(3).uniform(-80, 80, 1 << 24).astype(np.float32)
    y = np.empty_like(x)
    fn = jit.funcs["exp", VW]

    def best(f, reps=5):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times)

    t_jit = best(lambda: fn(x.ctypes.data, y.ctypes.data, x.size))
    t_np = best(lambda: np.exp(x, out=y))
    print("\nexp over 16M float32: vecmath %.2f ms (%.2f Gelem/s), "
          "numpy %.2f ms, speedup %.2fx"
          % (t_jit * 1e3, x.size / t_jit / 1e9, t_np * 1e3, t_np / t_jit))


# ---------------------------------------------------------------------------
# pow (two operands)
# ---------------------------------------------------------------------------
def _pow_kernels():
    """``pow_<w>(float* x, float* y, float* out, i64 n)`` for w = 8 and 1, JIT-compiled; returns
    ``run(x, y, width)``."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module(name="vecmath_pow")
    for width in (VW, 1):
        _define_kernel(module, "pow", width, arity=2)
    mod = llvm.parse_assembly(str(module))
    mod.verify()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                      features=llvm.get_host_cpu_features().flatten(), opt=3)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    funcs = {w: proto(engine.get_function_address("pow_%d" % w)) for w in (VW, 1)}

    def run(x, y, width=VW):
        x, y = np.broadcast_arrays(np.float32(x), np.float32(y))
        x, y = np.ascontiguousarray(x.ravel()), np.ascontiguousarray(y.ravel())
        out = np.empty_like(x)
        funcs[width](x.ctypes.data, y.ctypes.data, out.ctypes.data, x.size)
        return out

    run.engine = engine
    return run


@pytest.fixture(scope="module")
def pow_jit():
    return _pow_kernels()


def _pow_ulps(x, y, got):
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    err = np.abs(_ordered(got) - _ordered(ref)).astype(np.float64)
    err[np.isnan(got) != np.isnan(ref)] = np.inf
    err[np.isnan(got) & np.isnan(ref)] = 0.0
    return err


def test_pow_accuracy(pow_jit):
    """Within 2 ulp of float64's pow rounded for |y| <= 20 over the whole positive range and for
    negative bases with integer exponents; within |y| * 2**-26 relative beyond."""
    rng = np.random.default_rng(7)
    x = np.abs(random_floats(1 << 18, seed=5))
    for bound in (4, 20):
        y = rng.uniform(-bound, bound, x.size).astype(np.float32)
        assert _pow_ulps(x, y, pow_jit(x, y)).max() <= 2
    xs = rng.uniform(-50, 50, 1 << 16).astype(np.float32)
    ys = rng.integers(-20, 21, xs.size).astype(np.float32)
    err = _pow_ulps(xs, ys, pow_jit(xs, ys))
    assert err.max() <= 4, (xs[np.argmax(err)], ys[np.argmax(err)])
    xb = rng.uniform(0.5, 2.0, 1 << 16).astype(np.float32)
    yb = rng.uniform(-120, 120, xb.size).astype(np.float32)
    _check_relative(xb, yb, pow_jit(xb, yb))


def _check_relative(x, y, got):
    with np.errstate(all="ignore"):
        ref = np.power(x.astype(np.float64), y.astype(np.float64))
    rel = np.abs(got / ref - 1)
    assert (rel <= np.abs(y) * 2.0 ** -26 + 2.0 ** -23).all()


def test_pow_vector_matches_scalar(pow_jit):
    x = np.concatenate([random_floats(4001, seed=2), SPECIALS, -SPECIALS])
    y = np.resize(np.concatenate([SPECIALS, [0.5, 3.0, -3.0, 2.5, 0.75, 1e8, 16777217.0]]), x.size)
    yv, ys = pow_jit(x, y, VW), pow_jit(x, y, 1)
    same = (yv.view(np.int32) == ys.view(np.int32)) | (np.isnan(yv) & np.isnan(ys))
    assert same.all()


def test_pow_special_cases_match_numpy(pow_jit):
    """Every pair of special operands (zeros, infinities, NaN, +-1, odd/even/non-integer exponents,
    huge integers) gives numpy's float32 powf result, sign of zero included."""
    vals = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, -3.0,
                     2.5, -2.5, 0.75, 1e8, -1e8, 16777216.0, 8388609.0, -8388609.0, DENORM_MIN,
                     -DENORM_MIN, FLT_MAX, -FLT_MAX, 1e-20, 127.0, 128.0, -150.0], np.float32)
    x, y = np.meshgrid(vals, vals)
    x, y = x.ravel(), y.ravel()
    got = pow_jit(x, y)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    exact = np.isnan(want) | np.isinf(want) | (want == 0) | (want == 1) | (np.abs(x) == 1)
    for xi, yi, gi, wi in zip(x[exact], y[exact], got[exact], want[exact]):
        assert (np.isnan(gi) and np.isnan(wi)) or (gi == wi and np.signbit(gi) == np.signbit(wi)), (xi, yi, gi, wi)
    x, y, got = x[~exact], y[~exact], got[~exact]
    small = np.abs(y) <= 20
    assert _pow_ulps(x[small], y[small], got[small]).max() <= 2
    _check_relative(x[~small], y[~small], got[~small])


# ---------------------------------------------------------------------------
# exp of a clamped argument (codegen.llvm_ir reads the bounds off min / max)
# ---------------------------------------------------------------------------
def _clamped_exp_forms():
    import te

    lo = -86.5
    return {
        "min0": (lambda x: te.exp(te.min(x, 0.0)), lambda x: np.minimum(x, 0.0), (None, 0.0)),
        "normal": (lambda x: te.exp(te.max(te.min(x, 0.0), lo)), lambda x: np.clip(x, lo, 0.0), (lo, 0.0)),
        "normal_swapped": (lambda x: te.exp(te.min(0.0, te.max(lo, x))), lambda x: np.clip(x, lo, 0.0), (lo, 0.0)),
        "lo_only": (lambda x: te.exp(te.max(x, -20.0)), lambda x: np.maximum(x, -20.0), (-20.0, None)),
        "inner_bound_moot": (lambda x: te.exp(te.min(te.max(x, 5.0), 0.0)), lambda x: np.zeros_like(x), (0.0, 0.0)),
    }


@pytest.mark.parametrize("form", list(_clamped_exp_forms()))
def test_exp_of_clamped_argument(form):
    """exp(max(min(x, 0), lo)) and kin, vectorized through te: the bounds read off the clamps
    (``_clamp_bounds``) drop the clamps and scaling steps they make moot, and the result stays
    within MAX_ULP of numpy's, denormal results included (``min0``)."""
    import codegen
    import te
    from codegen.llvm_ir import _clamp_bounds

    build, clamp, bounds = _clamped_exp_forms()[form]
    n = 4099  # not a whole number of vectors
    x_in = te.placeholder((n,), name="x")
    y_out = te.compute((n,), lambda i: build(x_in[i]), name="y")
    assert _clamp_bounds(y_out.op.body[0].args[0]) == bounds
    s = te.create_schedule(y_out.op)
    _, inner = s[y_out].split(y_out.op.axis[0], factor=8)
    s[y_out].vectorize(inner)
    f = codegen.build(s, [x_in, y_out])
    x = np.concatenate([np.linspace(-110.0, 90.0, n - 5), [-np.inf, np.inf, 0.0, -0.0, -86.5]]).astype(np.float32)
    y = np.empty_like(x)
    f(x, y)
    with np.errstate(all="ignore"):
        want = np.exp(clamp(x.astype(np.float64))).astype(np.float32)
    err = np.abs(_ordered(y) - _ordered(want))
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP["exp"], f"{form}: exp at {x[worst]!r} = {y[worst]!r}, want {want[worst]!r}"
