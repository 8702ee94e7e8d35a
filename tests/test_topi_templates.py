"""Schedule templates as data (topi.config): workload keys, spaces, checks, targets.

* every template's random legal configs, built and compared with numpy on
  shapes that divide none of the blocks;
* one test per error message of a config check;
* workload keys equal in compute, schedule, the graph's choose_configs pass
  and the kernel cache key (two configs, two keys);
* defaults read the target (AVX2: 8 lanes, 12 accumulators), and kernels
  scheduled for AVX2 compute the same numbers;
* divisors in O(sqrt n); max pooling over integer types.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from helpers import check_build

import schedule
import te
import topi
import topi.testing as T
from codegen.target import Target
from tune.autotvm.config import (check_config, config_of, config_space, default_config, make_config, sample_config,
                                 with_values)
from tune.autotvm.task import rule_names
from tune.autotvm.dispatch import ApplyChoices
from topi.config import divisors, largest_divisor
from topi.x86 import conv2d as x86conv
from topi.x86 import conv2d_rule as x86conv_rule
from topi.x86 import conv2d_schedule as x86conv_schedule
from topi.x86 import dense as x86dense
from topi.x86.conv_direct import direct_workload
from topi.x86.depthwise_conv2d import depthwise_workload
from topi.x86.injective import injective_workload
from topi.x86.pooling import pool_workload
from topi.x86.reduction import reduce_workload
from topi.x86.softmax import softmax_workload

TOL = {"rtol": 1e-4, "atol": 1e-4}
AVX2 = "llvm -mcpu=x86-64-v3"
AVX512 = "llvm -mcpu=x86-64-v4"
SAMPLES = 3


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _shape(t) -> tuple:
    return tuple(int(d) for d in t.shape)


def _samples(workload, seed: int) -> list:
    """The rule default and ``SAMPLES`` random legal configs of ``workload``."""
    rng = np.random.default_rng(seed)
    return [default_config(workload)] + [sample_config(workload, rng) for _ in range(SAMPLES)]


# ------------------------------------------------- random legal configs ---
def test_every_template_is_sampled_below():
    assert set(rule_names()) >= {"conv2d_NCHWc.x86", "conv_direct.x86", "depthwise_conv2d_nchw.x86",
                              "depthwise_conv2d_nhwc.x86", "dense.x86", "dense_pack.x86", "batch_matmul.x86",
                              "pool.x86", "softmax.x86", "reduce.x86", "injective.x86"}


@pytest.mark.parametrize("seed", [0, 1])
def test_conv2d_nchwc_random_configs(seed):
    shape, kshape = (1, 12, 11, 13), (24, 12, 3, 3)
    key = x86conv_rule.conv2d_workload(shape, kshape, (1, 2), (1, 0, 2, 1), (1, 1))
    a, wt = _np(shape, 1), _np(kshape, 2)
    ref = T.conv2d_nchw_python(a, wt, (1, 2), (1, 0, 2, 1))
    for cfg in _samples(key, seed):
        A, W = te.placeholder(shape, name="A"), te.placeholder(kshape, name="W")
        C = x86conv.conv2d_nchw_x86(A, W, (1, 2), (1, 0, 2, 1), 1, cfg=cfg)
        check_build(x86conv_schedule.schedule_conv2d_nchw(C), [A, W, C], lambda *_: ref, inputs=[a, wt], **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_direct_conv_random_configs(layout):
    a, wt = _np((1, 5, 9, 11), 3), _np((7, 5, 3, 3), 4)
    ref = T.conv2d_nchw_python(a, wt, 1, 1)
    if layout == "NHWC":
        a, wt, ref = a.transpose(0, 2, 3, 1).copy(), wt.transpose(2, 3, 1, 0).copy(), ref.transpose(0, 2, 3, 1)
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(wt.shape, name="W")
    C = topi.nn.conv2d(A, W, 1, 1, 1, layout=layout)
    key = direct_workload(C.op.name, _shape(C), layout == "NHWC")
    sched = topi.x86.schedule_conv2d_nchw if layout == "NCHW" else topi.x86.schedule_conv2d_nhwc
    for cfg in _samples(key, 5):
        check_build(sched(C, cfg), [A, W, C], lambda *_: ref, inputs=[a, wt], **TOL)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_depthwise_random_configs(layout):
    if layout == "NCHW":
        a, wt = _np((1, 3, 13, 23), 6), _np((3, 1, 3, 3), 7)
        C_of = topi.nn.depthwise_conv2d_nchw
        ref = T.depthwise_conv2d_python_nchw(a, wt, 1, (1, 0, 2, 1))
        sched = topi.x86.schedule_depthwise_conv2d_nchw
    else:
        a, wt = _np((1, 9, 11, 21), 6), _np((3, 3, 21, 1), 7)
        C_of = topi.nn.depthwise_conv2d_nhwc
        ref = T.depthwise_conv2d_python_nhwc(a, wt, 1, (1, 0, 2, 1))
        sched = topi.x86.schedule_depthwise_conv2d_nhwc
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(wt.shape, name="W")
    C = C_of(A, W, 1, (1, 0, 2, 1), 1)
    for cfg in _samples(depthwise_workload(_shape(C), layout), 8):
        check_build(sched(C, cfg), [A, W, C], lambda *_: ref, inputs=[a, wt], **TOL)


def test_dense_and_batch_matmul_random_configs():
    x, w = _np((7, 37), 9), _np((13, 37), 10)
    X, Wt = te.placeholder(x.shape, name="X"), te.placeholder(w.shape, name="W")
    D = topi.nn.dense(X, Wt)
    for cfg in _samples(x86dense.dense_workload(7, 13, 37), 11):
        check_build(topi.x86.schedule_dense(D, cfg), [X, Wt, D], lambda *_: x @ w.T, inputs=[x, w], **TOL)
    y = _np((3, 11, 21), 12)
    bx = _np((3, 7, 21), 13)
    BX, BY = te.placeholder(bx.shape, name="BX"), te.placeholder(y.shape, name="BY")
    B = topi.nn.batch_matmul(BX, BY, transpose_b=True)
    ref = T.batch_matmul_python(bx, y, transpose_b=True)
    for cfg in _samples(x86dense.dense_workload(7, 11, 21, template="batch_matmul.x86"), 14):
        check_build(topi.x86.schedule_batch_matmul(B, cfg), [BX, BY, B], lambda *_: ref, inputs=[bx, y], **TOL)


def test_dense_pack_random_configs():
    x, w = _np((5, 19), 15), _np((37, 19), 16)
    for cfg in _samples(x86dense.dense_workload(5, 37, 19, template="dense_pack.x86"), 17):
        X, Wt = te.placeholder(x.shape, name="X"), te.placeholder(w.shape, name="W")
        out = x86dense.dense_pack(X, Wt, cfg=cfg)  # the plain weight packed in a stage with cfg's bn
        check_build(x86dense.schedule_dense_pack(out), [X, Wt, out], lambda *_: x @ w.T, inputs=[x, w], **TOL)


def test_pool_softmax_reduce_injective_random_configs():
    x = _np((2, 5, 21, 19), 18)
    X = te.placeholder(x.shape, name="X")
    P = topi.nn.pool2d(X, 3, 2, 1, (1, 0, 2, 1), "max")
    ref = T.pool2d_python(x, 3, 2, 1, (1, 0, 2, 1), "max")
    for cfg in _samples(pool_workload(_shape(P)), 19):
        check_build(topi.x86.schedule_pool(P, cfg=cfg), [X, P], lambda *_: ref, inputs=[x], **TOL)
    s2 = _np((70, 37), 20)
    S = te.placeholder(s2.shape, name="S")
    SM = topi.nn.softmax(S)
    for cfg in _samples(softmax_workload(70, 37), 21):
        check_build(topi.x86.schedule_softmax(SM, cfg), [S, SM], lambda *_: T.softmax_python(s2), inputs=[s2], **TOL)
    R = topi.sum(X, axis=(0, 2))
    rop = R.op if R.op.reduce_axis else R.op.input_tensors[0].op
    for cfg in _samples(reduce_workload(rop), 22):
        check_build(topi.x86.schedule_reduce(R, cfg), [X, R], lambda *_: x.sum(axis=(0, 2)), inputs=[x], **TOL)
    E = topi.exp(X)
    for cfg in _samples(injective_workload(E), 23):
        check_build(topi.x86.schedule_injective(E, cfg), [X, E], lambda *_: np.exp(x), inputs=[x], **TOL)


# ------------------------------------------------- one test per message ---
KEY = x86conv_rule.conv2d_workload((1, 16, 14, 14), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
KEY28 = x86conv_rule.conv2d_workload((1, 16, 28, 28), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))


def test_check_refuses_a_value_outside_the_space():
    with pytest.raises(ValueError, match=r"conv2d_NCHWc.x86: knob ow_bn=99 is not allowed; allowed: \[1, 2"):
        with_values(default_config(KEY), ow_bn=99)
    with pytest.raises(ValueError, match=r"knob unroll_kw=1 is not allowed; allowed: \[True, False\]"):
        make_config(KEY, {"unroll_kw": 1})


def test_check_refuses_a_config_for_another_workload():
    other = x86conv_rule.conv2d_workload((1, 16, 15, 15), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    cfg = default_config(KEY)
    with pytest.raises(ValueError, match="cannot schedule workload"):
        check_config(cfg, other)
    A, W = te.placeholder((1, 16, 15, 15), name="A"), te.placeholder((32, 16, 3, 3), name="W")
    with pytest.raises(ValueError, match="cannot schedule workload"):
        x86conv.conv2d_nchw_x86(A, W, 1, 1, 1, cfg=cfg)
    with pytest.raises(ValueError, match="cannot schedule workload"):
        topi.x86.schedule_dense(topi.nn.dense(te.placeholder((3, 4)), te.placeholder((5, 4))),
                                default_config(x86dense.dense_workload(3, 5, 5)))


def test_check_refuses_missing_or_unknown_knobs():
    with pytest.raises(ValueError, match=r"do not match the template's knobs .*missing \['unroll_kw'\]"):
        check_config(config_of(KEY, {"ic_bn": 16, "oc_bn": 32, "ow_bn": 7, "flat": False, "ic_chunk": 0}))
    with pytest.raises(KeyError, match="has no knob 'tile'"):
        with_values(default_config(KEY), tile=4)


def test_unknown_template():
    with pytest.raises(ValueError, match=r"unknown schedule template 'conv9d.x86'; registered: \["):
        default_config(("conv9d.x86", 1))


def test_blocks_of_a_prepacked_kernel_must_be_the_configs():
    A = te.placeholder((1, 16, 14, 14), name="A")
    Wp = te.placeholder((4, 2, 3, 3, 8, 8), name="Wp")  # blocked 8 x 8
    cfg = make_config(KEY, {"ic_bn": 16, "oc_bn": 32})
    with pytest.raises(ValueError, match=r"config knob ic_bn=16 but the pre-packed kernel .* is blocked by 8"):
        x86conv.conv2d_nchw_x86(A, Wp, 1, 1, 1, cfg=cfg)
    C = topi.nn.conv2d_NCHWc(te.placeholder((1, 2, 14, 14, 8)), Wp, 1, 1, 1)
    with pytest.raises(ValueError, match=r"config blocks \(ic_bn=16, oc_bn=32\) differ from the conv's"):
        x86conv_schedule.schedule_conv2d_NCHWc(C, cfg)


def test_bn_of_a_packed_dense_weight_must_be_the_configs():
    key = x86dense.dense_workload(3, 40, 8, template="dense_pack.x86")
    X, Wp = te.placeholder((3, 8), name="X"), te.placeholder((3, 8, 16), name="Wp")
    with pytest.raises(ValueError, match=r"config knob bn=32 but the packed weight is blocked by 16"):
        x86dense.dense_pack(X, Wp, units=40, cfg=make_config(key, {"bn": 32}))


def test_group_too_narrow_to_block():
    A, W = te.placeholder((1, 8, 9, 9), name="A"), te.placeholder((12, 2, 3, 3), name="W")
    assert not x86conv_rule.conv2d_blockable(x86conv_rule.conv2d_workload((1, 8, 9, 9), (12, 2, 3, 3), (1, 1), (0,) * 4,
                                                                (1, 1), 4))
    with pytest.raises(ValueError, match="too few to block"):
        x86conv.conv2d_nchw_x86(A, W, 1, 0, 1, groups=4)


def test_config_compares_by_value():
    with Target(AVX512):  # the rule's values for AVX-512 (only configs here: nothing runs)
        cfg = default_config(KEY)
        with pytest.raises(AttributeError):  # values are read; with_values makes a changed copy
            cfg.values = {}
        assert cfg == default_config(KEY) and hash(cfg) == hash(default_config(KEY))
        assert cfg != with_values(cfg, ow_bn=3)
        assert str(cfg).startswith("config<conv2d_NCHWc.x86 flat=False ic_bn=16 ic_chunk=0 oc_bn=")



def test_one_config_type_for_rules_tuners_and_graphs():
    """A rule's config is a point of the template's AutoTVM space: the same type, the same index."""
    from tune import autotvm
    from tune.autotvm.space import ConfigEntity

    with Target(AVX512):
        cfg = with_values(default_config(KEY), ow_bn=3)
        task = autotvm.task.create(KEY[0], KEY[1:], target=AVX512)
    point = task.config_space.get(cfg.index)
    assert isinstance(cfg, ConfigEntity) and isinstance(point, ConfigEntity)
    assert point.values == cfg.values and cfg["ow_bn"].val == 3
    with pytest.raises(TypeError, match=r"cfg\[name\]\.val"):  # an entity is not its value
        bool(cfg["flat"])


# ----------------------------------------------------- workload keys ---
def test_workload_key_is_the_same_in_compute_schedule_and_dispatch():
    A, W = te.placeholder((1, 16, 14, 14), name="A"), te.placeholder((32, 16, 3, 3), name="W")
    C = x86conv.conv2d_nchw_x86(A, W, 1, 1, 1)
    conv = C.op.input_tensors[0].op
    assert conv.attrs["workload"] == KEY and conv.attrs["config"].workload == KEY
    assert x86conv_rule.conv2d_key(topi.nn.conv2d_nchw(A, W, 1, 1, 1).op.attrs["workload"]) == KEY
    seen = []

    def records(workload, target):
        seen.append(workload)
        return {"ow_bn": 2} if workload == KEY else None

    with ApplyChoices(records):
        C2 = x86conv.conv2d_nchw_x86(A, W, 1, 1, 1)
        s = x86conv_schedule.schedule_conv2d_nchw(C2)
    with Target(AVX512):
        assert default_config(KEY)["ow_bn"].val == 14  # the rule: one vector of channels by the row of 14
    assert seen == [KEY] and C2.op.input_tensors[0].op.attrs["config"]["ow_bn"].val == 2
    assert "(x.outer * 2)" in str(schedule.lower(s, [A, W, C2]))  # 14 columns in tiles of 2


def test_choose_configs_stores_one_config_per_node_and_keys_differ():
    import graph
    from graph import GraphBuilder
    from graph.compile import canonical_text, kernel_key
    from graph.fuse import fuse_ops
    from graph.interpreter import interpret
    from graph.passes import optimize
    from graph.passes.choose_configs import choose_configs, node_workload

    b = GraphBuilder()
    x = b.input("x", (1, 16, 14, 14))
    w = b.const(_np((32, 16, 3, 3), 24), "w")
    y = b.op("relu", b.op("conv2d", x, w, padding=(1, 1, 1, 1)))
    p = b.op("pool2d", y, pool_type="max", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    g = b.finish(b.op("dense", b.op("reshape", p, newshape=(1, 32 * 7 * 7)), b.const(_np((10, 1568), 25), "fc")))
    from graph.passes.context import BuildContext

    context = BuildContext.of()  # the host target, whose kernels this test runs
    g2 = choose_configs(g, context)
    assert choose_configs(g2, context) is g2  # idempotent
    configs = {n.op: n.attrs["config"] for n in g2.nodes if "config" in n.attrs}
    assert set(configs) == {"conv2d", "pool2d", "dense"}
    conv = next(n for n in g2.nodes if n.op == "conv2d")
    assert configs["conv2d"].workload == node_workload(conv) == KEY
    assert configs["dense"].template == "dense_pack.x86"  # constant weight: packed once
    rule = default_config(KEY)  # the host's rule (AVX-512: ic_bn=16 ... ow_bn=14; AVX2: ic_bn=8 ... ow_bn=5)
    assert configs["conv2d"] == rule and rule["ow_bn"].val != 2
    assert f"config={rule.text()}" in str(g2)

    def conv_group_key(opt):
        fused = fuse_ops(optimize(g, opt_level=opt, exclude=("fuse_ops",)))
        (node,) = [n for n in fused.nodes if n.op == "fused" and n.attrs["anchor"] in ("conv2d", "conv2d_NCHWc")]
        return kernel_key(node.attrs["body"]), canonical_text(node.attrs["body"])

    key1, text1 = conv_group_key(2)
    other = lambda wl, t: {"ow_bn": 2} if wl[0] == "conv2d_NCHWc.x86" else None
    with ApplyChoices(other):
        key2, text2 = conv_group_key(2)
        lib = graph.build(g)
    assert key1 != key2 and "ow_bn=2" in text2 and f"ow_bn={rule['ow_bn'].val}" in text1
    xv = _np((1, 16, 14, 14), 26)
    m = lib.create_executor()
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0), interpret(g, {"x": xv})[0], **TOL)


# ---------------------------------------------------------- targets ---
def test_defaults_read_the_target():
    with Target(AVX512):
        big = default_config(KEY28)
        pool512 = default_config(pool_workload((1, 8, 9, 9)))
    with Target(AVX2):
        small = default_config(KEY28)
        pool2 = default_config(pool_workload((1, 8, 9, 9)))
        assert config_space(KEY)["ow_bn"] == list(range(1, 9))  # 8 of the 16 ymm
    # AVX-512: one vector of 16 by the row (28 columns: 14, within the 16 accumulators), kernel
    # columns rolled; AVX2: two vectors of 8 lanes
    assert (big["oc_bn"].val, small["oc_bn"].val) == (16, 16)
    assert (big["ow_bn"].val, big["unroll_kw"].val, big["ic_bn"].val) == (14, False, 16)
    # AVX2: the wide tile, 6 columns x 2 vectors = 12 of the 16 ymm, kernel columns rolled
    assert (small["ow_bn"].val, small["unroll_kw"].val, small["ic_bn"].val) == (6, False, 8)
    assert (pool512["vec"].val, pool2["vec"].val) == (16, 8)
    with Target(AVX2):
        assert default_config(x86dense.dense_workload(64, 1000, 2048, template="dense_pack.x86")).values == \
            {"bn": 16, "mr": 6, "ku": 4, "fuse": True}
        assert default_config(softmax_workload(64, 1000))["vec"].val == 16


def test_avx2_rule_gives_an_unpadded_conv_a_dividing_tile_else_the_fullest_two_vector_tile():
    # a 1x1 conv takes a dividing tile of 4 to 6 columns where one exists (ResNet-50's strided 1x1
    # convs at 28), else the two-vector tile of 6, 5 or 4 columns with the fewest tiles, then the
    # fewest empty columns (7 wide: 4 + 3; 13 wide: 5 + 5 + 3; 14 wide: 5 + 5 + 4), where the rule
    # took one vector by 7 or 8 columns (0.70-0.85x the time per layer); a 1x1 conv's plane
    # (strided too) whose rows tile that badly (7 and 13 wide, not 14), or in dividing tiles of 4
    # (56, 28), runs flattened, in tiles of 5; a 3x3 conv keeps the wide tile, and one with no
    # tile within 1/6 of its row keeps one vector by the row unless it is strided (then its plane
    # runs flattened where that fills better, else it takes the 1x1 conv's narrow tile)
    def rule(dshape, kshape, stride=1, pad=0, flat=False):
        key = x86conv_rule.conv2d_workload(dshape, kshape, (stride, stride), (pad,) * 4, (1, 1))
        cfg = default_config(key)
        assert cfg["flat"].val == flat, (dshape, kshape)
        return cfg["oc_bn"].val, cfg["ow_bn"].val

    with Target(AVX2):
        assert rule((1, 256, 56, 56), (64, 256, 1, 1), flat=True) == (16, 5)  # 5s over the plane, not rows of 4s
        assert rule((1, 512, 28, 28), (128, 512, 1, 1), flat=True) == (16, 5)
        assert rule((1, 256, 12, 12), (64, 256, 1, 1)) == (16, 6)  # rows of 6 hold more than 5s
        assert rule((1, 256, 56, 56), (64, 256, 1, 1), stride=2, flat=True) == (16, 5)  # 784 in 5s, not 4s
        assert rule((1, 128, 28, 28), (128, 128, 3, 3), pad=1) == (16, 6)
        assert rule((1, 1024, 14, 14), (256, 1024, 1, 1)) == (16, 5)
        assert rule((1, 2048, 7, 7), (512, 2048, 1, 1), flat=True) == (16, 5)  # 49 in 5s, not rows of 4 + 3
        assert rule((1, 1024, 14, 14), (2048, 1024, 1, 1), stride=2, flat=True) == (16, 5)
        assert rule((1, 512, 28, 28), (1024, 512, 1, 1), stride=2) == (16, 5)  # 5 + 5 + 4: rows stay
        assert rule((1, 512, 13, 13), (64, 512, 1, 1), flat=True) == (16, 5)  # 169 in 5s, not 5 + 5 + 3
        assert rule((1, 512, 7, 7), (512, 512, 3, 3), pad=1) == (8, 7)  # 16 x 4 + 3: 0.96-1.18x slower
        # strided, no wide tile fits its rows: 49 in 5s over a padded copy, not 4 + 3 a row
        assert rule((1, 512, 14, 14), (512, 512, 3, 3), 2, 1, flat=True) == (16, 5)
        assert rule((1, 512, 12, 12), (512, 512, 3, 3), 2, 1) == (16, 6)  # 6 wide: one tile a row
        assert rule((1, 256, 28, 28), (256, 256, 3, 3), 2, 1) == (16, 5)  # a wide tile fits: kept
        assert rule((1, 64, 13, 13), (256, 64, 3, 3), pad=1) == (16, 5)  # a tail gap of 2/15 <= 1/6
        assert rule((1, 1024, 1, 1), (1000, 1024, 1, 1)) == (8, 1)  # a plane of one column


def test_input_block_config_rolls_the_kernel_columns_past_one_vector():
    """A conv whose producer writes wider blocks than its rule reads (AVX2: 16 channels, the rule
    8) takes the producer's block, with the kernel columns rolled; the rest stays the rule's."""
    key = x86conv_rule.conv2d_workload((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    with Target(AVX2):
        rule = default_config(key)
        wide = x86conv_rule.input_block_config(key, 16)
        same = x86conv_rule.input_block_config(key, 8)
    assert rule.values == {"ic_bn": 8, "oc_bn": 8, "ow_bn": 7, "unroll_kw": True, "flat": False, "ic_chunk": 0}
    assert wide.values == {**rule.values, "ic_bn": 16, "unroll_kw": False}
    assert same.values == rule.values
    with Target(AVX512):  # one vector of 16 lanes: the row tile, already rolled
        assert x86conv_rule.input_block_config(key, 16).values == default_config(key).values
    with Target(AVX2), pytest.raises(ValueError, match="ic_bn=24"):
        x86conv_rule.input_block_config(key, 24)  # not a divisor of 512: refused, not repaired


def test_choose_configs_reads_the_producers_block_with_the_rules_other_knobs():
    """AVX2: a 1x1 conv writes 16-channel blocks; the direct 3x3 conv after it reads them as they
    are (ic_bn=16, no layout transform), its kernel columns rolled (input_block_config)."""
    from graph import GraphBuilder
    from graph.passes.choose_configs import choose_configs, node_workload

    from graph.passes.context import BuildContext

    b = GraphBuilder()
    x = b.input("x", (1, 256, 7, 7))
    mid = b.op("relu", b.op("conv2d", x, b.const(_np((512, 256, 1, 1), 27), "w1")))
    g = b.finish(b.op("conv2d", mid, b.const(_np((512, 512, 3, 3), 28), "w2"), padding=(1, 1, 1, 1)))
    with Target(AVX2):
        context = BuildContext.of(options={"winograd": False})  # the 3x3 conv direct
        first, second = [n for n in choose_configs(g, context).nodes if n.op == "conv2d"]
        rule = default_config(node_workload(second))
    assert first.attrs["config"]["oc_bn"].val == 16 and rule["ic_bn"].val == 8 and rule["unroll_kw"].val
    assert second.attrs["config"].values == {**rule.values, "ic_bn": 16, "unroll_kw": False}

def _build_for(s, args, target: str):
    """Build for ``target`` (a codegen that predates targets builds for the host: the
    numbers of an AVX2-scheduled kernel are checked either way)."""
    import inspect

    import codegen

    f = codegen.build(s, args, target=target)
    if inspect.signature(codegen.build).parameters["target"].default is None:  # builds take targets
        assert "zmm" not in f.get_source("asm")  # built for AVX2: no 512-bit register
    return f


@pytest.mark.parametrize("case", [((1, 16, 14, 14), (32, 16, 3, 3), 1, 1), ((1, 3, 23, 23), (24, 3, 7, 7), 2, 3),
                                  ((1, 12, 23, 23), (32, 12, 3, 3), 1, 1)])
def test_avx2_scheduled_conv_uses_8_lanes_and_matches_numpy(case):
    shape, kshape, st, pad = case
    a, wt = _np(shape, 27), _np(kshape, 28)
    with Target(AVX2):
        A, W = te.placeholder(shape, name="A"), te.placeholder(kshape, name="W")
        C = x86conv.conv2d_nchw_x86(A, W, st, pad, 1)
        s = x86conv_schedule.schedule_conv2d_nchw(C)
        f = _build_for(s, [A, W, C], AVX2)
    cfg = C.op.input_tensors[0].op.attrs["config"]
    acc = cfg["ow_bn"].val * cfg["oc_bn"].val // 8
    # of 16 ymm
    assert cfg["oc_bn"].val in (8, 16) and (acc <= 8 or (acc in (10, 12) and not cfg["unroll_kw"].val))
    if acc > 8:  # the wide tile (OW 14 padded to 15; 23 to 24, ic_bn 6): no spilling (unroll_kw: ~600 rsp)
        assert f.get_source("asm").count("rsp") < 100
    check_build(s, [A, W, C], lambda *_: T.conv2d_nchw_python(a, wt, st, pad), inputs=[a, wt], module=f, **TOL)


def test_avx2_scheduled_dense_pack_pool_softmax_match_numpy():
    x, w = _np((9, 33), 29), _np((70, 33), 30)
    with Target(AVX2):
        X, Wt = te.placeholder(x.shape, name="X"), te.placeholder(w.shape, name="W")
        D = x86dense.dense_pack(X, Wt)
        sd = x86dense.schedule_dense_pack(D)
        fd = _build_for(sd, [X, Wt, D], AVX2)
        P_in = te.placeholder((1, 3, 17, 19), name="P")
        P = topi.nn.pool2d(P_in, 3, 2, 1, 1, "avg")
        sp = topi.x86.schedule_pool(P)
        fp = _build_for(sp, [P_in, P], AVX2)
        S = te.placeholder((5, 37), name="S")
        SM = topi.nn.softmax(S)
        ss = topi.x86.schedule_softmax(SM)
        fs = _build_for(ss, [S, SM], AVX2)
    check_build(sd, [X, Wt, D], lambda *_: x @ w.T, inputs=[x, w], module=fd, **TOL)
    p = _np((1, 3, 17, 19), 31)
    check_build(sp, [P_in, P], lambda *_: T.pool2d_python(p, 3, 2, 1, 1, "avg"), inputs=[p], module=fp, **TOL)
    s_np = _np((5, 37), 32)
    check_build(ss, [S, SM], lambda *_: T.softmax_python(s_np), inputs=[s_np], module=fs, **TOL)


# ------------------------------------------------------------ issue 10 ---
def test_divisors_run_in_sqrt_time():
    for n in range(1, 300):
        assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]
    t0 = time.perf_counter()
    assert divisors(2**40) == [2**k for k in range(41)]
    assert largest_divisor(2**40, 16) == 16 and largest_divisor(2**40 + 1, 16) == 1  # 2^40+1 = 257 * ...
    assert divisors(2**40, 100) == [1, 2, 4, 8, 16, 32, 64]
    assert time.perf_counter() - t0 < 30.0  # not a speed target: a linear scan of 2**40 takes hours


@pytest.mark.parametrize("dtype,pool_type", [("uint8", "max"), ("int8", "max"), ("int32", "max"), ("int8", "avg"),
                                             ("int32", "avg"), ("uint8", "avg")])
def test_pooling_over_integer_types(dtype, pool_type):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(33)
    x = rng.integers(info.min, info.max, (1, 2, 9, 8), endpoint=True).astype(dtype)
    if pool_type == "avg":
        x = (x // 16).astype(dtype)  # sums of 9 taps stay in range
    X = te.placeholder(x.shape, dtype, "X")
    P = topi.nn.pool2d(X, 3, 2, 1, (1, 1, 1, 1), pool_type)
    ref = T.pool2d_python(x, 3, 2, 1, (1, 1, 1, 1), pool_type)
    out = check_build(topi.x86.schedule_pool(P), [X, P], lambda *_: ref, inputs=[x], rtol=0, atol=1)[0]
    if pool_type == "max":
        np.testing.assert_array_equal(out, ref)  # the padding never wins: the type's lowest value
