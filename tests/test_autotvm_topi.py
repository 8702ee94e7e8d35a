"""topi's x86 operators as AutoTVM templates: spaces sampled against numpy, rule default as fallback."""

import numpy as np
import pytest

import codegen
import schedule
import topi.testing
import topi.x86.templates  # noqa: F401  (registers the templates)
from tune.autotvm.config import default_config, with_values
from topi.x86.conv2d_rule import conv2d_workload
from topi.x86.dense import PACK_TEMPLATE, dense_workload
from tune import autotvm
from tune.network import space_point
from tune import record

CONVS = [  # shapes that do not divide the blocks: OW 10 / 7 / 9, IC 12 / 20, OC 24, stride 2, a 1x1 conv
    ((1, 16, 10, 10), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1)),
    ((1, 12, 13, 13), (24, 12, 3, 3), (2, 2), (1, 1, 1, 1)),
    ((1, 20, 7, 9), (24, 20, 1, 1), (1, 1), (0, 0, 0, 0)),
]


def _conv_task(dshape, kshape, strides, pads):
    wl = conv2d_workload(dshape, kshape, strides, pads, (1, 1))
    return wl, autotvm.task.create(wl[0], wl[1:], target="llvm")


def _check_conv(f, dshape, kshape, strides, pads, layouts=None):
    """``f`` against numpy; ``layouts``: the template's declared ones (blocked data, kernel, output)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, dshape).astype("float32")
    k = rng.uniform(-1, 1, kshape).astype("float32")
    ref = topi.testing.conv2d_nchw_python(a, k, strides, pads[:2])
    if layouts is None:
        out = np.empty(ref.shape, "float32")
        f(a, k, out)
    else:
        (dl, _), (kl, _), (ol, oshape) = layouts
        assert tuple(oshape) == ref.shape
        blocked = np.full(autotvm.layout.blocked_shape(ol, oshape), np.nan, "float32")
        f(autotvm.layout.to_blocked(a, dl), autotvm.layout.to_blocked(k, kl), blocked)
        out = autotvm.layout.to_logical(blocked, ol, oshape)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", CONVS)
def test_conv2d_template_space_sampled(shape):
    wl, task = _conv_task(*shape)
    assert set(task.config_space.space_map) == set(default_config(wl).values)
    default = task.default_config()
    assert {k: e.val for k, e in default._entity_map.items()} == default_config(wl).values
    rng = np.random.default_rng(1)
    for index in [default.index] + [int(i) for i in rng.integers(len(task.config_space), size=3)]:
        cfg = task.config_space.get(index)
        try:
            s, args, layouts = task.instantiate_with_layouts(cfg)
        except autotvm.TuneError:
            continue  # a combination the template refuses
        assert layouts[0][0] == f"NCHW{cfg['ic_bn'].val}c" and layouts[2][0] == f"NCHW{cfg['oc_bn'].val}c"
        _check_conv(codegen.build(s, args), *shape, layouts)


@pytest.mark.parametrize("ow_bn", [1, 4, 5, 8])
def test_conv2d_flat_plane_matches_numpy(ow_bn):
    """``flat``: a 1x1 conv over its 7x9 plane as one row of 63 columns, tiles of ``ow_bn`` (a
    tail tile where they do not divide), against numpy; the accumulator holds one tile."""
    shape = ((1, 20, 7, 9), (24, 20, 1, 1), (1, 1), (0, 0, 0, 0))
    wl, task = _conv_task(*shape)
    assert [e.val for e in task.config_space.space_map["flat"].entities] == [False, True]
    cfg = space_point(task, {**default_config(wl).values, "ic_bn": 4, "oc_bn": 8, "ow_bn": ow_bn, "flat": True})
    s, args, layouts = task.instantiate_with_layouts(cfg)
    assert f"allocate conv2d_NCHWc[float32 * {8 * ow_bn}]" in str(schedule.lower(s, args))
    _check_conv(codegen.build(s, args), *shape, layouts)


def test_conv2d_flat_plane_nchw_with_an_epilogue_matches_numpy():
    """The NCHW path: the flattened conv's output unpacked to NCHW and a relu fused in its loop."""
    import te
    import topi
    from codegen.target import Target
    from topi.x86 import conv2d as x86conv
    from topi.x86 import conv2d_schedule as x86conv_schedule

    shape = ((1, 20, 7, 9), (24, 20, 1, 1), (1, 1), (0, 0, 0, 0))
    wl, _ = _conv_task(*shape)
    cfg = with_values(default_config(wl), ic_bn=4, oc_bn=8, ow_bn=5, flat=True)
    A, W = te.placeholder(shape[0], name="A"), te.placeholder(shape[1], name="W")
    with Target("llvm"):
        out = topi.nn.relu(x86conv.conv2d_nchw_x86(A, W, 1, 0, 1, cfg=cfg))
        f = codegen.build(x86conv_schedule.schedule_conv2d_nchw(out), [A, W, out])
    rng = np.random.default_rng(0)
    a, k = rng.uniform(-1, 1, shape[0]).astype("float32"), rng.uniform(-1, 1, shape[1]).astype("float32")
    got = np.empty((1, 24, 7, 9), "float32")
    f(a, k, got)
    np.testing.assert_allclose(got, np.maximum(topi.testing.conv2d_nchw_python(a, k, (1, 1), (0, 0)), 0),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", CONVS[:2])
@pytest.mark.parametrize("ow_bn", [3, 5, 6])
def test_conv2d_flat_plane_of_a_padded_conv_matches_numpy(shape, ow_bn):
    """``flat`` on padded 3x3 convs (stride 1 at 10 wide, stride 2 at 13 -> 7 wide): the column
    tiles cross rows, so the conv reads a padded copy of its blocked input (not the inlined
    padding, whose taps the lowering would skip by row); against numpy, the NaN-filled output
    fully written."""
    wl, task = _conv_task(*shape)
    assert [e.val for e in task.config_space.space_map["flat"].entities] == [False, True]
    cfg = space_point(task, {**default_config(wl).values, "ic_bn": 4, "oc_bn": 8, "ow_bn": ow_bn, "flat": True})
    s, args, layouts = task.instantiate_with_layouts(cfg)
    lowered = str(schedule.lower(s, args))
    assert "produce data_pad" in lowered and f"allocate conv2d_NCHWc[float32 * {8 * ow_bn}]" in lowered
    _check_conv(codegen.build(s, args), *shape, layouts)


def test_conv2d_flat_plane_of_a_strided_nchw_conv_matches_numpy():
    """The NCHW path of a strided padded conv flattened: packing pads the input already."""
    import te
    from codegen.target import Target
    from topi.x86 import conv2d as x86conv
    from topi.x86 import conv2d_schedule as x86conv_schedule

    shape = CONVS[1]
    wl, _ = _conv_task(*shape)
    cfg = with_values(default_config(wl), ic_bn=4, oc_bn=8, ow_bn=5, flat=True)
    A, W = te.placeholder(shape[0], name="A"), te.placeholder(shape[1], name="W")
    with Target("llvm"):
        out = x86conv.conv2d_nchw_x86(A, W, 2, 1, 1, cfg=cfg)
        f = codegen.build(x86conv_schedule.schedule_conv2d_nchw(out), [A, W, out])
    _check_conv(f, *shape)


def test_conv2d_flat_only_for_ungrouped_convs():
    wl = conv2d_workload((1, 32, 10, 10), (32, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), groups=2)
    task = autotvm.task.create(wl[0], wl[1:], target="llvm")
    assert [e.val for e in task.config_space.space_map["flat"].entities] == [False]
    with pytest.raises(ValueError, match="flat=True is not allowed|knob flat=True"):
        with_values(default_config(wl), flat=True)


def test_dense_pack_template_space_sampled():
    M, N, K = 5, 40, 24
    task = autotvm.task.create(PACK_TEMPLATE, (M, N, K, "float32"), target="llvm")
    assert (
        task.default_config()["bn"].val
        == default_config(dense_workload(M, N, K, "float32", PACK_TEMPLATE))["bn"].val
    )
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, (M, K)).astype("float32")
    w = rng.uniform(-1, 1, (N, K)).astype("float32")
    for index in [task.default_config().index] + [
        int(i) for i in rng.integers(len(task.config_space), size=3)
    ]:
        s, args = task.instantiate(task.config_space.get(index))
        f = codegen.build(s, args)
        out = np.empty((M, N), "float32")
        f(x, w, out)
        np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("M,N,K", [(1, 37, 50), (6, 20, 33)])
def test_dense_template_space_sampled(M, N, K):
    task = autotvm.task.create("dense.x86", (M, N, K, "float32"), target="llvm")
    wl = dense_workload(M, N, K, "float32")
    assert {k: e.val for k, e in task.default_config()._entity_map.items()} == default_config(wl).values
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (M, K)).astype("float32")
    w = rng.uniform(-1, 1, (N, K)).astype("float32")
    for index in [task.default_config().index] + [
        int(i) for i in rng.integers(len(task.config_space), size=3)
    ]:
        s, args = task.instantiate(task.config_space.get(index))
        out = np.empty((M, N), "float32")
        codegen.build(s, args)(x, w, out)
        np.testing.assert_allclose(out, x @ w.T, rtol=1e-4, atol=1e-4)


def test_softmax_template_space_sampled():
    rows, cols = 7, 45
    task = autotvm.task.create("softmax.x86", (rows, cols, "float32"), target="llvm")
    x = np.random.default_rng(4).uniform(-3, 3, (rows, cols)).astype("float32")
    ref = np.exp(x - x.max(-1, keepdims=True))
    ref /= ref.sum(-1, keepdims=True)
    for index in range(0, len(task.config_space), 3):
        s, args = task.instantiate(task.config_space.get(index))
        out = np.empty_like(x)
        codegen.build(s, args)(x, out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


def test_conv2d_tuned_then_applied(tmp_path):
    shape = CONVS[0]
    wl, task = _conv_task(*shape)
    log = str(tmp_path / "conv.log")
    builder, runner = autotvm.LocalBuilder(n_parallel=2), autotvm.LocalRunner(number=2, repeat=2)
    try:
        tuner = autotvm.tuner.XGBTuner(task, plan_size=4, seed=0)
        tuner.tune(6, autotvm.measure_option(builder, runner), callbacks=[autotvm.callback.log_to_file(log)])
    finally:
        builder.close()
        runner.close()
    recs = list(record.load_from_file(log))
    assert len(recs) == 6 and all(r[1].error_no == 0 for r in recs)
    assert recs[0][0].config.index == task.default_config().index
    best = min(recs, key=lambda r: np.mean(r[1].costs))[0].config
    with autotvm.apply_history_best(log):
        assert autotvm.lookup_values(wl) == {k: e.val for k, e in best._entity_map.items()}
        with autotvm.layout.collecting() as declared:
            s, args = autotvm.task.lookup(wl[0]).func(*wl[1:])
        layouts = declared.of(args)
    conv = next(st.op for st in s.stages if st.op.name.startswith("conv2d_NCHWc"))
    assert conv.attrs["config"].values == {k: e.val for k, e in best._entity_map.items()}
    _check_conv(codegen.build(s, args), *shape, layouts)
