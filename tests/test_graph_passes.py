"""Graph passes: golden rewrites, numerics against the interpreter, idempotence, the pass table."""

from __future__ import annotations

import importlib
import time

import numpy as np
import pytest

from codegen.target import Target
from graph.interpreter import interpret
from graph.ir import Graph, GraphBuilder
from graph.passes import (
    OPTDB,
    PassDatabase,
    PassProfile,
    eliminate_dead_code,
    fold_constants,
    fold_scale_into_conv,
    merge_common_subexpressions,
    optimize,
    simplify_arithmetic,
    simplify_inference,
)

# The package re-exports each pass under its module's name: reach the modules themselves.
fold_module = importlib.import_module("graph.passes.fold_constants")
cse_module = importlib.import_module("graph.passes.merge_common_subexpressions")

RNG = np.random.default_rng(7)
AVX2 = "llvm -mcpu=x86-64-v3"
AVX512 = "llvm -mcpu=x86-64-v4"


def rand(*shape, positive=False):
    a = RNG.standard_normal(shape).astype("float32")
    return np.abs(a) + 0.5 if positive else a


def op_list(graph: Graph) -> list:
    return [n.op for n in graph.nodes if not n.is_constant]


def check_same(before: Graph, after: Graph, rtol=1e-5, atol=1e-5) -> None:
    """``after`` computes what ``before`` does, on random inputs (positive for a variance ``v``)."""
    feed = {v.name: rand(*v.shape, positive=v.name == "v") for v in before.inputs}
    for a, b in zip(interpret(before, feed), interpret(after, feed)):
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def check_idempotent(fn, graph: Graph) -> Graph:
    out = fn(graph)
    assert fn(out) is out, f"{fn.__name__} changed its own output"
    return out


def golden(text: str) -> str:
    return "\n".join(line[8:] if line.startswith(" " * 8) else line for line in text.strip("\n").splitlines())


# ---------------------------------------------------------------- eliminate_dead_code


def test_eliminate_dead_code_drops_unreachable_nodes():
    b = GraphBuilder()
    x = b.input("x", (4,))
    a = b.op("relu", x, name="a")
    dead = b.op("exp", x, name="dead")
    live = b.finish(a)
    g = Graph(live.inputs, live.nodes + (dead.node,), live.outputs)
    out = check_idempotent(eliminate_dead_code, g)
    assert str(out) == golden("""
        graph main(%x: float32[4]) {
          %a: float32[4] = relu(%x)
          return %a
        }""")
    assert eliminate_dead_code(live) is live


# ---------------------------------------------------------------- merge_common_subexpressions


def test_cse_merges_same_op_inputs_and_attrs():
    b = GraphBuilder()
    x = b.input("x", (4,))
    c1 = b.const(np.arange(4, dtype="float32"), "c")
    c2 = b.const(np.arange(4, dtype="float32"), "c")
    a1 = b.op("add", x, c1, name="a")
    a2 = b.op("add", x, c2, name="a")
    g = b.finish(b.op("multiply", a1, a2, name="m"))
    out = check_idempotent(merge_common_subexpressions, g)
    assert str(out) == golden("""
        graph main(%x: float32[4]) {
          %c = constant float32[4]
          %a: float32[4] = add(%x, %c)
          %m: float32[4] = multiply(%a, %a)
          return %m
        }""")
    check_same(g, out)


def test_cse_compares_attrs_by_value():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    t1 = b.op("transpose", x, axes=(1, 0))
    t2 = b.op("transpose", x, axes=[1, 0])  # a list equals the tuple
    r1 = b.op("reshape", x, newshape=(6,))
    r2 = b.op("reshape", x, newshape=(3, 2))  # different attrs: kept
    g = b.finish([t1, t2, r1, r2])
    out = merge_common_subexpressions(g)
    assert op_list(out) == ["transpose", "reshape", "reshape"]
    assert out.outputs[0] is out.outputs[1]


def test_cse_big_constants_compare_in_full():
    size = cse_module.SMALL_BYTES  # float32: 4x the limit in bytes
    base = np.zeros(size, "float32")
    other = base.copy()
    other[1] = 1.0  # not at a sampled position: the fingerprints collide
    assert cse_module._fingerprint(base) == cse_module._fingerprint(other)
    b = GraphBuilder()
    x = b.input("x", (size,))
    outs = [b.op("add", x, b.const(arr, "w")) for arr in (base, base.copy(), other)]
    out = merge_common_subexpressions(b.finish(outs))
    assert len([n for n in out.nodes if n.is_constant]) == 2
    assert out.outputs[0] is out.outputs[1] and out.outputs[2] is not out.outputs[0]


def test_cse_constants_need_same_dtype_shape_and_bits():
    b = GraphBuilder()
    x = b.input("x", (2,), "float32")
    consts = [
        np.zeros(2, "float32"),
        np.array([0.0, -0.0], "float32"),  # equal by ==, not by bits
        np.zeros((1, 2), "float32"),
        np.zeros(2, "int32"),
    ]
    g = b.finish([b.const(c, "c") for c in consts] + [x])
    assert merge_common_subexpressions(g) is g
    big = np.zeros(cse_module.SMALL_BYTES, "float32")
    big_neg = big.copy()
    big_neg[1] = -0.0  # compared in full, still by bits
    g = b.finish([b.const(big, "z"), b.const(big_neg, "z")])
    assert merge_common_subexpressions(g) is g


def test_cse_merges_multi_output_nodes():
    b = GraphBuilder()
    x = b.input("x", (6,))
    s1 = b.op("split", x, sizes=(2, 4))
    s2 = b.op("split", x, sizes=(2, 4))
    g = b.finish([b.op("add", s1[0], s2[0]), b.op("exp", s2[1])])
    out = check_idempotent(merge_common_subexpressions, g)
    assert op_list(out) == ["split", "add", "exp"]
    check_same(g, out)


# ---------------------------------------------------------------- fold_constants


def test_fold_constants_golden():
    b = GraphBuilder()
    x = b.input("x", (1, 4, 2, 2))
    s = b.op("shape_of", x, name="s")
    var = b.const(rand(4, positive=True), "var")
    eps = b.const(np.float32(1e-5), "eps")
    r = b.op("sqrt", b.op("add", var, eps, name="d"), name="r")
    g = b.finish([b.op("multiply", x, b.op("reshape", r, newshape=(4, 1, 1), name="rc"), name="y"), s])
    out = check_idempotent(fold_constants, g)
    assert str(out) == golden("""
        graph main(%x: float32[1, 4, 2, 2]) {
          %rc = constant float32[4, 1, 1]
          %y: float32[1, 4, 2, 2] = multiply(%x, %rc)
          %s = constant int64[4]
          return %y, %s
        }""")
    check_same(g, out)
    np.testing.assert_array_equal(out.outputs[1].node.attrs["value"], [1, 4, 2, 2])


def test_fold_constants_full_and_multi_output():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    w = b.op("full", shape=(6, 3), value=0.5, dtype="float32", name="w")
    parts = b.op("split", w, sizes=(2, 4), axis=0, name="parts")
    wt = b.op("transpose", parts[1], axes=(1, 0), name="wt")
    g = b.finish([b.op("dense", x, parts[0]), wt])
    out = check_idempotent(fold_constants, g)
    assert op_list(out) == ["dense"]
    folded = out.outputs[1].node.attrs["value"]
    assert folded.flags.c_contiguous and folded.shape == (3, 4)
    check_same(g, out)


def test_fold_constants_guards_expanding_ops(monkeypatch):
    monkeypatch.setattr(fold_module, "EXPAND_LIMIT_BYTES", 1024)
    b = GraphBuilder()
    x = b.input("x", (64, 64))
    one = b.const(np.float32(1.0), "one")
    big = b.op("broadcast_to", one, shape=(64, 64), name="big")  # 16 KB from 4 bytes: kept
    small = b.op("broadcast_to", one, shape=(4, 4), name="small")  # under the limit: folded
    full = b.op("full", shape=(64, 64), value=2.0, dtype="float32", name="full")  # always folded
    g = b.finish([b.op("add", x, big), b.op("multiply", x, full), small])
    out = check_idempotent(fold_constants, g)
    assert op_list(out) == ["broadcast_to", "add", "multiply"]
    check_same(g, out)


def test_fold_constants_names_the_node_that_failed(monkeypatch):
    class Broken:
        def evaluate(self, arrays, attrs):
            raise ValueError("no numpy twin")

    b = GraphBuilder()
    g = b.finish(b.op("exp", b.const(np.ones(3, "float32"), "c"), name="e"))
    monkeypatch.setattr(fold_module, "get_op", lambda op: Broken())
    with pytest.raises(
        RuntimeError, match=r"evaluating node 'e' \(exp\) on constants \(float32\[3\]\) failed"
    ):
        fold_constants(g)


# ---------------------------------------------------------------- simplify_inference


def batch_norm_graph(c=8, axis=1, shape=None, const_stats=True):
    b = GraphBuilder()
    x = b.input("x", shape or (1, c, 4, 4))
    stats = [rand(c), rand(c), rand(c), rand(c, positive=True)]
    names = ["g", "b", "m", "v"]
    if const_stats:
        params = [b.const(s, n) for s, n in zip(stats, names)]
    else:
        params = [b.input(n, (c,)) for n in names]
    d = b.op("identity", x, name="d")
    return b.finish(b.op("batch_norm", d, *params, axis=axis, epsilon=1e-5, name="bn"))


def test_simplify_inference_golden():
    g = batch_norm_graph()
    out = check_idempotent(simplify_inference, g)
    body = [line for line in str(out).splitlines() if "constant" not in line or "eps" in line]
    assert "\n".join(body) == golden("""
        graph main(%x: float32[1, 8, 4, 4]) {
          %bn.eps = constant float32[]
          %bn.var_eps: float32[8] = add(%v, %bn.eps)
          %bn.std: float32[8] = sqrt(%bn.var_eps)
          %bn.scale: float32[8] = divide(%g, %bn.std)
          %bn.scale_c: float32[8, 1, 1] = reshape(%bn.scale, newshape=(8, 1, 1))
          %bn.mul: float32[1, 8, 4, 4] = multiply(%x, %bn.scale_c)
          %bn.mean_scale: float32[8] = multiply(%m, %bn.scale)
          %bn.shift: float32[8] = subtract(%b, %bn.mean_scale)
          %bn.shift_c: float32[8, 1, 1] = reshape(%bn.shift, newshape=(8, 1, 1))
          %bn: float32[1, 8, 4, 4] = add(%bn.mul, %bn.shift_c)
          return %bn
        }""")
    check_same(g, out)
    assert op_list(fold_constants(out)) == ["multiply", "add"]


@pytest.mark.parametrize("axis,shape", [(1, (2, 8, 3, 3)), (-1, (5, 8)), (0, (8, 3))])
def test_simplify_inference_axes_and_runtime_stats(axis, shape):
    for const_stats in (True, False):
        g = batch_norm_graph(axis=axis, shape=shape, const_stats=const_stats)
        out = simplify_inference(g)
        assert "batch_norm" not in op_list(out) and "identity" not in op_list(out)
        check_same(g, out)


def test_simplify_inference_identity_output_becomes_input():
    b = GraphBuilder()
    x = b.input("x", (3,))
    out = simplify_inference(b.finish(b.op("identity", x)))
    assert out.outputs == (x,) and len(out.nodes) == 0


# ---------------------------------------------------------------- fold_scale_into_conv


def conv_bn(b, x, cout, op="conv2d", groups=1, bias=False, mult=1):
    cin = x.shape[1]
    if op == "depthwise_conv2d":
        y = b.op(op, x, b.const(rand(cin, mult, 3, 3) / 3, "w"), padding=(1, 1, 1, 1), name="conv")
    else:
        w = b.const(rand(cout, cin // groups, 3, 3) / np.float32(3 * np.sqrt(cin // groups)), "w")
        y = b.op(op, x, w, padding=(1, 1, 1, 1), groups=groups, name="conv")
    if bias:
        y = b.op("add", y, b.const(rand(y.shape[1], 1, 1), "bias"), name="bias_add")
    c = y.shape[1]
    stats = [
        b.const(rand(c) / 2, "g"),
        b.const(rand(c), "b"),
        b.const(rand(c), "m"),
        b.const(rand(c, positive=True), "v"),
    ]
    return b.op("batch_norm", y, *stats, axis=1, name="bn")


def prepared(g: Graph) -> Graph:
    return fold_constants(simplify_inference(g))


def test_fold_scale_into_conv_golden():
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    g = prepared(b.finish(conv_bn(b, x, 4)))
    out = check_idempotent(fold_scale_into_conv, g)
    assert str(out) == golden("""
        graph main(%x: float32[1, 3, 8, 8]) {
          %w.scaled = constant float32[4, 3, 3, 3]
          %conv: float32[1, 4, 8, 8] = conv2d(%x, %w.scaled, groups=1, padding=(1, 1, 1, 1))
          %bn.shift_c = constant float32[4, 1, 1]
          %bn: float32[1, 4, 8, 8] = add(%conv, %bn.shift_c)
          return %bn
        }""")
    check_same(g, out)


@pytest.mark.parametrize(
    "op,groups,bias,mult",
    [
        ("conv2d", 1, True, 1),
        ("conv2d", 2, False, 1),
        ("conv2d", 4, True, 1),
        ("depthwise_conv2d", 1, False, 2),
    ],
)
def test_fold_scale_into_conv_variants(op, groups, bias, mult):
    b = GraphBuilder()
    x = b.input("x", (1, 4, 6, 6))
    g = prepared(b.finish(b.op("relu", conv_bn(b, x, 8, op, groups, bias, mult))))
    out = check_idempotent(fold_scale_into_conv, g)
    assert op_list(out) == [op, "add", "relu"]
    check_same(g, out, rtol=1e-4, atol=1e-4)


def test_fold_scale_into_dense_and_scale_shapes():
    b = GraphBuilder()
    x = b.input("x", (2, 5))
    y = b.op("dense", x, b.const(rand(3, 5), "w"))
    y = b.op("multiply", b.const(rand(3), "s"), y)  # scale on the left, shape (N,)
    y = b.op("add", y, b.const(rand(1, 3), "t1"))
    g = b.finish(b.op("add", b.const(np.float32(2.0), "t2"), y))  # two adds merge
    out = check_idempotent(fold_scale_into_conv, g)
    assert op_list(out) == ["dense", "add"]
    check_same(g, out)


def test_fold_scale_into_conv_keeps_shared_or_non_channel_scales():
    b = GraphBuilder()
    x = b.input("x", (1, 2, 4, 4))
    conv = b.op("conv2d", x, b.const(rand(2, 2, 1, 1), "w"), name="conv")
    shared = b.op("multiply", conv, b.const(rand(2, 1, 1), "s"))  # conv also read below
    spatial = b.op("multiply", conv, b.const(rand(1, 1, 4, 4), "p"))  # varies over H, W
    conv2 = b.op("conv2d", x, b.const(rand(2, 2, 1, 1), "w2"), name="conv2")
    runtime = b.op("multiply", conv2, b.input("scale", (2, 1, 1)))  # not a constant
    g = b.finish([shared, spatial, runtime])
    assert fold_scale_into_conv(g) is g


def test_fold_scale_into_conv_scalar_scale_on_graph_output():
    b = GraphBuilder()
    x = b.input("x", (1, 2, 4, 4))
    conv = b.op("conv2d", x, b.const(rand(3, 2, 3, 3), "w"), name="conv")
    g = b.finish(b.op("multiply", conv, b.const(np.float32(3.0), "k")))
    out = check_idempotent(fold_scale_into_conv, g)
    assert op_list(out) == ["conv2d"]
    check_same(g, out)


def test_fold_scale_into_conv_chains_in_one_run():
    b = GraphBuilder()
    x = b.input("x", (1, 2, 4, 4))
    y = b.op("conv2d", x, b.const(rand(3, 2, 3, 3), "w"), name="conv")
    y = b.op("add", y, b.const(rand(3, 1, 1), "bias"))
    for k in range(3):
        y = b.op("multiply", y, b.const(rand(1, 3, 1, 1), "s"))
        y = b.op("add", y, b.const(rand(3, 1, 1), "t"))
    g = b.finish(y)
    out = check_idempotent(fold_scale_into_conv, g)
    assert op_list(out) == ["conv2d", "add"]
    check_same(g, out, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- simplify_arithmetic


def test_simplify_arithmetic_golden():
    b = GraphBuilder()
    x = b.input("x", (2, 3))
    m = b.op("multiply", x, b.const(np.float32(1.0), "one"), name="m")
    t = b.op("transpose", m, axes=(1, 0), name="t")
    t2 = b.op("transpose", t, axes=(1, 0), name="t2")
    r = b.op("reshape", t2, newshape=(6,), name="r")
    g = b.finish(b.op("reshape", r, newshape=(3, 2), name="r2"))
    out = check_idempotent(simplify_arithmetic, g)
    assert str(out) == golden("""
        graph main(%x: float32[2, 3]) {
          %r2: float32[3, 2] = reshape(%x, newshape=(3, 2))
          return %r2
        }""")
    check_same(g, out)


def test_simplify_arithmetic_composes_and_keeps_broadcasts():
    b = GraphBuilder()
    x = b.input("x", (2, 3, 4))
    t = b.op("transpose", b.op("transpose", x, axes=(1, 2, 0)), axes=(1, 0, 2))
    grown = b.op("add", b.input("v", (4,)), b.const(np.zeros((2, 4), "float32"), "z"))  # broadcasts: kept
    sub = b.op("subtract", b.const(np.zeros(4, "float32"), "z0"), b.input("w", (4,)))  # 0 - w: kept
    same = b.op("reshape", b.op("cast", x, dtype="float32"), newshape=(2, 3, 4))
    back = b.op("reshape", b.op("reshape", x, newshape=(24,)), newshape=(2, 3, 4))
    g = b.finish([t, grown, sub, same, back])
    out = check_idempotent(simplify_arithmetic, g)
    assert op_list(out) == ["transpose", "add", "subtract"]
    assert out.outputs[3] is x and out.outputs[4] is x
    check_same(g, out)


# ---------------------------------------------------------------- the pass database


def make_db(log: list) -> PassDatabase:
    db = PassDatabase("test")

    def named(name, changes=False):
        def fn(graph):
            log.append(name)
            return Graph(graph.inputs, graph.nodes, graph.outputs) if changes else graph

        fn.__name__ = name
        return fn

    db.register("c", named("c"), 30, ("fold",), opt_level=2)
    db.register("a", named("a", changes=True), 10, ("cleanup",), opt_level=0)
    db.register("d", named("d"), 40, ("layout", "fold"), opt_level=3)

    @db.register("b", position=20, tags=("cleanup", "simplify"), opt_level=1)
    def b_pass(graph):
        log.append("b")
        return graph

    return db


def names(passes) -> list:
    return [p.name for p in passes]


def test_database_select_by_level_include_exclude():
    db = make_db([])
    assert names(db.select(0)) == ["a"]
    assert names(db.select(2)) == ["a", "b", "c"]
    assert names(db.select(3)) == ["a", "b", "c", "d"]
    assert names(db.select(0, include=["layout"])) == ["a", "d"]
    assert names(db.select(0, include=["c"])) == ["a", "c"]
    assert names(db.select(3, exclude=["fold"])) == ["a", "b"]
    assert names(db.select(0, include=["fold"], exclude=["d"])) == ["a", "c"]
    assert names(db.select(3, exclude="cleanup")) == ["c", "d"]
    assert names(db.select(3, exclude=["fusion"])) == ["a", "b", "c", "d"]  # a standard tag


def test_database_errors():
    db = make_db([])
    with pytest.raises(
        ValueError, match=r"cannot exclude \['fold_everything'\]: no pass has that name or tag"
    ):
        db.select(2, exclude=["fold_everything"])
    with pytest.raises(ValueError, match="a pass named 'a' is already registered at position 10"):
        db.register("a", lambda g: g, 50)
    with pytest.raises(ValueError, match="register 'e': give a position"):
        db.register("e", lambda g: g)
    db.register("bad", lambda g: None, 99, opt_level=0)
    g = GraphBuilder().finish([])
    with pytest.raises(TypeError, match="graph pass 'bad' returned NoneType"):
        db.run(g, 0)


def test_database_run_and_profile_report():
    log: list = []
    db = make_db(log)
    b = GraphBuilder()
    x = b.input("x", (4,))
    g = b.finish(b.op("relu", b.op("add", x, b.const(np.ones(4, "float32"), "one"))))
    profile = PassProfile()
    out = db.run(g, 2, profile=profile)
    db.run(out, 2, profile=profile)
    assert log == ["a", "b", "c"] * 2
    assert out is not g
    s = profile.stats["a"]
    assert (s.calls, s.applied, s.ops_before, s.ops_after, s.nodes_before) == (2, 2, 4, 4, 6)
    assert (profile.stats["b"].calls, profile.stats["b"].applied) == (2, 0)
    profile.record("fuse_ops", 0.5, 2, 1, True)  # how fusion records itself, outside the table
    report = profile.report().splitlines()
    assert report[0] == "Graph pass profile: 2 run(s), 4 passes"
    assert report[1].split() == ["pos", "pass", "time", "(s)", "%", "calls", "applied", "ops", "before",
                                 "ops", "after", "nodes", "before", "nodes", "after"]  # fmt: skip
    rows = [line.split() for line in report[3:7]]
    assert [r[:2] for r in rows] == [["10", "a"], ["20", "b"], ["30", "c"], ["-", "fuse_ops"]]
    assert rows[0][4:] == ["2", "2", "4", "4", "6", "6"]
    assert rows[3][4:] == ["1", "1", "2", "1", "2", "1"]
    assert report[-1].split()[0] == "total"
    assert len({len(line) for line in report[1:7]}) == 1  # aligned


def test_run_prints_changed_graphs_when_asked(monkeypatch, capsys):
    monkeypatch.setenv("TESSERA_PRINT_GRAPH_PASSES", "1")
    g = batch_norm_graph()
    optimize(g, opt_level=0)
    err = capsys.readouterr().err
    assert "// after simplify_inference (" in err and "// after fold_constants (" in err
    assert "// after eliminate_dead_code" not in err  # it changed nothing


def test_standard_table():
    ours = ["eliminate_dead_code", "merge_common_subexpressions", "simplify_inference", "simplify_arithmetic",
            "fold_constants", "fold_scale_into_conv", "fold_constants_late",
            "merge_common_subexpressions_late"]  # fmt: skip
    table = [(p.position, p.name, p.tags, p.opt_level) for p in OPTDB.passes() if p.name in ours]
    assert table == [
        (10, "eliminate_dead_code", ("cleanup",), 0),
        (20, "merge_common_subexpressions", ("cleanup",), 1),
        (30, "simplify_inference", ("simplify",), 0),
        (35, "simplify_arithmetic", ("simplify",), 1),
        (40, "fold_constants", ("fold",), 0),
        (50, "fold_scale_into_conv", ("fold",), 2),
        (70, "fold_constants_late", ("fold",), 0),
        (75, "merge_common_subexpressions_late", ("cleanup",), 1),
    ]


# ---------------------------------------------------------------- optimize end to end


def resnet_like(blocks: int, c: int = 8) -> Graph:
    """A stem and ``blocks`` residual blocks of conv/batch_norm/relu: 9 ops a block."""
    b = GraphBuilder("resnet_like")
    x = b.input("data", (1, c, 8, 8))
    h = b.op("relu", conv_bn(b, x, c))
    for _ in range(blocks):
        y = b.op("relu", conv_bn(b, h, c))
        y = b.op("identity", conv_bn(b, y, c, bias=True))
        h = b.op("relu", b.op("add", y, h))
    return b.finish(b.op("global_pool", h, pool_type="avg"))


def test_optimize_resnet_like_numerics_and_time():
    g = resnet_like(44)
    assert g.op_count() == 400
    profile = PassProfile()
    start = time.perf_counter()
    out = optimize(g, profile=profile, exclude=["fusion", "layout"])
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, profile.report()
    assert set(op_list(out)) == {"conv2d", "add", "relu", "global_pool"}
    assert op_list(out).count("conv2d") == 89
    assert op_list(out).count("add") == 89 + 44  # a shift per conv (bias merged), a residual add per block
    check_same(g, out, rtol=1e-3, atol=1e-3)
    assert optimize(out, exclude=["fusion", "layout"]) is out
    assert optimize(g, opt_level=1, exclude=["fusion"]).op_count() > out.op_count()  # no scale folding below 2
    assert "batch_norm" in op_list(optimize(g, opt_level=0, exclude=["simplify_inference"]))


def test_optimize_light_model_merges_what_folding_made_equal():
    """Weights and statistics all made by ``full`` (as the light ONNX models do)."""
    b = GraphBuilder()
    h = b.input("x", (1, 4, 5, 5))
    for _ in range(3):
        w = b.op("full", shape=(4, 4, 3, 3), value=0.1, dtype="float32")
        stats = [b.op("full", shape=(4,), value=v, dtype="float32") for v in (1.0, 0.5, 0.2, 2.0)]
        h = b.op("relu", b.op("batch_norm", b.op("conv2d", h, w, padding=(1, 1, 1, 1)), *stats))
    g = b.finish(h)
    out = optimize(g, exclude=["fusion", "layout"])
    assert op_list(out) == ["conv2d", "add", "relu"] * 3
    assert len([n for n in out.nodes if n.is_constant]) == 2  # one kernel, one shift
    assert optimize(out, exclude=["fusion", "layout"]) is out
    fused = optimize(g)
    assert op_list(fused) == ["fused"] * 3 and optimize(fused) is fused
    check_same(g, out)


@pytest.mark.parametrize("target", [AVX2, AVX512], ids=["avx2", "avx512"])
@pytest.mark.parametrize("per_group, hw, avx2_block_changes", [(28, (7, 9), 1), (34, (5, 5), 0)])
def test_alter_op_layout_grouped_depthwise_chain_on_channels_no_block_divides(
    per_group, hw, avx2_block_changes, target
):
    """Grouped 1x1 convs with 28 / 34 channels a group (no vector block divides them), a
    depthwise conv and a residual add stay blocked: one transform (the graph output), and
    the values match the reference interpreter on the original graph.  The layout pass only
    rewrites the graph (the values come from numpy twins), so it runs under each target's rules.
    With AVX2 the 112-channel conv ``c0`` writes two 8-lane vectors (16 channels) and the grouped
    convs one (their rule): the residual ``h`` is converted once, where it meets ``g2``."""
    from graph.passes.alter_op_layout import count_transforms

    c = 4 * per_group
    b = GraphBuilder()
    x = b.input("x", (1, 16, *hw))
    w0 = b.const(RNG.standard_normal((c, 16, 1, 1)).astype("float32") * 0.2, "w0")
    h = b.op("relu", b.op("conv2d", x, w0, name="c0"))
    w1 = b.const(RNG.standard_normal((c, per_group, 1, 1)).astype("float32") * 0.2, "w1")
    g1 = b.op("relu", b.op("conv2d", h, w1, name="g1", groups=4))
    dw = b.const(RNG.standard_normal((c, 1, 3, 3)).astype("float32"), "dw")
    d = b.op("depthwise_conv2d", g1, dw, padding=(1, 1, 1, 1))
    w2 = b.const(RNG.standard_normal((c, per_group, 1, 1)).astype("float32") * 0.2, "w2")
    r = b.op("relu", b.op("add", b.op("conv2d", d, w2, name="g2", groups=4), h))
    w3 = b.const(RNG.standard_normal((16, c, 1, 1)).astype("float32") * 0.2, "w3")
    g = b.finish(b.op("conv2d", r, w3, name="c3"))  # the residual stays blocked on its way to a conv
    profile = PassProfile()
    with Target(target):
        out = optimize(g, exclude=("fusion",), profile=profile)
    kinds = op_list(out)
    assert kinds.count("group_conv2d_NCHWc") == 2 and "depthwise_conv2d_NCHWc" in kinds and "conv2d" not in kinds
    changes = avx2_block_changes if target == AVX2 else 0
    inner = [n for n in out.nodes if n.op == "layout_transform" and n.attrs["dst_layout"] != "NCHW"]
    got = [(n.inputs[0].node.inputs[0].node.name, n.attrs["src_layout"], n.attrs["dst_layout"]) for n in inner]
    assert got == [("c0", "NCHW16c", "NCHW8c")] * changes  # h = relu(c0), converted where it meets g2
    assert count_transforms(out) == 1 + changes == profile.transforms_inserted
    check_same(g, out, rtol=1e-4, atol=1e-4)
