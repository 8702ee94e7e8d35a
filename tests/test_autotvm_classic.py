"""AutoTVM's spaces, tuners, records and flop counts as classic AutoTVM's API gives them."""

import io
import time

import numpy as np
import pytest

from tessera import autotvm, te
from tessera.autotvm.measure import MeasureInput, MeasureResult
from tessera.autotvm.record import decode, encode, load_records
from tessera.autotvm.task.space import ConfigSpace, FallbackConfigEntity
from tessera.autotvm.task.task import FlopCalculationError, compute_flop
from tessera.autotvm.tuner.xgboost_cost_model import XGBoostCostModel
from tessera.testing.autotvm import DummyRunner, get_sample_records, get_sample_task


def wide_tiles(entity):  # 21 of the 64 configs of a 128 x 128 matmul's two splits
    return entity["tile_x"].size[1] * entity["tile_y"].size[1] >= 512


def filtered_task():
    task, _ = get_sample_task()
    task.config_space.multi_filter(filter=wide_tiles)
    return task


def test_multi_filter_keeps_indices_and_marks_the_rest_invalid():
    space = filtered_task().config_space
    valid = [i for i in range(space.range_length) if space.is_index_valid(i)]
    assert space.range_length == 64 and space.dims == [8, 8] and len(space) == len(valid) == 21
    assert all(wide_tiles(space.get(i)) for i in valid)
    with pytest.raises(IndexError, match="removed by the space's multi_filter"):
        space.get(0)
    assert space.subrange_length(0, 64) == 21 and space.subrange_length(60, 64) == sum(i >= 60 for i in valid)
    assert space.get_next_index(valid[0]) == valid[1] and space.get_next_index(valid[1], -1) == valid[0]
    assert space.get_next_index(valid[-1]) is None
    assert space.point2knob(13) == [5, 1] and space.knob2point([5, 1]) == 13
    assert set(space.sample_ints(5)) <= set(valid) and len(set(space.sample_ints(21))) == 21
    walk = space.random_walk(valid[0])
    assert walk in valid and sum(a != b for a, b in zip(space.point2knob(walk), space.point2knob(valid[0]))) == 1
    assert space.get_rand_index(to_exclude=valid[:-1]) == valid[-1]
    assert list(space) == ["tile_y", "tile_x"]  # a space iterates its knob names


def test_a_knob_redefined_after_the_template_replaces_it():
    task, _ = get_sample_task()
    space = task.config_space
    space.define_split("tile_y", space.axis(128), num_outputs=2, filter=lambda e: e.size[-1] < 64)
    assert space.dims == [6, 8] and space.range_length == 48  # inner tiles 1..32
    fb = FallbackConfigEntity()
    fb.define_split("t", fb.axis(49), num_outputs=3)
    fb.fallback_split("t", [-1, 8, 4])
    assert fb["t"].size == [7, 7, 1]
    with pytest.raises(RuntimeError, match="no split of 49 into 3 parts"):
        fb.fallback_split("t", [-1, 1, 0])


@pytest.mark.parametrize("make", [autotvm.tuner.GridSearchTuner, autotvm.tuner.RandomTuner])
def test_index_tuners_measure_their_range_of_valid_configs(make):
    task = filtered_task()
    space = task.config_space
    tuner = make(task, range_idx=(40, 63))
    want = {i for i in range(40, 64) if space.is_index_valid(i)}
    assert (tuner.begin_idx, tuner.end_idx, tuner.range_length, tuner.visited_max) == (40, 64, 24, len(want))
    measure = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=DummyRunner())
    tuner.tune(n_trial=30, measure_option=measure)
    assert tuner.visited == want and not tuner.has_next()


def test_ga_tuner_draws_its_first_generation_from_valid_configs():
    task = filtered_task()
    tuner = autotvm.tuner.GATuner(task, pop_size=8, seed=0)
    assert len(tuner.visited) == len(tuner.genes) == 8
    assert all(task.config_space.is_index_valid(i) for i in tuner.visited)
    measure = autotvm.measure_option(builder=autotvm.LocalBuilder(), runner=DummyRunner())
    tuner.tune(n_trial=16, measure_option=measure)
    assert len(tuner.score_of) == 16 and all(task.config_space.is_index_valid(i) for i in tuner.score_of)


def test_records_in_both_protocols_and_any_nesting(tmp_path):
    task, target = get_sample_task()
    inp = MeasureInput(target, task, task.config_space.get(5))
    res = MeasureResult((2.0, 2.5), 0, 2.3, time.time())
    for protocol in ("json", "pickle"):
        inp2, res2 = decode(encode(inp, res, protocol), protocol)
        assert inp2.config.index == 5 and res2 == res
    path = tmp_path / "a.log"
    path.write_text(encode(inp, res) + "\n")
    buffer = io.StringIO(encode(inp, res) + "\n")
    pairs = load_records(zip([path, [(inp, res)]], [buffer, zip([inp], [res])]))
    assert len(pairs) == 4 and all(p[0].config.index == 5 for p in pairs)


def test_xgb_base_model_needs_min_seed_records():
    task, _ = get_sample_task()
    base = XGBoostCostModel(task, feature_type="knob", model="numpy")
    assert base.fit_log(get_sample_records(16), plan_size=8, min_seed_records=16)
    upper = XGBoostCostModel(task, feature_type="knob", model="numpy")
    upper.load_basemodel(base)
    upper.fit(list(range(8)), list(range(8)), plan_size=8)
    assert upper.predict([1, 2, 3]).shape == (3,)
    tuner = autotvm.tuner.XGBTuner(task, model="numpy")
    tuner.load_history(get_sample_records(10), min_seed_records=11)
    assert tuner.cost_model.base_model is None
    tuner.load_history(get_sample_records(10), min_seed_records=10)
    assert tuner.cost_model.base_model is not None
    tuner.update(*zip(*get_sample_records(3)))
    assert set(tuner.xs[-3:]) <= tuner.visited


def test_compute_flop_counts_as_classic_autotvm():
    a = te.placeholder((16, 8), "int8", name="a")
    b = te.placeholder((8, 4), "int8", name="b")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((16, 4), lambda i, j: te.sum(a[i, k].astype("int32") * b[k, j].astype("int32"), axis=k))
    assert compute_flop(te.create_schedule(c.op)) == 2 * 16 * 4 * 8  # integer operations count
    d = te.compute((16, 4), lambda i, j: te.exp(c[i, j].astype("float32")) + a[i * 0 + i, j])
    assert compute_flop(te.create_schedule(d.op)) == 2 * 16 * 4 * 8 + 16 * 4  # a call counts its arguments
    copy = te.compute((16, 8), lambda i, j: a[i, j])
    with pytest.raises(FlopCalculationError, match="cfg.add_flop"):
        compute_flop(te.create_schedule(copy.op))


def test_classic_touch_features_count_and_reuse_per_loop():
    """autotvm.feature.get_itervar_feature: for C[y, x] = sum(A[y, k] * B[k, x]) (16 each), loop y
    touches A with stride 16 (its rows), 16 * 16 elements, each reused by the 16 x's."""
    from tessera.autotvm import feature

    n = 16
    k = te.reduce_axis((0, n), "k")
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    C = te.compute((n, n), lambda y, x: te.sum(A[y, k] * B[k, x], axis=k), name="C")
    s = te.create_schedule(C.op)
    s[C].parallel(C.op.axis[0])
    rows = [{pair[0]: pair[1:] for pair in row[1:]} for row in feature.get_itervar_feature(s, [A, B, C])]
    assert [r["_attr_"][:4] for r in rows] == [[16, 1, 16, 4096], [16, 2, 256, 256], [16, 3, 4096, 16]]
    assert rows[0]["_attr_"][4:] == [0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0]  # one-hot: parallel
    # thread count and reuse: the whole loop's over one thread's (one y): A_0's rows are per thread
    # (16 times the count, the same reuse), every thread reads all of B (the count once, reuse 16 times)
    assert rows[0]["A_0"] == [16, -1, 256, 16, 16, 1] and rows[0]["B_0"] == [0, -1, 256, 16, 1, 16]
    assert rows[2]["A_0"] == [1, -1, 16, 1, 0, 0] and rows[2]["C_0"] == [0, -1, 1, 16, 0, 0]
    flat = feature.get_itervar_feature_flatten(s, [A, B, C], take_log=True)
    assert flat.shape == (3 * (4 + 11 + 3 + 4 * 6),) and np.isclose(flat[0], np.log2(17))
    assert feature.get_buffer_curve_sample_flatten(s, [A, B, C], sample_n=10).shape == (10 * 3 * 4 * 2,)
