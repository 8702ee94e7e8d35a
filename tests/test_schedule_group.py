"""Schedule groups (classic ``s.create_group``): stages placed together, nested groups, errors."""

import numpy as np
import pytest

import codegen
import schedule
import te
from schedule import ScheduleError


def chain(m=13, n=11):
    x = te.compute((m, n), lambda i, j: (i * n + j).astype("float32"), name="x")
    x1 = te.compute(x.shape, lambda *i: x(*i) + 1.0, name="x1")
    x2 = te.compute(x.shape, lambda *i: x1(*i) * 2.0, name="x2")
    return x, x1, x2


def test_group_compute_at_places_every_member_and_computes_right():
    x, x1, x2 = chain()
    s = te.create_schedule(x2.op)
    g = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s[x].group is g and s[x1].group is g and g.num_child_stages == 2
    g.compute_at(s[x2], x2.op.axis[1])
    assert g.attach_stage is s[x2] and s[x].attach_stage is s[x2] and s[x1].attach_stage is s[x2]
    text = str(schedule.lower(s, [x2]))
    assert text.index("for (i1") < text.index("produce x {") < text.index("produce x1 {")
    out = np.zeros((13, 11), np.float32)
    codegen.build(s, [x2], name="grouped")(out)
    np.testing.assert_array_equal(out, (np.arange(13 * 11).reshape(13, 11) + 1.0) * 2.0)


def test_groups_nest_and_members_stay_inside():
    x, x1, x2 = chain()
    s = te.create_schedule(x2.op)
    g1 = s.create_group(outputs=x1, inputs=x)
    g2 = s.create_group(outputs=x1, inputs=x, include_inputs=True)
    assert s.groups == [g1, g2] and g1.group is g2 and s[x].group is g2 and s[x1].group is g1
    assert (g1.num_child_stages, g2.num_child_stages) == (1, 2)
    with pytest.raises(ScheduleError, match=r"stage 'x1': cannot compute_at stage 'x2', which is outside its group"):
        s[x1].compute_at(s[x2], x2.op.axis[0])
    s[x].compute_at(s[x1], x1.op.axis[0])  # inside its group: allowed


def test_an_unconnected_group_is_refused():
    x, x1, x2 = chain()
    y = te.compute((4,), lambda i: i.astype("float32"), name="y")
    s = te.create_schedule([x2.op, y.op])
    with pytest.raises(ScheduleError, match=r"create_group: inputs \['y'\] are not read on the way to the outputs \['x1'\]"):
        s.create_group(outputs=x1, inputs=[x, y])


def test_scan_steps_form_a_group():
    m, n = 6, 5
    x = te.compute((m, n), lambda i, j: te.const(1.0, "float32"), name="x")
    state = te.placeholder((m, n), name="state")
    init = te.compute((1, n), lambda _, i: x[0, i], name="init")
    u1 = te.compute((m, n), lambda t, i: state[t - 1, i] + x[t, i], name="u1")
    u2 = te.compute((m, n), lambda t, i: u1[t, i] + 1.0, name="u2")
    res = te.scan(init, u2, state, inputs=[x])
    s = te.create_schedule(res.op)
    assert s[u1].group is not None and s[u1].group is s[u2].group
    with pytest.raises(ScheduleError, match="outside its group"):
        s[u2].compute_at(s[init], init.op.axis[0])
