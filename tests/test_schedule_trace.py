"""Schedule traces: every primitive recorded, serialised, replayed and printed as te code."""

from __future__ import annotations

import json

import numpy as np
import pytest

import te
from schedule import ScheduleError, lower
from schedule.trace import Step, Trace
from helpers import check_build


def matmul(n: int, m: int, k: int):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    D = te.compute((n, m), lambda i, j: C[i, j] * 2.0, name="D")
    return A, B, C, D


def _split(s, C, D):
    io, ii = s[D].split(s[D].op.axis[0], factor=8)
    s[D].split(s[D].op.axis[1], nparts=3)


def _tile(s, C, D):
    s[D].tile(s[D].op.axis[0], s[D].op.axis[1], x_factor=16, y_factor=4)


def _fuse_parallel(s, C, D):
    s[D].parallel(s[D].fuse(*s[D].op.axis))


def _reorder_vectorize(s, C, D):
    i, j = s[C].op.axis
    (k,) = s[C].op.reduce_axis
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(i, jo, k, ji)
    s[C].vectorize(ji)


def _unroll_pragma(s, C, D):
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    s[C].unroll(ki)
    s[C].pragma(ko, "auto_unroll_max_step", 16)


def _compute_at(s, C, D):
    xo, xi = s[D].split(s[D].op.axis[0], factor=8)
    s[C].compute_at(s[D], xo)


def _compute_inline_root(s, C, D):
    s[C].compute_root()
    E2 = s.cache_read(C, "global", [D])
    s[E2].compute_inline()


def _cache_read_write(s, C, D):
    CL = s.cache_write(C, "local")
    AL = s.cache_read(s.stages[0].op.output(0), "local", [CL])
    xo, xi = s[C].split(s[C].op.axis[0], factor=8)
    s[CL].compute_at(s[C], xo)
    s[AL].compute_at(s[CL], s[CL].op.reduce_axis[0])


def _rfactor(s, C, D):
    ko, ki = s[C].split(s[C].op.reduce_axis[0], factor=4)
    CF = s.rfactor(C, ki)
    s[CF].compute_at(s[C], s[C].op.axis[0])
    s[C].parallel(s[C].op.axis[0])


def _storage_align_scope(s, C, D):
    s[C].storage_align(s[C].op.axis[0], 8, 1)
    s[C].set_scope("local")


def _reorder_storage(s, C, D):
    CL = s.cache_write(C, "local")  # a register tile with its column axis innermost in memory too
    io, jo, ii, ji = s[C].tile(s[C].op.axis[0], s[C].op.axis[1], x_factor=4, y_factor=8)
    s[CL].compute_at(s[C], jo)
    i, j = s[CL].op.axis
    s[CL].reorder_storage(j, i)
    s[CL].reorder(s[CL].op.reduce_axis[0], j, i)
    s[CL].vectorize(i)


SCHEDULES = {f.__name__[1:]: f for f in (
    _split, _tile, _fuse_parallel, _reorder_vectorize, _unroll_pragma, _compute_at,
    _compute_inline_root, _cache_read_write, _rfactor, _storage_align_scope, _reorder_storage,
)}


def _ref(a, b):
    return (a @ b) * 2.0


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_trace_round_trip(name):
    A, B, C, D = matmul(21, 19, 13)
    s = te.create_schedule(D.op)
    SCHEDULES[name](s, C, D)
    assert s.trace.unrecorded == [] and len(s.trace) > 0
    want = str(lower(s, [A, B, D]))
    # JSON -> replay on a fresh schedule: the identical loop nest
    loaded = Trace.from_json(json.loads(json.dumps(s.trace.to_json())))
    assert loaded == s.trace
    s2 = loaded.apply(te.create_schedule(D.op))
    assert str(lower(s2, [A, B, D])) == want
    assert s2.trace == s.trace  # replaying records the same steps
    # the printed te code, run on a fresh schedule: the identical loop nest, and correct
    s3 = te.create_schedule(D.op)
    exec(str(s.trace), {"s": s3, "te": te, "A": A, "B": B, "C": C, "D": D})
    assert str(lower(s3, [A, B, D])) == want
    check_build(s3, [A, B, D], _ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_trace_replays_on_other_shapes(name):
    A, B, C, D = matmul(21, 19, 13)
    s = te.create_schedule(D.op)
    SCHEDULES[name](s, C, D)
    A2, B2, C2, D2 = matmul(5, 33, 3)  # factors wider than some axes, none dividing
    s2 = s.trace.apply(te.create_schedule(D2.op))
    check_build(s2, [A2, B2, D2], _ref, rtol=1e-4, atol=1e-4)


def test_tile_is_one_step_and_prints_as_user_code():
    A, B, C, D = matmul(16, 16, 16)
    s = te.create_schedule(D.op)
    xo, yo, xi, yi = s[D].tile(s[D].op.axis[0], s[D].op.axis[1], x_factor=4, y_factor=8)
    s[D].parallel(xo)
    assert [st.kind for st in s.trace] == ["tile", "parallel"]
    assert str(s.trace) == (
        "D_i, D_j = tuple(s[D].op.axis) + tuple(s[D].op.reduce_axis)\n"
        "D_i_outer, D_j_outer, D_i_inner, D_j_inner = s[D].tile(D_i, D_j, x_factor=4, y_factor=8)\n"
        "s[D].parallel(D_i_outer)"
    )


def test_failed_primitive_is_not_recorded():
    A, B, C, D = matmul(8, 8, 8)
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError):
        s[D].vectorize(s[C].op.axis[0])
    assert len(s.trace) == 0


def test_step_naming_missing_axis_raises_with_axes():
    A, B, C, D = matmul(8, 8, 8)
    s = te.create_schedule(D.op)
    bad = Trace([Step("split", "D", (("parent", "q"), ("factor", 4), ("nparts", None)))])
    with pytest.raises(ScheduleError, match=r"trace step 0 \(split\('D'.*names axis 'q'.*Leaf axes of D: \[i, j\]"):
        bad.apply(s)


def test_step_naming_missing_stage_raises():
    A, B, C, D = matmul(8, 8, 8)
    bad = Trace([Step("compute_inline", "E", ())])
    with pytest.raises(ScheduleError, match=r"names stage 'E'.*Stages: \['A', 'B', 'C', 'D'\]"):
        bad.apply(te.create_schedule(D.op))


def test_replay_on_another_compute_names_the_step_and_axes():
    A = te.placeholder((32,), name="A")
    D = te.compute((32,), lambda i: A[i] + 1, name="D")
    A2, B2, C2, D2 = matmul(8, 8, 8)
    s = te.create_schedule(D2.op)
    s[D2].fuse(*s[D2].op.axis)
    with pytest.raises(ScheduleError, match=r"trace step 0 .*names axis 'j'.*Leaf axes of D: \[i\]"):
        s.trace.apply(te.create_schedule(D.op))


def test_replayed_primitive_error_names_the_step():
    A, B, C, D = matmul(8, 8, 8)
    s = te.create_schedule(D.op)
    bad = Trace([Step("vectorize", "C", (("iv", "k"),))])
    with pytest.raises(ScheduleError, match=r"trace step 0 \(vectorize.*cannot vectorize reduce axis 'k'"):
        bad.apply(s)


def test_bad_json_is_refused():
    with pytest.raises(ValueError, match="unknown trace step kind 'spilt'"):
        Trace.from_json([["spilt", "C", {}]])
    with pytest.raises(ValueError, match="takes arguments"):
        Trace.from_json([["split", "C", {"parent": "i"}]])


def test_step_replace_changes_a_factor():
    A, B, C, D = matmul(8, 8, 8)
    s = te.create_schedule(D.op)
    s[D].split(s[D].op.axis[0], factor=2)
    step = s.trace.steps[0].replace(factor=4)
    s2 = Trace([step]).apply(te.create_schedule(D.op))
    assert [iv.dom.extent.value for iv in s2[D].leaf_iter_vars] == [2, 4, 8]
    with pytest.raises(KeyError, match="has no argument 'fator'"):
        step.replace(fator=3)


def test_bind_is_recorded():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=16)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s2 = Trace.from_json(s.trace.to_json()).apply(te.create_schedule(B.op))
    assert str(lower(s2, [A, B])) == str(lower(s, [A, B]))
    assert "te.thread_axis('blockIdx.x')" in str(s.trace)
    np.testing.assert_equal(len(s2.trace), 2)


def test_rewrite_layout_round_trip_and_other_shapes():
    A, B, C, D = matmul(21, 19, 13)
    s = te.create_schedule(D.op)
    s.rewrite_layout(B, s[C], lengths=[[13], [5, 4]], order=[[1, 0], [0, 0], [1, 1]])  # 19 -> 20 columns
    jo, ji = s[C].split(s[C].op.axis[1], factor=4)
    s[C].vectorize(ji)
    assert "B_packed = s.rewrite_layout(B, s[C], lengths=[[13], [5, 4]]" in str(s.trace)
    s2 = Trace.from_json(json.loads(json.dumps(s.trace.to_json()))).apply(te.create_schedule(D.op))
    assert str(lower(s2, [A, B, D])) == str(lower(s, [A, B, D]))
    check_build(s2, [A, B, D], _ref, rtol=1e-4, atol=1e-4)
    A2, B2, C2, D2 = matmul(5, 33, 3)  # 33 columns: the recorded lengths no longer cover them
    with pytest.raises(ScheduleError, match=r"trace step 0 \(rewrite_layout.*product covers it"):
        s.trace.apply(te.create_schedule(D2.op))


def test_primitives_a_trace_cannot_replay_are_noted():
    A, B, C, D = matmul(8, 8, 8)
    s = te.create_schedule(D.op)
    s.create_group(outputs=D, inputs=[A, B])
    assert s.trace.unrecorded == ["create_group"]


def test_reorder_storage_lays_the_buffer_out_and_refuses_arguments():
    A, B, C, D = matmul(21, 19, 13)
    s = te.create_schedule(D.op)
    _reorder_storage(s, C, D)
    assert "C.local[ramp((j.c * 4), 1, 4)]" in str(lower(s, [A, B, D]))  # i contiguous: one vector
    with pytest.raises(ScheduleError, match="each of the operation's own axes once"):
        s[C].reorder_storage(s[C].op.axis[0])
    s = te.create_schedule(D.op)
    s[D].reorder_storage(*reversed(s[D].op.axis))
    with pytest.raises(ValueError, match="reorder_storage of stage 'D': its tensor is an argument"):
        lower(s, [A, B, D])
