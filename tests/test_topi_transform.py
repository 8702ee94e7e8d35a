"""topi transform operators against numpy (and torch for resize).

Each is built with both the generic and the x86 ``schedule_injective`` on
guarded buffers (``helpers.check_build``); every bad argument has an error test.
"""

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi import generic, x86

SCHEDULES = {"generic": generic, "x86": x86}


@pytest.fixture(params=sorted(SCHEDULES))
def sched(request):
    return SCHEDULES[request.param]


def run(sched, out, ins, ref, inputs=None, **tol):
    outs = out if isinstance(out, list) else [out]
    s = sched.schedule_injective(outs)
    return check_build(s, [*ins, *outs], ref, inputs=inputs, **tol)


def ph(shape, dtype="float32", name="X"):
    return te.placeholder(shape, dtype, name=name)


def shape_of(t):
    return tuple(int(d) for d in t.shape)


X_SHAPE = (2, 6, 5, 7)


# ------------------------------------------------------------ reshapes ---
@pytest.mark.parametrize("newshape", [(12, -1), (-1,), (2, 3, 2, 35), (70, 1, 6)], ids=str)
def test_reshape(sched, newshape):
    X = ph(X_SHAPE)
    Y = topi.reshape(X, newshape)
    assert Y.op.tag == "injective"
    run(sched, Y, [X], lambda a: a.reshape(newshape))


@pytest.mark.parametrize("axes", [None, (2, 0, 3, 1), (0, -1, 1, 2)], ids=str)
def test_transpose(sched, axes):
    X = ph(X_SHAPE)
    run(sched, topi.transpose(X, axes), [X], lambda a: np.transpose(a, axes))


@pytest.mark.parametrize("axis", [0, 1, 3, -1])
def test_flatten(sched, axis):
    X = ph(X_SHAPE)
    n = int(np.prod(X_SHAPE[:axis % 5]))
    run(sched, topi.flatten(X, axis), [X], lambda a: a.reshape(n, -1))


def test_nn_flatten(sched):
    X = ph((3, 4, 1, 5))
    Y = topi.nn.flatten(X)
    assert shape_of(Y) == (3, 20)
    run(sched, Y, [X], lambda a: a.reshape(3, -1))


def test_nn_names_stay_functions_after_submodule_import():
    import importlib

    for mod in ("flatten", "dense", "pad", "conv2d", "softmax", "batch_norm", "lrn"):
        importlib.import_module(f"topi.nn.{mod}")
        assert callable(getattr(topi.nn, mod)), mod


@pytest.mark.parametrize("axis, num", [(0, 1), (-1, 2), (2, 1), (-4, 1)])
def test_expand_dims(sched, axis, num):
    X = ph((3, 5, 2))
    Y = topi.expand_dims(X, axis, num)
    pos = axis % 4
    assert shape_of(Y) == (3, 5, 2)[:pos] + (1,) * num + (3, 5, 2)[pos:]
    run(sched, Y, [X], lambda a: a.reshape(shape_of(Y)))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2)], ids=str)
def test_squeeze(sched, axis):
    X = ph((1, 4, 1))
    run(sched, topi.squeeze(X, axis), [X], lambda a: np.squeeze(a, axis))


def test_squeeze_to_scalar(sched):
    X = ph((1, 1))
    Y = topi.squeeze(X)
    assert shape_of(Y) == ()
    run(sched, Y, [X], lambda a: a.reshape(()))


@pytest.mark.parametrize("dtype", ["int32", "float64", "int8", "bool"])
def test_cast(sched, dtype):
    X = ph((7, 9))
    Y = topi.cast(X, dtype)
    assert Y.dtype == dtype and Y.op.tag == "elemwise"
    run(sched, Y, [X], lambda a: a.astype(dtype), [np.linspace(-3, 3, 63, dtype="float32").reshape(7, 9)])


# -------------------------------------------------------- join and split ---
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concatenate(sched, axis):
    shapes = [list(X_SHAPE) for _ in range(3)]
    for k, s in enumerate(shapes):
        s[axis] = k + 2
    ts = [ph(s, name=f"T{k}") for k, s in enumerate(shapes)]
    run(sched, topi.concatenate(ts, axis), ts, lambda *a: np.concatenate(a, axis))


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_stack(sched, axis):
    ts = [ph((3, 5), name=f"T{k}") for k in range(3)]
    run(sched, topi.stack(ts, axis), ts, lambda *a: np.stack(a, axis))


@pytest.mark.parametrize("spec, axis", [(3, 1), ([1, 4], 1), ([2, 2, 9], -1), (1, 0)], ids=str)
def test_split(sched, spec, axis):
    X = ph(X_SHAPE)
    outs = topi.split(X, spec, axis)
    assert isinstance(outs, list)
    run(sched, outs, [X], lambda a: tuple(np.split(a, spec, axis)))


@pytest.mark.parametrize("begin, end, strides, axes", [
    ([0, 1], [2, 5], None, None),
    ([-1, 5, 1], [0, 0, -1], [-1, -2, 2], None),
    ([100], [-100], [-1], [2]),
    ([1, -3], [-1, 7], [2, 1], [3, 1]),
    ([-2], [10], [3], [-1]),
], ids=str)
def test_strided_slice(sched, begin, end, strides, axes):
    X = ph(X_SHAPE)
    index = [slice(None)] * 4
    for k, (b, e) in enumerate(zip(begin, end)):
        a = axes[k] if axes else k
        index[a] = slice(b, e, strides[k] if strides else 1)
    run(sched, topi.strided_slice(X, begin, end, strides, axes), [X], lambda a: a[tuple(index)])


# ------------------------------------------------------------- gathers ---
@pytest.mark.parametrize("axis, mode", [(None, "clip"), (0, "clip"), (1, "wrap"), (-1, "clip"), (None, "wrap")],
                         ids=str)
def test_take(sched, axis, mode):
    X = ph(X_SHAPE)
    Ind = ph((3, 4), "int32", name="I")
    ind = np.random.default_rng(0).integers(-12, 300, (3, 4)).astype("int32")
    run(sched, topi.take(X, Ind, axis, mode=mode), [X, Ind], lambda a, i: np.take(a, i, axis, mode=mode),
        [np.random.rand(*X_SHAPE).astype("float32"), ind])


def test_take_int64_indices(sched):
    X = ph((9,))
    Ind = ph((5,), "int64", name="I")
    run(sched, topi.take(X, Ind, 0), [X, Ind], lambda a, i: np.take(a, i, 0, mode="clip"),
        [np.arange(9, dtype="float32"), np.array([0, 8, 3, -1, 20], "int64")])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(sched, axis):
    """ONNX GatherElements: indices may be smaller off the axis; negative ones count from the end."""
    X = ph(X_SHAPE)
    ishape = list(X_SHAPE)
    ishape[axis] = 3
    ishape[(axis + 1) % 4] -= 1
    n = X_SHAPE[axis]
    Ind = ph(ishape, "int32", name="I")
    ind = np.random.default_rng(1).integers(-n, n, ishape).astype("int32")

    def ref(a, i):
        part = tuple(slice(None) if k == axis % 4 else slice(0, d) for k, d in enumerate(ishape))
        return np.take_along_axis(a[part], np.where(i < 0, i + n, i), axis)

    run(sched, topi.gather(X, axis, Ind), [X, Ind], ref, [np.random.rand(*X_SHAPE).astype("float32"), ind])


# ---------------------------------------------------------------- tiling ---
@pytest.mark.parametrize("reps", [(2,), (1, 3), (2, 1, 2, 3), 2], ids=str)
def test_tile(sched, reps):
    X = ph((3, 1, 5))
    run(sched, topi.tile(X, reps), [X], lambda a: np.tile(a, reps))


@pytest.mark.parametrize("repeats, axis", [(3, 0), (2, -1), (1, 1)])
def test_repeat(sched, repeats, axis):
    X = ph((4, 3, 5))
    run(sched, topi.repeat(X, repeats, axis), [X], lambda a: np.repeat(a, repeats, axis))


# ------------------------------------------------------------- layouts ---
@pytest.mark.parametrize("src, dst, shape", [
    ("NCHW", "NCHW16c", (1, 32, 5, 3)), ("NCHW16c", "NCHW", (2, 2, 3, 5, 16)),
    ("NCHW", "NCHW3c", (2, 6, 5, 7)), ("NCHW4c", "NCHW2c", (1, 3, 2, 3, 4)),
    ("NCHW", "NHWC", (2, 3, 4, 5)), ("NCHW8c", "NHWC", (1, 2, 3, 3, 8)),
], ids=str)
def test_layout_transform(sched, src, dst, shape):
    X = ph(shape)
    Y = topi.layout_transform(X, src, dst)
    run(sched, Y, [X], lambda a: topi.testing.layout_transform_python(a, src, dst))


# --------------------------------------------------------------- resize ---
RESIZE = [("nearest_neighbor", "asymmetric"), ("nearest_neighbor", "half_pixel"),
          ("nearest_neighbor", "align_corners"), ("bilinear", "half_pixel"),
          ("bilinear", "align_corners"), ("bilinear", "asymmetric")]


@pytest.mark.parametrize("method, mode", RESIZE, ids=str)
@pytest.mark.parametrize("size", [(9, 4), (3, 14)], ids=str)
def test_resize(sched, method, mode, size):
    X = ph((2, 3, 5, 7))
    Y = topi.resize(X, size, "NCHW", method, mode)
    run(sched, Y, [X], lambda a: topi.testing.resize_python(a, size, "NCHW", method, mode), rtol=1e-5, atol=1e-5)


def test_resize_nhwc(sched):
    X = ph((1, 5, 6, 3))
    Y = topi.resize(X, (10, 3), "NHWC", "bilinear", "half_pixel")
    run(sched, Y, [X], lambda a: topi.testing.resize_python(a, (10, 3), "NHWC", "bilinear"), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode, kw", [("bilinear", {"align_corners": False}), ("bilinear", {"align_corners": True}),
                                      ("nearest", {}), ("nearest-exact", {})], ids=str)
def test_resize_torch(mode, kw):
    torch = pytest.importorskip("torch")
    X = ph((2, 3, 5, 7))
    x = np.random.default_rng(0).random((2, 3, 5, 7), dtype=np.float32)
    want = torch.nn.functional.interpolate(torch.from_numpy(x), size=(11, 4), mode=mode, **kw).numpy()
    method = "bilinear" if mode == "bilinear" else "nearest_neighbor"
    ctm = "align_corners" if kw.get("align_corners") else ("asymmetric" if mode == "nearest" else "half_pixel")
    run(x86, topi.resize(X, (11, 4), method=method, coordinate_transformation_mode=ctm), [X],
        lambda a: want, [x], rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------- errors ---
ERRORS = [
    (lambda X: topi.reshape(X, (8, -1)), r"reshape: cannot infer -1 in newshape \(8, -1\) for shape \(2, 6, 5, 7\)"),
    (lambda X: topi.reshape(X, (4, 5)), r"reshape: cannot reshape shape \(2, 6, 5, 7\) \(420 elements\) to \(4, 5\)"),
    (lambda X: topi.reshape(X, (-1, -1)), r"reshape: invalid newshape"),
    (lambda X: topi.transpose(X, (0, 1, 1, 2)), r"transpose: axes=\(0, 1, 1, 2\) is not a permutation"),
    (lambda X: topi.transpose(X, (0, 1)), r"transpose: axes=\(0, 1\) is not a permutation of the axes of shape"),
    (lambda X: topi.flatten(X, 5), r"flatten: axis=5 is out of range for shape \(2, 6, 5, 7\)"),
    (lambda X: topi.expand_dims(X, 5), r"expand_dims: axis=5 is out of range"),
    (lambda X: topi.expand_dims(X, 0, -1), r"expand_dims: num_newaxis must be >= 0"),
    (lambda X: topi.squeeze(X, 1), r"squeeze: axis 1 of shape \(2, 6, 5, 7\) has extent 6, not 1"),
    (lambda X: topi.squeeze(X, 4), r"squeeze: axis=4 is out of range for shape"),
    (lambda X: topi.concatenate([X, ph((2, 5, 5, 7))], 0), r"concatenate: shapes/dtypes must agree except on axis 0"),
    (lambda X: topi.concatenate([X, ph((2, 6, 5), )], 1), r"concatenate: shapes/dtypes must agree"),
    (lambda X: topi.concatenate([], 0), r"concatenate: expects a non-empty list"),
    (lambda X: topi.concatenate([X], 4), r"concatenate: axis=4 is out of range"),
    (lambda X: topi.stack([X, ph((2, 6, 5, 8))], 0), r"stack: shapes/dtypes must agree"),
    (lambda X: topi.stack([X], 5), r"stack: axis=5 is out of range"),
    (lambda X: topi.split(X, 4, 1), r"split: 4 sections do not divide axis 1 of shape \(2, 6, 5, 7\)"),
    (lambda X: topi.split(X, [3, 1], 1), r"split: indices \[3, 1\] must be non-negative and ascending"),
    (lambda X: topi.split(X, 2, -5), r"split: axis=-5 is out of range"),
    (lambda X: topi.strided_slice(X, [0], [1], [0]), r"strided_slice: stride 0 on axis 0"),
    (lambda X: topi.strided_slice(X, [0, 0], [1]), r"strided_slice: begin=\[0, 0\], end=\[1\]"),
    (lambda X: topi.strided_slice(X, [0], [1], axes=[4]), r"strided_slice: axis=4 is out of range"),
    (lambda X: topi.take(X, ph((3,), "float32"), 0), r"take: indices must be an integer te.Tensor"),
    (lambda X: topi.take(X, ph((3,), "int32"), 0, mode="raise"), r"take: mode must be 'clip', 'wrap' or 'fast', got 'raise'"),
    (lambda X: topi.take(X, ph((3,), "int32"), 4), r"take: axis=4 is out of range"),
    (lambda X: topi.gather(X, 1, ph((2, 6), "int32")), r"gather: indices of shape \(2, 6\) do not fit data"),
    (lambda X: topi.gather(X, 1, ph((3, 6, 5, 7), "int32")), r"gather: indices of shape \(3, 6, 5, 7\)"),
    (lambda X: topi.tile(X, (0, 1)), r"tile: reps must be positive ints, got \(0, 1\)"),
    (lambda X: topi.repeat(X, 0, 1), r"repeat: repeats must be a positive int, got 0"),
    (lambda X: topi.repeat(X, 2, 9), r"repeat: axis=9 is out of range"),
    (lambda X: topi.layout_transform(X, "NCHW", "NCHW4c"), r"layout_transform: axis C of extent 6 .* does not split by 4"),
    (lambda X: topi.layout_transform(X, "NCHW", "NCDW"), r"layout_transform: cannot transform shape"),
    (lambda X: topi.layout_transform(X, "NCH", "NCH"), r"layout_transform: cannot transform shape \(2, 6, 5, 7\)"),
    (lambda X: topi.layout_transform(X, "NCHW", "NCHW4x"), r"layout_transform: cannot parse layout 'NCHW4x'"),
    (lambda X: topi.layout_transform(X, "NCHW", "NCHWc"), r"layout_transform: cannot parse layout 'NCHWc'"),
    (lambda X: topi.resize(X, (3, 3), "NCWH"), r"resize: layout must be 'NCHW' or 'NHWC'"),
    (lambda X: topi.resize(X, (3, 0)), r"resize: size must be two positive ints, got \(3, 0\)"),
    (lambda X: topi.resize(X, (3, 3), method="cubic"), r"resize: method must be 'nearest_neighbor' or 'bilinear'"),
    (lambda X: topi.resize(X, (3, 3), coordinate_transformation_mode="tf"), r"resize: coordinate_transformation_mode"),
    (lambda X: topi.resize(topi.reshape(X, (12, 35)), (3, 3)), r"resize: layout .* shape \(12, 35\)"),
]


@pytest.mark.parametrize("make, match", ERRORS, ids=lambda v: v if isinstance(v, str) else "")
def test_errors(make, match):
    with pytest.raises(ValueError, match=match):
        make(ph(X_SHAPE))


def test_type_errors():
    with pytest.raises(TypeError, match="reshape: expected a te.Tensor"):
        topi.reshape(np.zeros(3), (3,))


@pytest.mark.parametrize("src,dst", [
    ((1, 136, 28, 28), (1, 4, 34, 28, 28)), ((1, 4, 34, 28, 28), (1, 136, 28, 28)), ((2, 3, 4), (6, 4)),
    ((24,), (2, 3, 4)), ((1, 2048), (1, 2048, 1, 1)), ((6, 4), (4, 6)), ((3, 1, 4), (1, 12)),
    ((2, 1, 3), (2, 3, 1)), ((4, 6), (2, 2, 3, 2)), ((), (1,)), ((1,), ()),
])
def test_reshape_by_axis_runs(src, dst):
    """Splits and merges of axis runs read directly (no divisions for a pure split)."""
    import codegen
    import schedule

    A = te.placeholder(src, name="A")
    B = topi.reshape(A, dst)
    s = topi.x86.schedule_injective(B)
    x = np.random.default_rng(1).random(src).astype("float32")
    y = np.empty(dst, "float32")
    codegen.build(s, [A, B])(x, y)
    np.testing.assert_array_equal(y, x.reshape(dst))
    if (src, dst) == ((1, 136, 28, 28), (1, 4, 34, 28, 28)):
        assert "floordiv" not in str(schedule.lower(te.create_schedule(B.op), [A, B]))
