"""Classic topi.image and upsampling: resize1d/2d/3d over any layout, upsampling(3d) (packed
NCHW1n16c too), crop_and_resize, affine_grid and grid_sample with the grid's coordinates on axis 1.

Computes against the numpy references, and the references against torch where torch has the op,
on extents that no vector width divides.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
from te.errors import OpError
from topi import image, nn
from topi import testing as ref
from topi.x86 import schedule_injective

TOL = dict(rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("method,coord", [("nearest_neighbor", "asymmetric"), ("nearest_neighbor", "align_corners"),
                                          ("linear", "half_pixel"), ("linear", "align_corners"),
                                          ("cubic", "half_pixel")])
def test_resize3d(layout, method, coord):
    shape = (1, 3, 5, 6, 7) if layout == "NCDHW" else (1, 5, 6, 7, 3)
    x = te.placeholder(shape, name="x")
    y = image.resize3d(x, [0.0] * 6, (7, 4, 9), layout, method, coord)
    axes = [layout.index(d) for d in "DHW"]
    check_build(schedule_injective(y), [x, y], lambda a: ref.resize_nd_python(a, (7, 4, 9), axes, method, coord), **TOL)


@pytest.mark.parametrize("align", [True, False])
def test_resize_references_match_torch(align):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    a = np.random.default_rng(0).standard_normal((2, 3, 5, 6, 7)).astype("float32")
    coord = "align_corners" if align else "half_pixel"
    got = ref.resize_nd_python(a, (7, 4, 9), (2, 3, 4), "linear", coord)
    want = F.interpolate(torch.from_numpy(a), size=(7, 4, 9), mode="trilinear", align_corners=align).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = ref.resize_nd_python(a[:, :, 0], (9, 13), (2, 3), "cubic", coord, alpha=-0.75)
    want = F.interpolate(torch.from_numpy(a[:, :, 0]), size=(9, 13), mode="bicubic", align_corners=align).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    got = ref.resize_nd_python(a[:, :, 0, 0], (11,), (2,), "nearest_neighbor", "asymmetric")
    np.testing.assert_array_equal(got, F.interpolate(torch.from_numpy(a[:, :, 0, 0]), size=11, mode="nearest").numpy())


def test_resize1d_and_tf_crop_and_resize():
    x = te.placeholder((2, 3, 10), name="x")
    y = image.resize1d(x, [0.2, 0.9], (7,), "NCW", "linear", "tf_crop_and_resize", extrapolation_value=-1.0)
    check_build(schedule_injective(y), [x, y], lambda a: ref.resize_nd_python(
        a, (7,), (2,), "linear", "tf_crop_and_resize", roi=(0.2, 0.9), extrapolation_value=-1.0), **TOL)
    with pytest.raises(OpError, match="resize3d: layout 'NCHW' does not give the 3 spatial axes"):
        image.resize3d(te.placeholder((1, 2, 3, 4)), None, (2, 2, 2), "NCHW")


@pytest.mark.parametrize("layout,shape", [("NCHW", (2, 3, 7, 5)), ("NHWC", (2, 7, 5, 3)),
                                          ("NCHW1n16c", (2, 1, 7, 5, 1, 16))])
@pytest.mark.parametrize("method", ["nearest_neighbor", "bilinear"])
def test_upsampling(layout, shape, method):
    x = te.placeholder(shape, name="x")
    y = nn.upsampling(x, 1.9545, 2.0, layout, method)
    hw = [layout.index("H"), layout.index("W")]
    assert [int(y.shape[a]) for a in hw] == [14, 10]
    check_build(schedule_injective(y), [x, y],
                lambda a: ref.resize2d_python(a, (1.9545, 2.0), layout, method[2:] if method[0] == "b" else method,
                                              "asymmetric"), **TOL)


def test_upsampling3d():
    x = te.placeholder((1, 2, 3, 5, 4), name="x")
    y = nn.upsampling3d(x, 2.0, 1.5, 1.75, "NCDHW", "trilinear", "asymmetric")
    check_build(schedule_injective(y), [x, y],
                lambda a: ref.resize3d_python(a, (2.0, 1.5, 1.75), "NCDHW", "linear", "asymmetric"), **TOL)


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("method", ["bilinear", "nearest_neighbor"])
def test_crop_and_resize(layout, method):
    shape = (3, 13, 11, 5) if layout == "NHWC" else (3, 5, 13, 11)
    images = te.placeholder(shape, name="images")
    boxes = te.placeholder((2, 4), name="boxes")
    idx = te.placeholder((2,), "int32", name="idx")
    out = image.crop_and_resize(images, boxes, idx, (9, 6), layout, method, extrapolation_value=0.25)
    b = np.array([[0.13, -0.2, 0.81, 0.7], [0.0, 0.1, 1.0, 1.0]], "float32")  # no sample half-way (a tie)
    i = np.array([2, 0], "int32")
    x = np.random.default_rng(1).uniform(size=shape).astype("float32")
    want = ref.crop_and_resize_python(x, b, i, (9, 6), layout, method, 0.25)
    check_build(schedule_injective(out), [images, boxes, idx, out], lambda *_: want, inputs=[x, b, i], **TOL)
    assert (want[0, ..., 0, :] == 0.25).all() if layout == "NHWC" else (want[0, :, :, 0] == 0.25).all()


def test_affine_grid_matches_torch():
    torch = pytest.importorskip("torch")
    theta = te.placeholder((2, 2, 3), name="theta")
    out = image.affine_grid(theta, (7, 9))
    t = np.random.default_rng(2).standard_normal((2, 2, 3)).astype("float32")
    want = torch.nn.functional.affine_grid(torch.from_numpy(t), (2, 1, 7, 9), align_corners=True).numpy()
    np.testing.assert_allclose(ref.affine_grid_python(t, (7, 9)), want.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)
    check_build(schedule_injective(out), [theta, out], lambda a: ref.affine_grid_python(a, (7, 9)), inputs=[t], **TOL)


@pytest.mark.parametrize("method", ["nearest", "bilinear", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
def test_grid_sample_classic_matches_torch(method, padding):
    torch = pytest.importorskip("torch")
    data = te.placeholder((2, 3, 6, 7), name="data")
    grid = te.placeholder((2, 2, 5, 9), name="grid")
    out = image.grid_sample(data, grid, method, "NCHW", padding, True)
    rng = np.random.default_rng(3)
    d = rng.uniform(size=(2, 3, 6, 7)).astype("float32")
    g = rng.uniform(-1.4, 1.4, (2, 2, 5, 9)).astype("float32")
    want = torch.nn.functional.grid_sample(torch.from_numpy(d), torch.from_numpy(g.transpose(0, 2, 3, 1)), method,
                                           padding, align_corners=True).numpy()
    np.testing.assert_allclose(ref.grid_sample_python(d, g, method, "NCHW", padding, True), want, rtol=1e-4, atol=1e-5)
    check_build(schedule_injective(out), [data, grid, out], lambda *_: want, inputs=[d, g], rtol=1e-4, atol=1e-5)
    with pytest.raises(OpError, match=r"grid_sample: grid must be \[N, 3, ...\] for NCDHW data"):
        image.grid_sample(te.placeholder((1, 1, 2, 2, 2)), te.placeholder((1, 2, 2, 2)), layout="NCDHW")
