"""Winograd conv2d (topi.nn.winograd, topi.x86.conv2d_winograd) against numpy's direct convolution."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import check_build

import te
import topi.testing as T
from codegen.target import create
from tune.autotvm.config import make_config, sample_config, with_values
from topi.config import vector_lanes
from topi.nn.winograd import (
    winograd_kernel_shape,
    winograd_kernel_transform,
    winograd_kernel_transform_numpy,
    winograd_matrices,
)
from topi.testing.winograd_python import conv2d_winograd_nchw_python
from topi.x86.conv2d_winograd import (
    TEMPLATE,
    conv2d_winograd_x86,
    default_winograd_config,
    schedule_conv2d_winograd,
    winograd_workload,
)

RTOL = 1e-3
HOST = create("llvm")
V = vector_lanes()  # the host's: 16 with AVX-512, 8 with AVX2 (knob values below are in its units)


def _rand(shape, seed):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype("float32")


def _pads(p):
    return (p, p, p, p) if isinstance(p, int) else tuple(p)


def _ref(a, w, pads):
    top, left, bottom, right = pads
    padded = np.pad(a, ((0, 0), (0, 0), (top, bottom), (left, right)))
    return T.conv2d_nchw_python(padded, w, 1, 0)


def _check(out, ref):
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=RTOL * float(np.abs(ref).max()))


def _run_pretransformed(n, c, k, h, w, pads, values=None, epilogue=None):
    """Build with a pre-transformed kernel (as a graph folds it); check against numpy with guards."""
    dshape, kshape = (n, c, h, w), (k, c, 3, 3)
    key = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1))
    cfg = default_winograd_config(key) if values is None else make_config(key, values)
    a, wt = _rand(dshape, 1), _rand(kshape, 2)
    v = cfg.values
    u = winograd_kernel_transform_numpy(wt, v["tile"], v["bn"], -(-c // v["cb"]) * v["cb"])
    assert u.shape == winograd_kernel_shape(kshape, v["tile"], v["bn"], v["cb"])
    A = te.placeholder(dshape, name="data")
    U = te.placeholder(u.shape, name="U")
    out = conv2d_winograd_x86(A, U, pads, cfg=cfg, kshape=kshape)
    if epilogue is not None:
        out = epilogue(out)
    s = schedule_conv2d_winograd([out], cfg)
    ref = _ref(a, wt, pads)
    fn = (lambda x, y: np.maximum(ref, 0)) if epilogue is not None else (lambda x, y: ref)
    (got,) = check_build(s, [A, U, out], fn, inputs=[a, u], rtol=RTOL, atol=RTOL * float(np.abs(ref).max()))
    return got, cfg


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("c, k, h, w, pads", [(3, 5, 13, 13, 1), (8, 16, 7, 9, (0, 2, 1, 0))])
def test_numpy_reference_matches_direct(tile, c, k, h, w, pads):
    a, wt = _rand((2, c, h, w), 3), _rand((k, c, 3, 3), 4)
    _check(conv2d_winograd_nchw_python(a, wt, _pads(pads), tile), _ref(a, wt, _pads(pads)))


@pytest.mark.parametrize("tile", [2, 4])
def test_transform_matrices_compute_a_1d_correlation(tile):
    at, bt, g = (np.array(m, dtype=np.float64) for m in winograd_matrices(tile))
    d, f = np.arange(tile + 2, dtype=np.float64) ** 2 - 3, np.array([0.5, -1.0, 2.0])
    want = np.array([d[i:i + 3] @ f for i in range(tile)])
    np.testing.assert_allclose(at @ ((g @ f) * (bt @ d)), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("c, h", [(64, 56), (128, 28), (256, 14), (512, 7)])
def test_resnet_layers(c, h):
    _run_pretransformed(1, c, c, h, h, (1, 1, 1, 1))


@pytest.mark.parametrize("n, c, k, h, w, pads, values", [
    (1, 3, 5, 13, 13, (1, 1, 1, 1), {"tile": 4}),  # RGB-like: C padded to one block; 13 = 3 tiles + 1
    (1, 17, 40, 7, 7, (1, 1, 1, 1), {"tile": 4, "bn": 16}),  # 7x7 in 4x4 tiles; K=40 not a multiple of 16
    (2, 20, 24, 11, 9, (0, 1, 2, 0), {"tile": 2, "cb": 8, "mr": 3}),  # batch 2, asymmetric padding, P % mr != 0
    (1, 33, 17, 6, 10, (0, 0, 0, 0), {"tile": 4, "cb": 2 * V, "bn": 2 * V, "mr": 5, "ku": 4}),  # VALID, Cp % ku
])
def test_shapes_not_multiple_of_tiles_and_blocks(n, c, k, h, w, pads, values):
    key = winograd_workload((n, c, h, w), (k, c, 3, 3), (1, 1), pads, (1, 1))
    _run_pretransformed(n, c, k, h, w, pads, {**default_winograd_config(key).values, **values})


@pytest.mark.parametrize("n, c, k, h, w, pads, values", [
    (1, 16, 16, 28, 28, (1, 1, 1, 1), {"rows": 4}),  # 7 tile rows in blocks of 4: the last block pads
    (2, 20, 24, 11, 9, (0, 1, 2, 0), {"tile": 2, "cb": 8, "mr": 3, "rows": 2}),  # batch 2: blocks stay in an image
    (1, 33, 17, 13, 10, (1, 1, 1, 1), {"tile": 4, "bn": 16, "mr": 5, "rows": 1}),  # a block's 3 tiles % mr
    (1, 8, 8, 6, 6, (1, 1, 1, 1), {"rows": 7}),  # one block taller than the image
    # the block's 5 channel blocks (the last partial) in parts: 8 asked, 5 taken (a divisor)
    (1, 17, 4 * V + 4, 7, 7, (1, 1, 1, 1), {"tile": 4, "bn": V, "rows": 2, "oc_parts": 8}),
    # products and output transform one channel block at a time, in 2 parts of a 3-row block
    (1, 13, 4 * V, 11, 9, (1, 0, 1, 1), {"tile": 4, "bn": V, "mr": 5, "rows": 2, "oc_parts": 2, "kc_outer": True}),
    (2, 20, 3 * V, 10, 10, (1, 1, 1, 1), {"tile": 2, "bn": V, "rows": 4, "kc_outer": True}),  # batch 2, 5 tile rows
])
def test_fused_blocks_of_tile_rows(n, c, k, h, w, pads, values):
    key = winograd_workload((n, c, h, w), (k, c, 3, 3), (1, 1), pads, (1, 1))
    _, cfg = _run_pretransformed(n, c, k, h, w, pads, {**default_winograd_config(key).values, **values})
    assert cfg["rows"].val == values["rows"]


def test_fused_schedule_runs_every_stage_in_one_parallel_loop_over_blocks(monkeypatch):
    """rows=4 on a 28x28 output: 2 blocks of 4 tile rows; each holds its own padded input
    (4*4 + 2 rows), transformed tiles and products, so no thread reads what another wrote.
    (rows=0, the stages apart, is legal only on a host with more threads than tile rows.)"""
    import schedule
    import topi.x86.conv2d_winograd as W

    monkeypatch.setattr(W, "_threads", lambda: 8)

    dshape, kshape, pads = (1, 16, 28, 28), (16, 16, 3, 3), (1, 1, 1, 1)
    key = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1))
    text = {}
    for rows in (0, 4):
        cfg = make_config(key, {**default_winograd_config(key).values, "rows": rows})
        A = te.placeholder(dshape, name="data")
        v = cfg.values
        U = te.placeholder(winograd_kernel_shape(kshape, v["tile"], v["bn"], v["cb"]), name="U")
        out = conv2d_winograd_x86(A, U, pads, cfg=cfg, kshape=kshape)
        text[rows] = str(schedule.lower(schedule_conv2d_winograd([out], cfg), [A, U, out]))
    assert text[0].count("parallel (") == 4  # padded input, V, M, output: each split its own way
    assert text[4].count("parallel (") == 1 and "parallel (b.yy.outer.fused, 0, 2)" in text[4]
    assert "for (y, 0, 18)" in text[4]  # the block's input rows only


def test_rule_fuses_unless_the_transformed_kernel_is_too_large():
    from topi.x86.conv2d_winograd import FUSE_MAX_KERNEL_BYTES, fused_rows

    assert [fused_rows(nh, 1 << 20, threads=2) for nh in (14, 7, 4, 2, 28, 18, 9, 3, 1)] == [7, 4, 2, 1, 2, 2, 2, 2, 0]
    assert fused_rows(14, FUSE_MAX_KERNEL_BYTES + 1, threads=2) == 0
    assert fused_rows(14, 1 << 20, threads=4) == 4
    for c, h in ((64, 56), (128, 28), (256, 14), (512, 7)):  # 512 @7: 38 MB of transformed kernel
        cfg = default_winograd_config(winograd_workload((1, c, h, h), (c, c, 3, 3), (1, 1), (1,) * 4, (1, 1)))
        assert (cfg["rows"].val == 0) == (c == 512)


def test_rule_parts_the_channels_of_small_images_and_orders_large_blocks_by_channel_block():
    """A 7x7 output in F(4x4) (4 tiles) against 320 channels: one block of the image, its channel
    blocks in 2 parts (2 threads); 13x13 (16 tiles) against 256 channels: blocks of tile rows.
    A 56x56 block of 7 tile rows holds 2.8 MB of products over 192 channels: kc_outer."""
    import topi.x86.conv2d_winograd as W
    from topi.x86.conv2d_winograd import M_BLOCK_BYTES, channel_parts, m_block_bytes

    assert channel_parts(1, 2, 2, 320, 20, threads=2) == (2, 2)
    assert channel_parts(1, 2, 2, 320, 20, threads=1) == (1, 1)
    assert channel_parts(1, 2, 2, 320, 20, threads=4) == (2, 4)
    assert channel_parts(1, 2, 2, 320, 5, threads=2) == (1, 1)  # no part count divides 5 blocks
    assert channel_parts(2, 4, 4, 256, 16, threads=2) == (2, 1)  # 16 tiles: the tiles are many
    assert channel_parts(0, 1, 2, 320, 20, threads=2) == (0, 1)  # apart stays apart

    def rule(c, k, h):
        return default_winograd_config(winograd_workload((1, c, h, h), (k, c, 3, 3), (1, 1), (1,) * 4, (1, 1)))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(W, "_threads", lambda: 2)
        small, many, big = rule(160, 320, 7), rule(64, 256, 13), rule(64, 192, 56)
    assert (small["tile"].val, small["rows"].val, small["oc_parts"].val) == (4, 2, 2)
    assert (many["rows"].val, many["oc_parts"].val, many["kc_outer"].val) == (2, 1, False)
    assert m_block_bytes(big.workload, big.values) > M_BLOCK_BYTES and big["kc_outer"].val
    assert m_block_bytes(small.workload, small.values) < M_BLOCK_BYTES and not small["kc_outer"].val


def test_fusing_over_a_large_transformed_kernel_is_refused():
    from tune.autotvm.config import config_space

    big = winograd_workload((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1,) * 4, (1, 1))
    assert config_space(big)["rows"] == [0]  # even F(2x2)'s kernel is 16 MiB
    mid = winograd_workload((1, 384, 14, 14), (384, 384, 3, 3), (1, 1), (1,) * 4, (1, 1))
    assert make_config(mid, {"tile": 2, "rows": 2})["rows"].val == 2  # 9 MiB
    with pytest.raises(ValueError, match=r"rows=2 fuses a block over a 20\.2 MiB transformed kernel"):
        make_config(mid, {"tile": 4, "bn": 4 * V, "cb": V, "rows": 2})


def test_random_configs_of_the_space():
    rng = np.random.default_rng(7)
    dshape, kshape, pads = (1, 12, 10, 10), (24, 12, 3, 3), (1, 1, 1, 1)
    key = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1))
    for _ in range(3):
        cfg = sample_config(key, rng)
        _run_pretransformed(1, 12, 24, 10, 10, pads, cfg.values)


def test_kernel_transform_stage_and_fused_relu():
    """An OIHW kernel transformed in a stage (not pre-folded), with relu fused in the output loop."""
    dshape, kshape, pads = (1, 10, 9, 9), (12, 10, 3, 3), (1, 1, 1, 1)
    A = te.placeholder(dshape, name="data")
    Wt = te.placeholder(kshape, name="kernel")
    conv = conv2d_winograd_x86(A, Wt, 1)
    out = te.compute(conv.shape, lambda *i: te.max(conv(*i), te.const(0.0, "float32")), name="relu",
                     tag="elemwise")
    s = schedule_conv2d_winograd([out])
    a, wt = _rand(dshape, 5), _rand(kshape, 6)
    ref = np.maximum(_ref(a, wt, pads), 0)
    check_build(s, [A, Wt, out], lambda x, y: ref, inputs=[a, wt], rtol=RTOL, atol=RTOL)


def test_kernel_transform_te_matches_numpy():
    kshape = (20, 7, 3, 3)
    Wt = te.placeholder(kshape, name="kernel")
    U = winograd_kernel_transform(Wt, 4, 16, 16)
    s = te.create_schedule(U.op)
    wt = _rand(kshape, 8)
    want = winograd_kernel_transform_numpy(wt, 4, 16, 16)
    check_build(s, [Wt, U], lambda x: want, inputs=[wt], rtol=1e-5, atol=1e-5)


def test_rule_default_is_legal_and_picks_tile_by_size():
    for h, tile in ((56, 4), (14, 4), (7, 4), (6, 2), (3, 2)):
        cfg = default_winograd_config(winograd_workload((1, 64, h, h), (64, 64, 3, 3), (1, 1), (1,) * 4, (1, 1)))
        assert cfg.template == TEMPLATE and cfg["tile"].val == tile


def test_rule_takes_the_smaller_tile_where_the_transformed_kernel_streams_from_memory():
    from codegen.target import Target
    from topi.x86.conv2d_winograd import FUSE_MAX_KERNEL_BYTES, STREAM_KERNEL_BYTES, kernel_bytes

    for target in ("llvm -mcpu=znver4", "llvm -mcpu=x86-64-v3"):  # AVX-512's rule and AVX2's
        with Target(target):
            for n, c, h, tile in (
                (1, 512, 7, 2),  # F(4x4) 37.7 MB: streams even alone
                (1, 256, 14, 2),  # 9.4 MB over 16 tiles: streams in a model run
                (2, 256, 14, 4),  # the same kernel over a batch of two: 32 tiles
                (1, 256, 28, 4),  # and over 49 tiles
                (1, 128, 14, 4),  # 2.4 MB over 16 tiles: a call is short either way
                (1, 384, 28, 4),  # 21.2 MB over 49 tiles
            ):
                key = winograd_workload((n, c, h, h), (c, c, 3, 3), (1, 1), (1,) * 4, (1, 1))
                cfg = default_winograd_config(key)
                assert cfg["tile"].val == tile, (target, n, c, h)
                size = kernel_bytes(key[2], cfg["tile"].val, cfg["bn"].val, cfg["cb"].val)
                assert size <= STREAM_KERNEL_BYTES
                assert (cfg["rows"].val == 0) == (size > FUSE_MAX_KERNEL_BYTES)


def test_errors():
    A = te.placeholder((1, 8, 9, 9), name="data")
    with pytest.raises(ValueError, match="only 3x3, stride 1"):
        conv2d_winograd_x86(A, te.placeholder((8, 8, 5, 5), name="w"), 2)
    with pytest.raises(ValueError, match="8 channels, kernel expects 4"):
        conv2d_winograd_x86(A, te.placeholder((8, 4, 3, 3), name="w"), 1)
    key = winograd_workload((1, 8, 9, 9), (8, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    other = winograd_workload((1, 8, 9, 9), (16, 8, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    with pytest.raises(ValueError, match="cannot schedule workload"):
        conv2d_winograd_x86(A, te.placeholder((8, 8, 3, 3), name="w"), 1, cfg=default_winograd_config(other))
    conv = conv2d_winograd_x86(A, te.placeholder((8, 8, 3, 3), name="w"), 1)
    cfg = default_winograd_config(key)
    with pytest.raises(ValueError, match=r"knobs \['tile'\] differ from the compute"):
        schedule_conv2d_winograd([conv], with_values(cfg, tile=6 - cfg["tile"].val))


def test_autotvm_template_builds_fallback_and_a_sampled_config():
    import codegen
    import topi.x86.templates  # noqa: F401  (registers the templates)
    from tune import autotvm

    dshape, kshape, pads = (1, 16, 10, 10), (24, 16, 3, 3), (1, 1, 1, 1)
    wl = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1))
    task = autotvm.task.create(TEMPLATE, wl[1:], target="llvm")
    assert set(task.config_space.space_map) == set(default_winograd_config(wl).values)
    a, wt = _rand(dshape, 9), _rand(kshape, 10)
    ref = _ref(a, wt, pads)
    rng = np.random.default_rng(3)
    for index in (task.default_config().index, int(rng.integers(len(task.config_space)))):
        cfg = task.config_space.get(index)
        s, args, (dl, ul, ol) = task.instantiate_with_layouts(cfg)
        f = codegen.build(s, args)
        tile, bn, cb = (cfg[k].val for k in ("tile", "bn", "cb"))
        u = winograd_kernel_transform_numpy(wt, tile, bn, -(-16 // cb) * cb)
        assert ul is None and dl[0] in ("NCHW", f"NCHW{cb}c")  # the data as a graph blocks it
        out = np.full([int(d) for d in args[2].shape], np.nan, "float32")
        f(autotvm.layout.to_blocked(a, dl[0]), u, out)
        _check(autotvm.layout.to_logical(out, *ol), ref)


def test_choose_picks_the_implementation_by_rule_and_by_records():
    import topi.x86.templates  # noqa: F401  (registers the templates)
    from topi.x86.conv2d_rule import TEMPLATE as DIRECT
    from topi.x86.conv2d_rule import conv2d_workload
    from tune.autotvm.choose import choose
    from tune import autotvm

    big = conv2d_workload((1, 64, 14, 14), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    small = conv2d_workload((1, 16, 14, 14), (16, 16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    strided = conv2d_workload((1, 64, 14, 14), (64, 64, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1))
    assert choose(big, HOST, autotvm.Records.current()).template == TEMPLATE
    assert choose(small, HOST, autotvm.Records.current()).template == DIRECT
    assert choose(strided, HOST, autotvm.Records.current()).template == DIRECT

    def record(name, key, index, cost):
        task = autotvm.task.create(name, key[1:], target="llvm")
        inp = autotvm.MeasureInput(task.target, task, task.config_space.get(index))
        return inp, autotvm.MeasureResult((cost,), 0, 0.1, 1.0)

    direct_fast = [record(DIRECT, big, 3, 1e-4), record(TEMPLATE, big, 5, 2e-4)]
    with autotvm.apply_history_best(direct_fast):
        assert choose(big, HOST, autotvm.Records.current()).template == DIRECT
    wino_fast = [record(DIRECT, big, 3, 3e-4), record(TEMPLATE, big, 5, 2e-4)]
    with autotvm.apply_history_best(wino_fast):
        cfg = choose(big, HOST, autotvm.Records.current())
        assert cfg.template == TEMPLATE
        task = autotvm.task.create(TEMPLATE, big[1:], target="llvm")
        want = task.config_space.get(5)
        assert cfg.values == {k: want[k].val for k in cfg.values}
    # a record of one template alone tunes it but does not switch the layer away from the rule's
    with autotvm.apply_history_best([record(TEMPLATE, small, 1, 1e-4)]):
        assert choose(small, HOST, autotvm.Records.current()).template == DIRECT
    with autotvm.apply_history_best([record(DIRECT, big, 3, 1e-6)]):
        cfg = choose(big, HOST, autotvm.Records.current())
        assert cfg.template == TEMPLATE and cfg.values == default_winograd_config((TEMPLATE, *big[1:])).values
    with autotvm.apply_history_best([record(DIRECT, small, 3, 3e-4), record(TEMPLATE, small, 1, 1e-4)]):
        assert choose(small, HOST, autotvm.Records.current()).template == TEMPLATE


def _record_log(tmp_path, conv_key, index: int, edit):
    """``(task, log path, entity)``: a one-line log holding a record of the Winograd task of
    ``conv_key`` at space point ``index``, its config entity rewritten by ``edit`` (a list of
    ``[knob, kind, value]`` -> another), as an older version of Tessera might have written it."""
    import json

    import topi.x86.templates  # noqa: F401  (registers the templates)
    from tune import autotvm

    task = autotvm.task.create(TEMPLATE, conv_key[1:], target="llvm")
    inp = autotvm.MeasureInput(task.target, task, task.config_space.get(index))
    row = json.loads(autotvm.record.encode(inp, autotvm.MeasureResult((1e-4,), 0, 0.1, 1.0)))
    row["config"]["entity"] = edit(row["config"]["entity"])
    log = tmp_path / "record.jsonl"
    log.write_text(json.dumps(row) + "\n")
    return task, str(log), row["config"]["entity"]


def _without_rows(entity):
    return [e for e in entity if e[0] != "rows"]


def test_a_record_from_before_the_rows_knob_ran_the_stages_apart(tmp_path):
    """A record line without ``rows`` (written before the fused schedule) means rows=0, not
    today's rule; where the space no longer holds the stages-apart form (the image has a
    block of tile rows for each thread) it is skipped with a warning naming rows=0, and the
    AutoTVM template refuses to instantiate it, naming the knob."""
    from topi.x86.conv2d_rule import conv2d_workload
    from tune.autotvm.choose import choose
    from tune import autotvm

    big = conv2d_workload((1, 64, 14, 14), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    rule = default_winograd_config((TEMPLATE, *big[1:]))
    assert rule["rows"].val > 0
    task, log, _ = _record_log(tmp_path, big, 0, _without_rows)
    with autotvm.apply_history_best(log):
        with pytest.warns(UserWarning, match=r"skipped the tuning record of conv2d_winograd.x86.*rows=0 runs "
                                             r"the stages apart"):
            cfg = choose(big, HOST, autotvm.Records.current())
    assert cfg.template == TEMPLATE and cfg.values == rule.values

    (old_inp, _), = autotvm.record.load_from_file(log)
    assert "rows" not in old_inp.config
    from tune.autotvm.errors import TemplateError

    with pytest.raises(TemplateError, match=r"rows=0 runs the stages apart.*use rows=\d"):
        task.instantiate(old_inp.config)


def test_a_legacy_record_reads_rows_0_where_that_is_legal(tmp_path):
    """512 @7 (its transformed kernel too large to fuse) runs only apart: a record without
    ``rows`` is read as rows=0 and used."""
    from topi.x86.conv2d_rule import conv2d_workload
    from tune.autotvm.choose import choose
    from tune import autotvm

    key = conv2d_workload((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    _, log, entity = _record_log(tmp_path, key, 5, _without_rows)
    with autotvm.apply_history_best(log):
        cfg = choose(key, HOST, autotvm.Records.current())
    assert cfg.template == TEMPLATE and cfg["rows"].val == 0
    assert cfg.values == {**{k: v for k, _, v in entity}, "rows": 0}


def test_the_stages_apart_form_is_refused_where_fusing_is_legal(monkeypatch):
    """rows=0 hands intermediates between threads, which a measurement taken with the vCPUs near
    cannot price: refused (named) where the kernel fits and each thread gets a block of tile
    rows; legal with more threads than tile rows, or a kernel too large to fuse."""
    import topi.x86.conv2d_winograd as W
    from tune.autotvm.config import config_space

    for c, h in ((64, 56), (128, 28), (256, 14)):  # ResNet's fusible layers
        key = winograd_workload((1, c, h, h), (c, c, 3, 3), (1, 1), (1,) * 4, (1, 1))
        assert 0 not in config_space(key)["rows"]
    key = winograd_workload((1, 64, 14, 14), (64, 64, 3, 3), (1, 1), (1,) * 4, (1, 1))
    with pytest.raises(ValueError, match=r"rows=0 runs the stages apart.*4 tile rows fuse: use rows="):
        make_config(key, {"rows": 0})
    monkeypatch.setattr(W, "_threads", lambda: 8)  # more threads than the 4 tile rows
    assert 0 in config_space(key)["rows"] and make_config(key, {"rows": 0})["rows"].val == 0
    assert default_winograd_config(key)["rows"].val == 0


def test_a_task_is_defined_on_the_rules_values_where_the_knobs_first_choices_are_refused(monkeypatch):
    """VGG's 256->512 3x3 @28 offers rows=0 (its F(4x4) kernels pass the fusing limit) beside
    fused blocks, and the knobs' first choices (F(2x2), rows=0) are refused there.  Defining a
    task's space builds the template on the rule's values, not those first choices
    (``extract_from_program`` raised on VGG-19, AlexNet and ZFNet)."""
    import topi.x86.conv2d_winograd as W
    import topi.x86.templates  # noqa: F401  (registers the templates)
    from tune.autotvm.config import config_space
    from tune import autotvm

    monkeypatch.setattr(W, "_threads", lambda: 2)
    key = winograd_workload((1, 256, 28, 28), (512, 256, 3, 3), (1, 1), (1,) * 4, (1, 1))
    space = config_space(key)
    assert 0 in space["rows"] and max(space["rows"]) > 0
    with pytest.raises(ValueError, match="rows=0 runs the stages apart"):
        make_config(key, {knob: cands[0] for knob, cands in space.items()})
    task = autotvm.task.create(TEMPLATE, key[1:], target="llvm")
    fallback = task.default_config()
    assert {knob: fallback[knob].val for knob in space} == default_winograd_config(key).values


def test_a_record_whose_choice_is_no_longer_legal_is_skipped_with_a_warning(tmp_path):
    """512 @7 may no longer fuse (its transformed kernel is too large): an older record that
    did falls back to the rule, with a warning naming the workload and the knob."""
    from topi.x86.conv2d_rule import conv2d_workload
    from tune.autotvm.choose import choose
    from tune import autotvm

    key = conv2d_workload((1, 512, 7, 7), (512, 512, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    _, log, _ = _record_log(tmp_path, key, 0, lambda entity: [[k, kind, 1 if k == "rows" else v]
                                                              for k, kind, v in entity])
    with autotvm.apply_history_best(log):
        with pytest.warns(UserWarning, match=r"skipped the tuning record of conv2d_winograd.x86.*rows=1"):
            cfg = choose(key, HOST, autotvm.Records.current())
    assert cfg.template == TEMPLATE and cfg.values == default_winograd_config((TEMPLATE, *key[1:])).values


def _block(x, b):
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


@pytest.mark.parametrize("c, k, h, w, db, ob, values", [
    (32, 32, 13, 11, 16, 16, {"tile": 4, "bn": 32}),  # blocks differ from cb; 13x11: tiles do not divide
    (24, 48, 7, 7, 8, 16, {"tile": 4, "bn": 16, "rows": 2, "oc_parts": 4}),  # 4 asked, 3 parts of one block each
    (16, 32, 15, 13, 16, 8, {"tile": 4, "bn": 16, "rows": 2, "oc_parts": 2, "kc_outer": True}),  # ob = bn / 2
    (3 * V, 4 * V, 9, 7, V, 2 * V, {"tile": 2, "cb": 2 * V, "bn": 4 * V, "mr": 3}),  # C % cb != 0, ob = bn / 2
    (16, 16, 6, 6, 8, 16, {"tile": 4, "cb": 16, "bn": 16}),  # ob = bn
])
def test_blocked_input_and_output_with_fused_bias_relu(c, k, h, w, db, ob, values):
    """NCHW[db]c data in, NCHW[ob]c out (the layouts of a graph's convs), bias + relu fused."""
    dshape, kshape, pads = (1, c, h, w), (k, c, 3, 3), (1, 1, 1, 1)
    key = winograd_workload(dshape, kshape, (1, 1), pads, (1, 1))
    cfg = make_config(key, {**default_winograd_config(key).values, **values})
    a, wt, bias = _rand(dshape, 11), _rand(kshape, 12), _rand((k,), 13)
    v = cfg.values
    u = winograd_kernel_transform_numpy(wt, v["tile"], v["bn"], -(-c // v["cb"]) * v["cb"])
    A = te.placeholder((1, c // db, h, w, db), name="data")
    U = te.placeholder(u.shape, name="U")
    B = te.placeholder((1, k // ob, 1, 1, ob), name="bias")
    conv = conv2d_winograd_x86(A, U, pads, cfg=cfg, kshape=kshape, out_block=ob)
    assert tuple(int(d) for d in conv.shape) == (1, k // ob, h, w, ob)
    out = te.compute(conv.shape, lambda n, kc, y, x, kb: te.max(conv[n, kc, y, x, kb] + B[0, kc, 0, 0, kb],
                                                                 te.const(0.0, "float32")),
                     name="bias_relu", tag="broadcast")
    s = schedule_conv2d_winograd([out], cfg)
    ref = _block(np.maximum(_ref(a, wt, pads) + bias.reshape(1, k, 1, 1), 0), ob)
    check_build(s, [A, U, B, out], lambda *_: ref, inputs=[_block(a, db), u, _block(bias.reshape(1, k, 1, 1), ob)],
                rtol=RTOL, atol=RTOL * float(np.abs(ref).max()))


def test_out_block_follows_the_direct_rule():
    from codegen.target import Target
    from topi.x86.conv2d_rule import conv2d_workload, default_conv2d_config
    from topi.x86.conv2d_winograd import winograd_out_block

    with Target("llvm -mcpu=znver4"):  # AVX-512's rules (only configs here: nothing runs)
        _out_block_follows_the_direct_rule(conv2d_workload, default_conv2d_config, winograd_out_block)


def _out_block_follows_the_direct_rule(conv2d_workload, default_conv2d_config, winograd_out_block):
    key = winograd_workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    cfg = default_winograd_config(key)
    direct = default_conv2d_config(conv2d_workload((1, 64, 56, 56), (64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)))
    assert winograd_out_block(key, cfg) == direct["oc_bn"].val
    assert winograd_out_block(key, with_values(cfg, bn=48)) == 16  # the direct block divides bn and K
    assert winograd_out_block(key, with_values(cfg, bn=16)) == 16  # the direct block does not divide bn: bn


def test_avx2_rule_takes_two_vectors_by_six_slots_unless_that_pads_a_sixth():
    """With 16 vector registers the products take two vectors of output channels (the direct
    convs' block, so the output keeps it) by 6 tile slots (12 accumulators), by 4 where 6s pad
    a block's slots by more than a sixth, and unroll 4 channels.  A record's bn of 24 on K 256
    writes blocks of 8 (their largest common divisor in whole vectors) rather than NCHW."""
    from codegen.target import Target
    from topi.x86.conv2d_winograd import winograd_out_block, ymm_tile

    def rule(c, h, n=1):
        key = winograd_workload((n, c, h, h), (c, c, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
        cfg = default_winograd_config(key)
        return key, cfg, (cfg["tile"].val, cfg["bn"].val, cfg["mr"].val, cfg["ku"].val, cfg["rows"].val)

    with Target("llvm -mcpu=x86-64-v3"):
        assert rule(64, 56)[2] == (4, 16, 6, 4, 7)  # 98 tiles a block: 102 slots in 6s
        assert rule(128, 28)[2] == (4, 16, 6, 4, 4)  # 28 tiles: 30 slots
        key, cfg, values = rule(256, 14, 2)
        assert values == (4, 16, 4, 4, 2)  # 8 tiles a block: 12 slots in 6s, 8 in 4s
        assert rule(256, 14)[2] == (2, 16, 6, 4, 4)  # one image streams F(4x4)'s kernel: 28 tiles a block
        assert rule(512, 7)[2] == (2, 16, 6, 4, 0)  # 16 tiles, apart: 18 slots in 6s
        assert winograd_out_block(key, cfg) == 16
        assert winograd_out_block(key, with_values(cfg, bn=24)) == 8
        assert ymm_tile((1, 96, 3, 3), 0, 8) == (16, 4)  # 9 tiles: 12 slots in 6s
        assert ymm_tile((2, 96, 3, 3), 0, 8) == (16, 6)  # 18 tiles
    with Target("llvm -mcpu=x86-64-v4"):  # 32 registers: four vectors by the rows 16 accumulators allow
        assert rule(256, 14)[2][1:4] == (64, 4, 1)
