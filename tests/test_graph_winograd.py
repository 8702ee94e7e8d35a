"""Winograd convolutions in whole graphs: choose_configs picks them, the layout passes fold
their kernel transform and keep their neighbours' blocked layout, records can refuse them.

Hand-built graphs (3x3 convs with bias and relu, odd spatial sizes) against the
reference interpreter on the original graph; builds run the compiled kernels.
"""

import numpy as np
import pytest
from test_graph_layout import check_values, conv, laid_out, ops, rand

import graph
from graph.interpreter import interpret
from graph.ir import GraphBuilder
from graph.passes import optimize
from graph.passes.alter_op_layout import count_transforms
from graph.passes.context import BuildContext
from topi.x86.conv2d_rule import TEMPLATE as DIRECT
from topi.x86.conv2d_winograd import TEMPLATE as WINOGRAD
from tune import autotvm


def bottleneck(shape=(1, 64, 11, 9), mid=64, out=128):
    """1x1 -> 3x3 -> 1x1 with bias and relu after each (ResNet's bottleneck, odd H and W)."""
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, mid, k=1, name="c0"))
    h = b.op("relu", conv(b, h, mid, name="c1"))
    return b.finish(conv(b, h, out, k=1, name="c2"))


def winograd_nodes(g) -> list:
    return [n for n in g.nodes if n.op == "conv2d_winograd"]


def run_built(g, **build_kw):
    feed = {v.name: rand(*v.shape) for v in g.inputs}
    lib = graph.build(g, **build_kw)
    m = lib.create_executor()
    m.set_input(**feed)
    m.run()
    want = interpret(g, feed)[0]
    np.testing.assert_allclose(m.get_output(0), want, rtol=1e-3, atol=1e-3 * float(np.abs(want).max()))
    return lib


def test_a_3x3_conv_gets_winograd_with_its_kernel_transform_folded():
    g = bottleneck()
    out, _ = laid_out(g)
    (node,) = winograd_nodes(out)
    assert ops(out).count("conv2d_NCHWc") == 2 and "winograd_transform_kernel" not in ops(out)
    cfg = node.attrs["config"]
    assert cfg.template == WINOGRAD and node.attrs["kernel_shape"] == (64, 64, 3, 3)
    u = node.inputs[1]
    alpha, bn = cfg["tile"].val + 2, cfg["bn"].val
    assert u.node.is_constant and u.shape == (alpha, alpha, 64 // bn, 64, bn)
    # blocked in from the 1x1 conv, blocked out into the next one: the only transform is the graph output's
    ob = node.attrs["out_block"]
    assert len(node.inputs[0].shape) == 5 and node.output.shape == (1, 64 // ob, 11, 9, ob)
    assert count_transforms(out) == 1
    check_values(g, out)
    run_built(g)


@pytest.mark.parametrize("shape", [(1, 64, 7, 13), (2, 64, 5, 6)])
def test_built_graph_matches_the_interpreter_on_odd_sizes(shape):
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, 64, name="c1"))  # NCHW data in: re-blocked in the Winograd input stage
    r = b.op("relu", b.op("add", conv(b, h, 64, name="c2"), h))  # residual add fused into the epilogue
    g = b.finish(b.op("global_pool", r, pool_type="avg"))
    out, _ = laid_out(g)
    assert len(winograd_nodes(out)) == 2
    check_values(g, out)
    run_built(g)


def test_without_the_blocked_layout_winograd_runs_nchw():
    g = bottleneck((1, 64, 9, 7))
    out = optimize(g, exclude=("fusion", "alter_op_layout"))
    (node,) = winograd_nodes(out)
    assert node.attrs["out_block"] == 0 and len(node.inputs[0].shape) == 4 and node.inputs[1].node.is_constant
    check_values(g, out)
    run_built(g, exclude=("alter_op_layout",))


def test_a_kernel_that_is_not_constant_is_transformed_in_a_stage():
    b = GraphBuilder()
    x = b.input("x", (1, 64, 6, 5))
    w = b.input("w", (64, 64, 3, 3))
    g = b.finish(b.op("relu", b.op("conv2d", x, w, padding=(1, 1, 1, 1))))
    out = optimize(g, exclude=("fusion",))
    (node,) = [n for n in out.nodes if n.op == "conv2d"]
    assert node.attrs["config"].template == WINOGRAD
    run_built(g)


def test_small_strided_or_disabled_convs_stay_direct():
    b = GraphBuilder()
    x = b.input("x", (1, 16, 12, 12))
    h = b.op("relu", conv(b, x, 16, name="narrow"))  # 16 channels: below MIN_CHANNELS
    g = b.finish(conv(b, conv(b, h, 64, name="wide"), 64, name="strided", strides=(2, 2)))
    out, _ = laid_out(g)
    assert len(winograd_nodes(out)) == 0  # 'wide' reads 16 channels
    out = optimize(bottleneck(), exclude=("fusion",), context=BuildContext.of(options={"winograd": False}))
    assert not winograd_nodes(out) and ops(out).count("conv2d_NCHWc") == 3


@pytest.mark.parametrize("ic, oc, width, preferred", [
    (128, 32, 56, True),  # DenseNet: both counts reach MIN_CHANNELS
    (48, 192, 13, True),
    (16, 64, 55, True),  # narrow and wide on a wide plane (SqueezeNet's first fires)
    (24, 64, 14, False),  # narrow and wide on a 14-wide plane (GoogLeNet)
    (16, 32, 28, False),  # both narrow
    (32, 32, 56, False),  # neither reaches WIDE_CHANNELS
    (8, 256, 56, False),
])
def test_winograd_preferred_by_channels_and_plane(ic, oc, width, preferred):
    from topi.x86.conv2d_rule import conv2d_workload
    from topi.x86.conv2d_winograd import winograd_preferred

    key = conv2d_workload((1, ic, width, width), (oc, ic, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    assert winograd_preferred(key) is preferred


def test_a_graph_built_with_winograd_off_by_option_runs_direct_and_matches():
    def kernel_ops(lib):
        return [n.op for node in lib.graph.nodes if node.op == "fused" for n in node.attrs["body"].nodes]

    g = bottleneck()
    direct = kernel_ops(run_built(g, options={"winograd": False}))
    assert "conv2d_winograd" not in direct and direct.count("conv2d_NCHWc") == 3
    assert "conv2d_winograd" in kernel_ops(run_built(g))  # the default: the 3x3 conv as Winograd


def test_an_unknown_build_option_names_the_allowed_ones():
    with pytest.raises(ValueError, match=r"unknown build option\(s\) \['winogard'\]; allowed: \['winograd'\]"):
        graph.build(bottleneck(), options={"winogard": False})


def record(template, key, cost, index=None):
    task = autotvm.task.create(template, key[1:], target="llvm")
    cfg = task.config_space.get(task.default_config().index if index is None else index)
    return autotvm.MeasureInput(task.target, task, cfg), autotvm.MeasureResult((cost,), 0, 0.1, 1.0)


def conv_key(g):
    from graph.passes.choose_configs import node_workload

    (node,) = [n for n in g.nodes if n.op == "conv2d" and n.inputs[1].shape[2:] == (3, 3)]
    return node_workload(node)


def test_records_choosing_direct_are_honoured():
    g = bottleneck()
    key = conv_key(g)
    with autotvm.apply_history_best([record(DIRECT, key, 1e-4), record(WINOGRAD, key, 2e-4)]):
        out, _ = laid_out(g)
    assert not winograd_nodes(out) and ops(out).count("conv2d_NCHWc") == 3
    # a log of direct records alone (tuned before Winograd existed, or stopped before its tasks) says
    # nothing about Winograd: the rule's choice stands (such a log had built ResNet-50 at 63.7
    # against 46.0 ms with the rule's Winograd convs)
    with autotvm.apply_history_best([record(DIRECT, key, 1e-4)]):
        assert winograd_nodes(laid_out(g)[0])
    space = autotvm.task.create(WINOGRAD, key[1:], target="llvm").config_space
    index = next(i for i in range(len(space)) if space.get(i)["tile"].val == 2 and space.get(i)["bn"].val == 32)
    with autotvm.apply_history_best([record(DIRECT, key, 3e-4), record(WINOGRAD, key, 2e-4, index)]):
        out, _ = laid_out(g)
    (node,) = winograd_nodes(out)
    assert node.attrs["config"]["tile"].val == 2 and node.attrs["config"]["bn"].val == 32
    check_values(g, out)


def test_extract_from_program_offers_both_implementations():
    tasks = autotvm.task.extract_from_program(bottleneck(), target="llvm")
    by_name = {}
    for t in tasks:
        by_name.setdefault(t.name, []).append(t)
    (wino,) = by_name[WINOGRAD]
    assert wino.args[:2] == ((1, 64, 11, 9), (64, 64, 3, 3)) and wino.count == 1
    direct3x3 = [t for t in by_name[DIRECT] if t.args[1][2:] == (3, 3)]
    assert [t.args[:2] for t in direct3x3] == [wino.args[:2]]  # the direct alternative of the same layer
    assert sum(t.share for t in tasks) == pytest.approx(1.0)


def test_input_block_follows_the_data_block():
    """Chosen by the rule, ``cb`` is the block the data comes in (the input stage only pads)."""
    g = bottleneck((1, 64, 16, 16), mid=72)  # 72 channels: the 1x1 conv's blocks are of 8
    out, _ = laid_out(g)
    (node,) = winograd_nodes(out)
    data_block = node.inputs[0].shape[4]
    assert data_block == 8 and node.attrs["config"]["cb"].val == data_block  # the rule alone says 16
    check_values(g, out)


@pytest.mark.parametrize("c, k, shape", [(80, 104, (1, 80, 9, 13)), (64, 76, (1, 64, 15, 7))])
def test_channels_that_do_not_divide_the_blocks_and_an_output_exit(c, k, shape):
    """K not a multiple of bn (the product pads it), odd H and W; the conv's blocked output
    leaves as the graph output (the exit transform fused into its kernel).  bn is 16 with
    AVX2 (``ymm_tile``), 64 with AVX-512: K 104 pads on either host by whole AVX2 vectors,
    76 by part of one."""
    b = GraphBuilder()
    x = b.input("x", shape)
    h = b.op("relu", conv(b, x, c, k=1, name="c0"))
    g = b.finish(b.op("relu", conv(b, h, k, name="c1")))
    out, _ = laid_out(g)
    (node,) = winograd_nodes(out)
    cfg = node.attrs["config"]
    assert k % cfg["bn"].val != 0
    assert count_transforms(out) == (1 if node.attrs["out_block"] else 0)
    check_values(g, out)
    run_built(g)
