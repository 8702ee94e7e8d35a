"""topi convolutions: every compute and x86 schedule vs numpy (and torch), plus errors.

Shapes are small and odd on purpose: 3 input channels, 7x7 and 9x11 images,
channel counts that are no multiple of 16, asymmetric padding, strides,
dilations and groups, so every schedule meets tails it must handle.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi
import topi.testing as T
import codegen
import schedule
from topi.x86 import conv2d as x86conv
from topi.x86 import conv2d_rule as x86conv_rule
from tune.autotvm.config import with_values

RTOL, ATOL = 1e-4, 1e-4


def _ph(shape, name):
    return te.placeholder(shape, name=name)


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _run(s, args, ref, inputs):
    return check_build(s, args, lambda *a: ref, inputs=inputs, rtol=RTOL, atol=ATOL)[0]


# ------------------------------------------------------------- conv2d ---
CONV2D = [  # (N, IC, H, W, OC, K, stride, padding, dilation)
    (1, 3, 7, 7, 5, 3, 1, 1, 1),
    (2, 4, 9, 11, 6, 3, 2, (1, 0, 2, 1), 1),
    (1, 8, 10, 9, 16, 3, (1, 2), "SAME", (2, 1)),
    (1, 5, 8, 8, 7, 1, 1, "VALID", 1),
    (1, 3, 15, 15, 17, 7, 2, 3, 1),
]


@pytest.mark.parametrize("case", CONV2D)
def test_conv2d_nchw_direct(case):
    n, ic, h, w, oc, k, st, pad, dil = case
    A, W = _ph((n, ic, h, w), "A"), _ph((oc, ic, k, k), "W")
    C = topi.nn.conv2d_nchw(A, W, st, pad, dil)
    a, wt = _np((n, ic, h, w), 1), _np((oc, ic, k, k), 2)
    _run(topi.x86.schedule_conv2d_nchw(C), [A, W, C], T.conv2d_nchw_python(a, wt, st, pad, dilation=dil), [a, wt])


@pytest.mark.parametrize("case", CONV2D)
def test_conv2d_nchw_x86_blocked(case):
    n, ic, h, w, oc, k, st, pad, dil = case
    A, W = _ph((n, ic, h, w), "A"), _ph((oc, ic, k, k), "W")
    C = topi.x86.conv2d_nchw_x86(A, W, st, pad, dil)
    a, wt = _np((n, ic, h, w), 1), _np((oc, ic, k, k), 2)
    _run(topi.x86.schedule_conv2d_nchw(C), [A, W, C], T.conv2d_nchw_python(a, wt, st, pad, dilation=dil), [a, wt])


def test_conv2d_nchw_x86_prepacked_kernel_and_padded_width():
    A = _ph((1, 8, 13, 13), "A")
    key = x86conv_rule.conv2d_workload((1, 8, 13, 13), (32, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    # 13 columns: 3 tiles of 4, a tail of 1
    cfg = with_values(x86conv_rule.default_conv2d_config(key), ow_bn=4)
    Wp = _ph((32 // cfg["oc_bn"].val, 8 // cfg["ic_bn"].val, 3, 3, cfg["ic_bn"].val, cfg["oc_bn"].val), "Wp")
    C = topi.x86.conv2d_nchw_x86(A, Wp, 1, 1, 1, cfg=cfg)
    a, wt = _np((1, 8, 13, 13), 3), _np((32, 8, 3, 3), 4)
    wp = x86conv.pack_kernel_numpy(wt, cfg["ic_bn"].val, cfg["oc_bn"].val)
    _run(topi.x86.schedule_conv2d_nchw(C, cfg), [A, Wp, C], T.conv2d_nchw_python(a, wt, 1, 1), [a, wp])


def test_conv2d_bias_relu_epilogue_is_fused():
    A, W, B = _ph((1, 6, 9, 9), "A"), _ph((20, 6, 3, 3), "W"), _ph((20, 1, 1), "B")
    conv = topi.x86.conv2d_nchw_x86(A, W, 1, 1, 1)
    out = te.compute(conv.shape, lambda n, c, y, x: te.max(conv[n, c, y, x] + B[c, 0, 0], te.const(0.0)),
                     name="bias_relu", tag="elemwise")
    s = topi.x86.schedule_conv2d_nchw(out)
    text = str(__import__("schedule").lower(s, [A, W, B, out]))
    assert "allocate conv2d_NCHWc" in text and "produce conv2d_nchw_unpack" not in text
    a, wt, b = _np((1, 6, 9, 9), 5), _np((20, 6, 3, 3), 6), _np((20, 1, 1), 7)
    ref = np.maximum(T.conv2d_nchw_python(a, wt, 1, 1) + b, 0)
    _run(s, [A, W, B, out], ref, [a, wt, b])


@pytest.mark.parametrize("stride,pads,size,ow_bn,unroll_kw", [
    (2, (1, 1, 1, 1), 14, 4, False),  # ResNet's stride-2 3x3: 7 columns, 4 + a tail of 3
    (2, (1, 1, 1, 1), 13, 3, True),
    (1, (1, 1, 1, 1), 9, 4, False),  # both borders in every row of tiles: 4 + 4 + 1
    (1, (2, 1, 0, 2), 11, 5, True),  # uneven padding
    (2, (3, 3, 3, 3), 12, 2, False),  # a border wider than a tile
])
def test_conv2d_NCHWc_inline_padding_skips_border_taps(stride, pads, size, ow_bn, unroll_kw):
    """Blocked data is padded inline, not copied: output rows at the border run fewer kernel
    rows, the border column tiles are peeled from the unguarded inner ones, and the
    result matches numpy on tiles that do not divide the row."""
    ic_bn, oc_bn = 4, 8
    A = _ph((1, 2, size, size, ic_bn), "A")
    W = _ph((2, 2, 3, 3, ic_bn, oc_bn), "W")
    C = topi.nn.conv2d_NCHWc(A, W, stride, pads, 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
    cfg = with_values(x86conv_rule.default_conv2d_config(C.op.attrs["workload"]),
        ic_bn=ic_bn, oc_bn=oc_bn, ow_bn=ow_bn, unroll_kw=unroll_kw, flat=False)  # rows, as computed
    s = topi.x86.schedule_conv2d_NCHWc(C, cfg)
    text = str(schedule.lower(s, [A, W, C]))
    assert "data_pad" not in text  # no padded copy of the input
    assert "for (kh, max(" in text  # a border row skips the kernel rows over the padding
    body = text[text.index("produce conv2d_NCHWc.local"):]
    assert body.count("produce conv2d_NCHWc.local") >= 2  # border tiles peeled
    a, wt = _np(tuple(int(d) for d in A.shape), 10), _np(tuple(int(d) for d in W.shape), 11)
    _run(s, [A, W, C], T.conv2d_NCHWc_python(a, wt, stride, pads), [a, wt])


@pytest.mark.parametrize("ic_bn,oc_bn,ow_bn", [(4, 16, 5), (3, 8, 7)])
def test_conv2d_NCHWc(ic_bn, oc_bn, ow_bn):
    icc, occ, h = 12 // ic_bn, 2, 9
    A = _ph((1, icc, h, h, ic_bn), "A")
    W = _ph((occ, icc, 3, 3, ic_bn, oc_bn), "W")
    C = topi.nn.conv2d_NCHWc(A, W, 1, (1, 1, 0, 0), 1, f"NCHW{ic_bn}c", f"NCHW{oc_bn}c")
    cfg = with_values(x86conv_rule.default_conv2d_config(C.op.attrs["workload"]), ic_bn=ic_bn, oc_bn=oc_bn,
                                                                             ow_bn=ow_bn)
    a, wt = _np(tuple(int(d) for d in A.shape), 8), _np(tuple(int(d) for d in W.shape), 9)
    ref = T.conv2d_NCHWc_python(a, wt, 1, (1, 1, 0, 0))
    _run(topi.x86.schedule_conv2d_NCHWc(C, cfg), [A, W, C], ref, [a, wt])


@pytest.mark.parametrize("oc,k,stride,pads,size,flat,epilogue", [
    (40, 1, 1, (0, 0, 0, 0), 9, True, "relu"),  # 5 blocks of 8 in 3 tiles of 16: the last half skipped
    (24, 3, 2, (1, 0, 2, 1), 11, False, "relu"),  # strided, uneven padding, rows of 6 + a tail
    (56, 3, 1, (1, 1, 1, 1), 7, False, "nchw"),  # unpacked to NCHW in the output loop
])
def test_conv2d_NCHWc_padded_channels_reblocked(oc, k, stride, pads, size, flat, epilogue):
    """A conv whose kernel zero-pads its channels to whole 16-channel tiles writes them by 8
    (``channels``/``out_block``): the padded channels are never stored, every tail matches numpy."""
    from topi.x86.conv2d_nchwc import conv2d_NCHWc_x86

    ic, ic_bn = 24, 8
    key = x86conv_rule.conv2d_workload((1, ic, size, size), (oc, ic, k, k), (stride,) * 2, pads, (1, 1))
    cfg = x86conv_rule.blocks_config(key, {"ow_bn": 6 if not flat else 5, "unroll_kw": False, "flat": flat},
                                     ic_bn, 16)
    a, wt = _np((1, ic, size, size), 12), _np((oc, ic, k, k), 13)
    A = _ph((1, ic // ic_bn, size, size, ic_bn), "A")
    W = _ph((-(-oc // 16), ic // ic_bn, k, k, ic_bn, 16), "W")
    C = conv2d_NCHWc_x86(A, W, stride, pads, 1, cfg, channels=oc, out_block=8)
    assert tuple(int(d) for d in C.shape)[1::3] == (oc // 8, 8)
    if epilogue == "relu":
        out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
    else:
        out = te.compute((1, oc, *C.shape[2:4]), lambda n, c, y, x: C[n, c // 8, y, x, c % 8], name="unpack",
                         tag="injective")
    ref = np.maximum(T.conv2d_nchw_python(a, wt, stride, pads), 0) if epilogue == "relu" else \
        T.conv2d_nchw_python(a, wt, stride, pads)
    if epilogue == "relu":
        ref = ref.reshape(1, oc // 8, 8, *ref.shape[2:]).transpose(0, 1, 3, 4, 2)
    blocked = a.reshape(1, ic // ic_bn, ic_bn, size, size).transpose(0, 1, 3, 4, 2)
    _run(topi.x86.schedule_conv2d_NCHWc(out), [A, W, out], ref,
         [np.ascontiguousarray(blocked), x86conv.pack_kernel_numpy(wt, ic_bn, 16)])


@pytest.mark.parametrize("oc,k,stride,pads,size,flat,ow_bn,epilogue", [
    (32, 1, 1, (0, 0, 0, 0), 9, False, 4, "relu"),  # rows of 4 + 4 + 1
    (32, 1, 1, (0, 0, 0, 0), 9, True, 5, "relu"),  # the plane flattened: 81 columns in 5s
    (40, 1, 1, (0, 0, 0, 0), 7, False, 5, "relu"),  # channels zero-padded to 48, written by 8
    (16, 3, 1, (1, 1, 1, 1), 7, False, 6, "nchw"),  # padding inline, unpacked to NCHW
    (24, 3, 2, (1, 0, 2, 1), 11, False, 4, "relu"),  # strided, uneven padding, padded channels
])
def test_conv2d_NCHWc_reduction_in_chunks(oc, k, stride, pads, size, flat, ow_bn, epilogue):
    """``ic_chunk``: the conv of each output block runs over its whole plane per chunk of input
    channels; 40 input channels in blocks of 8 by chunks of 32 leave a chunk of one block."""
    from topi.x86.conv2d_nchwc import conv2d_NCHWc_x86

    ic, ic_bn = 40, 8
    key = x86conv_rule.conv2d_workload((1, ic, size, size), (oc, ic, k, k), (stride,) * 2, pads, (1, 1))
    cfg = x86conv_rule.blocks_config(key, {"ow_bn": ow_bn, "unroll_kw": k == 3, "flat": flat, "ic_chunk": 32},
                                     ic_bn, 16)
    a, wt = _np((1, ic, size, size), 14), _np((oc, ic, k, k), 15)
    A = _ph((1, ic // ic_bn, size, size, ic_bn), "A")
    W = _ph((-(-oc // 16), ic // ic_bn, k, k, ic_bn, 16), "W")
    block = 16 if oc % 16 == 0 else 8
    C = conv2d_NCHWc_x86(A, W, stride, pads, 1, cfg, channels=oc, out_block=block)
    ref = T.conv2d_nchw_python(a, wt, stride, pads)
    if epilogue == "relu":
        out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
        ref = np.maximum(ref, 0).reshape(1, oc // block, block, *ref.shape[2:]).transpose(0, 1, 3, 4, 2)
    else:
        out = te.compute((1, oc, *C.shape[2:4]), lambda n, c, y, x: C[n, c // block, y, x, c % block],
                         name="unpack", tag="injective")
    s = topi.x86.schedule_conv2d_NCHWc(out)
    blocked = a.reshape(1, ic // ic_bn, ic_bn, size, size).transpose(0, 1, 3, 4, 2)
    _run(s, [A, W, out], ref, [np.ascontiguousarray(blocked), x86conv.pack_kernel_numpy(wt, ic_bn, 16)])


def test_conv2d_rule_chunks_a_reduction_whose_weights_fill_l1():
    """AVX2: a 1x1 conv whose weights for one 16-channel output block reach 32 KiB (512 input
    channels) runs its reduction in chunks of 64 channels; not with fewer input channels, a
    3x3 kernel, or fewer than 4 output blocks to share out."""
    from codegen.target import Target

    avx2 = Target("llvm -mcpu=znver3")
    if avx2.vector_registers >= 32:
        pytest.skip("the chunked reduction is the 16-register rule")

    def chunk(ic, oc, hw, k=1):
        pads = (k // 2,) * 4
        key = x86conv_rule.conv2d_workload((1, ic, hw, hw), (oc, ic, k, k), (1, 1), pads, (1, 1))
        with avx2:
            return x86conv_rule.conv2d_rule(key, avx2)["ic_chunk"]

    assert chunk(1024, 256, 14) == chunk(2048, 512, 7) == chunk(512, 1000, 13) == 64
    assert chunk(256, 64, 56) == chunk(1024, 256, 14, k=3) == chunk(1024, 32, 14) == 0


def test_conv2d_rule_pads_an_odd_number_of_vectors_on_avx2():
    """AVX2: 72, 104 or 1000 channels (an odd number of 8-lane vectors) run the two-vector tile
    over channels zero-padded to 16, the output blocked by 8; not 24 channels (a third padding),
    nor a reduction of one unrolled input block.  Channels that are not whole vectors (116)
    pad too where that adds at most an eighth and the reduction is long; their output stays NCHW."""
    from codegen.target import Target

    avx2 = Target("llvm -mcpu=znver3")
    if avx2.vector_registers >= 32 or avx2.lanes("float32") != 8:
        pytest.skip("the padded tile is the 16-register, 8-lane rule")

    def rule(ic, oc, hw, ic_bn=None):
        key = x86conv_rule.conv2d_workload((1, ic, hw, hw), (oc, ic, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1))
        with avx2:
            values = x86conv_rule.conv2d_rule(key, avx2, ic_bn)
        return values["oc_bn"], x86conv_rule.out_block_of(oc, values["oc_bn"])

    assert rule(512, 1000, 13) == (16, 8)
    assert rule(48, 104, 56) == (16, 8)
    assert rule(144, 24, 56) == (8, 8)
    assert rule(16, 72, 56, ic_bn=16) == (8, 8)  # one block of 16 input channels: the tile stays one vector
    assert rule(16, 72, 56, ic_bn=8) == (16, 8)
    assert rule(64, 96, 28) == (16, 16)
    assert x86conv_rule.out_block_of(40, 16, groups=2) == 0  # a group's channels are never padded
    # channels that are not whole vectors (NCHW outputs): padded by a tenth over 80 or 116 inputs
    assert rule(116, 116, 14) == rule(80, 100, 14) == (16, 0)
    assert rule(58, 58, 28) == (8, 0)  # a reduction of 58 products
    assert rule(128, 50, 28) == (8, 0)  # 50 -> 64: over an eighth more


@pytest.mark.parametrize("ic,oc,h,w,k,pad", [(80, 92, 13, 11, 1, 0), (116, 116, 7, 9, 1, 0),
                                             (46, 60, 9, 10, 3, 1)])
def test_conv2d_nchw_x86_pads_channels_that_are_not_whole_vectors(ic, oc, h, w, k, pad):
    """NCHW in and out: the rule's two-vector tile over output channels zero-padded to whole
    tiles (92 -> 96, 116 -> 128, 60 -> 64), a relu fused, planes that the tiles do not divide."""
    from codegen.target import Target
    from topi.x86.conv2d_schedule import schedule_conv2d_nchw

    if Target("llvm").vector_registers >= 32:
        pytest.skip("the padded tile is the 16-register rule")
    A, W = _ph((1, ic, h, w), "A"), _ph((oc, ic, k, k), "W")
    C = x86conv.conv2d_nchw_x86(A, W, 1, pad, 1)
    conv = C.op.input_tensors[0].op
    assert conv.attrs["config"]["oc_bn"].val == 16
    out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
    a, wt = _np((1, ic, h, w), 21), _np((oc, ic, k, k), 22)
    ref = np.maximum(T.conv2d_nchw_python(a, wt, 1, pad), 0)
    _run(schedule_conv2d_nchw(out), [A, W, out], ref, [a, wt])


@pytest.mark.parametrize("groups,st,pad", [(2, 1, 1), (3, 2, (0, 1, 1, 0))])
def test_group_conv2d(groups, st, pad):
    A, W = _ph((1, 6, 8, 9), "A"), _ph((12, 6 // groups, 3, 3), "W")
    C = topi.nn.group_conv2d_nchw(A, W, st, pad, 1, groups)
    a, wt = _np((1, 6, 8, 9), 10), _np((12, 6 // groups, 3, 3), 11)
    _run(topi.x86.schedule_conv2d_nchw(C), [A, W, C], T.group_conv2d_nchw_python(a, wt, st, pad, groups), [a, wt])


@pytest.mark.parametrize("case", [(1, 3, 7, 9, 5, 3, 1, 1, 1), (2, 4, 9, 8, 20, 3, 2, "SAME", 1),
                                  (1, 5, 10, 10, 8, 3, 1, (2, 1, 0, 1), 2)])
def test_conv2d_nhwc(case):
    n, ic, h, w, oc, k, st, pad, dil = case
    A, W = _ph((n, h, w, ic), "A"), _ph((k, k, ic, oc), "W")
    C = topi.nn.conv2d(A, W, st, pad, dil, layout="NHWC")
    a, wt = _np((n, h, w, ic), 12), _np((k, k, ic, oc), 13)
    _run(topi.x86.schedule_conv2d_nhwc(C), [A, W, C], T.conv2d_nhwc_python(a, wt, st, pad, dilation=dil), [a, wt])


# ----------------------------------------------------------- depthwise ---
@pytest.mark.parametrize("c,m,h,w,k,st,pad,dil", [(3, 1, 7, 7, 3, 1, 1, 1), (4, 2, 11, 9, 3, 2, (0, 1, 1, 0), 1),
                                                  (5, 1, 20, 18, 5, 1, "SAME", 2), (2, 1, 6, 6, 3, 1, 0, 1)])
def test_depthwise_nchw(c, m, h, w, k, st, pad, dil):
    A, W = _ph((1, c, h, w), "A"), _ph((c, m, k, k), "W")
    C = topi.nn.depthwise_conv2d_nchw(A, W, st, pad, dil)
    a, wt = _np((1, c, h, w), 14), _np((c, m, k, k), 15)
    _run(topi.x86.schedule_depthwise_conv2d_nchw(C), [A, W, C],
         T.depthwise_conv2d_python_nchw(a, wt, st, pad, dil), [a, wt])


def test_depthwise_nchw_epilogue():
    A, W = _ph((1, 3, 9, 9), "A"), _ph((3, 1, 3, 3), "W")
    C = topi.nn.depthwise_conv2d_nchw(A, W, 1, 1, 1)
    out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
    a, wt = _np((1, 3, 9, 9), 16), _np((3, 1, 3, 3), 17)
    ref = np.maximum(T.depthwise_conv2d_python_nchw(a, wt, 1, 1), 0)
    _run(topi.x86.schedule_depthwise_conv2d_nchw(out), [A, W, out], ref, [a, wt])


@pytest.mark.parametrize("c,m,st,pad", [(20, 1, 1, 1), (3, 2, 2, "SAME")])
def test_depthwise_nhwc(c, m, st, pad):
    A, W = _ph((1, 9, 7, c), "A"), _ph((3, 3, c, m), "W")
    C = topi.nn.depthwise_conv2d_nhwc(A, W, st, pad, 1)
    a, wt = _np((1, 9, 7, c), 18), _np((3, 3, c, m), 19)
    _run(topi.x86.schedule_depthwise_conv2d_nhwc(C), [A, W, C],
         T.depthwise_conv2d_python_nhwc(a, wt, st, pad), [a, wt])


# ------------------------------------------------- transpose and conv1d ---
@pytest.mark.parametrize("st,pad,opad", [(1, 0, (0, 0)), (2, 1, (1, 1)), ((2, 3), (1, 0, 0, 2), (1, 0))])
def test_conv2d_transpose(st, pad, opad):
    A, W = _ph((1, 4, 5, 7), "A"), _ph((4, 6, 3, 4), "W")
    C = topi.nn.conv2d_transpose_nchw(A, W, st, pad, "float32", opad)
    a, wt = _np((1, 4, 5, 7), 20), _np((4, 6, 3, 4), 21)
    _run(topi.x86.schedule_conv2d_transpose_nchw(C), [A, W, C],
         T.conv2d_transpose_nchw_python(a, wt, st, pad, opad), [a, wt])


@pytest.mark.parametrize("layout,st,pad,dil", [("NCW", 1, 1, 1), ("NCW", 2, (2, 0), 2), ("NWC", 1, "SAME", 1),
                                               ("NWC", 3, "VALID", 1)])
def test_conv1d(layout, st, pad, dil):
    a, wt = _np((2, 5, 19), 22), _np((7, 5, 3), 23)
    ref = T.conv1d_ncw_python(a, wt, st, pad, dil)
    if layout == "NWC":
        a, wt, ref = a.transpose(0, 2, 1).copy(), wt.transpose(2, 1, 0).copy(), ref.transpose(0, 2, 1)
    A, W = _ph(a.shape, "A"), _ph(wt.shape, "W")
    C = topi.nn.conv1d(A, W, st, pad, dil, layout=layout)
    sched = topi.x86.schedule_conv1d_ncw if layout == "NCW" else topi.x86.schedule_conv1d_nwc
    _run(sched(C), [A, W, C], ref, [a, wt])


def test_pad():
    A = _ph((2, 3, 4), "A")
    P = topi.nn.pad(A, (0, 1, 2), (1, 0, 3), pad_value=-1.5)
    a = _np((2, 3, 4), 24)
    ref = np.pad(a, ((0, 1), (1, 0), (2, 3)), constant_values=-1.5)
    _run(te.create_schedule(P.op), [A, P], ref, [a])


# ---------------------------------------------------------------- torch ---
def test_against_torch():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    a, wt, dw = _np((1, 6, 11, 10), 25), _np((10, 3, 3, 3), 26), _np((6, 1, 3, 3), 27)
    ta = torch.from_numpy(a)
    A, W, D = _ph(a.shape, "A"), _ph(wt.shape, "W"), _ph(dw.shape, "D")
    C = topi.nn.group_conv2d_nchw(A, W, 2, (1, 2, 0, 1), (1, 2), 2)
    ref = F.conv2d(F.pad(ta, (2, 1, 1, 0)), torch.from_numpy(wt), stride=2, dilation=(1, 2), groups=2).numpy()
    _run(topi.x86.schedule_conv2d_nchw(C), [A, W, C], ref, [a, wt])
    W2 = _ph((10, 6, 3, 3), "W2")
    w2 = _np((10, 6, 3, 3), 28)
    C2 = topi.x86.conv2d_nchw_x86(A, W2, 1, 1, 1)
    _run(topi.x86.schedule_conv2d_nchw(C2), [A, W2, C2], F.conv2d(ta, torch.from_numpy(w2), padding=1).numpy(), [a, w2])
    C3 = topi.nn.depthwise_conv2d_nchw(A, D, 2, 1, 1)
    ref3 = F.conv2d(ta, torch.from_numpy(dw), stride=2, padding=1, groups=6).numpy()
    _run(topi.x86.schedule_depthwise_conv2d_nchw(C3), [A, D, C3], ref3, [a, dw])
    W4 = _ph((6, 4, 3, 3), "W4")
    w4 = _np((6, 4, 3, 3), 29)
    C4 = topi.nn.conv2d_transpose_nchw(A, W4, 2, 1, "float32", (1, 1))
    ref4 = F.conv_transpose2d(ta, torch.from_numpy(w4), stride=2, padding=1, output_padding=1).numpy()
    _run(topi.x86.schedule_conv2d_transpose_nchw(C4), [A, W4, C4], ref4, [a, w4])


# --------------------------------------------------------------- errors ---
def test_error_channel_mismatch():
    with pytest.raises(ValueError, match=r"conv2d_nchw: argument kernel of shape \(4, 5, 3, 3\).*\(1, 3, 8, 8\)"):
        topi.nn.conv2d_nchw(_ph((1, 3, 8, 8), "A"), _ph((4, 5, 3, 3), "W"), 1, 1, 1)
    with pytest.raises(ValueError, match="conv2d_NCHWc: argument kernel"):
        topi.nn.conv2d_NCHWc(_ph((1, 2, 8, 8, 4), "A"), _ph((1, 2, 3, 3, 8, 16), "W"), 1, 1, 1)


def test_error_kernel_larger_than_padded_input():
    with pytest.raises(ValueError, match=r"conv2d_nhwc: argument kernel of shape \(5, 5, 3, 4\).*larger"):
        topi.nn.conv2d_nhwc(_ph((1, 4, 4, 3), "A"), _ph((5, 5, 3, 4), "W"), 1, 0, 1)
    with pytest.raises(ValueError, match="depthwise_conv2d_nchw: .*larger"):
        topi.nn.depthwise_conv2d_nchw(_ph((1, 3, 4, 4), "A"), _ph((3, 1, 3, 3), "W"), 1, 0, 2)


def test_error_groups_and_arguments():
    with pytest.raises(ValueError, match=r"group_conv2d_nchw: argument groups=4 must divide.*\(1, 6, 8, 8\)"):
        topi.nn.group_conv2d_nchw(_ph((1, 6, 8, 8), "A"), _ph((8, 1, 3, 3), "W"), 1, 1, 1, 4)
    with pytest.raises(ValueError, match="conv2d: argument data_layout='NCWH'"):
        topi.nn.conv2d(_ph((1, 6, 8, 8), "A"), _ph((8, 6, 3, 3), "W"), 1, 1, 1, layout="NCWH")
    with pytest.raises(ValueError, match="conv2d_nchw: argument padding='FULL'"):
        topi.nn.conv2d_nchw(_ph((1, 6, 8, 8), "A"), _ph((8, 6, 3, 3), "W"), 1, "FULL", 1)
    with pytest.raises(ValueError, match="conv1d_ncw: argument kernel of shape"):
        topi.nn.conv1d_ncw(_ph((1, 6, 8), "A"), _ph((8, 5, 3), "W"))
    with pytest.raises(ValueError, match="pad: argument pad_before has 2 entries"):
        topi.nn.pad(_ph((1, 6, 8), "A"), (1, 1))


@pytest.mark.parametrize("ic,oc,groups,k,stride,size", [
    (48, 48, 3, 1, 1, 9), (24, 96, 3, 3, 2, 11), (64, 32, 2, 3, 1, 7), (32, 32, 4, 1, 1, 5),
])
def test_conv2d_nchw_x86_grouped_blocked(ic, oc, groups, k, stride, size):
    """Grouped convs take the blocked path when each group's channels divide into blocks."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((1, ic, size, size)).astype("float32")
    w = rng.standard_normal((oc, ic // groups, k, k)).astype("float32")
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.x86.conv2d_nchw_x86(A, W, stride, k // 2, 1, groups=groups)
    s = topi.x86.schedule_conv2d_nchw(C)
    assert "conv2d_NCHWc" in str(schedule.lower(s, [A, W, C]))
    out = np.zeros(tuple(int(d) for d in C.shape), "float32")
    codegen.build(s, [A, W, C])(a, w, out)
    ref = topi.testing.conv2d_nchw_python(np.pad(a, ((0, 0), (0, 0)) + ((k // 2, k // 2),) * 2), w, stride, 0,
                                          groups, 1)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_conv2d_nchw_x86_grouped_too_narrow_is_refused():
    A, W = te.placeholder((1, 12, 5, 5)), te.placeholder((12, 4, 1, 1))
    with pytest.raises(ValueError, match="groups=3 leave 4 output channels per group"):
        topi.x86.conv2d_nchw_x86(A, W, 1, 0, 1, groups=3)


@pytest.mark.parametrize("ic,oc,size,stride,in_place", [
    (32, 48, 15, 1, True), (16, 32, 13, 1, None), (32, 16, 8, 1, False), (32, 32, 16, 2, False),
])
def test_conv2d_1x1_reads_nchw_data_in_place(ic, oc, size, stride, in_place):
    """A 1x1 stride-1 unpadded conv skips the data packing stage when its width needs no padding."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((1, ic, size, size)).astype("float32")
    w = rng.standard_normal((oc, ic, 1, 1)).astype("float32")
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.x86.conv2d_nchw_x86(A, W, stride, 0, 1)
    s = topi.x86.schedule_conv2d_nchw(C)
    text = str(schedule.lower(s, [A, W, C]))
    if in_place is not None:
        assert ("data_vec" not in text) == in_place
    out = np.zeros(tuple(int(d) for d in C.shape), "float32")
    codegen.build(s, [A, W, C])(a, w, out)
    ref = topi.testing.conv2d_nchw_python(a, w, stride, 0)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


def test_plane_parts_share_few_channel_blocks_between_threads():
    """Rows cut into parts (a divisor of the rows) where the channel blocks alone leave a thread
    idle: one block, six (four tasks of 1, 2, 1, 2 blocks), not twelve or on one thread."""
    from topi.x86.conv2d_schedule import plane_parts

    one = plane_parts(1, 112, 112, 5, threads=2)
    assert one > 1 and 112 % one == 0
    assert plane_parts(6, 14, threads=2) == 2
    assert plane_parts(12, 28, 28, 5, threads=2) == 1
    assert plane_parts(1, 112, 112, 5, threads=1) == 1
    assert plane_parts(1, 7, 7, 5, threads=2) == 7  # a prime count of rows: a row a part


@pytest.mark.parametrize("flat,chunk,size,oc", [
    (True, 0, 9, 16),    # one block, 81 columns in tiles of 5: parts of 3 rows (27 columns, a tail tile each)
    (False, 32, 9, 16),  # chunked, a row a part
    (True, 32, 10, 24),  # chunked over the flattened plane, 24 channels in 2 blocks (the last padded)
])
def test_conv2d_NCHWc_rows_in_parallel_parts(monkeypatch, flat, chunk, size, oc):
    """A flattened or chunked conv with few output blocks runs its rows in parts (the parallel
    loop covers blocks x parts), every part and tail matching numpy at 1 and 2 threads."""
    from topi.x86 import conv2d_schedule
    from topi.x86.conv2d_nchwc import conv2d_NCHWc_x86

    monkeypatch.setattr(conv2d_schedule, "_threads", lambda: 2)
    ic, ic_bn = 40, 8
    key = x86conv_rule.conv2d_workload((1, ic, size, size), (oc, ic, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1))
    cfg = x86conv_rule.blocks_config(key, {"ow_bn": 5, "unroll_kw": False, "flat": flat, "ic_chunk": chunk},
                                     ic_bn, 16)
    a, wt = _np((1, ic, size, size), 16), _np((oc, ic, 1, 1), 17)
    A = _ph((1, ic // ic_bn, size, size, ic_bn), "A")
    W = _ph((-(-oc // 16), ic // ic_bn, 1, 1, ic_bn, 16), "W")
    C = conv2d_NCHWc_x86(A, W, 1, (0, 0, 0, 0), 1, cfg, channels=oc, out_block=8)
    out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
    ref = np.maximum(T.conv2d_nchw_python(a, wt, 1, 0), 0).reshape(1, oc // 8, 8, size, size).transpose(0, 1, 3, 4, 2)
    s = topi.x86.schedule_conv2d_NCHWc(out)
    blocks = -(-oc // 16)
    parts = conv2d_schedule.plane_parts(blocks, size, *((size, 5) if flat else ()), threads=2)
    assert parts > 1
    text = str(schedule.lower(s, [A, W, out]).body)
    assert f", 0, {blocks * parts}) {{" in text.split("parallel (", 1)[1].split("\n", 1)[0]
    blocked = np.ascontiguousarray(a.reshape(1, ic // ic_bn, ic_bn, size, size).transpose(0, 1, 3, 4, 2))
    old = codegen.get_num_threads()
    try:
        for threads in (1, 2):
            codegen.set_num_threads(threads)
            _run(s, [A, W, out], ref, [blocked, x86conv.pack_kernel_numpy(wt, ic_bn, 16)])
    finally:
        codegen.set_num_threads(old)
