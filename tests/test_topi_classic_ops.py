"""topi operators that classic TVM's topi tests name: dilate, dft, nll_loss, unique, isfinite,
conv2d's kernel layouts; each against numpy on shapes that do not divide the vector width,
through the generic and the x86 schedules, plus one test per error message."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from topi.generic import nn as generic
from topi.testing import dilate_python, nll_loss as nll_loss_ref
from topi.x86.vector_rows import schedule_dft, schedule_unique


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
