"""Grouped and depthwise convolutions and the channel shuffle in the blocked layout.

ShuffleNet's units (grouped 1x1 conv with 28 / 34 / 68 channels a group, channel
shuffle, depthwise 3x3) stay NCHW[x]c: topi kernels checked against numpy on
shapes that divide neither the blocks nor the register tiles, then hand-built
graphs through ``alter_op_layout`` (transform counts, values against the
reference interpreter) and one compiled build.
"""

import numpy as np
import pytest

import codegen
import graph
import te
import topi
from graph.interpreter import interpret
from graph.ir import GraphBuilder
from graph.ops.layout import block_array, unblock_array
from graph.passes import PassProfile, optimize
from graph.passes.alter_op_layout import count_transforms
from tune.autotvm.config import make_config
from topi.nn.channel_shuffle import channel_shuffle, channel_shuffle_python
from topi.x86 import depthwise_conv2d as D
from topi.x86 import group_conv2d as G
from topi.x86.channel_shuffle import schedule_channel_shuffle

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def run(s, args, arrays):
    f = codegen.build(s, args)
    out = np.zeros(tuple(int(d) for d in args[-1].shape), args[-1].dtype)
    f(*arrays, out)
    return out


# ------------------------------------------------------------------ topi kernels
@pytest.mark.parametrize(
    "ic, oc, groups, hw, k, stride, blocks",
    [
        (136, 136, 4, 9, 1, 1, (8, 8)),  # 34 a group: blocks straddle groups
        (112, 112, 4, 7, 1, 1, (16, 16)),  # 28 a group, OW 7 pads the 16-column tile
        (24, 112, 4, 11, 1, 1, (24, 16)),  # one input block holds every group
        (48, 40, 4, 10, 3, 2, (12, 8)),  # 3x3 stride 2, 10 output channels a group
        (64, 64, 2, 6, 1, 1, (16, 16)),  # blocks divide the groups: the plain grouped conv
    ],
)
@pytest.mark.parametrize("blocked_input", [True, False])
def test_group_conv_spanning_blocks_matches_numpy(ic, oc, groups, hw, k, stride, blocks, blocked_input):
    ic_bn, oc_bn = blocks
    x, w = rand(1, ic, hw, hw + 3), rand(oc, ic // groups, k, k)
    pad = k // 2
    want = topi.testing.conv2d_nchw_python(np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))), w,
                                           (stride, stride), 0, groups, (1, 1))
    packed = G.pack_group_kernel_numpy(w, groups, ic_bn, oc_bn)
    assert np.array_equal(G.unpack_group_kernel_numpy(packed, ic, oc, groups), w)
    key = G.group_conv2d_workload(x.shape, w.shape, (stride, stride), (pad,) * 4, (1, 1), groups)
    cfg = make_config(key, {"ic_bn": ic_bn, "oc_bn": oc_bn})
    data = block_array(x, ic_bn) if blocked_input else x
    dt, kt = te.placeholder(data.shape, name="data"), te.placeholder(packed.shape, name="kernel")
    out = G.group_conv2d_NCHWc_x86(dt, kt, (stride, stride), pad, (1, 1), groups, cfg)
    got = run(G.schedule_group_conv2d_NCHWc(out), [dt, kt, out], [data, packed])
    np.testing.assert_allclose(unblock_array(got), want, rtol=1e-4, atol=1e-4)


def test_group_blocks_layouts():
    assert G.group_blocks(64, 128, 4, 8, 16) == (2, [0, 0, 2, 2, 4, 4, 6, 6], 0)  # blocks divide the groups
    split = G.group_blocks(136, 136, 4, 8, 8)  # 34 a group: blocks 4, 8 and 12 straddle two groups
    assert split.span == 5 and split.fix == 3 and split.starts[4] == 0 and split.starts[5] == 4
    span = G.group_blocks(24, 8, 4, 8, 8)  # 2 output channels a group: one block spans all four
    assert span == (3, [0], 0)


def test_group_conv_refuses_a_kernel_packed_for_other_channels():
    dt = te.placeholder((1, 17, 5, 5, 8), name="data")
    kt = te.placeholder((17, 9, 1, 1, 8, 8), name="kernel")  # one span over two groups: not this layout
    key = G.group_conv2d_workload((1, 136, 5, 5), (136, 34, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 4)
    cfg = make_config(key, {"ic_bn": 8, "oc_bn": 8})
    with pytest.raises(ValueError, match="is not packed for IC=136, OC=136, groups=4"):
        G.group_conv2d_NCHWc_x86(dt, kt, (1, 1), 0, (1, 1), 4, cfg)


@pytest.mark.parametrize("c, block, hw, stride", [(136, 8, 9, 1), (112, 16, 13, 2), (48, 16, 7, 1)])
def test_depthwise_nchwc_matches_numpy(c, block, hw, stride):
    x, w = rand(1, c, hw, hw + 2), rand(c, 1, 3, 3)
    want = topi.testing.depthwise_conv2d_python_nchw(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), w,
                                                     (stride, stride), 0, (1, 1))
    data, kernel = block_array(x, block), D.pack_depthwise_kernel_numpy(w, block)
    dt, kt = te.placeholder(data.shape, name="data"), te.placeholder(kernel.shape, name="kernel")
    out = D.depthwise_conv2d_NCHWc(dt, kt, (stride, stride), (1, 1, 1, 1), (1, 1))
    got = run(D.schedule_depthwise_conv2d_NCHWc(out), [dt, kt, out], [data, kernel])
    np.testing.assert_allclose(unblock_array(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("k, stride, pads, hw", [(5, 2, (2, 1, 1, 2), (15, 17)), (3, 1, (0, 1, 2, 0), (7, 7)),
                                                 (5, 1, (2, 2, 2, 2), (7, 13))])
def test_depthwise_nchwc_inlined_padding_matches_numpy(k, stride, pads, hw):
    """The zero border is inlined (its taps skipped): asymmetric pads, 5x5 taps, rows whose
    column tile (4 and a tail) divides no width."""
    top, left, bottom, right = pads
    x, w = rand(1, 48, *hw), rand(48, 1, k, k)
    want = topi.testing.depthwise_conv2d_python_nchw(np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right))), w,
                                                     (stride, stride), 0, (1, 1))
    data, kernel = block_array(x, 16), D.pack_depthwise_kernel_numpy(w, 16)
    dt, kt = te.placeholder(data.shape, name="data"), te.placeholder(kernel.shape, name="kernel")
    out = D.depthwise_conv2d_NCHWc(dt, kt, (stride, stride), pads, (1, 1))
    assert out.op.attrs["config"]["ow_bn"].val == 4
    got = run(D.schedule_depthwise_conv2d_NCHWc(out), [dt, kt, out], [data, kernel])
    np.testing.assert_allclose(unblock_array(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, groups", [((1, 17, 5, 6, 8), 4), ((2, 7, 3, 3, 16), 4), ((1, 136, 5, 5), 4)])
def test_channel_shuffle_matches_reshape_transpose(shape, groups):
    x = rand(*shape)
    plain = unblock_array(x) if x.ndim == 5 else x
    n, c, h, w = plain.shape
    want = plain.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(plain.shape)
    ref = channel_shuffle_python(x, groups)
    np.testing.assert_array_equal(unblock_array(ref) if x.ndim == 5 else ref, want)
    xt = te.placeholder(shape, name="x")
    out = channel_shuffle(xt, groups)
    np.testing.assert_array_equal(run(schedule_channel_shuffle(out), [xt, out], [x]), ref)


# ------------------------------------------------------------------ the layout pass
def conv(b, x, oc, k=1, name="conv", **attrs):
    ic = x.shape[1] // attrs.get("groups", 1)
    pad = k // 2
    attrs.setdefault("padding", (pad, pad, pad, pad))
    w = b.const(rand(oc, ic, k, k) * 0.2, f"{name}_w")
    return b.op("add", b.op("conv2d", x, w, name=name, **attrs), b.const(rand(oc, 1, 1), f"{name}_b"))


def shuffle(b, x, groups):
    n, c, h, w = x.shape
    s = b.op("reshape", x, newshape=(n, groups, c // groups, h, w))
    return b.op("reshape", b.op("transpose", s, axes=(0, 2, 1, 3, 4)), newshape=(n, c, h, w))


def shuffle_unit(b, x, name):
    """ShuffleNet v1's unit: grouped 1x1, shuffle, depthwise 3x3, grouped 1x1, residual add."""
    c = x.shape[1]
    h = b.op("relu", conv(b, x, c, name=f"{name}_g1", groups=4))
    d = b.op("depthwise_conv2d", shuffle(b, h, 4), b.const(rand(c, 1, 3, 3), f"{name}_dw"), padding=(1, 1, 1, 1))
    d = b.op("add", d, b.const(rand(c, 1, 1), f"{name}_dwb"))
    return b.op("relu", b.op("add", conv(b, d, c, name=f"{name}_g2", groups=4), x))


def shufflenet_like(shape):
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, 136, k=3, name="stem"))
    h = shuffle_unit(b, shuffle_unit(b, h, "u1"), "u2")
    return b.finish(conv(b, h, 32, name="head"))


def laid_out(g):
    profile = PassProfile()
    return optimize(g, exclude=("fusion",), profile=profile), profile


def check_values(before, after):
    feed = {v.name: rand(*v.shape) for v in before.inputs}
    for want, got in zip(interpret(before, feed), interpret(after, feed)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_shuffle_units_stay_blocked_end_to_end():
    g = shufflenet_like((1, 16, 9, 9))
    out, profile = laid_out(g)
    kinds = [n.op for n in out.nodes if not n.is_constant]
    assert kinds.count("group_conv2d_NCHWc") == 4 and kinds.count("depthwise_conv2d_NCHWc") == 2
    assert kinds.count("channel_shuffle") == 2
    assert not {"conv2d", "depthwise_conv2d", "reshape", "transpose"} & set(kinds)
    assert all(len(n.inputs[0].shape) == 5 for n in out.nodes if n.op in ("group_conv2d_NCHWc", "channel_shuffle"))
    assert count_transforms(out) == 1 == profile.transforms_inserted  # the graph output only
    check_values(g, out)


def test_depthwise_whose_output_leaves_the_chain_runs_nchw():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6))
    h = conv(b, x, 24, k=3, name="c1")
    d = b.op("depthwise_conv2d", h, b.const(rand(24, 1, 3, 3), "dw"), padding=(1, 1, 1, 1))
    g = b.finish([d, conv(b, h, 16, name="c2")])
    out, _ = laid_out(g)
    assert "depthwise_conv2d" in [n.op for n in out.nodes]
    check_values(g, out)


def test_concat_of_blocks_16_and_24_meets_at_8():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 7, 7))
    cat = b.op("concatenate", conv(b, x, 112, name="c1"), conv(b, x, 24, name="c2"), axis=1)
    g = b.finish(conv(b, b.op("relu", cat), 136, name="c3", groups=4))
    out, _ = laid_out(g)
    (c,) = [n for n in out.nodes if n.op == "concatenate"]
    assert c.output.shape == (1, 17, 7, 7, 8)
    check_values(g, out)


@pytest.mark.parametrize("shape", [(1, 16, 9, 9), (1, 16, 7, 11)])
def test_built_shufflenet_like_graph_matches_the_interpreter(shape, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    g = shufflenet_like(shape)
    lib = graph.build(g)
    assert count_transforms(lib.graph) == 1
    feed = {"x": rand(*shape)}
    m = lib.create_executor()
    m.run(**feed)
    np.testing.assert_allclose(m.get_output(0), interpret(g, feed)[0], rtol=1e-4, atol=1e-4)


def shuffle_down_unit(b, x, name):
    """ShuffleNet v1's stride-2 unit: grouped 1x1 (24 -> 112), shuffle, depthwise 3x3 stride 2,
    grouped 1x1, concatenated with a 3x3 average pool of the input (112 ++ 24 channels)."""
    c, grown = x.shape[1], 112
    h = b.op("relu", conv(b, x, grown, name=f"{name}_g1", groups=4))
    d = b.op("depthwise_conv2d", shuffle(b, h, 4), b.const(rand(grown, 1, 3, 3), f"{name}_dw"),
             strides=(2, 2), padding=(1, 1, 1, 1))
    d = b.op("add", d, b.const(rand(grown, 1, 1), f"{name}_dwb"))
    p = b.op("pool2d", x, pool_type="avg", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    assert c == 24
    return b.op("relu", b.op("concatenate", conv(b, d, grown, name=f"{name}_g2", groups=4), p, axis=1))


@pytest.mark.parametrize("shape", [(1, 8, 9, 9), (1, 8, 10, 7)])
def test_strided_unit_shuffles_after_the_depthwise_conv(shape, tmp_path, monkeypatch):
    """The shuffle moves past the stride-2 depthwise conv (its taps permuted): 4x fewer values
    to shuffle; the concat of 112 (by 16) and 24 channels meets at 8, written so by the conv."""
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, 24, k=3, name="stem"))
    g = b.finish(conv(b, shuffle_unit(b, shuffle_down_unit(b, h, "d1"), "u1"), 16, name="head"))
    out, _ = laid_out(g)
    nodes = {n.op: n for n in out.nodes}
    first = next(n for n in out.nodes if n.op == "channel_shuffle")
    assert first.inputs[0].node.op == "depthwise_conv2d_NCHWc"  # shuffled after the strided conv
    assert nodes["concatenate"].output.shape[-1] == 8 and count_transforms(out) == 1
    check_values(g, out)
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    lib = graph.build(g)
    feed = {"x": rand(*shape)}
    m = lib.create_executor()
    m.run(**feed)
    np.testing.assert_allclose(m.get_output(0), interpret(g, feed)[0], rtol=1e-4, atol=1e-4)


def inverted_residual(shape, se: bool):
    """MobileNet-v2's block (EfficientNet's with ``se``: a squeeze-excite scale before the
    projection, ``scale * x`` as torchvision exports it): expand 1x1, depthwise 3x3, project 1x1."""
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("clip", conv(b, x, 96, name="expand"), min=0.0, max=6.0)
    d = b.op("depthwise_conv2d", h, b.const(rand(96, 1, 3, 3), "dw"), padding=(1, 1, 1, 1))
    d = b.op("clip", b.op("add", d, b.const(rand(96, 1, 1), "dwb")), min=0.0, max=6.0)
    if se:
        s = b.op("relu", conv(b, b.op("global_pool", d, pool_type="avg"), 8, name="se1"))
        d = b.op("multiply", b.op("sigmoid", conv(b, s, 96, name="se2")), d)
    return b.finish(conv(b, d, 24, name="project"))


@pytest.mark.parametrize("se", [False, True])
def test_depthwise_and_squeeze_excite_pass_their_block_to_the_projection(se):
    """The projection conv reads the block the depthwise conv (and the squeeze-excite multiply)
    kept, rather than its rule's ``ic_bn`` of 8: no re-blocking of the 96-channel activations."""
    g = inverted_residual((1, 16, 14, 14), se)
    out, _ = laid_out(g)
    big = [n for n in out.nodes if n.op == "layout_transform" and n.inputs[0].size >= 96 * 14 * 14]
    assert not big
    (proj,) = [n for n in out.nodes if n.name == "project"]
    assert proj.op == "conv2d_NCHWc" and proj.inputs[0].node.op == ("multiply" if se else "clip")
    check_values(g, out)
