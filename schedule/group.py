"""Schedule groups: stages placed together (classic TVM's ``s.create_group``).

A group holds the stages between some inputs and outputs; ``g.compute_at(s[C], axis)``
computes all of them inside loop ``axis`` of ``C`` (each member that was at root moves
there, a member already attached inside the group stays)::

    x1 = x + 1; x2 = x1 + 2                      for (i, 0, m)
    g = s.create_group(outputs=x1, inputs=x,       for (j, 0, n)
                       include_inputs=True)          x[0] = 1
    g.compute_at(s[x2], x2.op.axis[1])               x1[0] = x[0] + 1
                                                     x2[i, j] = x1[0] + 2

Groups nest: a group made over the stages of another becomes its parent.  A member
stage may be computed only at a stage of its own group (or of a group inside it).
The stages of a ``te.scan``'s step form a group of their own.
"""

from __future__ import annotations

from schedule.errors import ScheduleError
from te.tensor import Tensor


class Group:
    """A set of stages computed together; ``group`` is its parent group (or None)."""

    def __init__(self, schedule, name: str):
        self.schedule = schedule
        self.name = name
        self.group: Group | None = None
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    @property
    def members(self) -> list:
        """The stages of the group and of the groups inside it."""
        return [st for st in self.schedule.stages if self.contains(st)]

    @property
    def num_child_stages(self) -> int:
        """The stages and groups whose parent is this group."""
        sch = self.schedule
        return sum(1 for x in list(sch.stages) + list(sch.groups) if x.group is self)

    def contains(self, member) -> bool:
        g = member.group
        while g is not None:
            if g is self:
                return True
            g = g.group
        return False

    def compute_at(self, parent, axis) -> None:
        """Compute every member inside loop ``axis`` of stage ``parent`` (which must read them)."""
        if self.contains(parent):
            raise ScheduleError(f"In schedule for group '{self.name}': cannot compute_at stage '{parent.name}', "
                                f"which is a member of the group. Attach the group to a stage that reads it.")
        sch = self.schedule
        sch.placing_group = True
        try:
            for st in self.members:
                inside = st.attach_stage is not None and self.contains(st.attach_stage)
                if st.attach_type != "inline" and not inside:
                    st.compute_at(parent, axis)
        finally:
            sch.placing_group = False
        self.attach_type, self.attach_stage, self.attach_ivar = "scope", parent, axis

    def compute_root(self) -> None:
        for st in self.members:
            if st.attach_stage is not None and not self.contains(st.attach_stage):
                st.compute_root()
        self.attach_type, self.attach_stage, self.attach_ivar = "root", None, None

    def __repr__(self) -> str:
        return f"group({self.name}, {[st.name for st in self.members]})"


def create_group(sch, outputs, inputs, include_inputs: bool = False) -> Group:
    """The stages that compute ``outputs`` from ``inputs`` as one group (inputs included if asked)."""
    outputs = _tensors(outputs)
    inputs = _tensors(inputs)
    boundary = {id(t.op) for t in inputs}
    chosen: list = []
    todo = [t.op for t in outputs]
    seen: set = set()
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if id(op) in boundary:
            if include_inputs:
                chosen.append(sch[op])
            continue
        chosen.append(sch[op])
        todo.extend(t.op for t in op.input_tensors)
    missing = [t.name for t in inputs if id(t.op) not in seen]
    if missing:
        raise ScheduleError(f"create_group: inputs {missing} are not read on the way to the outputs "
                            f"{[t.name for t in outputs]}; the group must be connected. Pass the tensors the "
                            f"outputs are computed from.")
    parent = _common_group([st.group for st in chosen])
    group = Group(sch, f"group{len(sch.groups)}({', '.join(t.name for t in outputs)})")
    group.group = parent
    members = {id(st) for st in chosen}
    for st in chosen:
        top = _top_below(st, parent)
        if top is st:
            st.group = group
        elif all(id(m) in members for m in top.members):
            top.group = group
        else:
            raise ScheduleError(f"create_group: stage '{st.name}' belongs to {top.name}, which the new group "
                                f"would only partly contain. Groups nest: include all of its stages or none.")
    sch.groups.append(group)
    return group


def _tensors(x) -> list:
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    for t in xs:
        if not isinstance(t, Tensor):
            raise TypeError(f"create_group: expected tensors, got {t!r}")
    return xs


def _ancestors(g) -> list:
    out = []
    while g is not None:
        out.append(g)
        g = g.group
    return out


def _common_group(groups: list):
    """The innermost group that contains every one of ``groups`` (None: the schedule itself)."""
    chains = [_ancestors(g) for g in groups]
    if not chains or any(not c for c in chains):
        return None
    common = [g for g in chains[0] if all(any(g is h for h in c) for c in chains[1:])]
    return common[0] if common else None


def _top_below(stage, parent):
    """The outermost group containing ``stage`` just below ``parent`` (the stage itself if none)."""
    x = stage
    while x.group is not None and x.group is not parent:
        x = x.group
    return x
