"""Dataflow analysis (read graph, post-DFS order, a scan's body and fix points), the
AutoInline passes, and the schedule record kept under ``te.keep_schedule_record``."""

import numpy as np

import schedule
import te
from helpers import check_build
from schedule.auto_inline import auto_inline_broadcast, auto_inline_elemwise, auto_inline_injective
from schedule.read_graph import create_read_graph, post_dfs_order, scan_fix_point_analysis, scan_get_body


def test_read_graph_and_post_dfs_order():
    A = te.placeholder((4, 5), name="A")
    A1 = te.compute(A.shape, lambda i, j: A[i, j] * 2.0, name="A1")
    A2 = te.compute(A.shape, lambda i, j: A1[i, j] + A[i, j], name="A2")
    g = create_read_graph([A2.op])
    assert g[A2.op] == [A1, A] and g[A1.op] == [A] and g[A.op] == []
    assert post_dfs_order([A2.op], g) == [A.op, A1.op, A2.op]


def _scan(update_fn):
    m, n = te.var("m"), te.var("n")
    x = te.placeholder((m, n, n), name="x")
    state = te.placeholder((m, n, n), name="state")
    init = te.compute((1, n, n), lambda _, i, j: x[0, i, j], name="init")
    h = te.compute((m, n, n), lambda t, i, j: update_fn(state, t, i, j) * 2.0, name="h")
    update = te.compute((m, n, n), lambda t, i, j: h[t, i, j] + x[t, i, j], name="update")
    return te.scan(init, update, state, inputs=[x]), h, update


def test_scan_body_and_fix_points():
    res, h, update = _scan(lambda s, t, i, j: s[t - 1, i, j])
    assert scan_get_body(res.op) == [h.op, update.op]
    fix = scan_fix_point_analysis(res.op)
    assert [int(fix[iv]) for iv in res.op.spatial_axis_] == [1, 1]
    res, _, _ = _scan(lambda s, t, i, j: s[t - 1, j, i])  # transposed: i and j meet
    assert [int(v) for v in scan_fix_point_analysis(res.op).values()] == [0, 0]
    res, _, _ = _scan(lambda s, t, i, j: s[t - 1, i, 0])  # j reads a fixed column
    fix = scan_fix_point_analysis(res.op)
    assert [int(fix[iv]) for iv in res.op.spatial_axis_] == [1, 0]


def _two_stages(tag="", first=lambda A, B, i, j: A[i, j] * B[i, j]):
    A = te.placeholder((6, 7), name="A")
    B = te.placeholder((6, 7), name="B")
    T1 = te.compute((6, 7), lambda i, j: first(A, B, i, j), name="T1", tag=tag)
    T2 = te.compute((6, 7), lambda i, j: T1[i, j] + 1.0, name="T2")
    return A, B, T1, T2


def test_auto_inline_passes_inline_what_they_name_and_compute_right():
    A, B, T1, T2 = _two_stages()
    s = te.create_schedule(T2.op)
    assert s[T1].attach_type == "root" and s[T1].attach_type == 1  # classic TVM's kGroupRoot
    auto_inline_elemwise(s)
    assert s[T1].attach_type == "inline" and s[T1].attach_type == 2 and s[T2].attach_type == "root"
    check_build(s, [A, B, T2], lambda a, b: a * b + 1.0)

    A, B, T1, T2 = _two_stages(first=lambda A, B, i, j: A[j % 6, i % 6] * B[i, j])  # not elementwise
    s = te.create_schedule(T2.op)
    auto_inline_elemwise(s)
    auto_inline_broadcast(s)
    assert s[T1].attach_type == "root"
    auto_inline_injective(s)
    assert s[T1].attach_type == "inline"
    check_build(s, [A, B, T2], lambda a, b: a[np.arange(7) % 6][:, np.arange(6) % 6].T * b + 1.0)

    A, B, T1, T2 = _two_stages(tag="broadcast")
    s = te.create_schedule(T2.op)
    s[T1].split(T1.op.axis[0], 2)  # a scheduled stage stays
    auto_inline_broadcast(s)
    assert s[T1].attach_type == "root"


def test_schedule_record_keeps_each_elementary_primitive():
    A = te.placeholder((64, 64), name="A")
    k = te.reduce_axis((0, 64), "k")
    C = te.compute((64, 64), lambda i, j: te.sum(A[i, k] * A[k, j], axis=k), name="C")
    assert te.create_schedule(C.op).schedule_record == []
    s = te.create_schedule(C.op, keep_record=True)
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 8)
    s[C].vectorize(ji)
    assert s.primitive_record == ["vanilla", "split", "split", "reorder", "vectorize"]
    first, after_tile = s.schedule_record[0], s.schedule_record[3]
    assert [iv.var.name for iv in first[C].leaf_iter_vars] == ["i", "j", "k"]
    assert [iv.var.name for iv in after_tile[C].leaf_iter_vars] == ["i.outer", "j.outer", "i.inner", "j.inner", "k"]
    assert not after_tile[C].iter_var_attrs  # a copy: the later vectorize is not in it
    check_build(after_tile, [A, C], lambda a: a @ a, rtol=1e-4)


def test_schedule_record_follows_the_pass_context():
    import tessera as tvm

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with tvm.transform.PassContext(config={"te.keep_schedule_record": True}):
        s = te.create_schedule(B.op)
    s[B].split(B.op.axis[0], 2)
    assert s.primitive_record == ["vanilla", "split"] and len(s.schedule_record) == 2
    assert schedule.lower(s.schedule_record[0], [A, B]) is not None


def test_inspecting_a_nest_does_not_compile_it_so_only_lower_refuses_reads_out_of_bounds():
    import pytest

    import tessera as tvm

    A = te.placeholder((4,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")  # reads A[4..7]
    s = te.create_schedule(B.op)
    assert int(schedule.InferBound(s)[B.op.axis[0]].extent) == 8
    assert "produce B" in str(tvm.te.schedule.ScheduleOps(s, None))
    with pytest.raises(ValueError, match="reads A.* ranges over \\[0, 7\\] but the tensor's extent there is 4"):
        schedule.lower(s, [A, B])
