"""graph.build: fusion groups, kernel dedupe, memory planning, the executor, errors."""

import numpy as np
import pytest

import graph
from graph import GraphBuilder
from graph.fuse import fuse_ops, partition
from graph.interpreter import interpret
from graph.memory import plan_memory
from topi.config import vector_lanes

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def conv_block(b, x, cin, cout, name):
    w = b.const(rand(cout, cin, 3, 3) * 0.1, f"{name}_w")
    bias = b.const(rand(cout, 1, 1), f"{name}_b")
    return b.op("relu", b.op("add", b.op("conv2d", x, w, padding=(1, 1, 1, 1)), bias))


def small_net():
    b = GraphBuilder()
    x = b.input("data", (1, 3, 17, 13))
    y = conv_block(b, x, 3, 16, "c1")
    z = conv_block(b, y, 16, 16, "c2")
    r = b.op("add", z, y)  # residual: joins c2's group as its epilogue
    p = b.op("pool2d", r, pool_type="max", kernel=(3, 3), strides=(2, 2), padding=(1, 1, 1, 1))
    f = b.op("reshape", b.op("global_pool", p, pool_type="avg"), newshape=(1, 16))
    w = b.const(rand(10, 16), "fc_w")
    out = b.op("softmax", b.op("add", b.op("dense", f, w), b.const(rand(10), "fc_b")))
    return b.finish(out)


def ops_of(group):
    return [n.op for n in group]


def test_fusion_groups_follow_tvm_rules():
    groups = [ops_of(g) for g in partition(small_net())]
    assert groups == [
        ["conv2d", "add", "relu"],
        ["conv2d", "add", "relu", "add"],
        ["pool2d"],
        ["global_pool"],
        ["reshape"],
        ["dense", "add"],
        ["softmax"],
    ]


def test_injective_chain_and_reduction_take_their_inputs():
    b = GraphBuilder()
    x = b.input("x", (4, 6))
    y = b.op("exp", b.op("transpose", b.op("relu", x), axes=(1, 0)))
    s = b.op("sum", b.op("multiply", y, y), axis=(1,))
    groups = [ops_of(g) for g in partition(b.finish(s))]
    assert groups == [["relu", "transpose", "exp", "multiply", "sum"]]


def test_anchor_takes_no_epilogue_that_broadcasts_it():
    """Squeeze-excite: x * clip(conv(mean(x)) + b): the gate's conv is [1, C, 1, 1]; fused into the
    multiply over [1, C, H, W], the kernel would recompute the conv per pixel."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 9, 7))
    pooled = b.op("global_pool", x, pool_type="avg")
    gate = b.op("add", b.op("conv2d", pooled, b.const(rand(8, 8, 1, 1), "w")), b.const(rand(8, 1, 1), "b"))
    out = b.op("multiply", x, b.op("clip", gate, a_min=0.0, a_max=1.0))
    groups = [ops_of(g) for g in partition(b.finish(out))]
    assert groups == [["global_pool"], ["conv2d", "add", "clip"], ["multiply"]]


def test_value_with_two_consumers_ends_its_group():
    b = GraphBuilder()
    x = b.input("x", (8,))
    r = b.op("relu", x)
    out = b.op("add", b.op("exp", r), b.op("sigmoid", r))
    groups = [ops_of(g) for g in partition(b.finish(out))]
    assert groups == [["relu"], ["exp", "sigmoid", "add"]]


def test_fused_graph_computes_the_same():
    g = small_net()
    x = {"data": rand(1, 3, 17, 13)}
    ref = interpret(g, x)[0]
    np.testing.assert_allclose(interpret(fuse_ops(g), x)[0], ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_build_matches_interpreter(opt_level, tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    g = small_net()
    lib = graph.build(g, opt_level=opt_level)
    m = lib.create_executor()
    for _ in range(2):
        x = rand(1, 3, 17, 13)
        m.run(data=x)
        np.testing.assert_allclose(m.get_output(0), interpret(g, {"data": x})[0], rtol=1e-4, atol=1e-5)


def test_identical_groups_compile_once(tmp_path, monkeypatch):
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    b = GraphBuilder()
    y = b.input("x", (1, 8, 9, 9))
    for k in range(6):
        y = conv_block(b, y, 8, 8, f"c{k}")
    lib = graph.build(b.finish(y))
    # blocked activations between the convs: the first packs its NCHW input, the last
    # writes NCHW, the four between are one kernel
    assert len(lib.steps) == 6 and len(lib.kernels) == 3
    assert len({key for _, key in lib.steps[1:5]}) == 1


def test_memory_plan_reuses_buffers():
    b = GraphBuilder()
    y = b.input("x", (1, 8, 32, 32))
    for k in range(6):
        y = b.op("relu", b.op("conv2d", y, b.const(rand(8, 8, 1, 1), f"w{k}")))
    lib = graph.build(b.finish(y))
    plan = lib.plan
    assert plan.naive_bytes == 5 * 8 * 32 * 32 * 4
    assert plan.arena_bytes == 2 * 8 * 32 * 32 * 4
    assert "arena" in plan.report()


def test_plan_never_shares_a_block_between_live_values():
    b = GraphBuilder()
    x = b.input("x", (64,))
    a = b.op("exp", x)
    c = b.op("negative", x)
    d = b.op("add", b.op("sqrt", b.op("abs", a)), c)
    g = fuse_ops(b.finish(d))
    steps = [(n.inputs, n.outputs) for n in g.nodes if n.op == "fused"]
    inter = {id(v) for _, outs in steps for v in outs} - {id(v) for v in g.outputs}
    plan = plan_memory(steps, inter, {})
    live = {}
    for k, (ins, outs) in enumerate(steps):
        for v in outs:
            if id(v) in plan.offsets:
                for other, (off, last) in live.items():
                    if last >= k:
                        assert plan.offsets[id(v)] != off
                users = [j for j, (i2, _) in enumerate(steps) if any(u is v for u in i2)]
                live[id(v)] = (plan.offsets[id(v)], max(users))


def test_reshape_is_an_alias_not_a_kernel():
    b = GraphBuilder()
    x = b.input("x", (2, 3, 4))
    y = b.op("exp", b.op("reshape", b.op("relu", x), newshape=(6, 4)))
    y = b.op("sum", y, axis=(1,))
    lib = graph.build(b.finish(y), opt_level=0)
    assert [key is None for _, key in lib.steps].count(True) == 1
    m = lib.create_executor()
    xv = rand(2, 3, 4)
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0), np.exp(np.maximum(xv, 0)).reshape(6, 4).sum(1), rtol=1e-5)


def concat_net(n, h, w):
    """Two concatenations of conv outputs, the second joining the first (nested), and a conv
    that reads one piece after both concatenations ran."""
    b = GraphBuilder()
    x = b.input("x", (n, 8, h, w))
    a = conv_block(b, x, 8, 16, "a")
    c = b.op("concatenate", a, b.op("relu", b.op("conv2d", x, b.const(rand(8, 8, 1, 1), "bw"))), axis=1)
    d = conv_block(b, c, 24, 16, "d")
    e = b.op("concatenate", c, d, axis=1)
    late = conv_block(b, a, 16, 8, "late")
    return b.finish([b.op("global_pool", e, pool_type="avg"), late])


def in_place_concats(lib):
    from graph.build import concat_inputs

    return sum(1 for node, key in lib.steps if key is None and concat_inputs(node))


@pytest.mark.parametrize("n, h, w, in_place", [(1, 8, 8, 2), (1, 5, 7, None), (2, 8, 8, 0)])
def test_concat_inputs_are_written_in_place(n, h, w, in_place, tmp_path, monkeypatch):
    """A batch-1 concatenation runs no kernel: its inputs' kernels write into its buffer (a
    nested one too); with batch 2 the pieces are not contiguous and it copies.  5x7 planes:
    whichever pieces start 64-byte aligned in the layout chosen."""
    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path))
    g = concat_net(n, h, w)
    lib = graph.build(g)
    if in_place is not None:
        assert in_place_concats(lib) == in_place
    m = lib.create_executor()
    for _ in range(2):
        x = rand(n, 8, h, w)
        m.run(x=x)
        for k, ref in enumerate(interpret(g, {"x": x})):
            np.testing.assert_allclose(m.get_output(k), ref, rtol=1e-4, atol=1e-4)


def test_concat_view_offsets_and_refusals():
    from graph.memory import ALIGN, concat_view
    from graph.ir import make_node

    b = GraphBuilder()
    x, y = b.input("x", (1, 16, 2, 2)), b.input("y", (1, 1, 2, 2))
    out = make_node("concatenate", [x, x], {"axis": 1}).output
    assert concat_view(out, 1, [x, x], lambda v: True) == {}  # one value twice
    out = make_node("concatenate", [x, y], {"axis": -3}).output
    views = concat_view(out, -3, [x, y], lambda v: True)
    assert views[id(x)] == (out, 0) and views[id(y)] == (out, x.nbytes)
    assert concat_view(out, 1, [x, y], lambda v: v is not y) == {}
    out = make_node("concatenate", [y, x], {"axis": 1}).output
    assert 16 % ALIGN and concat_view(out, 1, [y, x], lambda v: True) == {}  # x would start at 16 bytes
    x2 = b.input("x2", (2, 16, 2, 2))
    out = make_node("concatenate", [x2, x2], {"axis": 1}).output
    assert concat_view(out, 1, [x2, b.input("x3", (2, 16, 2, 2))], lambda v: True) == {}  # batch 2


def test_run_time_errors_name_the_input():
    lib = graph.build(small_net())
    m = lib.create_executor()
    with pytest.raises(KeyError, match="no input 'image'.*data"):
        m.set_input(image=rand(1, 3, 17, 13))
    with pytest.raises(ValueError, match="input 'data' expects shape \\(1, 3, 17, 13\\)"):
        m.run(data=rand(1, 3, 17, 12))
    with pytest.raises(TypeError, match="input 'data' expects dtype float32"):
        m.run(data=np.zeros((1, 3, 17, 13), "int64"))
    with pytest.raises(IndexError, match="output 3 out of range"):
        m.get_output(3)


def test_kernel_profile_in_a_row_and_in_place():
    lib = graph.build(small_net())
    m = lib.create_executor()
    x = rand(1, 3, 17, 13)
    m.run(data=x)
    want = m.get_output(0)
    labels = [spec["label"] for spec in m.plan["calls"]]
    for in_place in (False, True):
        prof = m.profile_kernels(3, in_place=in_place)
        assert [label for label, _ in prof] == labels
        assert all(seconds > 0 for _, seconds in prof)
        np.testing.assert_array_equal(m.get_output(0), want)  # profiling runs the same model


def test_params_bind_as_constants():
    b = GraphBuilder()
    x = b.input("x", (4, 5))
    w = b.input("w", (3, 5))
    g = b.finish(b.op("dense", x, w))
    wv, xv = rand(3, 5), rand(4, 5)
    lib = graph.build(g, params={"w": wv})
    assert lib.input_names == ["x"]
    m = lib.create_executor()
    m.set_input(w=wv)  # the bound value: accepted
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0), xv @ wv.T, rtol=1e-5)
    with pytest.raises(ValueError, match="param 'w' was bound at build time"):
        m.set_input(w=wv + 1)
    with pytest.raises(ValueError, match="not inputs of the graph"):
        graph.build(g, params={"v": wv})


def test_run_is_one_native_call_per_segment_of_the_call_table():
    # run() hands the kernels to the runtime's call loop as one table; a kernel with more
    # pointer arguments than the loop takes (a sum of 40 inputs) runs alone between segments
    from codegen.runtime import MAX_CALL_ARGS

    b = GraphBuilder()
    xs = [b.input(f"x{i}", (3, 5)) for i in range(MAX_CALL_ARGS + 8)]
    head = b.op("softmax", b.op("add", xs[0], xs[1]))  # two consumers: a kernel of its own
    total = head
    for x in xs[2:]:
        total = b.op("add", total, x)
    out = b.op("add", b.op("tanh", b.op("sum", b.op("exp", total), axis=(1,))), b.op("sum", head, axis=(1,)))
    m = graph.build(b.finish(out)).create_executor()
    arity = [len(c["args"]) for c in m.plan["calls"]]
    big = [i for i, n in enumerate(arity) if n > MAX_CALL_ARGS]
    assert big and 0 < big[0] < len(arity) - 1 and len(big) == 1, arity
    assert len(m._steps) == 3  # table, the big kernel alone, table
    feed = {f"x{i}": rand(3, 5) * 0.1 for i in range(len(xs))}
    e = np.exp(feed["x0"] + feed["x1"])
    head = e / e.sum(axis=1, keepdims=True)
    ref = np.tanh(np.exp(head + sum(feed[f"x{i}"] for i in range(2, len(xs)))).sum(axis=1)) + head.sum(axis=1)
    for _ in range(2):
        m.run(**feed)
        np.testing.assert_allclose(m.get_output(0), ref, rtol=1e-5)


def test_executor_buffers_are_64_byte_aligned():
    # weights handed over 16 bytes off a line (numpy's own alignment) are copied onto one: a
    # vector loop over them would split every other load (a Winograd kernel ran 5-7% slower)
    raw = np.empty(16 * 5 * 4 + 128, np.uint8)
    start = (16 - raw.ctypes.data) % 64
    w = raw[start:start + 16 * 5 * 4].view(np.float32).reshape(16, 5)
    w[...] = rand(16, 5)
    assert w.ctypes.data % 64 == 16
    b = GraphBuilder()
    x = b.input("x", (16, 5))
    g = b.finish(b.op("relu", b.op("add", x, b.const(w, "w"))))
    for lib in (graph.build(g), graph.build(small_net())):
        m = lib.create_executor()
        assert len(m._buffers) == len(m.plan["slots"])
        for slot, buf in zip(m.plan["slots"], m._buffers):
            assert buf.ctypes.data % 64 == 0, (slot["kind"], slot["name"], buf.ctypes.data % 64)
    xv = rand(16, 5)
    m = graph.build(g).create_executor()
    m.run(x=xv)
    np.testing.assert_allclose(m.get_output(0), np.maximum(xv + w, 0), rtol=1e-6)


def test_export_library_round_trip(tmp_path):
    g = small_net()
    lib = graph.build(g)
    path = str(tmp_path / "net.so")
    lib.export_library(path)
    loaded = graph.load_library(path)
    m = loaded.create_executor()
    x = rand(1, 3, 17, 13)
    m.run(data=x)
    np.testing.assert_allclose(m.get_output(0), interpret(g, {"data": x})[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="not a Tessera graph library"):
        _load_foreign(tmp_path)
    with pytest.raises(FileNotFoundError):
        graph.load_library(str(tmp_path / "missing.so"))


def _load_foreign(tmp_path):
    """A real shared library that Tessera did not write."""
    import shutil
    import subprocess

    src = tmp_path / "foreign.c"
    src.write_text("int answer(void) { return 42; }\n")
    so = tmp_path / "foreign.so"
    subprocess.run([shutil.which("cc") or "gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    graph.load_library(str(so))


@pytest.mark.parametrize("op,shapes,attrs", [
    ("pool2d", [(1, 8, 11, 13)], dict(pool_type="max", kernel=(3, 3), strides=(2, 2), padding=(1, 0, 1, 1),
                                      ceil_mode=True)),
    ("pool2d", [(1, 8, 11, 13)], dict(pool_type="avg", kernel=(3, 2), strides=(2, 1), padding=(1, 1, 0, 1),
                                      count_include_pad=False)),
    ("depthwise_conv2d", [(1, 8, 11, 13), (8, 2, 3, 3)], dict(strides=(2, 1), padding=(1, 0, 1, 2),
                                                              dilation=(1, 2))),
    ("lrn", [(1, 8, 11, 13)], dict(size=5, alpha=1e-3, beta=0.75, bias=2.0)),
    ("conv2d", [(1, 8, 11, 13), (12, 4, 3, 3)], dict(strides=(1, 2), padding=(1, 1, 2, 0), groups=2)),
])
def test_numpy_twins_match_the_compiled_operator(op, shapes, attrs):
    """Constant folding and the interpreter use the numpy twin; it must agree with the kernel."""
    from graph.ops import get_op
    from graph.ops.registry import evaluate_compiled

    xs = [rand(*s) for s in shapes]
    opdef = get_op(op)
    np.testing.assert_allclose(opdef.evaluate(xs, attrs)[0], evaluate_compiled(opdef, xs, attrs)[0],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,k,n", [(1, 300, 77), (5, 64, 130), (64, 96, 64)])
def test_dense_weights_are_packed_and_fused_with_their_epilogue(m, k, n):
    b = GraphBuilder()
    x = b.input("x", (m, k))
    w, bias = b.const(rand(n, k), "w"), b.const(rand(n), "b")
    g = b.finish(b.op("relu", b.op("add", b.op("dense", x, w), bias)))
    lib = graph.build(g)
    (node,) = [n for n in lib.graph.nodes if n.op == "fused"]
    from tune.autotvm.config import choose_config
    from topi.x86.dense import dense_workload

    # [N/bn, K, bn]: the rule's bn, 4 host vectors (2 with AVX2 past 2 rows: 12 accumulators of 2 x 6)
    bn = [v.shape for v in node.inputs][1][2]
    assert bn == choose_config(dense_workload(m, n, k, template="dense_pack.x86"))["bn"].val
    assert bn == (2 if m > 2 and vector_lanes() == 8 else 4) * vector_lanes()
    mod = lib.create_executor()
    xv = rand(m, k)
    mod.run(x=xv)
    np.testing.assert_allclose(mod.get_output(0), interpret(g, {"x": xv})[0], rtol=1e-4, atol=1e-4)


def test_graph_module_wraps_a_library_as_in_classic_tvm():
    g = small_net()
    lib = graph.build(g)
    m = graph.GraphModule(lib)
    x = rand(1, 3, 17, 13)
    m.set_input("data", x)
    m.run()
    np.testing.assert_allclose(m.get_output(0), interpret(g, {"data": x})[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="expects a library"):
        graph.GraphModule(42)
