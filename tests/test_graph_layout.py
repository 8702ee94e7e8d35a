"""alter_op_layout: activations stay NCHW[x]c between convolutions (TVM's AlterOpLayout).

Hand-built graphs: how many ``layout_transform`` nodes the pass inserts, where
the blocked layout reaches, and the values against the reference interpreter
on the original graph (numpy twins); one build runs the compiled kernels.
"""

import numpy as np
import pytest

import graph
from codegen.target import Target
from graph.interpreter import interpret
from graph.ir import GraphBuilder
from graph.ops.layout import block_array, unblock_array, unpack_kernel_array
from graph.passes import PassProfile, optimize
from graph.passes.alter_op_layout import alter_op_layout, count_transforms
from topi.x86.conv2d import pack_kernel_numpy

RNG = np.random.default_rng(11)

# The layout pass only rewrites the graph and the values are checked with numpy twins, so
# tests whose blocks depend on the rules' target run under each of these, on any host.
AVX2 = "llvm -mcpu=x86-64-v3"
AVX512 = "llvm -mcpu=x86-64-v4"
TARGETS = pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def conv(b, x, oc, k=3, name="conv", **attrs):
    ic = x.shape[1] // attrs.get("groups", 1)
    pad = k // 2
    attrs.setdefault("padding", (pad, pad, pad, pad))
    w = b.const(rand(oc, ic, k, k) * 0.2, f"{name}_w")
    bias = b.const(rand(oc, 1, 1), f"{name}_b")
    return b.op("add", b.op("conv2d", x, w, name=name, **attrs), bias)


def laid_out(g, direct: bool = False):
    """Run the pass table up to (not including) fusion; return the graph and its profile.
    ``direct``: every conv direct (no Winograd), as the blocked layout's own tests want."""
    from graph.passes.context import BuildContext

    profile = PassProfile()
    context = BuildContext.of(options={"winograd": False}) if direct else None
    return optimize(g, exclude=("fusion",), profile=profile, context=context), profile


def check_values(before, after, rtol=1e-4, atol=1e-4):
    feed = {v.name: rand(*v.shape) for v in before.inputs}
    for want, got in zip(interpret(before, feed), interpret(after, feed)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def check_built(g, x, atol=1e-4):
    """``g`` built (the kernel cache as the test set it) and run on input ``x`` matches the
    interpreter on ``g``, every output."""
    m = graph.build(g).create_executor()
    feed = {"x": x}
    m.run(**feed)
    for k, want in enumerate(interpret(g, feed)):
        np.testing.assert_allclose(m.get_output(k), want, rtol=1e-4, atol=atol)


def ops(g) -> list:
    return [n.op for n in g.nodes if not n.is_constant]


def blocked_inputs(g, op: str) -> list:
    """Ranks of the first input of each ``op`` node."""
    return [len(n.inputs[0].shape) for n in g.nodes if n.op == op]


# ------------------------------------------------------------------ hand-built graphs
def test_conv_relu_conv_passes_blocked_activations():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 10, 10))
    y = conv(b, b.op("relu", conv(b, x, 32, name="c1")), 32, name="c2")
    g = b.finish(y)
    out, profile = laid_out(g, direct=True)
    assert ops(out).count("conv2d_NCHWc") == 2 and "conv2d" not in ops(out)
    assert blocked_inputs(out, "conv2d_NCHWc") == [4, 5]  # the first packs its NCHW input itself
    assert count_transforms(out) == 1  # only the graph output goes back to NCHW
    assert profile.transforms_inserted == 1
    assert "layout_transform nodes inserted: alter_op_layout +1" in profile.report()
    check_values(g, out)


def test_residual_add_and_relu_stay_blocked():
    b = GraphBuilder()
    x = b.input("x", (1, 32, 8, 8))
    h = b.op("relu", conv(b, x, 32, name="c1"))
    r = b.op("relu", b.op("add", conv(b, h, 32, name="c2"), h))
    y = conv(b, r, 32, name="c3")
    g = b.finish(y)
    out, _ = laid_out(g, direct=True)
    assert count_transforms(out) == 1
    assert blocked_inputs(out, "conv2d_NCHWc") == [4, 5, 5]
    adds = [n for n in out.nodes if n.op == "add"]
    assert [len(n.output.shape) for n in adds] == [5, 5, 5, 4]  # the last bias runs after the exit
    # the per-channel bias [C, 1, 1] became a [1, C/b, 1, 1, b] constant
    assert len(adds[0].inputs[1].shape) == 5 and adds[0].inputs[1].node.is_constant
    check_values(g, out)


def test_a_residual_from_a_plain_value_runs_in_nchw():
    """Converting the plain operand would cost a pass; the conv's exit to NCHW is free (fused)."""
    b = GraphBuilder()
    x = b.input("x", (1, 32, 8, 8))
    y = conv(b, b.op("add", conv(b, x, 32, name="c1"), x), 32, name="c2")
    g = b.finish(y)
    out, _ = laid_out(g, direct=True)
    (residual,) = [n for n in out.nodes if n.op == "add" and x in n.inputs]
    assert len(residual.output.shape) == 4
    assert count_transforms(out) == 2 and blocked_inputs(out, "conv2d_NCHWc") == [4, 4]
    check_values(g, out)


def test_values_that_reach_no_blocked_conv_go_back_to_nchw_at_once():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    h = b.op("relu", conv(b, x, 32, name="c1"))
    y = b.op("softmax", b.op("reshape", h, newshape=(1, 32 * 36)))
    g = b.finish(y)
    out, _ = laid_out(g)
    (t,) = [n for n in out.nodes if n.op == "layout_transform"]
    assert t.inputs[0].node.op == "conv2d_NCHWc"  # bias and relu run after it, in NCHW
    check_values(g, out)


def test_a_pooling_before_the_exit_runs_blocked():
    """The transform then converts the pooled (smaller) value."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    y = b.op(
        "pool2d", b.op("relu", conv(b, x, 32, name="c1")), pool_type="max", kernel=(2, 2), strides=(2, 2)
    )
    g = b.finish(b.op("reshape", y, newshape=(1, 32 * 9)))
    out, _ = laid_out(g)
    (t,) = [n for n in out.nodes if n.op == "layout_transform"]
    assert t.inputs[0].node.op == "pool2d" and t.inputs[0].node.attrs["layout"] == "NCHWc"
    check_values(g, out)


def test_conv_maxpool_conv():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 12, 12))
    p = b.op(
        "pool2d",
        b.op("relu", conv(b, x, 32, name="c1")),
        pool_type="max",
        kernel=(3, 3),
        strides=(2, 2),
        padding=(1, 1, 1, 1),
    )
    a = b.op("pool2d", conv(b, p, 32, name="c2"), pool_type="avg", kernel=(2, 2), strides=(2, 2))
    s = b.op("global_pool", a, pool_type="avg")
    se = b.op("multiply", conv(b, a, 32, k=1, name="c3"), b.op("sigmoid", conv(b, s, 32, k=1, name="se")))
    g = b.finish(conv(b, se, 16, k=1, name="c4"))
    out, _ = laid_out(g, direct=True)
    pools = [n for n in out.nodes if n.op in ("pool2d", "global_pool")]
    assert [n.attrs["layout"] for n in pools] == ["NCHWc"] * 3
    assert blocked_inputs(out, "conv2d_NCHWc") == [4, 5, 5, 5, 5]
    assert count_transforms(out) == 1
    check_values(g, out)


def test_concat_of_two_convs_stays_blocked():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8))
    cat = b.op("concatenate", conv(b, x, 32, k=1, name="c1"), conv(b, x, 64, name="c2"), axis=1)
    y = conv(b, b.op("relu", cat), 32, name="c3")
    g = b.finish(y)
    out, _ = laid_out(g, direct=True)
    (cat_node,) = [n for n in out.nodes if n.op == "concatenate"]
    assert cat_node.output.shape == (1, 6, 8, 8, 16)  # both convs blocked by one vector: no transform
    assert blocked_inputs(out, "conv2d_NCHWc") == [4, 4, 5]
    assert count_transforms(out) == 1
    check_values(g, out)


def test_concat_with_different_blocks_converts_to_the_common_one():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8))
    c8 = conv(b, x, 8, k=1, name="c8")  # 8 channels: oc_bn 8
    c64 = conv(b, x, 64, k=1, name="c64")  # oc_bn 16
    c64b = conv(b, x, 64, k=1, name="c64b")  # oc_bn 16
    y = conv(b, b.op("concatenate", c64, c8, c64b, axis=1), 16, k=1, name="c")  # 136 = 8 x 17 channels
    g = b.finish(y)
    out, _ = laid_out(g)
    (cat_node,) = [n for n in out.nodes if n.op == "concatenate"]
    assert cat_node.output.shape[-1] == 8  # 8 does not split into 16s: all go to 8
    # the 64-channel convs compute in 16-channel tiles and write the concat's 8 themselves
    convs = {n.name: n for n in out.nodes if n.op == "conv2d_NCHWc"}
    assert [(convs[k].inputs[1].shape[5], convs[k].output.shape[-1]) for k in ("c64", "c64b")] == [(16, 8)] * 2
    transforms = [n for n in out.nodes if n.op == "layout_transform"]
    assert sorted((n.attrs["src_layout"], n.attrs["dst_layout"]) for n in transforms) == [("NCHW16c", "NCHW")]
    check_values(g, out)


@TARGETS
def test_a_consumer_takes_the_block_its_producer_gives(target):
    """A conv reads the block its producer writes, where its own rule says another (24 channels
    in blocks of 8, the rule's 12), and a grouped conv takes 16-channel blocks across 12-channel
    groups: no transform between the convs, one at the exit, from the block the grouped conv
    writes (one vector: 8 channels with AVX2, 16 with AVX-512)."""
    b = GraphBuilder()
    x = b.input("x", (1, 16, 8, 8))
    h = b.op("relu", conv(b, x, 24, name="c1"))  # NCHW8c
    h2 = b.op("relu", conv(b, h, 48, k=1, name="c2"))  # reads NCHW8c, writes NCHW16c
    y = conv(b, h2, 48, k=1, name="g3", groups=4)  # 12 input channels per group
    g = b.finish(y)
    with Target(target):
        out, _ = laid_out(g)
    convs = [n for n in out.nodes if n.op.endswith("conv2d_NCHWc")]
    assert len(convs[0].inputs[0].shape) == 4  # the NCHW graph input, packed inside the kernel
    assert [n.inputs[0].shape[-1] for n in convs[1:]] == [8, 16]  # then the producers' blocks
    assert convs[1].attrs["config"]["ic_bn"].val == 8 and convs[2].op == "group_conv2d_NCHWc"
    lanes = Target(target).lanes("float32")
    assert convs[2].attrs["config"]["oc_bn"].val == lanes
    (t,) = [n for n in out.nodes if n.op == "layout_transform"]
    assert (t.attrs["src_layout"], t.attrs["dst_layout"]) == (f"NCHW{lanes}c", "NCHW")
    check_values(g, out)


def test_convs_of_an_odd_number_of_vectors_pad_their_kernels_not_their_outputs(tmp_path, monkeypatch):
    """AVX2: 72 and 40 channels (odd numbers of 8-lane vectors) run the 16-channel tile over
    kernels zero-padded to whole tiles; their outputs are blocked by 8 (``channels``,
    ``out_block``), so the residual add, the pooling and the next conv never see a padded
    channel; one output leaves through NCHW straight from the conv's kernel.  Built, it
    matches the interpreter on the original graph."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", (1, 16, 11, 9))
    h = b.op("relu", conv(b, x, 72, name="c1"))
    e = conv(b, h, 40, k=1, name="c2", padding=(0, 0, 0, 0))
    r = b.op("relu", b.op("add", conv(b, b.op("relu", conv(b, e, 72, k=1, name="c3", padding=(0, 0, 0, 0))),
                                       40, k=1, name="c4", padding=(0, 0, 0, 0)), e))
    p = b.op("global_pool", r, pool_type="avg")
    g = b.finish([p, conv(b, r, 56, name="c5", strides=(2, 2))])
    with Target(AVX2):
        out, _ = laid_out(g)
        convs = [n for n in out.nodes if n.op == "conv2d_NCHWc"]
        padded = [(n.attrs.get("channels"), n.attrs.get("out_block"), n.inputs[1].shape[5]) for n in convs]
        assert padded[:4] == [(72, 8, 16), (40, 8, 16), (72, 8, 16), (40, 8, 16)]
        assert [n.output.shape[-1] for n in convs[:4]] == [8, 8, 8, 8]
        check_values(g, out)
    if Target("llvm").vector_registers >= 32:
        return  # the host's own rule blocks every conv by 16 lanes: built above only as a graph
    check_built(g, rand(1, 16, 11, 9))


def test_a_conv_writes_the_block_a_grouped_conv_reads(tmp_path, monkeypatch):
    """RegNet's 1x1 conv (48 channels: 16-channel blocks by rule) feeds a grouped 3x3 conv of
    8-channel groups, which reads 8-channel blocks: the 1x1 conv's tile writes them itself
    (``read_blocks``), no transform between the two; built, it matches the interpreter."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", (1, 32, 10, 9))
    h = b.op("relu", conv(b, x, 48, k=1, name="c1", padding=(0, 0, 0, 0)))
    g = b.finish(b.op("relu", conv(b, h, 48, name="g2", groups=6, strides=(2, 2))))
    with Target(AVX2):
        out, _ = laid_out(g)
        c1, g2 = [n for n in out.nodes if n.op == "conv2d_NCHWc"]
        assert (c1.inputs[1].shape[5], c1.attrs.get("out_block"), c1.output.shape[-1]) == (16, 8, 8)
        assert g2.inputs[0].shape[-1] == 8 and count_transforms(out) == 1  # the exit only
        check_values(g, out)
    if Target("llvm").vector_registers >= 32:
        return
    check_built(g, rand(1, 32, 10, 9))


def test_a_squeeze_conv_whose_channels_do_not_block_gets_its_kernel_packed_once(tmp_path, monkeypatch):
    """Squeeze-excite with an unblockable squeeze (48 -> 12 channels over a 1x1 image, as
    RegNet's 440 -> 110): the squeeze conv stays NCHW with its kernel packed once, zero-padded
    to a block of 8 (``channels=12``), the excite conv (12 -> 48) is a blocked conv; built, it
    matches the interpreter on the original graph."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", (1, 48, 5, 7))
    h = b.op("relu", conv(b, x, 48, k=1, name="c1", padding=(0, 0, 0, 0)))
    p = b.op("global_pool", h, pool_type="avg")
    s = b.op("relu", conv(b, p, 12, k=1, name="squeeze", padding=(0, 0, 0, 0)))
    e = b.op("sigmoid", conv(b, s, 48, k=1, name="excite", padding=(0, 0, 0, 0)))
    g = b.finish(b.op("multiply", h, e))
    with Target(AVX2):
        out, _ = laid_out(g)
        (sq,) = [n for n in out.nodes if n.op == "conv2d"]
        assert sq.attrs["channels"] == 12 and sq.inputs[1].node.is_constant and sq.inputs[1].shape[5] == 8
        assert [n.op for n in out.nodes if n.op.startswith("conv2d_")] == ["conv2d_NCHWc", "conv2d_NCHWc"]
        check_values(g, out)
    check_built(g, rand(1, 48, 5, 7), atol=1e-5)


def test_a_conv_whose_padded_channels_stay_nchw_gets_its_kernel_packed_once(tmp_path, monkeypatch):
    """AVX2: a 1x1 conv of 92 output channels (not whole vectors, padded to 96 by the rule's
    two-vector tile) keeps its NCHW output; its kernel is packed once, the last block
    zero-padded, and the node records ``channels=92``; a 3x3 conv of 60 channels likewise.
    Built, it matches the interpreter on the original graph (planes the tiles do not divide)."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", (1, 80, 9, 7))
    h = b.op("relu", conv(b, x, 92, k=1, name="c1", padding=(0, 0, 0, 0)))
    g = b.finish(b.op("relu", conv(b, h, 60, name="c2")))
    with Target(AVX2):
        out, _ = laid_out(g, direct=True)
        convs = [n for n in out.nodes if n.op == "conv2d"]
        assert [(n.attrs.get("channels"), n.inputs[1].shape[0] * n.inputs[1].shape[5]) for n in convs] == \
            [(92, 96), (60, 64)]
        assert all(n.inputs[1].node.is_constant for n in convs) and count_transforms(out) == 0
        assert [n.output.shape[1] for n in convs] == [92, 60]
        check_values(g, out)
    if Target("llvm").vector_registers >= 32:
        return
    check_built(g, rand(1, 80, 9, 7))


def test_conv_flatten_dense_goes_back_to_nchw_before_the_reshape():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    h = b.op("relu", conv(b, x, 32, name="c1"))
    f = b.op("reshape", h, newshape=(1, 32 * 36))
    y = b.op("softmax", b.op("dense", f, b.const(rand(10, 32 * 36) * 0.05, "fc")), axis=-1)
    g = b.finish(y)
    out, _ = laid_out(g)
    (t,) = [n for n in out.nodes if n.op == "layout_transform"]
    assert (t.attrs["src_layout"], t.attrs["dst_layout"]) == ("NCHW16c", "NCHW")
    assert t.inputs[0].node.op == "conv2d_NCHWc"  # bias and relu run in NCHW, fused after the exit
    check_values(g, out)


def test_layout_bound_ops_and_outputs_read_nchw():
    b = GraphBuilder()
    x = b.input("x", (1, 8, 6, 6))
    h = conv(b, x, 16, name="c1")
    n = b.op("lrn", h, size=3)
    d = b.op("depthwise_conv2d", h, b.const(rand(16, 1, 3, 3), "dw"), padding=(1, 1, 1, 1))
    g = b.finish([n, d, h])
    out, _ = laid_out(g)
    assert count_transforms(out) == 1  # one conversion of h serves lrn, the depthwise conv and the output
    check_values(g, out)


def test_excluding_the_pass_keeps_nchw_and_the_pass_is_idempotent():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 6, 6))
    g = b.finish(conv(b, b.op("relu", conv(b, x, 32, name="c1")), 32, name="c2"))
    plain = optimize(g, exclude=("fusion", "alter_op_layout"))
    assert "conv2d_NCHWc" not in ops(plain) and count_transforms(plain) == 0
    from graph.passes.context import BuildContext

    context = BuildContext.of()
    once = alter_op_layout(g, context)
    assert alter_op_layout(once, context) is once
    no_conv = GraphBuilder()
    y = no_conv.op("relu", no_conv.input("x", (1, 4, 3, 3)))
    g2 = no_conv.finish(y)
    assert alter_op_layout(g2, context) is g2


# ------------------------------------------------------------------ helpers and the built kernels
def test_layout_helpers_round_trip():
    x = rand(2, 64, 3, 5)
    assert np.array_equal(unblock_array(block_array(x, 16)), x)
    k = rand(64, 32, 3, 3)
    assert np.array_equal(unpack_kernel_array(pack_kernel_numpy(k, 8, 16)), k)


@pytest.mark.parametrize("shape", [(1, 16, 13, 13), (2, 32, 7, 9)])
def test_built_blocked_network_matches_the_interpreter(shape, tmp_path, monkeypatch):
    """Compiled: blocked 3x3 (columns padded to the register tile), 1x1 stride 2, residual, pool,
    concat and an NCHW exit fused into the last conv; shapes that do not divide the tiles."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, 32, name="c1"))
    r = b.op("relu", b.op("add", conv(b, h, 32, name="c2"), h))
    p = b.op("pool2d", r, pool_type="max", kernel=(3, 3), strides=(2, 2), ceil_mode=True)
    s = conv(b, p, 32, k=1, name="c3", strides=(2, 2), padding=(0, 0, 0, 0))
    cat = b.op("concatenate", conv(b, p, 32, k=1, name="c4"), conv(b, p, 32, name="c5"), axis=1)
    y = b.op("relu", conv(b, cat, 16, name="c6"))
    g = b.finish([y, s])
    profile = PassProfile()
    lib = graph.build(g, profile=profile)
    assert count_transforms(lib.graph) == 2 and profile.transforms_inserted == 2
    # the exit of c6 to NCHW runs in c6's kernel, its bias and relu after it
    bodies = [
        [m.op for m in n.attrs["body"].nodes if not m.is_constant] for n in lib.graph.nodes if n.op == "fused"
    ]
    assert ["conv2d_NCHWc", "layout_transform", "add", "relu"] in bodies
    feed = {"x": rand(*shape)}
    m = lib.create_executor()
    m.run(**feed)
    for k, want in enumerate(interpret(g, feed)):
        np.testing.assert_allclose(m.get_output(k), want, rtol=1e-4, atol=1e-4)


@TARGETS
@pytest.mark.parametrize(
    "name, convs, blocked_in, avx2_block_changes",
    [
        ("resnet50", 53, 52, 0),
        ("densenet121", 121, 120, 1),
        ("inception_v2", 60, 59, 4),
        ("squeezenet", 26, 25, 0),
        ("vgg19", 16, 15, 0),
    ],
)
def test_light_models_keep_activations_blocked(name, convs, blocked_in, avx2_block_changes, target):
    """Every conv is blocked, all but the stem read blocked data, and one transform (before the
    classifier's reshape or at the output) goes back to NCHW.  With AVX-512 every block is one
    16-lane vector; with AVX2 the convs at 14x14 and above write two 8-lane vectors, and so do
    the 1x1 convs at 7x7 (a tile of 4 columns and a tail of 3), the 3x3 ones one (OW 7 has no
    padded tile of two): DenseNet's and Inception's 7x7 stage converts the 16-channel blocks it
    gets to 8 once, where they meet in its first concatenation (DenseNet made two transforms a
    layer, 33 in all, when that concatenation kept 16); Inception-v2 converts its two 1x1
    branches at each of its two 7x7 concatenations too (the 1x1 convs 0.71-0.85x the time of
    one-vector blocks; a transform of 7x7 activations is a small copy); its stride-2 3x3 convs
    into 7x7 write 16-channel blocks too (the narrow two-vector tile, 0.87-0.90x the time), so
    that stage converts 4 blocked values, not 5."""
    from graph.build import bind_params
    from graph.onnx.zoo import light_model_path

    g, params = graph.from_onnx(light_model_path(name))
    with Target(target):
        out, profile = laid_out(bind_params(g, params))
    # 3x3 stride-1 convs of >= 64 channels run Winograd (conv2d_winograd), in the same blocked layout
    blocked = blocked_inputs(out, "conv2d_NCHWc") + blocked_inputs(out, "conv2d_winograd")
    assert blocked.count(5) == blocked_in
    assert ops(out).count("conv2d_NCHWc") + ops(out).count("conv2d_winograd") == convs and "conv2d" not in ops(out)
    changes = avx2_block_changes if target == AVX2 else 0
    transforms = [(n.attrs["src_layout"], n.attrs["dst_layout"])
                  for n in out.nodes if n.op == "layout_transform"]
    assert [t for t in transforms if t[1] != "NCHW"] == [("NCHW16c", "NCHW8c")] * changes
    assert [dst for _, dst in transforms].count("NCHW") == 1
    assert count_transforms(out) == 1 + changes == profile.transforms_inserted
