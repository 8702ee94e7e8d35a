"""The convolution family under classic TVM's names: the workload tuples and fallback helpers
classic x86 code reads, the computes and schedules TVM's topi tests name, each against numpy on
shapes that do not divide the vector width or the tiles."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
from codegen.target import Target
from topi import testing as ref
from topi.nn.conv2d import Workload, _get_workload
from topi.x86.conv2d_avx_common import _fallback_schedule
from topi.x86.conv2d_rule import conv2d_rule
from tune.autotvm.space import FallbackConfigEntity


# ------------------------------------------------------------------ workloads and fallbacks --
@pytest.mark.parametrize("layout,dshape,kshape", [
    ("NCHW", (1, 6, 13, 11), (10, 3, 3, 5)),
    ("NHWC", (1, 13, 11, 6), (3, 5, 3, 10)),
    ("HWCN", (13, 11, 6, 1), (3, 5, 3, 10)),
])
def test_get_workload(layout, dshape, kshape):
    data, kernel = te.placeholder(dshape, name="d"), te.placeholder(kshape, name="k")
    wkl = _get_workload(data, kernel, (2, 1), "SAME", (1, 2), "float32", layout)
    # SAME with a dilated 3x9 window: 2 and 8 padded, the odd one at the bottom / right
    assert wkl == Workload("float32", "float32", 13, 11, 6, 2, 10, 3, 5, 1, 4, 1, 4, 1, 2, 2, 1)


def test_get_workload_refuses_a_layout():
    d, k = te.placeholder((1, 4, 5, 5)), te.placeholder((4, 4, 3, 3))
    with pytest.raises(ValueError, match="data_layout='NCWH' is not supported"):
        _get_workload(d, k, 1, 1, 1, "float32", "NCWH")


@pytest.mark.parametrize("width,pads", [(73, 0), (56, 1), (17, 3), (8, 2)])
def test_fallback_schedule_factors_the_output_width(width, pads):
    d, k = te.placeholder((1, 48, width, width)), te.placeholder((84, 48, 3, 3))
    with Target("llvm"):
        wkl = _get_workload(d, k, 1, pads, 1, "float32")
        cfg = FallbackConfigEntity()
        _fallback_schedule(cfg, wkl)
        rule = conv2d_rule(("conv2d_NCHWc.x86", (1, 48, width, width), (84, 48, 3, 3), (1, 1), (pads,) * 4,
                            (1, 1), 1, "float32", "float32"), Target.current())
    ow = width + 2 * pads - 2
    assert np.prod(cfg["tile_ow"].size) == ow and cfg["tile_ow"].size[1] <= rule["ow_bn"]
    assert np.prod(cfg["tile_oc"].size) == 84 and cfg["tile_oc"].size[1] <= rule["oc_bn"]
    assert cfg["tile_ic"].size == [48 // rule["ic_bn"], rule["ic_bn"]]
    assert cfg["unroll_kw"].val == rule["unroll_kw"]


# ------------------------------------------------------------------ batch_matmul --
@pytest.mark.parametrize("dtype,out_dtype", [("float32", None), ("int8", "int32")])
def test_x86_batch_matmul_is_the_compute_its_schedule_tiles(dtype, out_dtype):
    x, y = te.placeholder((3, 13, 19), dtype, name="x"), te.placeholder((1, 17, 19), dtype, name="y")
    with Target("llvm"):
        out = topi.x86.batch_matmul(x, y, out_dtype=out_dtype)
        s = topi.x86.schedule_batch_matmul([out])
    check_build(s, [x, y, out], lambda a, b: ref.batch_matmul(a, b, out_dtype), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ padding tuples --
def test_pad_tuples_nd():
    from topi.nn.utils import get_pad_tuple1d, get_pad_tuple3d

    assert get_pad_tuple1d("SAME", 4) == (2, 1) and get_pad_tuple1d((0, 3), 5) == (0, 3)
    assert get_pad_tuple3d((1, 2, 3), (3, 3, 3)) == (1, 2, 3, 1, 2, 3)
    assert get_pad_tuple3d("SAME", (2, 3, 4)) == (1, 1, 2, 0, 1, 1)
    with pytest.raises(ValueError, match=r"conv3d: argument padding=\(1, 2\) must be a non-negative int or a "
                                         r"tuple of 3 or 6"):
        get_pad_tuple3d((1, 2), (3, 3, 3))


# ------------------------------------------------------------------ transposed and 3-D convs --
torch = pytest.importorskip("torch")


def _torch(fn, *arrays, **kw):
    return fn(*(torch.from_numpy(a.astype(np.float64)) for a in arrays), **kw).numpy()


TRANSPOSED = [  # compute, schedule, data shape, kernel shape, stride, padding (before then after), output padding,
    # groups
    ("conv1d_transpose_ncw", "generic", (2, 4, 13), (4, 3, 5), 3, (2, 2), 1, 1),
    ("group_conv2d_transpose_nchw", "generic", (1, 6, 9, 7), (6, 2, 3, 4), (2, 1), (1, 2, 1, 2), (1, 0), 3),
    ("conv2d_transpose_nchw", "x86", (1, 5, 9, 7), (5, 4, 3, 4), (2, 3), (1, 2, 0, 3), (1, 2), 1),
    ("conv3d_transpose_ncdhw", "generic", (1, 3, 5, 6, 7), (3, 5, 3, 2, 3), (2, 1, 3), (1, 0, 2, 1, 0, 2), (1, 0, 2), 1),
    ("conv3d_transpose_ncdhw", "x86", (1, 3, 5, 6, 7), (3, 5, 3, 2, 3), (2, 1, 3), (1, 0, 2, 1, 0, 2), (1, 0, 2), 1),
]


@pytest.mark.parametrize("op,sched,dshape,kshape,stride,padding,outpad,groups", TRANSPOSED)
def test_transposed_convs(op, sched, dshape, kshape, stride, padding, outpad, groups):
    nd = len(dshape) - 2
    data, kernel = te.placeholder(dshape, name="data"), te.placeholder(kshape, name="kernel")
    rng = np.random.default_rng(nd)
    a, w = rng.standard_normal(dshape).astype("float32"), rng.standard_normal(kshape).astype("float32")
    with Target("llvm"):
        args = (data, kernel, stride, padding, "float32", outpad) + ((groups,) if groups > 1 else ())
        out = topi.nn.relu(getattr(topi.x86 if sched == "x86" else topi.nn, op)(*args))
        s = getattr(getattr(topi, sched), f"schedule_{op}")([out])
    expected = ref.conv_nd.conv_transpose_python(a, w, stride, padding, outpad, groups)
    # torch's padding is symmetric: pad by the smaller side and crop what the larger one removes
    before, after = np.array(padding[:nd]), np.array(padding[nd:])
    least = np.minimum(before, after)
    fn = getattr(torch.nn.functional, f"conv_transpose{nd}d")
    full = _torch(fn, a, w, stride=stride, padding=tuple(least), output_padding=outpad, groups=groups)
    crop = tuple(slice(b - m, n - (e - m)) for b, e, m, n in zip(before, after, least, full.shape[2:]))
    np.testing.assert_allclose(expected, full[(slice(None), slice(None)) + crop], rtol=1e-4, atol=1e-4)
    check_build(s, [data, kernel, out], lambda *_: np.maximum(expected, 0), inputs=[a, w], rtol=1e-4, atol=1e-4)


def test_conv2d_transpose_refuses_padding_wider_than_the_kernel():
    data, kernel = te.placeholder((1, 2, 5, 5)), te.placeholder((2, 3, 3, 3))
    with pytest.raises(ValueError, match=r"padding=3 must not exceed kernel size - 1"):
        topi.nn.conv2d_transpose_nchw(data, kernel, 1, 3)


@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
@pytest.mark.parametrize("sched", ["generic", "x86"])
def test_conv3d(layout, sched):
    n, ic, oc, size, ks, groups = 2, 6, 4, (5, 7, 9), (3, 2, 3), 2
    stride, padding, dilation = (1, 2, 1), (1, 0, 2, 0, 1, 1), (2, 1, 1)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, ic, *size)).astype("float32")
    w = rng.standard_normal((oc, ic // groups, *ks)).astype("float32")
    padded = np.pad(a, [(0, 0), (0, 0), (1, 0), (0, 1), (2, 1)])
    expected = _torch(torch.nn.functional.conv3d, padded, w, stride=stride, dilation=dilation, groups=groups)
    np.testing.assert_allclose(ref.conv3d_ncdhw_python(a, w, stride, padding, groups, dilation), expected,
                               rtol=1e-4, atol=1e-4)
    if layout == "NDHWC":
        a, w, expected = a.transpose(0, 2, 3, 4, 1), w.transpose(2, 3, 4, 1, 0), expected.transpose(0, 2, 3, 4, 1)
    data, kernel = te.placeholder(a.shape, name="data"), te.placeholder(w.shape, name="kernel")
    mod = topi.x86 if sched == "x86" else topi.generic
    with Target("llvm"):
        compute = topi.x86.conv3d_ncdhw if layout == "NCDHW" else topi.nn.conv3d_ndhwc
        out = compute(data, kernel, stride, padding, dilation, groups)
        s = getattr(mod, f"schedule_conv3d_{layout.lower()}")([out])
    check_build(s, [data, kernel, out], lambda *_: expected, inputs=[a, w], rtol=1e-4, atol=1e-4)


def test_conv2d_hwcn():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((11, 9, 5, 2)).astype("float32")  # H, W, C, N
    w = rng.standard_normal((3, 2, 5, 7)).astype("float32")  # KH, KW, IC, OC
    expected = _torch(torch.nn.functional.conv2d, np.pad(a.transpose(3, 2, 0, 1), [(0, 0), (0, 0), (1, 1), (0, 1)]),
                      w.transpose(3, 2, 0, 1), stride=(2, 1), dilation=(1, 2)).transpose(2, 3, 1, 0)
    data, kernel = te.placeholder(a.shape, name="data"), te.placeholder(w.shape, name="kernel")
    out = topi.nn.conv2d_hwcn(data, kernel, (2, 1), (1, 0, 1, 1), (1, 2))
    check_build(topi.generic.schedule_conv2d_hwcn([out]), [data, kernel, out], lambda *_: expected, inputs=[a, w],
                rtol=1e-4, atol=1e-4)
    dilated = ref.dilate_python(w, (1, 2, 1, 1))
    np.testing.assert_allclose(ref.conv2d_hwcn_python(a, dilated, (2, 1), (1, 0, 1, 1)), expected, rtol=1e-4,
                               atol=1e-4)


def _correlation_loops(d1, d2, k, md, s1, s2, pad, mul):
    """Classic FlowNet correlation, one output point at a time."""
    d1, d2 = (np.pad(d.astype(np.float64), [(0, 0), (0, 0), (pad, pad), (pad, pad)]) for d in (d1, d2))
    n, c, h, w = d1.shape
    r, border = md // s2, md + (k - 1) // 2
    size = 2 * r + 1
    out = np.zeros((n, size * size, (h - 2 * border + s1 - 1) // s1, (w - 2 * border + s1 - 1) // s1))
    for q, i, j in np.ndindex(*out.shape[1:]):
        y1, x1 = i * s1 + md, j * s1 + md
        y2, x2 = y1 + (q // size - r) * s2, x1 + (q % size - r) * s2
        p1, p2 = d1[:, :, y1:y1 + k, x1:x1 + k], d2[:, :, y2:y2 + k, x2:x2 + k]
        out[:, q, i, j] = (p1 * p2 if mul else np.abs(p1 - p2)).sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("args", [(3, 4, 1, 2, 4, True), (3, 2, 2, 1, 2, False), (1, 3, 1, 1, 3, True)])
def test_correlation_nchw(args):
    rng = np.random.default_rng(6)
    a, b = (rng.standard_normal((2, 3, 9, 7)).astype("float32") for _ in range(2))
    expected = _correlation_loops(a, b, *args)
    np.testing.assert_allclose(ref.correlation_nchw_python(a, b, *args), expected, rtol=1e-5, atol=1e-6)
    d1, d2 = te.placeholder(a.shape, name="d1"), te.placeholder(b.shape, name="d2")
    out = topi.nn.correlation_nchw(d1, d2, *args)
    check_build(topi.generic.schedule_correlation_nchw([out]), [d1, d2, out], lambda *_: expected, inputs=[a, b],
                rtol=1e-4, atol=1e-5)


def test_correlation_refuses_an_even_kernel():
    d = te.placeholder((1, 2, 8, 8))
    with pytest.raises(ValueError, match="correlation_nchw: kernel_size=2 must be odd"):
        topi.nn.correlation_nchw(d, d, 2, 1, 1, 1, 1, True)


@pytest.mark.parametrize("shape,padding,dilation", [((2, 7, 9, 5), 1, 1), ((1, 10, 6, 3), "VALID", 1),
                                                     ((1, 9, 8, 4), (2, 1), 2)])
def test_conv2d_winograd_nhwc(shape, padding, dilation):
    rng = np.random.default_rng(7)
    ks = 3 if dilation == 1 else 2  # a 2x2 kernel dilated by 2 is 3x3
    a = rng.standard_normal(shape).astype("float32")
    w = rng.standard_normal((ks, ks, shape[3], 6)).astype("float32")
    dilated = ref.dilate_python(w, (dilation, dilation, 1, 1))
    expected = ref.conv2d_nhwc_python(a, dilated, 1, padding)
    data, kernel = te.placeholder(a.shape, name="data"), te.placeholder(w.shape, name="kernel")
    out = topi.nn.conv2d_winograd_nhwc(data, kernel, 1, padding, dilation, "float32")
    check_build(te.create_schedule(out.op), [data, kernel, out], lambda *_: expected, inputs=[a, w],
                rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="conv2d_winograd_nhwc: argument strides=2: Winograd needs stride 1"):
        topi.nn.conv2d_winograd_nhwc(data, kernel, 2, padding, dilation)


def _deformable_loops(a, off, w, stride, pad, dil, dg):
    """Deformable NCHW conv, one tap of one output point at a time (scalar bilinear sampling)."""
    n, c, h, wd = a.shape
    oc, _, kh, kw = w.shape
    oh, ow = off.shape[2:]

    def sample(b, ch, y, x):
        if not (0 <= y < h and 0 <= x < wd):
            return 0.0
        y0, x0, val = int(np.floor(y)), int(np.floor(x)), 0.0
        for yp, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for xp, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                if 0 <= yp < h and 0 <= xp < wd:
                    val += wy * wx * a[b, ch, yp, xp]
        return val

    out = np.zeros((n, oc, oh, ow))
    for b, ch, ky, kx, y, x in np.ndindex(n, c, kh, kw, oh, ow):
        k = ch // (c // dg) * kh * kw * 2 + (ky * kw + kx) * 2
        s = sample(b, ch, y * stride - pad + ky * dil + off[b, k, y, x], x * stride - pad + kx * dil + off[b, k + 1, y, x])
        out[b, :, y, x] += s * w[:, ch, ky, kx]
    return out


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_deformable_conv2d(layout):
    rng = np.random.default_rng(8)
    a = rng.random((2, 4, 6, 5)).astype("float32")
    w = rng.random((3, 4, 3, 2)).astype("float32")
    stride, pad, dil, dg = 1, 1, 2, 2
    oh, ow = (6 + 2 - 5) // stride + 1, (5 + 2 - 3) // stride + 1
    off = (2 * rng.standard_normal((2, dg * 3 * 2 * 2, oh, ow))).astype("float32")
    expected = _deformable_loops(a, off, w, stride, pad, dil, dg)
    np.testing.assert_allclose(ref.deformable_conv2d_nchw_python(a, off, w, stride, pad, dil, dg, 1), expected,
                               rtol=1e-5, atol=1e-5)
    zero = np.zeros_like(off)  # no offset: the plain convolution
    np.testing.assert_allclose(ref.deformable_conv2d_nchw_python(a, zero, w, stride, pad, dil, dg, 1),
                               ref.conv2d_nchw_python(a, ref.dilate_python(w, (1, 1, dil, dil)), stride, pad),
                               rtol=1e-5, atol=1e-5)
    if layout == "NHWC":
        a, off, w, expected = (a.transpose(0, 2, 3, 1), off.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0),
                               expected.transpose(0, 2, 3, 1))
    data, offset, kernel = (te.placeholder(x.shape, name=nm) for x, nm in ((a, "a"), (off, "off"), (w, "w")))
    compute = getattr(topi.nn, f"deformable_conv2d_{layout.lower()}")
    out = compute(data, offset, kernel, stride, pad, dil, dg, 1, "float32")
    s = getattr(topi.generic, f"schedule_deformable_conv2d_{layout.lower()}")([out])
    check_build(s, [data, offset, kernel, out], lambda *_: expected, inputs=[a, off, w], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="must hold deformable_groups \\* KH \\* KW \\* 2 = 36 channels"):
        compute(data, offset, kernel, stride, pad, dil, 3, 1)


# ------------------------------------------------------------------ bit-serial and binary --
def test_bitpack_matches_numpy():
    rng = np.random.default_rng(9)
    a = rng.integers(0, 4, size=(3, 13, 2)).astype("int32")  # 13 channels: a partial word of 8
    data = te.placeholder(a.shape, "int32", name="a")
    out = topi.nn.bitpack(data, 2, pack_axis=1, bit_axis=0, pack_type="uint8")

    def ref_pack(x):
        padded = np.pad(x, [(0, 0), (0, 3), (0, 0)])  # to 16 channels
        planes = [(padded >> b) & 1 for b in range(2)]
        words = [np.packbits(p.transpose(0, 2, 1).astype(np.uint8), axis=2).transpose(0, 2, 1) for p in planes]
        return np.stack(words)

    check_build(topi.generic.default_schedule([out]), [data, out], ref_pack)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("abits,wbits,unipolar", [(2, 1, True), (2, 2, False)])
def test_bitserial_conv2d(layout, abits, wbits, unipolar):
    rng = np.random.default_rng(10)
    a = rng.integers(0, 1 << abits, size=(1, 40, 7, 6)).astype("uint32")  # 40 channels: 2 words, one partial
    w = rng.integers(0, 1 << wbits, size=(5, 40, 3, 3)).astype("uint32")
    w_val = np.where(w == 1, 1, -1) if unipolar else w
    expected = ref.conv2d_nchw_python(a.astype("int64"), w_val.astype("int64"), 2, (1, 0, 1, 1)).astype("int32")
    if layout == "NHWC":
        a, w, expected = a.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), expected.transpose(0, 2, 3, 1)
    data, kernel = te.placeholder(a.shape, "uint32", name="a"), te.placeholder(w.shape, "uint32", name="w")
    with Target("llvm"):
        out = getattr(topi.x86, f"bitserial_conv2d_{layout.lower()}")(data, kernel, 2, (1, 0, 1, 1), abits, wbits,
                                                                      "uint32", "int32", unipolar)
        s = getattr(topi.x86, f"schedule_bitserial_conv2d_{layout.lower()}")([out])
    check_build(s, [data, kernel, out], lambda *_: expected, inputs=[a, w])


def test_binary_dense():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((3, 96)).astype("float32")
    b = rng.standard_normal((5, 96)).astype("float32")
    A, B = te.placeholder(a.shape, name="A"), te.placeholder(b.shape, name="B")
    pa, pb = topi.nn.binarize_pack(A), topi.nn.binarize_pack(B)
    qa, qb = te.placeholder(pa.shape, "uint32", name="qa"), te.placeholder(pb.shape, "uint32", name="qb")
    out = topi.nn.binary_dense(qa, qb)
    packed_a = check_build(topi.x86.schedule_binarize_pack(pa), [A, pa],
                           lambda x: np.packbits(x >= 0, axis=1).view(">u4").astype("uint32"), inputs=[a])[0]
    packed_b = np.packbits(b >= 0, axis=1).view(">u4").astype("uint32")
    signs = lambda x: np.where(x >= 0, 1.0, -1.0)  # noqa: E731
    check_build(topi.x86.schedule_binary_dense(out), [qa, qb, out], lambda *_: signs(a) @ signs(b).T,
                inputs=[packed_a, packed_b])
    with pytest.raises(ValueError, match=r"binarize_pack: axis 1 of data \(3, 40\) must be a multiple of 32"):
        topi.nn.binarize_pack(te.placeholder((3, 40)))


# ------------------------------------------------------------------ blocked conv2d_NCHWc --
@pytest.mark.parametrize("n,ic,oc,size,k,stride,pad,groups,icb,ocb", [
    (2, 6, 9, 7, 3, 2, (1, 0, 2, 1), 1, 3, 3),  # blocks of 3: outside the template's space
    (1, 8, 12, 6, 3, 1, 1, 2, 2, 2),  # groups: the data holds twice the kernel's input blocks
])
def test_conv2d_NCHWc_takes_any_blocks_and_groups(n, ic, oc, size, k, stride, pad, groups, icb, ocb):
    rng = np.random.default_rng(12)
    a = rng.standard_normal((n, ic, size, size)).astype("float32")
    w = rng.standard_normal((oc, ic // groups, k, k)).astype("float32")
    expected = ref.conv2d_nchw_python(a, w, stride, pad, groups)
    blocked = lambda x, b: x.reshape(x.shape[0], -1, b, *x.shape[2:]).transpose(0, 1, 3, 4, 2)  # noqa: E731
    wb = w.reshape(oc // ocb, ocb, ic // groups // icb, icb, k, k).transpose(0, 2, 4, 5, 3, 1)
    data, kernel = te.placeholder((n, ic // icb, size, size, icb), name="a"), te.placeholder(wb.shape, name="w")
    with Target("llvm"):
        out = topi.nn.relu(topi.x86.conv2d_NCHWc(data, kernel, stride, pad, 1, f"NCHW{icb}c", f"NCHW{ocb}c"))
        s = topi.x86.schedule_conv2d_NCHWc([out])
    check_build(s, [data, kernel, out], lambda *_: np.maximum(blocked(expected, ocb), 0),
                inputs=[blocked(a, icb), wb], rtol=1e-4, atol=1e-4)


def test_conv2d_NCHWc_refuses_mismatched_blocks():
    with pytest.raises(ValueError, match=r"the data's blocks must be a multiple of the kernel's"):
        topi.nn.conv2d_NCHWc(te.placeholder((1, 3, 5, 5, 4)), te.placeholder((2, 2, 3, 3, 4, 8)), 1, 1, 1)


# ------------------------------------------------------------------ depthwise --
@pytest.mark.parametrize("layout,dshape,kshape", [
    ("NCHW", (1, 12, 13, 11), (12, 2, 3, 3)),
    ("NHWC", (1, 13, 11, 12), (3, 3, 12, 2)),
    ("NCHWc", (1, 3, 13, 11, 4), (6, 1, 3, 3, 1, 4)),
])
def test_depthwise_workload_and_fallback(layout, dshape, kshape):
    from topi.nn.depthwise_conv2d import Workload as DWorkload, _get_workload as dw_workload
    from topi.x86.depthwise_conv2d import _fallback_schedule as dw_fallback

    data, kernel = te.placeholder(dshape, name="d"), te.placeholder(kshape, name="k")
    wkl = dw_workload(data, kernel, (2, 1), "SAME", (1, 2), "float32", layout)
    # 12 channels in, 24 out (a multiplier of 2, or 24 output channels of the blocked kernel)
    assert wkl == DWorkload("float32", "float32", 13, 11, 12, 24, 3, 3, 1, 2, 1, 2, 1, 2, 2, 1)
    with Target("llvm"):
        cfg = FallbackConfigEntity()
        dw_fallback(cfg, wkl)
        lanes = Target.current().lanes("float32")
    ow = 11  # SAME, stride 1 along W
    assert np.prod(cfg["tile_ow"].size) == ow and np.prod(cfg["tile_oc"].size) == 24
    assert cfg["tile_oc"].size[1] <= lanes and 12 % cfg["tile_ic"].size[1] == 0


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_depthwise_NCHWc_classic_kernel_with_scale_shift(dtype):
    rng = np.random.default_rng(13)
    n, c, h, w, b, k = 2, 12, 9, 7, 4, 3
    a = rng.random((n, c // b, h, w, b)).astype(dtype)
    wt = rng.random((c // b, 1, k, k, 1, b)).astype(dtype)
    scale, shift = rng.random((c // b, b)).astype(dtype), rng.random((c // b, b)).astype(dtype)
    conv = ref.depthwise_conv2d_python_nchwc(a.astype("float32"), wt.astype("float32"), 2, "SAME", 2)
    # the same conv unblocked: group conv of the plain tensors
    plain = ref.group_conv2d_nchw_python(a.transpose(0, 1, 4, 2, 3).reshape(n, c, h, w).astype("float32"),
                                         wt.transpose(0, 5, 1, 4, 2, 3).reshape(c, 1, k, k).astype("float32"),
                                         2, "SAME", c, 2)
    np.testing.assert_allclose(conv, plain.reshape(n, c // b, b, *plain.shape[2:]).transpose(0, 1, 3, 4, 2),
                               rtol=1e-5, atol=1e-5)
    expected = np.maximum(conv * scale[None, :, None, None] + shift[None, :, None, None], 0).astype(dtype)
    tensors = [te.placeholder(x.shape, dtype, name=nm) for x, nm in ((a, "a"), (wt, "w"), (scale, "s"),
                                                                      (shift, "t"))]
    with Target("llvm"):
        out = topi.x86.depthwise_conv2d_NCHWc(tensors[0], tensors[1], 2, "SAME", 2, "NCHW4c", "NCHW4c", dtype)
        out = topi.nn.relu(topi.nn.scale_shift_nchwc(out, tensors[2], tensors[3]))
        s = topi.x86.schedule_depthwise_conv2d_NCHWc(out)
    tol = 1e-4 if dtype == "float32" else 2e-2
    check_build(s, [*tensors, out], lambda *_: expected, inputs=[a, wt, scale, shift], rtol=tol, atol=tol)


def test_scale_shift_refuses_a_wrong_scale():
    with pytest.raises(ValueError, match=r"scale_shift_nchw: data \(1, 3, 4, 4\) must be 4-D and scale \(4,\)"):
        topi.nn.scale_shift_nchw(te.placeholder((1, 3, 4, 4)), te.placeholder((4,)), te.placeholder((3,)))


def test_int8_fallback_blocks():
    from tessera.testing.aot import get_dtype_range
    from topi.generic.conv2d import fallback_schedule_cpu_common_int8

    assert get_dtype_range("int8") == (-128, 127) and get_dtype_range("uint16") == (0, 65535)
    d, k = te.placeholder((1, 24, 29, 29), "int8"), te.placeholder((32, 24, 3, 3), "int8")
    with Target("llvm"):
        wkl = _get_workload(d, k, 1, 0, 1, "int32")
        cfg = FallbackConfigEntity()
        fallback_schedule_cpu_common_int8(cfg, wkl, 16, 4)
    assert cfg["tile_oc"].size == [2, 16] and cfg["tile_ic"].size == [2, 12]  # 16, then 12 divides 24
    assert np.prod(cfg["tile_ow"].size) == 27 and cfg["unroll_kw"].val is False
    with pytest.raises(ValueError, match="32 output channels must be a multiple of int32_lanes=12"):
        fallback_schedule_cpu_common_int8(FallbackConfigEntity(), wkl, 12, 4)
