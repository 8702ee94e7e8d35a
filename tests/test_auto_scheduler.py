"""auto_scheduler: sketches legal and correct, random annotations checked with guard canaries,
records, the search loop, resume, and the errors of bad input."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import te
import topi
from helpers import check_build
from schedule import ScheduleError
from schedule.trace import Trace
from tune import auto_scheduler
from tune.auto_scheduler.sketch import generate_sketches
from tune.errors import TuneError
from tune.record import RecordWarning


def matmul_add(n, l, m):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.placeholder((n, m), name="C")
    k = te.reduce_axis((0, l), name="k")
    mm = te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                    attrs={"layout_free_placeholders": [B]})
    out = te.compute((n, m), lambda i, j: mm[i, j] + C[i, j], name="out")
    return [A, B, C, out], lambda a, b, c: a @ b + c


def matmul(n, l, m):
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    k = te.reduce_axis((0, l), name="k")
    return [A, B, te.compute((n, m), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")], lambda a, b: a @ b


def conv(n=1, c=4, hw=9, f=6):
    data = te.placeholder((n, c, hw, hw), name="data")
    w = te.placeholder((f, c, 3, 3), name="w")
    out = topi.nn.conv2d_nchw(data, w, 1, 1, 1)
    relu = te.compute(out.shape, lambda *i: te.max(out(*i), 0.0), name="relu")

    def ref(d, k):
        from topi.testing import conv2d_nchw_python

        return np.maximum(conv2d_nchw_python(d, k, 1, 1), 0)

    return [data, w, relu], ref


def bare_conv(c: int, hw: int, f: int, k: int):
    """A bare NCHW k x k conv (stride 1, same padding through a pad stage when k > 1), weights
    layout-free, and its numpy reference."""
    p = k // 2
    data = te.placeholder((1, c, hw, hw), name="data")
    w = te.placeholder((f, c, k, k), name="w")
    pad = data if not p else te.compute((1, c, hw + 2 * p, hw + 2 * p), lambda n, ci, y, x: te.if_then_else(
        te.all(y >= p, y < hw + p, x >= p, x < hw + p), data[n, ci, y - p, x - p], 0.0), name="pad")
    rc, ry, rx = te.reduce_axis((0, c), "rc"), te.reduce_axis((0, k), "ry"), te.reduce_axis((0, k), "rx")
    out = te.compute((1, f, hw, hw), lambda n, ff, y, x: te.sum(pad[n, rc, y + ry, x + rx] * w[ff, rc, ry, rx],
                                                                   axis=[rc, ry, rx]),
                     name="conv", attrs={"layout_free_placeholders": [w]})

    def ref(d, kw):
        from topi.testing import conv2d_nchw_python

        return conv2d_nchw_python(d, kw, 1, p)

    return [data, w, out], ref


def conv_free(c=5, hw=9, f=20):
    """A bare 3x3 NCHW conv (pad stage, weights layout-free) that no tile divides: 9x9 image, 20 channels."""
    return bare_conv(c, hw, f, 3)


def softmax(n=5, m=37):
    x = te.placeholder((n, m), name="x")

    def ref(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    return [x, topi.nn.softmax(x, axis=1)], ref


def stencil(n=67):
    A = te.placeholder((n,), name="A")
    P = te.compute((n + 2,), lambda i: te.if_then_else(te.all(i >= 1, i <= n), A[i - 1], 0.0), name="P")
    B = te.compute((n,), lambda i: P[i] + P[i + 1] + P[i + 2], name="B")
    return [A, B], lambda a: np.convolve(a, np.ones(3, a.dtype), mode="same")


def chain(n=13, m=29):
    A = te.placeholder((n, m), name="A")
    X = te.compute((n, m), lambda i, j: te.exp(A[i, j]), name="X")
    Y = te.compute((n, m), lambda i, j: X[i, j] * 2.0 + 1.0, name="Y")
    Z = te.compute((n, m), lambda i, j: te.max(Y[i, j], 1.5), name="Z")
    return [A, Z], lambda a: np.maximum(np.exp(a) * 2 + 1, 1.5)


def row_sum(n=3, m=301):
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    return [A, te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="S")], lambda a: a.sum(axis=1)


COMPUTES = {
    "matmul_add": lambda: matmul_add(21, 13, 35),
    "matmul": lambda: matmul(12, 50, 24),
    "conv": conv,
    "conv_free": conv_free,
    "softmax": softmax,
    "stencil": stencil,
    "chain": chain,
    "row_sum": row_sum,
}


def _task(tensors, name="t"):
    return auto_scheduler.SearchTask(compute_dag=auto_scheduler.ComputeDAG(tensors), workload_key=name,
                                     target="llvm")


@pytest.mark.parametrize("name", sorted(COMPUTES))
def test_random_annotations_of_every_sketch_are_correct(name):
    tensors, ref = COMPUTES[name]()
    dag = auto_scheduler.ComputeDAG(tensors)
    sketches = generate_sketches(dag, _task(tensors).target)
    assert sketches
    rng = np.random.default_rng(7)
    for sk in sketches:
        for _ in range(2):
            genes = sk.sample(rng)
            assert sk.valid(genes)
            sch = sk.realize(genes)
            check_build(sch, tensors, ref, rtol=1e-4, atol=1e-4)
            # the trace alone rebuilds the same program
            again = Trace.from_json(json.loads(json.dumps(sch.trace.to_json()))).apply(dag.schedule())
            assert again.trace == sch.trace


def test_sketch_rules():
    kinds = lambda tensors: [sk.describe() for sk in generate_sketches(auto_scheduler.ComputeDAG(tensors), None)]
    assert kinds(matmul_add(8, 8, 8)[0]) == ["matmul:tile/fused", "out:skip, matmul:tile/inplace"]
    assert kinds(matmul(8, 8, 8)[0]) == ["C:tile/cache", "C:tile/inplace"]
    assert kinds(row_sum()[0]) == ["S:rfactor", "S:skip"]
    assert kinds(chain()[0]) == ["Z:skip, Y:inline, X:inline"]
    conv_kinds = kinds(conv()[0])
    assert conv_kinds[0].startswith("conv2d_nchw:tile/fused") or "tile/fused" in conv_kinds[0]


def test_mutations_stay_valid():
    tensors, _ = conv()
    sk = generate_sketches(auto_scheduler.ComputeDAG(tensors), None)[0]
    rng = np.random.default_rng(0)
    genes = sk.sample(rng)
    for _ in range(50):
        genes = sk.mutate(genes, rng)
        assert sk.valid(genes)


@pytest.mark.parametrize("backend", ["numpy", "xgboost"])
def test_pack_sum_model_learns_sums_of_stores(backend):
    from tune.auto_scheduler.cost_model import pack_sum_model

    pytest.importorskip("xgboost") if backend == "xgboost" else None
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(600, 4))
    packs = np.repeat(np.arange(200), 3)
    y = np.bincount(packs, x[:, 0] * 2 + x[:, 1])
    y = y / y.max()
    model = pack_sum_model(backend, 40, 4, 0).fit_packs(x[:300], packs[:300], y[:100])
    pred = np.bincount(packs[300:] - 100, model.predict(x[300:]))  # programs it has not seen
    rank = lambda v: np.argsort(np.argsort(v))
    assert np.corrcoef(rank(pred), rank(y[100:]))[0, 1] > 0.8


def test_store_features_see_what_the_unroll_pragma_unrolls():
    from tune.features import store_vectors

    tensors, _ = matmul(16, 8, 16)
    C = tensors[-1]
    rows = {}
    for step in (0, 16, 512):
        s = te.create_schedule(C.op)
        i, j = s[C].op.axis
        jo, ji = s[C].split(j, factor=4)
        s[C].reorder(i, jo, s[C].op.reduce_axis[0], ji)
        if step:
            s[C].pragma(i, "auto_unroll_max_step", step)
        rows[step] = store_vectors(s, tensors)[:, -3:]
    log = lambda x: float(np.log2(x + 1))
    # the update's loops under i: jo (4), k (8), ji (4); 16 unrolls ji alone (ji x k would run 32 times)
    np.testing.assert_allclose(rows[0], 0)
    np.testing.assert_allclose(rows[16][-1], [log(16), log(4), 1], rtol=1e-6)
    np.testing.assert_allclose(rows[512][-1], [log(512), log(128), 3], rtol=1e-6)


@pytest.mark.parametrize("clock", ["wall", "thread_cpu"])
def test_tune_records_apply_best_and_print_best(tmp_path, clock):
    tensors, ref = matmul_add(32, 16, 24)
    task = _task(tensors, "test_mm_add")
    log = str(tmp_path / "mm.json")
    opts = auto_scheduler.TuningOptions(num_measure_trials=6, num_measures_per_round=3, verbose=0,
                                        runner=auto_scheduler.LocalRunner(number=2, min_repeat_ms=0, clock=clock),
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)])
    policy = auto_scheduler.SketchPolicy(task, auto_scheduler.RandomModel(), verbose=0)
    task.tune(opts, search_policy=policy)
    rows = auto_scheduler.load_records(log)
    assert len(rows) == 6 and all(r.error_no == 0 and r.clock == clock for _, r in rows)
    sch, args = task.apply_best(log)
    check_build(sch, args, ref, rtol=1e-4, atol=1e-4)
    code = task.print_best(log)
    fresh = task.compute_dag.schedule()
    A, B, C, out = tensors
    exec(code, {"s": fresh, "A": A, "B": B, "C": C, "out": out, "matmul": out.op.input_tensors[0]})
    check_build(fresh, args, ref, rtol=1e-4, atol=1e-4)


def test_resume_is_exact(tmp_path):
    tensors, _ = matmul(16, 16, 16)
    task = _task(tensors, "test_resume")
    log = str(tmp_path / "r.json")
    model = auto_scheduler.XGBModel(num_warmup_sample=2)
    policy = auto_scheduler.SketchPolicy(task, model, seed=3, verbose=0)
    opts = auto_scheduler.TuningOptions(num_measure_trials=6, num_measures_per_round=3, verbose=0,
                                        runner=auto_scheduler.LocalRunner(number=1, min_repeat_ms=0),
                                        measure_callbacks=[auto_scheduler.RecordToFile(log)])
    task.tune(opts, search_policy=policy)
    model2 = auto_scheduler.XGBModel(num_warmup_sample=2)
    model2.update_from_file(log)
    resumed = auto_scheduler.SketchPolicy(task, model2, seed=3, verbose=0,
                                          init_search_callbacks=[auto_scheduler.PreloadMeasuredStates(log)])
    assert {k: c for k, (_, c) in resumed.measured.items()} == {k: c for k, (_, c) in policy.measured.items()}
    probe = [st for st, _ in policy.measured.values()]
    np.testing.assert_array_equal(model2.predict(task, probe), model.predict(task, probe))
    assert [s.key() for s in resumed.search_round(3)] == [s.key() for s in policy.search_round(3)]


def test_search_realises_in_the_builders_workers_as_here():
    """A round realised and scored in the builder's worker processes draws the same programs, with
    the same features, as one realised in this process."""
    from tune.measure import MeasureInput, MeasureResult
    from tune.measure.builder import LocalBuilder

    tensors, _ = matmul(16, 24, 40)
    task = _task(tensors, "test_pool")
    builder = LocalBuilder(n_parallel=2)
    try:
        builder.set_task(task)
        rounds = []
        for pool in (None, builder):
            policy = auto_scheduler.SketchPolicy(task, auto_scheduler.RandomModel(), seed=1, verbose=0)
            keys = []
            for k in range(2):  # the second round's evolution draws children scored in the first
                states = policy.search_round(8, pool=pool)
                keys.append([s.key() for s in states])
                policy.note_measured([MeasureInput(task.target, task, s) for s in states],
                                     [MeasureResult((1e-3 * (j + 1),), 0, 0.0, 0.0) for j in range(len(states))])
            rounds.append((keys, {k: None if v is None else v.tobytes() for k, v in policy._features.items()}))
    finally:
        builder.close()
    assert rounds[0] == rounds[1] and len(rounds[0][1]) >= 16


def test_failing_candidate_costs_one_trial(tmp_path):
    tensors, _ = matmul(8, 8, 8)
    task = _task(tensors, "test_bad")
    good = task.default_config()
    bad = auto_scheduler.State(Trace.from_json([["split", "C", {"parent": "nope", "factor": 2, "nparts": None}]]))
    from tune.measure import MeasureInput
    from tune.measure.option import create_measure_batch

    opts = auto_scheduler.TuningOptions(runner=auto_scheduler.LocalRunner(number=1, min_repeat_ms=0))
    batch = create_measure_batch(task, opts.measure_option())
    res = batch([MeasureInput(task.target, task, bad), MeasureInput(task.target, task, good)])
    assert res[0].error_no == 1 and "names axis 'nope'" in res[0].error_msg
    assert res[1].error_no == 0


def test_log_of_another_workload_is_not_applied(tmp_path):
    tensors, _ = matmul(8, 8, 8)
    task = _task(tensors, "test_one")
    other = _task(matmul(8, 8, 4)[0], "test_two")
    from tune.measure import MeasureInput, MeasureResult
    from tune.auto_scheduler.measure_record import save_records

    log = str(tmp_path / "o.json")
    save_records(log, [MeasureInput(other.target, other, other.default_config())],
                 [MeasureResult((1e-3,), 0, 0.1, 0.0)])
    with open(log, "a") as fh:
        fh.write("{not json\n")
    with pytest.warns(RecordWarning) as caught:
        with pytest.raises(TuneError, match="no valid record"):
            task.apply_best(log)
    text = " ".join(str(w.message) for w in caught)
    assert "o.json:2" in text and "test_two" in text


def test_unknown_workload_and_bad_trace():
    with pytest.raises(TuneError, match="not registered"):
        auto_scheduler.SearchTask(workload_key="never_registered", args=(1,)).compute_dag
    tensors, _ = matmul(8, 8, 8)
    task = _task(tensors)
    with pytest.raises(TuneError, match=r"names axis 'q'.*Leaf axes of C: \[i, j, k\]"):
        task.instantiate(auto_scheduler.State(Trace.from_json([["vectorize", "C", {"iv": "q"}]])))
    with pytest.raises(ScheduleError):
        Trace.from_json([["vectorize", "C", {"iv": "q"}]]).apply(task.compute_dag.schedule())


def test_register_workload_and_compute_dag_print():
    @auto_scheduler.register_workload
    def test_as_workload(n):
        A = te.placeholder((n,), name="A")
        return [A, te.compute((n,), lambda i: A[i] * 2.0, name="B")]

    task = auto_scheduler.SearchTask(func=test_as_workload, args=(8,), target="llvm")
    assert str(task.compute_dag) == "A = PLACEHOLDER [8]\nB(i) = (A[i] * 2.0f)\n"
    assert task.workload_key == '["test_as_workload", 8]'
    again = auto_scheduler.SearchTask(workload_key="test_as_workload", args=(8,))
    assert str(again.compute_dag) == str(task.compute_dag)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        auto_scheduler.register_workload(test_as_workload)


def test_classic_tutorial_flow(tmp_path):
    """The calls of TVM's auto_scheduler_matmul_x86 tutorial, through ``import tessera as tvm``."""
    import tessera as tvm
    from tessera import auto_scheduler as tas

    @tas.register_workload
    def test_tut_matmul_add(N, L, M, dtype):
        A = te.placeholder((N, L), name="A", dtype=dtype)
        B = te.placeholder((L, M), name="B", dtype=dtype)
        C = te.placeholder((N, M), name="C", dtype=dtype)
        k = te.reduce_axis((0, L), name="k")
        mm = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="matmul",
                        attrs={"layout_free_placeholders": [B]})
        return [A, B, C, te.compute((N, M), lambda i, j: mm[i, j] + C[i, j], name="out")]

    target = tvm.target.Target("llvm")
    task = tvm.auto_scheduler.SearchTask(func=test_tut_matmul_add, args=(40, 24, 33, "float32"), target=target)
    assert "matmul(i, j) += (A[i, k] * B[k, j])" in str(task.compute_dag)
    log_file = str(tmp_path / "matmul.json")
    fast = tas.LocalRunner(number=1, min_repeat_ms=0)
    task.tune(tas.TuningOptions(num_measure_trials=4, num_measures_per_round=4, runner=fast,
                                measure_callbacks=[tas.RecordToFile(log_file)], verbose=0))
    sch, args = task.apply_best(log_file)
    assert "produce" in str(tvm.lower(sch, args, simple_mode=True))
    func = tvm.build(sch, args, target)
    a, b, c = (np.random.uniform(size=s).astype(np.float32) for s in ((40, 24), (24, 33), (40, 33)))
    dev = tvm.cpu()
    out = tvm.nd.empty((40, 33), device=dev)
    func(tvm.nd.array(a, device=dev), tvm.nd.array(b, device=dev), tvm.nd.array(c, device=dev), out)
    np.testing.assert_allclose(out.numpy(), a @ b + c, rtol=1e-4)
    assert "s[matmul]" in task.print_best(log_file)
    cost_model = tas.XGBModel()
    cost_model.update_from_file(log_file)
    policy = tas.SketchPolicy(task, cost_model, init_search_callbacks=[tas.PreloadMeasuredStates(log_file)])
    task.tune(tas.TuningOptions(num_measure_trials=2, runner=fast, verbose=0,
                                measure_callbacks=[tas.RecordToFile(log_file)]), search_policy=policy)
    assert len(tas.load_records(log_file)) == 6


def test_vector_tiles_rounded_up_leave_a_correct_tail():
    tensors, ref = matmul_add(21, 13, 35)  # 35 columns: vectors of 8 do not divide them
    dag = auto_scheduler.ComputeDAG(tensors)
    rng = np.random.default_rng(3)
    for sk in generate_sketches(dag, None):
        genes = sk.sample(rng)
        genes["matmul.vpad"] = 1
        genes["matmul.SV"] = [1, 5, 1, 8]  # 40 = 35 rounded up to whole vectors
        genes["matmul.S0"] = [1, 3, 7, 1]
        genes["matmul.pack"] = 1
        assert sk.valid(genes) and sk.accept(genes)[0]
        check_build(sk.realize(genes), tensors, ref, rtol=1e-4, atol=1e-4)


def conv1x1(c=12, hw=20, f=24):
    """A bare NCHW 1x1 conv whose image width (20) whole vectors do not divide."""
    return bare_conv(c, hw, f, 1)


@pytest.mark.parametrize("make", [conv1x1, lambda: matmul_add(24, 13, 40)], ids=["conv1x1", "matmul_add"])
def test_sampled_register_tiles_hold_whole_vectors_and_enough_accumulators(make):
    """Random draws of a tiled stage start from its register tile: whole vectors along the vector
    axis (the 20-wide image rounded up to 24), at least half and at most all of the accumulators the
    registers hold, its other loops unrolled; the programs are correct and parallel over their outer tiles."""
    import math

    from tune.auto_scheduler.plans import Tiled

    tensors, ref = make()
    rng = np.random.default_rng(11)
    for sk in generate_sketches(auto_scheduler.ComputeDAG(tensors), None):
        (plan,) = [p for p in sk.plans if isinstance(p, Tiled)]
        for k in range(6):
            genes = sk.sample(rng)
            assert sk.valid(genes) and sk.accept(genes) == (True, True)
            s3 = [t[3] for t in plan.tiles(genes)]
            v = plan.vaxis(genes)
            budget = plan.register_tile(s3[v])
            assert s3[v] % 8 == 0 and budget // 2 <= math.prod(s3) <= budget, (genes, s3)
            assert plan.tile_registers(s3, v) == math.prod(s3)
            sch = sk.realize(genes)
            unrolled = sum(st.kind == "unroll" for st in sch.trace)
            assert unrolled == sum(t > 1 for a, t in enumerate(s3) if a != v)
            if k < 2:
                check_build(sch, tensors, ref, rtol=1e-4, atol=1e-4)


def test_register_draws_favour_the_templates_tiles():
    """A 1x1 conv's register tiles are drawn by multiply-adds per load and cache line: vectors of
    image columns with 4 channels x 3 rows (the tile a 56-wide ResNet-50 layer ran fastest with,
    which a draw that ignored which input a tile axis indexes almost never took), or 16-channel
    vectors with a row of 6 columns, above 16 channels x 6 rows (a line a broadcast) and 1 channel
    x 14 rows (15 loads); both vector axes are drawn, the programs are correct on an image whose
    width (28) the tiles do not divide, and the draws do not depend on the order they are asked."""
    import collections
    import math

    tensors, ref = bare_conv(8, 28, 32, 1)
    (sk,) = [sk for sk in generate_sketches(auto_scheduler.ComputeDAG(tensors), None) if "conv.vaxis" in sk.by_key]
    (plan,) = [p for p in sk.plans if p.kind == "tile"]
    score = plan.register_score
    assert score([1, 4, 3, 8], 3) > score([1, 16, 1, 6], 1) * 0.85 > score([1, 1, 14, 8], 3)
    assert score([1, 16, 1, 6], 1) > score([1, 16, 6, 1], 1) and score([1, 16, 1, 6], 1) > score([1, 8, 1, 14], 1)
    rng = np.random.default_rng(5)
    drawn = collections.Counter()
    for k in range(120):
        genes = sk.sample(rng)
        assert sk.valid(genes) and sk.accept(genes) == (True, True)
        v = plan.vaxis(genes)
        s3 = [t[3] for t in plan.tiles(genes)]
        drawn[(v, tuple(s3))] += 1
        rows, vectors = math.prod(s3) // s3[v], -(-s3[v] // 8)
        assert 2 * rows >= plan.register_tile(s3[v]) // (8 * vectors)  # half the accumulators or more
        if k < 3 or (v == 3 and s3 == [1, 4, 3, 8] and drawn[(v, tuple(s3))] == 1):
            check_build(sk.realize(genes), tensors, ref, rtol=1e-4, atol=1e-4)
    assert {v for v, _ in drawn} == {1, 3}
    assert drawn[(3, (1, 4, 3, 8))] >= 4 and drawn[(3, (1, 1, 14, 8))] <= 1
    assert sum(n for (v, s3), n in drawn.items() if s3[2] > 1 and v == 1 and s3[3] == 1) < 12
    first, again = sk.sample(np.random.default_rng(9)), sk.sample(np.random.default_rng(9))
    assert first == again


def test_a_part_vector_fills_a_register():
    """A 7-wide vector loop (a 7x7 image's columns) takes a whole register per row: 16 channels of
    it would be 16 accumulators and a spill, so such a tile is refused and draws hold at most 14."""
    tensors, _ = conv1x1(c=16, hw=7, f=64)
    (sk,) = [sk for sk in generate_sketches(auto_scheduler.ComputeDAG(tensors), None) if "conv.vaxis" in sk.by_key]
    (plan,) = [p for p in sk.plans if p.kind == "tile"]
    genes = sk.sample(np.random.default_rng(0))
    genes.update({"conv.vaxis": 3, "conv.S1": [1, 2, 2, 16], "conv.S2": [7, 1, 1, 1], "conv.S3": [1, 1, 1, 7]})
    assert plan.tile_registers([1, 16, 1, 7], 3) == 128 > plan.register_tile(7) and not sk.accept(genes)[0]
    genes["conv.S1"] = [1, 4, 2, 8]
    assert sk.accept(genes)[0]
    rng = np.random.default_rng(1)
    for _ in range(20):
        g = sk.sample(rng)
        s3 = [t[3] for t in plan.tiles(g)]
        assert plan.tile_registers(s3, plan.vaxis(g)) <= plan.register_tile(s3[plan.vaxis(g)])
        assert plan.vaxis(g) == 1 and s3[1] % 8 == 0  # draws vectorize whole vectors of channels


def test_packing_a_weight_with_an_axis_of_one_through_the_write_cache():
    """The write cache reads an output axis of extent 1 as 0: the weights a graph's dense kernel
    packs ([1, k, 32] blocks) are still packed by the stage's own axes, and the program is correct."""
    A = te.placeholder((1, 8), name="A")
    W = te.placeholder((1, 8, 32), name="W")
    k = te.reduce_axis((0, 8), name="k")
    P = te.compute((1, 1, 32), lambda i, b, lane: te.sum(A[i, k] * W[b, k, lane], axis=k), name="P",
                   attrs={"layout_free_placeholders": [W]})
    rng = np.random.default_rng(4)
    for sk in generate_sketches(auto_scheduler.ComputeDAG([A, W, P]), None):
        genes = sk.sample(rng)
        genes["P.pack"] = 1
        sch = sk.realize(genes)
        assert any(st.kind == "rewrite_layout" for st in sch.trace)
        check_build(sch, [A, W, P], lambda a, w: np.einsum("ik,bkl->ibl", a, w), rtol=1e-4, atol=1e-4)


def test_channel_vector_tiles_are_correct_and_replay():
    """The output-channel axis as the register tile's vector loop (the write cache laid out with it
    innermost, the weights packed channel-innermost, or read in place): correct where no tile divides
    the image or the channels, and the trace replays and prints."""
    tensors, ref = conv_free()
    dag = auto_scheduler.ComputeDAG(tensors)
    (sk,) = [sk for sk in generate_sketches(dag, None) if "conv.vaxis" in sk.by_key]
    assert sk.by_key["conv.vaxis"].options == (3, 1)  # the image's columns, or the output channels
    rng = np.random.default_rng(5)
    for k, (pad_inline, pack, at) in enumerate([(1, 1, 2), (0, 1, 1), (1, 0, 2), (1, 1, 1)]):
        genes = sk.sample(rng)
        genes.update({"conv.vaxis": 1, "pad.inline": pad_inline, "conv.pack": pack, "conv.at": at,
                      "conv.S1": [1, 1, 5, 4] if k % 2 else [1, 2, 1, 10], "conv.S2": [3, 1, 3, 1],
                      "conv.S3": [3, 1, 1, 3]})
        assert sk.valid(genes) and sk.accept(genes)[0]
        sch = sk.realize(genes)
        assert any(st.kind == "reorder_storage" for st in sch.trace)
        check_build(sch, tensors, ref, rtol=1e-4, atol=1e-4)
        again = Trace.from_json(json.loads(json.dumps(sch.trace.to_json()))).apply(dag.schedule())
        assert again.trace == sch.trace
        assert "reorder_storage(" in str(sch.trace)


@pytest.mark.parametrize("at", [1, 2])
def test_register_tiles_that_leave_a_tail_are_correct_and_replay(at):
    """A register tile need not divide its axis where no weight is packed along it (16 channels x 6
    columns): 20 columns tiled as 24, the splits leave a tail; correct, and the trace
    replays.  Draws take such tiles, and mutations keep them legal."""
    import math

    from tune.auto_scheduler.genes import TileGene

    tensors, ref = conv1x1(c=12, hw=20, f=32)
    dag = auto_scheduler.ComputeDAG(tensors)
    (sk,) = [sk for sk in generate_sketches(dag, None) if "conv.vaxis" in sk.by_key]
    (plan,) = [p for p in sk.plans if p.kind == "tile"]
    rng = np.random.default_rng(2)
    genes = sk.sample(rng)
    genes.update({"conv.vaxis": 1, "conv.pack": 1, "conv.at": at, "conv.S1": [1, 2, 1, 16],
                  "conv.S2": [5, 1, 4, 1], "conv.S3": [1, 2, 2, 6], "conv.R0": [3, 4]})
    assert sk.valid(genes) and sk.accept(genes) == (True, True)
    sch = sk.realize(genes)
    check_build(sch, tensors, ref, rtol=1e-4, atol=1e-4)
    again = Trace.from_json(json.loads(json.dumps(sch.trace.to_json()))).apply(dag.schedule())
    assert again.trace == sch.trace
    # the channels are packed in the weights: their tiles divide; the image's may round up by less than a tile
    assert not sk.by_key["conv.S1"].rounded and sk.by_key["conv.S3"].rounded
    assert not sk.by_key["conv.S3"].valid([1, 2, 2, 7]) and not sk.by_key["conv.S3"].valid([5, 1, 1, 6])
    assert not TileGene("x", 20, 4).valid([1, 2, 2, 6])
    drawn = mutated = 0
    for _ in range(40):
        g = sk.sample(rng)
        drawn += any(math.prod(g[f"conv.S{k}"]) != e for k, e in enumerate(plan.space))
        for _ in range(4):
            g = sk.mutate(g, rng)
            assert sk.valid(g)
        mutated += any(math.prod(g[f"conv.S{k}"]) != e for k, e in enumerate(plan.space))
    assert drawn and mutated


def test_pre_transformed_weights_are_measured_checked_and_match_the_packing():
    """A task measures a packing candidate with its weights pre-packed (folded, as a build does with
    constant weights); the runner packs the reference's weights the same way, so it checks it."""
    from tune import layout
    from tune.measure import MeasureInput
    from tune.measure.option import create_measure_batch

    tensors, ref = conv_free()
    task = _task(tensors, "test_prepacked")
    sk = next(sk for sk in generate_sketches(task.compute_dag, None) if "conv.vaxis" in sk.by_key)
    genes = sk.sample(np.random.default_rng(2))
    genes.update({"conv.vaxis": 1, "conv.pack": 1, "conv.S1": [1, 2, 1, 10]})
    state = auto_scheduler.State(sk.realize(genes).trace, sk.index, genes)
    sch, args, layouts = task.instantiate_with_layouts(state)
    assert [a.name for a in args] == ["data", "w.packed", "conv"] and layouts[0] is None
    lay, shape = layouts[1]
    assert shape == (20, 5, 3, 3)
    w = np.random.default_rng(0).uniform(-1, 1, shape).astype("float32")
    np.testing.assert_array_equal(layout.to_logical(layout.to_blocked(w, lay), lay, shape), w)
    d = np.random.default_rng(1).uniform(-1, 1, (1, 5, 9, 9)).astype("float32")
    out = np.zeros((1, 20, 9, 9), "float32")
    import codegen

    codegen.build(sch, args)(d, layout.to_blocked(w, lay), out)
    np.testing.assert_allclose(out, ref(d, w), rtol=1e-4, atol=1e-4)
    whole, whole_args = task.instantiate(state)  # the default for users: weights as they are
    assert [a.name for a in whole_args] == ["data", "w", "conv"]
    opts = auto_scheduler.TuningOptions(runner=auto_scheduler.LocalRunner(number=1, min_repeat_ms=0))
    batch = create_measure_batch(task, opts.measure_option())
    res = batch([MeasureInput(task.target, task, task.default_config()), MeasureInput(task.target, task, state)])
    assert [r.error_no for r in res] == [0, 0]


def test_pre_transformed_keeps_the_packing_of_a_weight_another_stage_reads():
    from schedule.layout_rewrite import pre_transformed

    A, B = te.placeholder((8, 6), name="A"), te.placeholder((6, 8), name="B")
    k = te.reduce_axis((0, 6), name="k")
    C = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    D = te.compute((6, 8), lambda i, j: B[i, j] * 2.0, name="D")
    for outs, want in (([C, D], ["A", "B", "C", "D"]), ([C], ["A", "B.packed", "C"])):
        s = te.create_schedule([o.op for o in outs])
        s.rewrite_layout(B, s[C], [[6], [2, 4]], [[1, 0], [0, 0], [1, 1]])
        s2, args, packs = pre_transformed(s, [A, B, *outs])
        assert [a.name for a in args] == want and len(packs) == (len(outs) == 1)
        assert len(s.stages) == len(s2.stages) and "B.packed" in [st.name for st in s.stages]  # s unchanged


def test_compute_without_sketches_gets_the_default_schedule():
    from tune.auto_scheduler.search_policy import SketchPolicy

    tensors, _ = chain(4, 4)
    task = _task(tensors, "test_no_sketch")
    policy = SketchPolicy(task, auto_scheduler.RandomModel(), verbose=0)
    policy.sketches = []  # as for a computation no rule applies to
    (state,) = policy.search_round(4)
    assert state.key() == task.default_config().key()


def test_first_round_measures_the_default_schedule_so_the_best_is_never_worse():
    from tune.auto_scheduler.search_policy import SketchPolicy

    tensors, _ = chain(4, 4)
    task = _task(tensors, "test_default_first")
    policy = SketchPolicy(task, auto_scheduler.RandomModel(), verbose=0)
    assert policy.sketches  # the rules apply: the default still goes first
    first = policy.search_round(4)
    assert first[0].key() == task.default_config().key()
    assert task.default_config().key() not in [s.key() for s in first[1:]]
