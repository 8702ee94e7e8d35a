"""topi operators that classic TVM's topi tests name: dilate, dft, nll_loss, unique, isfinite,
conv2d's kernel layouts, sort/argsort/topk, cumsum, argwhere, searchsorted, the norms; each
against numpy on shapes that do not divide the vector width, through the generic and the x86
schedules, plus one test per error message."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi.generic import nn as generic
from topi.testing import batch_norm, dilate_python, group_norm_python, layer_norm_python, searchsorted_ref
from topi.testing import nll_loss as nll_loss_ref
from topi.x86.norms import schedule_batch_norm
from topi.x86.vector_rows import schedule_dft, schedule_unique, schedule_vector_rows


@pytest.mark.parametrize("shape,strides,fill", [((5,), (3,), 0.0), ((2, 3, 7), (1, 2, 3), 1.5)])
def test_dilate(shape, strides, fill):
    x = te.placeholder(shape, name="x")
    out = topi.nn.dilate(x, strides, fill)
    check_build(generic.default_schedule(out), [x, out], lambda a: dilate_python(a, strides, fill))


def test_dilate_refuses_bad_strides():
    x = te.placeholder((4, 4), name="x")
    with pytest.raises(ValueError, match=r"dilate: 1 strides \(2,\) for data .* of rank 2"):
        topi.nn.dilate(x, (2,))
    with pytest.raises(ValueError, match="strides must be >= 1"):
        topi.nn.dilate(x, (0, 1))


@pytest.mark.parametrize("sched", [generic.schedule_extern, schedule_dft], ids=["generic", "x86"])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("shape,dtype", [((13,), "float32"), ((3, 21), "float64"), ((2, 3, 11), "float16")])
def test_dft(sched, inverse, shape, dtype):
    re, im = te.placeholder(shape, dtype, name="re"), te.placeholder(shape, dtype, name="im")
    o_re, o_im = topi.dft(re, im, inverse)

    def ref(a, b):
        z = (np.fft.ifft if inverse else np.fft.fft)(a.astype(np.float64) + 1j * b.astype(np.float64))
        return z.real.astype(dtype), z.imag.astype(dtype)

    tol = dict(rtol=2e-2, atol=5e-2) if dtype == "float16" else dict(rtol=1e-4, atol=1e-4)
    check_build(sched([o_re, o_im]), [re, im, o_re, o_im], ref, **tol)


def test_dft_refuses_mismatched_parts():
    with pytest.raises(ValueError, match="dft: re_input .* and im_input .* must match"):
        topi.dft(te.placeholder((4,), name="re"), te.placeholder((5,), name="im"), False)


@pytest.mark.parametrize("pshape,reduction,ignore", [((10, 5), "mean", -100), ((7, 5, 3, 2), "mean", 2),
                                                     ((10, 5), "sum", 1), ((9, 5), "none", 3), ((5,), "mean", -100)])
def test_nll_loss(pshape, reduction, ignore):
    c = pshape[0] if len(pshape) == 1 else pshape[1]
    tshape = () if len(pshape) == 1 else (pshape[0],) + pshape[2:]
    p = te.placeholder(pshape, name="p")
    t = te.placeholder(tshape, "int32", name="t")
    w = te.placeholder((c,), name="w")
    out = topi.nn.nll_loss(p, t, w, reduction, ignore)
    rng = np.random.default_rng(1)
    inputs = [rng.uniform(size=pshape).astype("float32"), rng.integers(0, c, tshape).astype("int32"),
              rng.uniform(size=(c,)).astype("float32")]
    check_build(generic.default_schedule(out), [p, t, w, out],
                lambda a, b, c_: np.asarray(nll_loss_ref(a, b, c_, reduction, ignore), "float32"),
                inputs=inputs, rtol=1e-5, atol=1e-6)


def test_nll_loss_refuses_bad_arguments():
    p, t, w = te.placeholder((4, 3)), te.placeholder((4,), "int32"), te.placeholder((3,))
    with pytest.raises(ValueError, match="reduction='max'"):
        topi.nn.nll_loss(p, t, w, "max", -100)
    with pytest.raises(ValueError, match=r"targets must have shape \(4,\)"):
        topi.nn.nll_loss(p, te.placeholder((3,), "int32"), w)
    with pytest.raises(ValueError, match=r"weights must have shape \(3,\)"):
        topi.nn.nll_loss(p, t, te.placeholder((4,)))


def _unique_ref(is_sorted):
    def ref(x):
        uniq, index, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        if not is_sorted:
            order = np.argsort(index)
            uniq, index, counts = uniq[order], index[order], counts[order]
            inverse = np.argsort(order)[inverse]
        k, n = len(uniq), len(x)

        def pad(a, dtype):
            return np.concatenate([a, np.zeros(n - k, a.dtype)]).astype(dtype)

        return (pad(uniq, x.dtype), pad(index, "int32"), inverse.astype("int32"), np.array([k], "int32"),
                pad(counts, "int32"))

    return ref


@pytest.mark.parametrize("sched", [generic.schedule_unique, schedule_unique], ids=["generic", "x86"])
@pytest.mark.parametrize("n,dtype", [(1, "int32"), (13, "int64"), (203, "int32"), (37, "float32")])
@pytest.mark.parametrize("is_sorted", [True, False])
def test_unique(sched, n, dtype, is_sorted):
    x = te.placeholder((n,), dtype, name="x")
    outs = topi.unique(x, is_sorted, True)
    data = np.random.default_rng(n).integers(0, max(2, n // 3), n).astype(dtype)
    check_build(sched(outs), [x, *outs], _unique_ref(is_sorted), inputs=[data], rtol=0, atol=0)


def test_unique_refuses_2d():
    with pytest.raises(ValueError, match="unique: data must be 1-D"):
        topi.unique(te.placeholder((2, 3), "int32"))


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_isfinite(dtype):
    x = te.placeholder((3, 11), dtype, name="x")
    out = topi.isfinite(x)
    data = np.arange(33).reshape(3, 11).astype(dtype)
    if dtype == "float32":
        data[0, 1], data[1, 2], data[2, 3] = np.nan, np.inf, -np.inf
    check_build(generic.default_schedule(out), [x, out], np.isfinite, inputs=[data])


def test_erf_float16_is_evaluated_in_float32():
    x = te.placeholder((5, 7), "float16", name="x")
    out = topi.fast_erf(x)
    from scipy.special import erf  # noqa: PLC0415  (scipy comes with the torch extra)

    data = np.linspace(-3, 3, 35).reshape(5, 7).astype("float16")
    check_build(generic.default_schedule(out), [x, out], lambda a: erf(a.astype("float32")).astype("float16"),
                inputs=[data], rtol=1e-2, atol=1e-2)


def test_conv2d_nhwc_takes_an_ohwi_kernel():
    from topi.testing import conv2d_nhwc_python

    a = te.placeholder((1, 9, 7, 3), name="a")
    w = te.placeholder((5, 3, 3, 3), name="w")  # OHWI
    out = topi.nn.conv2d(a, w, 1, 1, 1, data_layout="NHWC", kernel_layout="OHWI", out_dtype="float32")
    check_build(generic.default_schedule(out), [a, w, out],
                lambda x, k: conv2d_nhwc_python(x, k.transpose(1, 2, 3, 0), 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="kernel_layout='OIHW' with data_layout='NHWC' is not supported"):
        topi.nn.conv2d(a, w, 1, 1, 1, data_layout="NHWC", kernel_layout="OIHW")



SORT_SCHEDULES = pytest.mark.parametrize("sched", [generic.default_schedule, schedule_vector_rows],
                                         ids=["generic", "x86"])


@SORT_SCHEDULES
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("is_ascend", [True, False])
def test_sort_and_argsort(sched, axis, is_ascend):
    x = te.placeholder((7, 19), name="x")
    values = topi.sort(x, axis=axis, is_ascend=is_ascend)
    order = topi.argsort(x, axis=axis, is_ascend=is_ascend, dtype="int32")
    data = np.random.default_rng(3).permutation(7 * 19).reshape(7, 19).astype("float32")
    data[0, :3] = 5.0  # ties keep their index order (a stable sort)

    def ref(a):
        idx = np.argsort(a if is_ascend else -a, axis=axis, kind="stable")
        return np.take_along_axis(a, idx, axis), idx.astype("int32")

    check_build(sched([values, order]), [x, values, order], ref, inputs=[data], rtol=0, atol=0)


@SORT_SCHEDULES
@pytest.mark.parametrize("k,ret_type", [(3, "both"), (0, "values"), (5, "indices")])
def test_topk(sched, k, ret_type):
    x = te.placeholder((5, 13), name="x")
    outs = topi.topk(x, k, 1, ret_type, False, "int64")
    outs = outs if isinstance(outs, list) else [outs]
    data = np.random.default_rng(4).standard_normal((5, 13)).astype("float32")

    def ref(a):
        idx = np.argsort(-a, axis=1, kind="stable")[:, : (k or 13)]
        both = {"values": np.take_along_axis(a, idx, 1), "indices": idx.astype("int64")}
        return tuple(both[r] for r in (["values", "indices"] if ret_type == "both" else [ret_type]))

    check_build(sched(outs), [x, *outs], ref, inputs=[data], rtol=0, atol=0)
    with pytest.raises(ValueError, match="topk: ret_type='all'"):
        topi.topk(x, 1, ret_type="all")


@pytest.mark.parametrize("axis,dtype,exclusive", [(None, None, False), (0, "int64", True), (1, "float64", False)])
def test_cumsum_cumprod(axis, dtype, exclusive):
    x = te.placeholder((5, 11), "int32", name="x")
    for fn, ref_fn, ident in ((topi.cumsum, np.cumsum, 0), (topi.cumprod, np.cumprod, 1)):
        out = fn(x, axis, dtype, exclusive)

        def ref(a, ref_fn=ref_fn, ident=ident):
            a = a.astype(dtype or a.dtype)
            ax = 0 if axis is None else axis
            a = a.reshape(-1) if axis is None else a
            r = ref_fn(a, axis=ax)
            if exclusive:
                r = np.roll(r, 1, axis=ax)
                np.moveaxis(r, ax, 0)[0] = ident
            return r

        data = np.random.default_rng(5).integers(-3, 4, (5, 11)).astype("int32")
        check_build(generic.schedule_extern(out), [x, out], ref, inputs=[data], rtol=0, atol=0)


@pytest.mark.parametrize("shape", [(1,), (13,), (6, 5), (3, 4, 5, 2)])
def test_argwhere(shape):
    data = np.random.default_rng(6).choice([0, 0, 1, 3], size=shape).astype("int32")
    want = np.argwhere(data).astype("int32")
    rows = te.placeholder((len(want), len(shape)), "int32", name="rows")
    cond = te.placeholder(shape, "int32", name="cond")
    out = topi.argwhere(rows, cond)
    check_build(generic.schedule_argwhere(out), [rows, cond, out], lambda r, c: want,
                inputs=[np.ones((len(want), len(shape)), "int32"), data], rtol=0, atol=0)


def test_argwhere_drops_rows_beyond_output_shape():
    data = np.ones(9, "int32")
    rows = te.placeholder((4, 1), "int32", name="rows")  # fewer rows than nonzeros: no write past them
    cond = te.placeholder((9,), "int32", name="cond")
    out = topi.argwhere(rows, cond)
    check_build(generic.schedule_argwhere(out), [rows, cond, out], lambda r, c: np.arange(4).reshape(4, 1),
                inputs=[np.ones((4, 1), "int32"), data], rtol=0, atol=0)


@pytest.mark.parametrize("seq_shape,val_shape", [((17,), (3, 9)), ((2, 3, 29), (2, 3, 7))])
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted(seq_shape, val_shape, right):
    rng = np.random.default_rng(7)
    seq_np = np.sort(rng.integers(0, 10, seq_shape), axis=-1).astype("float32")  # repeats: left != right
    val_np = rng.integers(-1, 11, val_shape).astype("float32")
    seq, val = te.placeholder(seq_shape, name="seq"), te.placeholder(val_shape, name="val")
    out = topi.searchsorted(seq, val, right, "int32")
    check_build(generic.schedule_extern(out), [seq, val, out],
                lambda s, v: searchsorted_ref(s, v, right, "int32"), inputs=[seq_np, val_np], rtol=0, atol=0)


@pytest.mark.parametrize("op,shape,axis", [("layer_norm", (3, 5, 7), (1, 2)), ("layer_norm", (4, 9), (1,)),
                                           ("instance_norm", (2, 3, 11), (2,))])
def test_layer_and_instance_norm(op, shape, axis):
    scale_shape = tuple(shape[a] for a in axis)
    x = te.placeholder(shape, name="x")
    g, b = te.placeholder(scale_shape, name="g"), te.placeholder(scale_shape, name="b")
    out = getattr(topi.nn, op)(x, g, b, axis, 1e-5)
    check_build(generic.default_schedule(out), [x, g, b, out], lambda *a: layer_norm_python(*a, axis, 1e-5),
                rtol=1e-4, atol=1e-5)


def test_group_norm():
    shape = (2, 6, 5, 3)
    x, g, b = te.placeholder(shape, name="x"), te.placeholder((6,), name="g"), te.placeholder((6,), name="b")
    out = topi.nn.group_norm(x, g, b, 3, 1, (2, 3), 1e-5)
    check_build(generic.default_schedule(out), [x, g, b, out],
                lambda *a: group_norm_python(*a, 3, 1, (2, 3), 1e-5), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="group_norm: num_groups=4 must divide the 6 channels"):
        topi.nn.group_norm(x, g, b, 4, 1, (2, 3))


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_training(training):
    shape, axis = (3, 5, 4, 2), 1
    x = te.placeholder(shape, name="x")
    params = [te.placeholder((5,), name=n) for n in ("g", "b", "m", "v")]
    outs = topi.nn.batch_norm(x, *params, axis, 1e-3, True, True, training, 0.2)
    rng = np.random.default_rng(8)
    inputs = [rng.standard_normal(shape).astype("float32")] + [rng.uniform(0.5, 1, 5).astype("float32")
                                                               for _ in params]
    check_build(schedule_batch_norm(outs), [x, *params, *outs],
                lambda *a: tuple(np.asarray(r, "float32") for r in batch_norm(*a, axis, 1e-3, True, True,
                                                                                training, 0.2)),
                inputs=inputs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCW", "NWC"])
@pytest.mark.parametrize("padding,stride,dilation", [("SAME", 1, 1), ((2, 1), 2, 2)])
def test_group_conv1d(layout, padding, stride, dilation):
    from topi.testing import group_conv1d_ncw_python

    n, c, w, f, k, groups = 2, 6, 13, 9, 3, 3
    if layout == "NCW":
        a, wt = te.placeholder((n, c, w), name="a"), te.placeholder((f, c // groups, k), name="w")
        out = topi.nn.group_conv1d_ncw(a, wt, stride, padding, dilation, groups)
        ref = lambda x, y: group_conv1d_ncw_python(x, y, stride, padding, dilation, groups)  # noqa: E731
    else:
        a, wt = te.placeholder((n, w, c), name="a"), te.placeholder((k, c // groups, f), name="w")
        out = topi.nn.group_conv1d_nwc(a, wt, stride, padding, dilation, groups)
        ref = lambda x, y: group_conv1d_ncw_python(  # noqa: E731
            x.transpose(0, 2, 1), y.transpose(2, 1, 0), stride, padding, dilation, groups).transpose(0, 2, 1)
    check_build(generic.default_schedule(out), [a, wt, out], ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="group_conv1d_ncw: argument groups=4 must divide"):
        topi.nn.group_conv1d_ncw(te.placeholder((1, 6, 8)), te.placeholder((9, 2, 3)), 1, 0, 1, 4)


def test_group_conv2d_nhwc():
    from topi.testing import conv2d_nhwc_python

    a, wt = te.placeholder((1, 9, 7, 8), name="a"), te.placeholder((3, 3, 2, 12), name="w")
    out = topi.nn.group_conv2d_nhwc(a, wt, 2, 1, 1, 4)
    check_build(generic.default_schedule(out), [a, wt, out], lambda x, y: conv2d_nhwc_python(x, y, 2, 1, 4),
                rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("mode", ["DCR", "CDR"])
def test_depth_to_space_and_back(layout, mode):
    from topi.testing import depth_to_space_python, space_to_depth_python

    shape = (2, 12, 3, 5) if layout == "NCHW" else (2, 3, 5, 12)
    x = te.placeholder(shape, name="x")
    d2s = topi.nn.depth_to_space(x, 2, layout, mode)

    def nchw(fn):
        if layout == "NCHW":
            return fn
        return lambda a: fn(a.transpose(0, 3, 1, 2)).transpose(0, 2, 3, 1)

    check_build(generic.default_schedule(d2s), [x, d2s], nchw(lambda a: depth_to_space_python(a, 2, mode)))
    s2d = topi.nn.space_to_depth(x, 1 if layout == "NCHW" else 1, layout)
    check_build(generic.default_schedule(s2d), [x, s2d], nchw(lambda a: space_to_depth_python(a, 1)))
    y = te.placeholder((1, 3, 4, 6) if layout == "NCHW" else (1, 4, 6, 3), name="y")
    s2d = topi.nn.space_to_depth(y, 2, layout)
    check_build(generic.default_schedule(s2d), [y, s2d], nchw(lambda a: space_to_depth_python(a, 2)))


def test_space_to_batch_nd_round_trip():
    from topi.testing import batch_to_space_nd_python, space_to_batch_nd_python

    x = te.placeholder((2, 5, 7, 3), name="x")
    s2b = topi.nn.space_to_batch_nd(x, [2, 3], [1, 0], [0, 2], 0.5)
    check_build(generic.default_schedule(s2b), [x, s2b],
                lambda a: space_to_batch_nd_python(a, [2, 3], [1, 0], [0, 2], 0.5))
    y = te.placeholder((12, 3, 3, 2), name="y")
    b2s = topi.nn.batch_to_space_nd(y, [2, 3], [1, 0], [0, 2])
    check_build(generic.default_schedule(b2s), [y, b2s], lambda a: batch_to_space_nd_python(a, [2, 3], [1, 0], [0, 2]))
    data = np.random.default_rng(9).standard_normal((2, 6, 6, 3)).astype("float32")  # the inverse pair
    np.testing.assert_array_equal(batch_to_space_nd_python(space_to_batch_nd_python(data, [2, 3], [0, 0], [0, 0]),
                                                           [2, 3], [0, 0], [0, 0]), data)
    with pytest.raises(ValueError, match=r"block_shape \(2, 2\) must divide the padded extents \[5, 7\]"):
        topi.nn.space_to_batch_nd(x, [2, 2], [0, 0], [0, 0])


@pytest.mark.parametrize("equation,shapes", [("...j,j", [(3, 5), (5,)]), ("ij,ij->i", [(1, 4), (2, 4)]),
                                             ("...ik,...jk->...ij", [(2, 1, 3, 4), (5, 2, 4)])])
def test_einsum_ellipsis_and_broadcast(equation, shapes):
    xs = [te.placeholder(s, name=f"x{k}") for k, s in enumerate(shapes)]
    out = topi.einsum(equation, *xs)
    check_build(generic.default_schedule(out), [*xs, out], lambda *a: np.einsum(equation, *a), rtol=1e-5, atol=1e-5)


def test_tensordot_scatter_nd_and_small_builders():
    a, b = te.placeholder((3, 2, 4), name="a"), te.placeholder((2, 3, 5), name="b")
    out = topi.tensordot(a, b, ((1, 0), (0, 1)))
    check_build(generic.default_schedule(out), [a, b, out], lambda x, y: np.tensordot(x, y, ((1, 0), (0, 1))),
                rtol=1e-5, atol=1e-5)
    data, idx, upd = te.placeholder((2, 7, 3), name="d"), te.placeholder((2, 5), "int64", name="i"), \
        te.placeholder((5, 3), name="u")
    out = topi.scatter_nd(data, idx, upd, "add")
    indices = np.array([[0, 1, 1, 0, 1], [6, 0, 6, 6, 2]], "int64")

    def ref(d, i, u):
        d = d.copy()
        np.add.at(d, (i[0], i[1]), u)
        return d

    check_build(generic.schedule_extern(out), [data, idx, upd, out], ref,
                inputs=[np.zeros((2, 7, 3), "float32"), indices, np.ones((5, 3), "float32")])
    xs = [te.placeholder((3, 4), name=f"x{k}") for k in range(3)]
    total = topi.elemwise_sum(xs)
    check_build(generic.default_schedule(total), [*xs, total], lambda *a: sum(a))
    full = topi.full_like(xs[0], 2.5)
    check_build(generic.default_schedule(full), [xs[0], full], lambda a: np.full_like(a, 2.5))
    assert topi.utils.get_shape((3, 2, 32, 48, 16), "NCHW16c", "NC16cWH") == (3, 2, 16, 48, 32)


@pytest.mark.parametrize("coord,align", [("align_corners", True), ("half_pixel", False)])
def test_resize2d_linear_matches_torch(coord, align):
    torch = pytest.importorskip("torch")
    x = te.placeholder((2, 3, 7, 9), name="x")
    out = topi.image.resize2d(x, [0.0] * 4, (11, 5), "NCHW", "linear", coord)

    def ref(a):
        t = torch.nn.functional.interpolate(torch.from_numpy(a), size=(11, 5), mode="bilinear", align_corners=align)
        return t.numpy()

    check_build(generic.default_schedule(out), [x, out], ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="resize2d: method must be one of"):
        topi.image.resize2d(x, [0.0] * 4, (4, 4), method="area")
