"""x86 schedule configs: every schedule built with its default config and with
non-default knobs (vector widths, block sizes, unroll and parallel switches),
on shapes that divide none of the blocks, compared with the numpy references.

The rule's defaults are checked for AVX-512 and for AVX2 (only chosen, nothing
built), and the kernels are built and run for the host, with knobs in units of
its vector lanes: the tests pass on either kind of host."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import schedule
import te
import topi
import topi.testing as T
from codegen.target import Target
from tune.autotvm.config import with_values
from tune.autotvm.space import ConfigEntity
from topi.config import vector_lanes
from topi.nn.batch_matmul import batch_matmul
from topi.nn.pooling import adaptive_pool, pool1d, pool2d
from topi.x86.batch_matmul import default_batch_matmul_config, schedule_batch_matmul
from topi.x86.conv1d import default_conv1d_config, schedule_conv1d_ncw, schedule_conv1d_nwc
from topi.x86.conv2d_transpose import default_conv2d_transpose_config, schedule_conv2d_transpose_nchw
from topi.x86.depthwise_conv2d import (
    default_depthwise_conv2d_config,
    schedule_depthwise_conv2d_nchw,
    schedule_depthwise_conv2d_nhwc,
)
from topi.x86.pooling import default_pool_config, schedule_adaptive_pool, schedule_pool

TOL = {"rtol": 1e-4, "atol": 1e-4}
AVX2 = "llvm -mcpu=x86-64-v3"
AVX512 = "llvm -mcpu=x86-64-v4"


def _np(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _shape(t) -> tuple:
    return tuple(int(d) for d in t.shape)


def _configs(default: ConfigEntity, *changes: dict) -> list:
    """The default config, then one config per dict of changed knobs."""
    return [default] + [with_values(default, **c) for c in changes]


def _check_all(sched, configs: list, args, ref, inputs) -> None:
    """Build ``sched(cfg)`` for each config, compare with ``ref``, and check that
    each config gives its own loop nest (the schedule reads every knob changed)."""
    texts = set()
    for cfg in configs:
        s = sched(cfg)
        texts.add(str(schedule.lower(s, args)))
        check_build(s, args, lambda *a: ref, inputs=inputs, **TOL)
    assert len(texts) == len(configs), "two configs built the same loop nest"


def _default(make, avx512: dict, avx2: dict) -> ConfigEntity:
    """``make()``, a default config, checked against the rule's values for AVX-512 and
    for AVX2 (chosen under each target, never built), then made for the host, whose
    kernels the test runs: the host's values are one of the two."""
    for spec, want in ((AVX512, avx512), (AVX2, avx2)):
        with Target(spec):
            assert make().values == want, spec
    host = make()
    assert host.values == (avx512 if vector_lanes() == 16 else avx2), str(Target.current())
    return host


def _assert_space(cfg: ConfigEntity) -> None:
    """Every knob has a non-empty list of candidates."""
    assert set(cfg.space_map) == set(cfg.values), cfg.workload
    assert all(cfg.candidates(k) for k in cfg.space_map), cfg.workload


# ---------------------------------------------------------------- pooling ---
def pool_knobs(lanes: int) -> list:
    """Half a vector; four vectors (wider than every stage: all split by a quarter-vector
    ``small_vec``); two vectors, serial.  ``lanes``: the host's float32 lanes."""
    return [{"vec": lanes // 2}, {"vec": 4 * lanes, "small_vec": lanes // 4},
            {"vec": 2 * lanes, "parallel": False}]


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_pool2d_configs(pool_type, layout):
    shape = (2, 5, 21, 19) if layout == "NCHW" else (2, 13, 11, 21)
    kw = {"kernel": 3, "stride": 2, "dilation": 1, "padding": (1, 0, 2, 1),
          "pool_type": pool_type, "layout": layout}
    X = te.placeholder(shape, name="X")
    out = pool2d(X, **kw)
    x = _np(shape, 1)
    ref = T.pool2d_python(x, **kw)
    default = _default(lambda: default_pool_config(_shape(out)),
                       {"vec": 16, "small_vec": 8, "parallel": True},
                       {"vec": 8, "small_vec": 4, "parallel": True})
    _assert_space(default)
    configs = _configs(default, *pool_knobs(vector_lanes()))
    _check_all(lambda c: schedule_pool(out, layout, cfg=c), configs, [X, out], ref, [x])


def test_pool1d_and_adaptive_configs():
    X = te.placeholder((2, 3, 37), name="X")
    out = pool1d(X, 3, 2, 1, 1, "avg")
    x = _np((2, 3, 37), 2)
    ref = T.pool1d_python(x, 3, 2, 1, 1, "avg")
    configs = _configs(default_pool_config(_shape(out)), *pool_knobs(vector_lanes()))
    _check_all(lambda c: schedule_pool(out, cfg=c), configs, [X, out], ref, [x])
    X = te.placeholder((1, 3, 23, 29), name="X")
    out = adaptive_pool(X, (5, 7), "max")
    x = _np((1, 3, 23, 29), 3)
    ref = T.adaptive_pool_python(x, (5, 7), "max")
    configs = _configs(default_pool_config(_shape(out)), *pool_knobs(vector_lanes()))
    _check_all(lambda c: schedule_adaptive_pool(out, cfg=c), configs, [X, out], ref, [x])


# ----------------------------------------------------------- depthwise ---
@pytest.mark.parametrize("relu", [False, True])
def test_depthwise_nchw_configs(relu):
    A, W = te.placeholder((1, 3, 13, 23), name="A"), te.placeholder((3, 2, 3, 3), name="W")
    C = topi.nn.depthwise_conv2d_nchw(A, W, 1, (1, 0, 2, 1), 1)
    out = C
    if relu:
        out = te.compute(C.shape, lambda *i: te.max(C(*i), te.const(0.0)), name="relu", tag="elemwise")
    a, wt = _np((1, 3, 13, 23), 4), _np((3, 2, 3, 3), 5)
    ref = T.depthwise_conv2d_python_nchw(a, wt, 1, (1, 0, 2, 1))
    ref = np.maximum(ref, 0) if relu else ref
    default = _default(lambda: default_depthwise_conv2d_config(_shape(out), "NCHW"),
                       {"vec": 16, "unroll_taps": True, "rows": 1}, {"vec": 8, "unroll_taps": True, "rows": 1})
    _assert_space(default)
    lanes = vector_lanes()
    configs = _configs(default, {"vec": lanes // 2}, {"vec": 5, "unroll_taps": False}, {"vec": 2 * lanes},
                       {"rows": 7}, {"rows": 2, "vec": 5})
    _check_all(lambda c: schedule_depthwise_conv2d_nchw(out, cfg=c), configs, [A, W, out], ref, [a, wt])


def test_depthwise_nchw_row_tile_for_large_kernels():
    """The NCHW rule tiles output rows (the largest divisor of OH up to the accumulators, half
    of them when rows end in a partial vector) for 5x5 and larger kernels, one row for 3x3 or a
    workload without its kernel."""
    shape = (1, 8, 14, 14)
    with Target(AVX2):
        assert default_depthwise_conv2d_config(shape, "NCHW", kernel=(7, 7))["rows"].val == 2  # 14 = 8 + 6
        assert default_depthwise_conv2d_config((1, 8, 7, 7), "NCHW", kernel=(7, 7))["rows"].val == 7
        assert default_depthwise_conv2d_config((1, 8, 56, 56), "NCHW", kernel=(5, 5))["rows"].val == 8
        assert default_depthwise_conv2d_config(shape, "NCHW", kernel=(3, 3))["rows"].val == 1
        assert default_depthwise_conv2d_config(shape, "NCHW")["rows"].val == 1


def test_depthwise_nhwc_configs():
    A, W = te.placeholder((1, 9, 11, 21), name="A"), te.placeholder((3, 3, 21, 1), name="W")
    C = topi.nn.depthwise_conv2d_nhwc(A, W, 2, "SAME", 1)
    a, wt = _np((1, 9, 11, 21), 6), _np((3, 3, 21, 1), 7)
    ref = T.depthwise_conv2d_python_nhwc(a, wt, 2, "SAME")
    default = _default(lambda: default_depthwise_conv2d_config(_shape(C), "NHWC"),
                       {"vec": 16, "unroll_taps": True, "pad_vec_max": 64},
                       {"vec": 8, "unroll_taps": True, "pad_vec_max": 64})
    _assert_space(default)
    lanes = vector_lanes()
    configs = _configs(default, {"vec": lanes // 2, "pad_vec_max": 0},
                       {"vec": lanes // 4, "unroll_taps": False})
    _check_all(lambda c: schedule_depthwise_conv2d_nhwc(C, cfg=c), configs, [A, W, C], ref, [a, wt])


def test_depthwise_config_rule_and_layout_error():
    with Target(AVX512):
        assert default_depthwise_conv2d_config((1, 4, 8, 8))["vec"].val == 8  # a multiple of 8 below 16
        assert default_depthwise_conv2d_config((1, 4, 9, 9))["vec"].val == 16
    with Target(AVX2):
        assert default_depthwise_conv2d_config((1, 4, 4, 4))["vec"].val == 4  # a multiple of 4 below 8
        assert default_depthwise_conv2d_config((1, 4, 5, 5))["vec"].val == 8
        assert default_depthwise_conv2d_config((1, 4, 8, 8))["vec"].val == 8
    with pytest.raises(ValueError, match="layout 'NCW' is not one of"):
        default_depthwise_conv2d_config((1, 4, 8, 8), "NCW")


# ------------------------------------------------- conv1d and transpose ---
@pytest.mark.parametrize("layout", ["NCW", "NWC"])
def test_conv1d_configs(layout):
    a, wt = _np((2, 5, 37), 8), _np((19, 5, 3), 9)
    ref = T.conv1d_ncw_python(a, wt, 1, 1, 1)
    if layout == "NWC":
        a, wt, ref = a.transpose(0, 2, 1).copy(), wt.transpose(2, 1, 0).copy(), ref.transpose(0, 2, 1)
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(wt.shape, name="W")
    C = topi.nn.conv1d(A, W, 1, 1, 1, layout=layout)
    sched = schedule_conv1d_ncw if layout == "NCW" else schedule_conv1d_nwc
    # one vector along OW (NCW; 37 has no divisor near one) or the channels (NWC; 19 neither)
    if layout == "NCW":
        want = {"fb": 1, "xb": 16, "unroll": True}, {"fb": 1, "xb": 8, "unroll": True}
    else:
        want = {"fb": 16, "xb": 1, "unroll": True}, {"fb": 8, "xb": 1, "unroll": True}
    default = _default(lambda: default_conv1d_config(_shape(C), layout), *want)
    _assert_space(default)
    knobs = [{"fb": 4, "xb": 8}, {"fb": 3, "xb": 5, "unroll": False}, {"fb": 8, "xb": 32}]
    _check_all(lambda c: sched(C, cfg=c), _configs(default, *knobs), [A, W, C], ref, [a, wt])


def test_conv2d_transpose_configs():
    A, W = te.placeholder((1, 4, 5, 8), name="A"), te.placeholder((4, 6, 3, 4), name="W")
    C = topi.nn.conv2d_transpose_nchw(A, W, 2, 1, "float32", (1, 1))  # [1, 6, 10, 17]
    a, wt = _np((1, 4, 5, 8), 10), _np((4, 6, 3, 4), 11)
    ref = T.conv2d_transpose_nchw_python(a, wt, 2, 1, (1, 1))
    default = _default(lambda: default_conv2d_transpose_config(_shape(C)),
                       {"fb": 6, "xb": 16, "unroll": True}, {"fb": 6, "xb": 8, "unroll": True})
    _assert_space(default)
    configs = _configs(default, {"fb": 4, "xb": 8}, {"fb": 5, "xb": 3, "unroll": False})
    _check_all(lambda c: schedule_conv2d_transpose_nchw(C, cfg=c), configs, [A, W, C], ref, [a, wt])


# --------------------------------------------------------- batch_matmul ---
@pytest.mark.parametrize("tb", [True, False])
def test_batch_matmul_configs(tb):
    X = te.placeholder((3, 7, 21), name="X")
    Y = te.placeholder((3, 11, 21) if tb else (3, 21, 11), name="Y")
    out = batch_matmul(X, Y, transpose_b=tb)
    x, y = _np(_shape(X), 12), _np(_shape(Y), 13)
    ref = T.batch_matmul_python(x, y, transpose_b=tb)
    default = default_batch_matmul_config(3, 7, 11, 21)
    assert default.workload == ("batch_matmul.x86", 7, 11, 21, "float32")
    assert default.values == {"vk": 8, "mr": 4, "nr": 3, "nb": 48}
    _assert_space(default)
    configs = _configs(default, {"vk": 16, "mr": 3, "nr": 2, "nb": 6}, {"vk": 8, "mr": 2, "nr": 4, "nb": 8})
    _check_all(lambda c: schedule_batch_matmul(out, cfg=c), configs, [X, Y, out], ref, [x, y])
