"""Declared layouts: blocked <-> logical arrays, and the runner's check across candidates' layouts."""

import numpy as np
import pytest

import te
from tune import autotvm
from tune import layout, record

E = autotvm.MeasureErrorNo


@pytest.mark.parametrize("lay, shape", [("NCHW16c", (1, 32, 5, 7)), ("NCHW8c", (2, 12, 3, 3)),
                                         ("OIHW4i16o", (24, 8, 3, 3)), ("NC", (3, 5)), ("NC1c", (3, 5))])
def test_round_trip_pads_and_crops(lay, shape):
    x = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    y = layout.to_blocked(x, lay)
    assert y.shape == layout.blocked_shape(lay, shape)
    np.testing.assert_array_equal(layout.to_logical(y, lay, shape), x)


def test_blocked_element_positions():
    x = np.arange(2 * 24 * 3 * 3, dtype="float32").reshape(24, 2, 3, 3)  # OIHW
    y = layout.to_blocked(x, "OIHW2i16o")  # [O/16, I/2, H, W, 2, 16], O zero-padded 24 -> 32
    assert y.shape == (2, 1, 3, 3, 2, 16)
    assert y[1, 0, 2, 1, 1, 5] == x[16 + 5, 1, 2, 1]
    assert not y[1, :, :, :, :, 8:].any()  # the padded channels are zeros
    z = layout.to_blocked(np.arange(8).reshape(1, 8), "NC4c")
    assert z.tolist() == [[[0, 1, 2, 3], [4, 5, 6, 7]]]


@pytest.mark.parametrize("bad", ["nchw", "NCHW16", "NCHW16x", "NCC", "NCHW4c4c", "NCHW0c", ""])
def test_bad_layout_strings_are_named(bad):
    with pytest.raises(ValueError, match="layout"):
        layout.parse(bad)


def test_shapes_that_do_not_match_are_named():
    with pytest.raises(ValueError, match="4 logical axes"):
        layout.to_blocked(np.zeros((2, 3)), "NCHW4c")
    with pytest.raises(ValueError, match=r"does not store \(1, 8, 2, 2\)"):
        layout.to_logical(np.zeros((1, 2, 2, 2, 8)), "NCHW4c", (1, 8, 2, 2))
    with pytest.raises(ValueError, match="does not store"):
        layout.declare(te.placeholder((1, 3, 4)), "NC4c", (1, 8))


@autotvm.template("test/blocked_scale")
def blocked_scale(n, c):
    """``out = 2 * data`` with data and output blocked by knobs; ``wrong`` mixes up two channels."""
    cfg = autotvm.get_config()
    cfg.define_knob("bi", [4, 1, 2])
    cfg.define_knob("bo", [4, 8, 5])
    cfg.define_knob("wrong", [False, True])
    bi, bo = cfg["bi"].val, cfg["bo"].val
    data = layout.declare(te.placeholder((n, c // bi, bi), name="data"), f"NC{bi}c", (n, c))
    swap = 1 if cfg["wrong"].val else 0

    def body(b, co, ci):
        ch = co * bo + ci
        src = te.if_then_else(ch == 0, ch + swap, ch)
        inside = ch < c
        return te.if_then_else(inside, data[b, te.indexdiv(te.min(src, c - 1), bi),
                                             te.indexmod(te.min(src, c - 1), bi)] * 2.0, te.const(0.0))

    out = te.compute((n, -(-c // bo), bo), body, name="out")
    layout.declare(out, f"NC{bo}c", (n, c))
    return te.create_schedule(out.op), [data, out]


def test_runner_checks_candidates_of_other_layouts(tmp_path):
    task = autotvm.task.create("test/blocked_scale", args=(3, 12), target="llvm")
    builder = autotvm.LocalBuilder(n_parallel=1)
    runner = autotvm.LocalRunner(number=1, repeat=1)
    log = str(tmp_path / "blocked.log")
    try:
        autotvm.tuner.GridSearchTuner(task).tune(
            len(task.config_space), autotvm.measure_option(builder, runner),
            callbacks=[autotvm.callback.log_to_file(log)])
    finally:
        builder.close()
        runner.close()
    got = {(r[0].config["bi"].val, r[0].config["bo"].val, r[0].config["wrong"].val): r[1].error_no
           for r in record.load_from_file(log)}
    assert len(got) == 18
    for (bi, bo, wrong), err in got.items():
        assert err == (E.WRONG_ANSWER if wrong else E.NO_ERROR), (bi, bo, wrong)
