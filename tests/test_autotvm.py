"""Classic AutoTVM: config spaces, templates, tasks, records, dispatch, and the tutorial flow per tuner."""

from collections import Counter
import json
import math
import os
import warnings

import numpy as np
import pytest

import codegen
import te
from tune import autotvm
from tune import record
from tune.autotvm.knobs import get_factors

FIXTURE = os.path.join(os.path.dirname(__file__), "autotvm_records_tvm08.jsonl")
SHAPE = (64, 64, 64, "float32")


@autotvm.template("test/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


@autotvm.template("test/knobs")
def knobs(n):
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    i, j = s[B].op.axis
    cfg = autotvm.get_config()
    cfg.define_split("tile_j", j, num_outputs=3, policy="power2")
    cfg.define_knob("vec", [0, 1])
    cfg.define_reorder("order", [i, j], policy="all")
    jo, jm, ji = cfg["tile_j"].apply(s, B, j)
    if cfg["vec"].val:
        s[B].vectorize(ji)
    cfg.add_flop(n * n)
    return s, [A, B]


@autotvm.template("test/raises")
def raises(n):
    raise RuntimeError("template bug")


@autotvm.template("test/twice")
def twice(n):
    cfg = autotvm.get_config()
    cfg.define_knob("unroll", [0, 1])
    cfg.define_knob("unroll", [0, 1, 2])


def _check_matmul(f, n=64):
    a = np.random.rand(n, n).astype("float32")
    b = np.random.rand(n, n).astype("float32")
    c = np.empty((n, n), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ spaces --
def test_factors_match_brute_force():
    for n in [1, 2, 7, 12, 64, 97, 360, 1000, 4096]:
        assert get_factors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_split_policies():
    cfg = autotvm.ConfigSpace()
    cfg.define_split("f", 12, num_outputs=3)
    assert all(math.prod(e.size) == 12 for e in cfg.space_map["f"].entities)
    assert len(cfg.space_map["f"]) == 18  # ordered factorisations of 12 into 3
    cfg.define_split("p", 10, policy="power2")
    assert sorted(e.size[1] for e in cfg.space_map["p"].entities) == [1, 2, 4, 8]
    assert cfg.space_map["p"].entities[-1].size == [2, 8]  # a tail: ceil(10/8) outer
    cfg.define_split("v", 12, policy="verbose")
    assert {e.size[1] for e in cfg.space_map["v"].entities} == {1, 2, 3, 4, 6, 8, 12}
    cfg.define_split("m", 64, max_factor=8)
    assert max(e.size[1] for e in cfg.space_map["m"].entities) == 8
    cfg.define_split("flt", 64, filter=lambda e: e.size[-1] >= 16)
    assert [e.size[1] for e in cfg.space_map["flt"].entities] == [16, 32, 64]
    cfg.define_split("c", 64, policy="candidate", candidate=[[8, 8], [4, 16]])
    assert len(cfg.space_map["c"]) == 2
    assert len(cfg) == 18 * 4 * 7 * 4 * 3 * 2


def test_space_index_roundtrip_and_print():
    task = autotvm.task.create("test/knobs", args=(48,), target="llvm")
    space = task.config_space
    assert len(space) == len(space.space_map["tile_j"]) * 2 * 2
    for index in [0, 1, len(space) // 2, len(space) - 1]:
        cfg = space.get(index)
        assert space.index_of(cfg._entity_map) == index
        assert (
            autotvm.ConfigEntity.from_json_dict(json.loads(json.dumps(cfg.to_json_dict()))).key() == cfg.key()
        )
    text = str(space)
    assert "tile_j" in text and "vec" in text and "order" in text and f"len={len(space)}" in text
    assert task.flop == 48 * 48
    with pytest.raises(IndexError, match="out of range"):
        space.get(len(space))


def test_matmul_task_and_fallback():
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    assert len(task.config_space) == 7 * 7
    assert task.flop == 2 * 64**3
    default = task.default_config()
    assert default.index == 0
    s, args = matmul(*SHAPE)  # outside any context: the fallback
    _check_matmul(codegen.build(s, args))


def test_fallback_defaults_and_split_apply():
    fb = autotvm.FallbackConfigEntity()
    fb.define_split("t", 64, num_outputs=3)
    fb["t"] = autotvm.SplitEntity((-1, 4, 8))
    assert fb.is_fallback and fb["t"].size == [-1, 4, 8]
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    loops = fb["t"].apply(s, B, B.op.axis[0])
    assert [lp.var.name for lp in loops] == ["i.outer", "i.inner.outer", "i.inner.inner"]
    space = autotvm.ConfigSpace()
    space.define_split("t", 64, num_outputs=3)
    assert fb.to_entity(space).index == space.index_of({"t": autotvm.SplitEntity((2, 4, 8))})


# ------------------------------------------------------------------ errors --
def test_template_that_raises_is_named():
    with pytest.raises(autotvm.TemplateError, match="'test/raises' raised .*RuntimeError: template bug"):
        autotvm.task.create("test/raises", args=(4,), target="llvm")


def test_knob_defined_twice_with_different_candidates():
    with pytest.raises(autotvm.KnobError, match="'unroll' defined twice with different candidates"):
        autotvm.task.create("test/twice", args=(4,), target="llvm")


def test_missing_knob():
    cfg = autotvm.task.create("test/matmul", args=SHAPE, target="llvm").config_space.get(0)
    with pytest.raises(autotvm.MissingKnobError, match="no knob 'missing'; knobs: \\['tile_y', 'tile_x'\\]"):
        cfg["missing"]


def test_unknown_template_and_tuner():
    with pytest.raises(autotvm.TemplateNotFoundError, match="no autotvm template named 'nope'.*test/matmul"):
        autotvm.task.create("nope", args=(), target="llvm")
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    with pytest.raises(autotvm.TunerNotFoundError, match="unknown tuner 'annealing'; use one of: xgb, ga"):
        autotvm.tuner.get_tuner("annealing", task)
    with pytest.raises(ValueError, match="unknown loss_type 'hinge'"):
        autotvm.tuner.XGBTuner(task, loss_type="hinge")


# ----------------------------------------------------------------- records --
def test_old_schema_fixture_loads_and_applies():
    recs = list(record.load_from_file(FIXTURE))
    assert len(recs) == 4
    inp, res = recs[1]
    assert inp.task.name == "test/matmul" and inp.task.args == (64, 64, 64, "float32")
    assert inp.config["tile_x"].size == [-1, 16] and res.costs == (0.0002, 0.0002) and res.error_no == 0
    assert recs[2][1].error_no == autotvm.MeasureErrorNo.RUN_TIMEOUT
    assert recs[3][0].config["tile_y"].size == [-1, 2]  # the v0.1 ("i"/"r"/"v") format
    best = autotvm.ApplyHistoryBest(FIXTURE).query("llvm", ("test/matmul",) + SHAPE)
    assert best["tile_y"].size == [-1, 8] and best["tile_x"].size == [-1, 16]  # the fastest record
    with autotvm.apply_history_best(FIXTURE):
        s, args = matmul(*SHAPE)
        values = autotvm.lookup_values(("test/matmul",) + SHAPE)  # the hook for topi's choose_config
        with autotvm.ApplyConfig(best):
            assert autotvm.lookup_values(("test/matmul",) + SHAPE) == values  # ApplyConfig is skipped
    assert values == {"tile_y": [-1, 8], "tile_x": [-1, 16]}
    assert autotvm.lookup_values(("test/matmul",) + SHAPE) is None
    assert _inner_tiles(s, args) == (8, 16)
    _check_matmul(codegen.build(s, args))


def _inner_tiles(s, args) -> tuple:
    """Extents of (yi, xi), the last two leaf axes of C in the template's order."""
    leaf = s[args[2]].leaf_iter_vars
    return int(leaf[3].dom.extent), int(leaf[4].dom.extent)


def test_records_round_trip_and_pick_best(tmp_path):
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    pairs = []
    for index, cost, err in [(3, 0.002, 0), (10, 0.001, 0), (11, "boom", 2)]:
        inp = autotvm.MeasureInput(task.target, task, task.config_space.get(index))
        pairs.append((inp, autotvm.MeasureResult((cost,), err, 0.5, 1.0e9 + index)))
    log = tmp_path / "r.log"
    cb = autotvm.callback.log_to_file(str(log))
    cb(None, [p[0] for p in pairs], [p[1] for p in pairs])
    back = list(record.load_from_file(log))
    assert [b[0].config.index for b in back] == [3, 10, 11]
    assert back[1][0].config.key() == task.config_space.get(10).key()
    assert back[2][1].error_no == 2 and back[2][1].costs == ("boom",)
    row = json.loads(log.read_text().splitlines()[0])
    assert row["schema"] == record.SCHEMA and row["input"]["target"] == str(task.target)
    assert "-mcpu=" in row["input"]["target"] and "+sse2" in row["input"]["target"]
    best = tmp_path / "best.log"
    record.pick_best(str(log), str(best))
    assert [b[0].config.index for b in record.load_from_file(best)] == [10]


def test_corrupted_line_is_reported_and_skipped(tmp_path):
    good = open(FIXTURE).read().splitlines()
    log = tmp_path / "bad.log"
    log.write_text("\n".join([good[0], '{"input": [trunc', good[1], "[1, 2]", ""]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        recs = list(record.load_from_file(log))
    assert len(recs) == 2
    msgs = [str(w.message) for w in caught if issubclass(w.category, record.RecordWarning)]
    assert len(msgs) == 2
    assert "bad.log:2: skipped a malformed record" in msgs[0] and "bad.log:4:" in msgs[1]
    with pytest.raises(autotvm.RecordError, match="cannot read tuning records"):
        list(record.load_from_file(tmp_path / "missing.log"))


def test_record_for_another_target_is_not_applied(tmp_path):
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm -mcpu=x86-64-v2")
    inp = autotvm.MeasureInput(task.target, task, task.config_space.get(20))
    log = tmp_path / "other.log"
    record.save_to_file([(inp, autotvm.MeasureResult((1e-5,), 0, 0.1, 1.0))], str(log))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hist = autotvm.apply_history_best(str(log))
    assert hist.query("llvm", task.workload) is None  # the host is not an x86-64-v2
    assert hist.query("llvm -mcpu=x86-64-v2", task.workload)["tile_y"] == task.config_space.get(20)["tile_y"]
    with hist:
        s, args = matmul(*SHAPE)
    assert _inner_tiles(s, args) == (1, 1)  # the fallback
    _check_matmul(codegen.build(s, args))


# ----------------------------------------------------- the tutorial flow --
@pytest.fixture(scope="module")
def measure():
    builder = autotvm.LocalBuilder(n_parallel=2, timeout=30)
    runner = autotvm.LocalRunner(number=2, repeat=2, timeout=10)
    yield autotvm.measure_option(builder=builder, runner=runner)
    builder.close()
    runner.close()


def _unconfirmed(rows: list, top: int, times: int) -> list:
    """Config keys among the ``top`` fastest of ``rows`` read fewer than ``1 + times`` times."""
    from tune.autotvm.tuner.tuner import config_key

    counts = Counter(config_key(inp.config) for inp, res in rows if res.error_no == 0)
    (ranked,) = record.ranked_by_workload(rows).values()
    return [k for k in (config_key(inp.config) for inp, _ in ranked[:top]) if counts[k] < 1 + times]


def test_tune_tasks_confirms_the_fastest_configs(measure, tmp_path):
    """``tessera tune``'s loop ends a task by measuring its 3 fastest configs twice more each, in
    turn, then any config a slower confirmed one let into the top 3 (out of its trials); the
    records rank a config at its median.  Resumed, a tuned task confirms only what its records
    left unconfirmed (an older tune's log), and nothing twice."""
    from tune.network import CONFIRM_TIMES, CONFIRM_TOP, CONFIRM_TRIALS, tune_tasks
    from tune.autotvm.tuner.tuner import config_key

    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    task.share = 1.0
    log = str(tmp_path / "confirm.jsonl")
    planned = 4 * CONFIRM_TRIALS
    done = tune_tasks([task], [planned], log, tuner="random", measure_option=measure)
    rows = list(record.load_from_file(log))
    assert done[task.workload] == len(rows) <= planned
    search, again = rows[:planned - CONFIRM_TRIALS], rows[planned - CONFIRM_TRIALS:]
    assert len({config_key(inp.config) for inp, _ in search}) == len(search)  # the search: new configs only
    (ranked,) = record.ranked_by_workload(search).values()
    first = [config_key(inp.config) for inp, _ in ranked[:CONFIRM_TOP]]
    assert [config_key(inp.config) for inp, _ in again[:len(first) * CONFIRM_TIMES]] == first * CONFIRM_TIMES
    assert _unconfirmed(rows, CONFIRM_TOP, CONFIRM_TIMES) == [] or len(again) == CONFIRM_TRIALS
    (best,) = record.best_by_workload(rows).values()
    mine = sorted(r.cost for inp, r in rows if inp.config.index == best[0].config.index)
    # counted at its median (the confirmed configs' medians may read slower than a lucky single
    # search reading of another config, which then ranks first with its one reading)
    assert len(mine) in (1, 1 + CONFIRM_TIMES) and best[1].cost == mine[(len(mine) - 1) // 2]
    # an older tune's log, its configs read once each: resumed, only its top is confirmed
    log2 = str(tmp_path / "older.jsonl")
    autotvm.tuner.RandomTuner(task, seed=1).tune(n_trial=planned, measure_option=measure,
                                                 callbacks=[autotvm.callback.log_to_file(log2)])
    search = list(record.load_from_file(log2))
    (ranked,) = record.ranked_by_workload(search).values()
    first = [config_key(inp.config) for inp, _ in ranked[:CONFIRM_TOP]]
    done = tune_tasks([task], [len(search)], log2, tuner="random", measure_option=measure, records=search)
    resumed = list(record.load_from_file(log2))
    assert done[task.workload] == len(resumed) - len(search) >= len(first) * CONFIRM_TIMES
    assert [config_key(inp.config) for inp, _ in resumed[len(search):][:len(first) * CONFIRM_TIMES]] == first * CONFIRM_TIMES
    cap = 2 * CONFIRM_TOP * CONFIRM_TIMES  # confirm_best's default trials
    assert _unconfirmed(resumed, CONFIRM_TOP, CONFIRM_TIMES) == [] or done[task.workload] == cap
    tune_tasks([task], [len(search)], log2, tuner="random", measure_option=measure, records=resumed)
    counts = Counter(config_key(inp.config) for inp, _ in record.load_from_file(log2))
    assert max(counts.values()) == 1 + CONFIRM_TIMES  # nothing confirmed twice
    # a task planned fewer than 4x the confirmations is not confirmed
    log3 = str(tmp_path / "short.jsonl")
    tune_tasks([task], [planned - 1], log3, tuner="random", measure_option=measure)
    short = list(record.load_from_file(log3))
    assert len({inp.config.index for inp, _ in short}) == len(short) == planned - 1


def test_a_task_cut_by_its_budget_keeps_time_to_confirm_its_fastest_configs(measure, tmp_path, monkeypatch):
    """Under ``--budget`` a task's search stops while its confirmation still fits the task's time
    (at its seconds per trial so far), and the confirmation runs: a budget no longer leaves the
    records of a cut task read once each."""
    import types

    import tune.network as tuning

    ticks = iter(range(1, 10_000))  # a clock that moves one second a reading
    monkeypatch.setattr(tuning, "time", types.SimpleNamespace(monotonic=lambda: float(next(ticks))))
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    task.share = 1.0
    log = str(tmp_path / "cut.jsonl")
    planned = 4 * tuning.CONFIRM_TRIALS
    tuning.tune_tasks([task], [planned], log, tuner="random", measure_option=measure, budget_s=12.0)
    rows = list(record.load_from_file(log))
    first = {}  # config -> its first row: the search's rows are the configs' first readings
    for k, (inp, _) in enumerate(rows):
        first.setdefault(inp.config.index, k)
    search = rows[:max(first.values()) + 1]
    again = rows[len(search):]
    assert tuning.CONFIRM_TRIALS <= len(search) < planned - tuning.CONFIRM_TRIALS  # cut, with something to confirm
    assert len({inp.config.index for inp, _ in search}) == len(search)
    assert tuning.CONFIRM_TOP * tuning.CONFIRM_TIMES <= len(again) <= tuning.CONFIRM_TRIALS
    seen = {inp.config.index for inp, _ in search}
    assert all(inp.config.index in seen for inp, _ in again)  # re-measurements of the search's configs


def test_confirmation_measures_the_leader_a_slower_confirmed_config_hands_the_lead_to(measure):
    """Configs whose one reading was lucky (fabricated far below the real cost): the first round
    confirms the fastest, which then ranks at its real cost; the lead passes to the next lucky
    one, which must be measured again too rather than stand on its one reading."""
    from tune.network import confirm_best
    from tune.measure import MeasureInput, MeasureResult

    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    lucky = [(MeasureInput(task.target, task, task.config_space.get(k)), MeasureResult((c,), 0, 1.0, 0.0))
             for k, c in ((3, 1e-9), (5, 2e-9), (7, 3e-9))]
    again = confirm_best(task, lucky, measure, top=1, times=2, trials=6)
    assert [inp.config.index for inp, _ in again] == [3, 3, 5, 5, 7, 7]
    assert all(res.error_no == 0 and res.cost > 1e-7 for _, res in again)
    (best,) = record.best_by_workload(lucky + again).values()
    assert best[1].cost > 1e-7  # every lucky reading outvoted: the leader stands on real ones
    assert confirm_best(task, lucky + again, measure, top=1, times=2, trials=6) == []  # all confirmed


def test_a_config_measured_again_ranks_at_its_median():
    from tune.measure import MeasureInput, MeasureResult

    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    a, b = task.config_space.get(0), task.config_space.get(1)
    lucky = [(MeasureInput(task.target, task, a), MeasureResult((c,), 0, 1.0, 0.0)) for c in (1.0, 1.6, 1.7)]
    steady = [(MeasureInput(task.target, task, b), MeasureResult((1.2,), 0, 1.0, 0.0))]
    (best,) = record.best_by_workload(lucky + steady).values()
    assert best[0].config.index == b.index and best[1].cost == 1.2  # a's median is 1.6, not its lucky 1.0
    (ranked,) = record.ranked_by_workload(lucky[:2] + steady).values()  # two: the lower middle one
    assert [(inp.config.index, r.cost) for inp, r in ranked] == [(a.index, 1.0), (b.index, 1.2)]

def test_readings_taken_cold_alone_rank_their_workload_and_round_trip(tmp_path):
    """A workload with readings timed with the weights out of the caches (``flush``, as deployed)
    is ranked by those alone, whatever its warm readings say (warm b is faster; cold a is); one
    without keeps its warm ranking; the flag survives the log, and an old line without it reads
    warm."""
    from tune.measure import MeasureInput, MeasureResult

    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    other = autotvm.task.create("test/matmul", args=(32, 32, 32, "float32"), target="llvm")
    a, b = task.config_space.get(0), task.config_space.get(1)
    rows = [(MeasureInput(task.target, task, a), MeasureResult((1.0,), 0, 1.0, 0.0)),
            (MeasureInput(task.target, task, b), MeasureResult((0.5,), 0, 1.0, 0.0)),
            (MeasureInput(task.target, task, a), MeasureResult((2.0,), 0, 1.0, 0.0, True)),
            (MeasureInput(task.target, task, b), MeasureResult((2.5,), 0, 1.0, 0.0, True)),
            (MeasureInput(other.target, other, a), MeasureResult((1.0,), 0, 1.0, 0.0))]
    log = tmp_path / "cold.jsonl"
    record.save_to_file(rows, str(log))
    back = list(record.load_from_file(str(log)))
    assert [res.flush for _, res in back] == [False, False, True, True, False]
    assert '"flush"' not in log.read_text().splitlines()[0]  # warm lines as before
    ranked = {wl: rows_of for (_, wl), rows_of in record.ranked_by_workload(back).items()}
    assert [(inp.config.index, res.cost) for inp, res in ranked[task.workload]] == [(a.index, 2.0), (b.index, 2.5)]
    assert [res.cost for _, res in ranked[other.workload]] == [1.0]
    # readings timed inside whole runs of the model (``in_place``) outrank both, and round trip
    rows.append((MeasureInput(task.target, task, b), MeasureResult((3.0, 2.0, 4.0), 0, 1.0, 0.0, in_place=True)))
    log = tmp_path / "in_place.jsonl"
    record.save_to_file(rows, str(log))
    back = list(record.load_from_file(str(log)))
    assert [res.in_place for _, res in back] == [False] * 5 + [True] and back[-1][1].costs == (3.0, 2.0, 4.0)
    assert '"in_place"' not in "".join(log.read_text().splitlines()[:5])
    ranked = {wl: rows_of for (_, wl), rows_of in record.ranked_by_workload(back).items()}
    assert [(inp.config.index, res.cost) for inp, res in ranked[task.workload]] == [(b.index, 3.0)]
    # a log of an older version whose in-place lines also say "scaled" still loads (the field ignored)
    old = log.read_text().replace('"in_place": true', '"in_place": true, "scaled": true')
    log.write_text(old)
    assert [res.in_place for _, res in record.load_from_file(str(log))] == [False] * 5 + [True]


@pytest.mark.parametrize("name", ["random", "grid", "ga", "xgb", "xgb/xgboost"])
def test_tutorial_flow(name, measure, tmp_path, capsys):
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    kwargs = {
        "xgb": {"plan_size": 4, "seed": 0, "model": "numpy"},
        "xgb/xgboost": {"plan_size": 4, "seed": 0, "model": "xgboost"},
        "ga": {"pop_size": 4, "seed": 0},
        "random": {"seed": 0},
    }
    if name == "xgb/xgboost":
        pytest.importorskip("xgboost")  # the optional extra: pip install 'tessera[tune]'
    tuner = autotvm.tuner.get_tuner(name.split("/")[0], task, **kwargs.get(name, {}))
    log = str(tmp_path / "mm.log")
    tuner.tune(
        n_trial=10,
        measure_option=measure,
        callbacks=[autotvm.callback.progress_bar(10), autotvm.callback.log_to_file(log)],
    )
    recs = list(record.load_from_file(log))
    assert len(recs) == 10
    assert recs[0][0].config.index == task.default_config().index  # the default is measured first
    assert len({r[0].config.index for r in recs}) == 10
    assert all(r[1].error_no == 0 for r in recs), [r[1] for r in recs if r[1].error_no]
    assert "Current/Best" in capsys.readouterr().out and tuner.best_flops > 0
    best = min(recs, key=lambda r: np.mean(r[1].costs))[0].config
    hist = autotvm.apply_history_best(log)
    assert hist.query("llvm", task.workload).index == best.index
    with hist:
        s, args = matmul(*SHAPE)
    assert _inner_tiles(s, args) == (best["tile_y"].size[-1], best["tile_x"].size[-1])
    _check_matmul(codegen.build(s, args))


def test_measure_first_configs_follow_the_default_before_any_search(measure, tmp_path):
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    space = task.config_space
    default = task.default_config()
    first = [space.get(i) for i in range(len(space)) if i != default.index][:3]
    tuner = autotvm.tuner.get_tuner("random", task, seed=0)
    log = str(tmp_path / "first.log")
    tuner.measure_first = [first[0], default, first[1]]  # the default in it is measured once
    tuner.tune(n_trial=5, measure_option=measure, callbacks=[autotvm.callback.log_to_file(log)])
    order = [inp.config.index for inp, _ in record.load_from_file(log)]
    assert order[:3] == [default.index, first[0].index, first[1].index] and len(set(order)) == 5

    again = autotvm.tuner.get_tuner("random", task, seed=1)  # resumed: what the log holds is not measured again
    again.load_history(list(record.load_from_file(log)))
    again.measure_first = [first[1], first[2]]
    again.tune(n_trial=1, measure_option=measure, callbacks=[autotvm.callback.log_to_file(log)])
    assert [inp.config.index for inp, _ in record.load_from_file(log)][5:] == [first[2].index]


def test_resume_skips_measured_configs(measure, tmp_path):
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    log = str(tmp_path / "resume.log")
    autotvm.tuner.RandomTuner(task, seed=1).tune(6, measure, callbacks=[autotvm.callback.log_to_file(log)])
    tuner = autotvm.tuner.XGBTuner(task, plan_size=4, seed=1, model="numpy")
    tuner.load_history(record.load_from_file(log))
    assert tuner.best_flops > 0 and len(tuner.visited) == 6
    tuner.tune(6, measure, callbacks=[autotvm.callback.log_to_file(log)])
    indices = [r[0].config.index for r in record.load_from_file(log)]
    assert len(indices) == 12 and len(set(indices)) == 12  # nothing measured twice, the default included


def test_transfer_learning_warms_the_model(measure, tmp_path):
    other = autotvm.task.create("test/matmul", args=(32, 64, 64, "float32"), target="llvm")
    log = str(tmp_path / "other.log")
    autotvm.tuner.RandomTuner(other, seed=2).tune(8, measure, callbacks=[autotvm.callback.log_to_file(log)])
    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    tuner = autotvm.tuner.XGBTuner(task, plan_size=4, seed=2, model="numpy")
    tuner.load_history(record.load_from_file(log), min_seed_records=8)
    assert tuner.cost_model.base_model.fitted and len(tuner.trials) == 4  # a first plan from the other task's records
    assert not tuner.visited


@pytest.mark.parametrize("backend,loss", [("numpy", "rank"), ("numpy", "reg"), ("xgboost", "rank")])
def test_cost_model_ranks_held_out_points(backend, loss):
    from tune.cost_model import make_model

    if backend == "xgboost":
        pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (300, 6))
    y = np.exp(2 * x[:, 0]) + np.where(x[:, 1] > 0.5, 1.5, 0.0) - x[:, 2] ** 2  # throughput-like, > 0
    groups = np.repeat([0, 1], 100)  # two tasks (pairs never mix them); the rest held out
    model = make_model(loss, backend).fit(x[:200], y[:200], groups)
    pred = model.predict(x[200:])
    rank = lambda v: np.argsort(np.argsort(v))  # noqa: E731
    assert np.corrcoef(rank(pred), rank(y[200:]))[0, 1] > 0.85


@pytest.mark.parametrize("feature_type", ["itervar", "knob", "curve"])
def test_features_have_one_length_and_train_the_model(feature_type):
    from tune.autotvm.tuner.xgb_tuner import XGBoostCostModel, extract

    task = autotvm.task.create("test/knobs", args=(48,), target="llvm")
    n = len(task.config_space)
    vecs = [extract(task, task.config_space.get(i), feature_type) for i in range(0, n, 5)]
    assert len({v.shape for v in vecs}) == 1 and all(np.isfinite(v).all() for v in vecs)
    assert len({v.tobytes() for v in vecs}) > 1  # configs are told apart
    model = XGBoostCostModel(task, feature_type, "rank", model="numpy")
    model.fit(list(range(0, n, 5)), [float(i % 7) for i in range(0, n, 5)])
    assert model.fitted and np.isfinite(model.predict(list(range(n)))).all()


def test_itervar_features_read_the_loop_nest():
    from tune import features

    task = autotvm.task.create("test/matmul", args=SHAPE, target="llvm")
    cfg = task.config_space.get(
        task.config_space.index_of(
            {"tile_y": autotvm.SplitEntity((8, 8)), "tile_x": autotvm.SplitEntity((4, 16))}
        )
    )
    body, ranges = features.loop_nest(*task.instantiate(cfg))
    main = max(features.collect_statements(body, ranges), key=lambda st: st.iters)
    assert [ext for _, ext, _ in main.loops] == [8, 4, 64, 8, 16]  # yo, xo, k, yi, xi
    assert main.iters == 64**3 and main.flops == 2  # one multiply, one add
    assert [a[0] for a in main.accesses] == ["C", "C", "A", "B"]  # the store, then the loads


# ------------------------------------------- tuners on a synthetic landscape --
@autotvm.template("test/landscape")
def landscape():
    cfg = autotvm.get_config()
    cfg.define_knob("a", list(range(30)))
    cfg.define_knob("b", list(range(30)))
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    return te.create_schedule(B.op), [A, B]


class _FakeBuilder:
    """Builds nothing: the runner below scores configs by formula (no processes, deterministic)."""

    n_parallel = 4

    def set_task(self, task):
        pass

    def build(self, inputs):
        return [None] * len(inputs)


class _FakeRunner:
    check_correctness = False

    def set_task(self, task, ref):
        pass

    def run(self, inputs, builds):
        out = []
        for inp in inputs:
            a, b = inp.config["a"].val, inp.config["b"].val
            cost = 1e-3 * (1 + (a - 21) ** 2 + (b - 7) ** 2)  # best: a=21, b=7
            out.append(autotvm.MeasureResult((cost,), 0, 0.0, 0.0))
        return out


def _landscape_best(tuner, n_trial, **kw):
    option = {"builder": _FakeBuilder(), "runner": _FakeRunner()}
    tuner.tune(n_trial, option, **kw)
    cfg = tuner.best_config
    return (cfg["a"].val - 21) ** 2 + (cfg["b"].val - 7) ** 2


def test_xgb_finds_the_optimum_of_a_smooth_landscape():
    task = autotvm.task.create("test/landscape", args=(), target="llvm")
    assert len(task.config_space) == 900
    for seed in (0, 1):
        for loss in ("rank", "reg"):
            tuner = autotvm.tuner.XGBTuner(
                task,
                plan_size=8,
                feature_type="knob",
                loss_type=loss,
                model="numpy",
                seed=seed,
                search_share=None,
            )
            assert _landscape_best(tuner, 48) <= 2, (seed, loss)  # random: ~38% chance to get this close
    ga = autotvm.tuner.GATuner(task, pop_size=8, seed=0)
    assert _landscape_best(ga, 64) <= 20


def test_early_stopping():
    task = autotvm.task.create("test/landscape", args=(), target="llvm")
    tuner = autotvm.tuner.GridSearchTuner(task)  # index order: a varies fastest, b = 0 for 30 trials
    mon = autotvm.callback.Monitor()
    _landscape_best(tuner, 200, early_stopping=10, callbacks=[mon])
    # the default (a=0, b=0) first, then a=1, 2, ... with b=0: better up to a=21 (trial 21); batches of
    # 4 stop at the first boundary at least 10 trials later
    assert tuner.best_iter == 21 and len(mon.records) == 32


def test_a_records_cost_is_the_median_of_its_repeats():
    from tune.measure import MeasureInput, MeasureResult

    assert MeasureResult((1.0, 1.4, 1.0), 0, 1.0, 0.0).cost == 1.0
    assert MeasureResult((1.0, 2.0), 0, 1.0, 0.0).cost == 1.5
    task = autotvm.task.create("test/matmul", args=(32, 32, 32, "float32"), target="llvm")
    a, b = task.config_space.get(0), task.config_space.get(1)
    rows = [(MeasureInput(task.target, task, a), MeasureResult((1.0e-3, 1.4e-3, 1.0e-3), 0, 1.0, 0.0)),
            (MeasureInput(task.target, task, b), MeasureResult((1.1e-3,) * 3, 0, 1.0, 0.0))]
    (best,) = record.best_by_workload(rows).values()
    assert best[0].config.index == a.index  # one slow repeat does not cost it its place (mean 1.13 ms)
