"""Schedule traces: the primitives applied to a schedule, kept as replayable data.

Every primitive on a ``Schedule`` or a ``Stage`` appends one ``Step`` to
``s.trace``: its kind, the stage it acted on and its arguments, with stages
and axes named by name (``"C"``, ``"i.outer"``), never by object::

    s[C].split(i, factor=32)     ->   Step("split", "C", {"parent": "i", "factor": 32, "nparts": None})
    s.cache_write(C, "local")    ->   Step("cache_write", "C", {"tensor": 0, "scope": "local"})

A trace serialises to JSON (``to_json`` / ``from_json``), replays on a fresh
schedule of the same compute to the identical loop nest (``apply``), and
prints as the te Python code a user would write (``print(s.trace)``).  A
primitive called by another (``tile`` calls ``split`` and ``reorder``) is
recorded once, as the outer one.  Replayed on the same compute with other
shapes, every primitive checks its arguments again (factors included); a step
that no longer applies raises ``ScheduleError`` naming the step and the
stage's axes.  Halide keeps the same thing as its ``Func`` schedule objects;
classic TVM's auto_scheduler kept it as its ``State``'s transform steps.
"""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import dataclass

from te import expr as E
from schedule.errors import ScheduleError
from schedule.trace_print import py_name, trace_python

# kind -> (owner: "stage" | "schedule", {parameter: how it is named in the step})
# axis: an axis of the step's stage; axes: several; stage: another stage; stages: reader
# stages; tensor: the output index (or indices) of the step's stage; parent_axis: an axis of
# the stage named by "parent"; thread: a thread axis by tag; value: a JSON scalar.
KINDS: dict = {
    "split": ("stage", {"parent": "axis", "factor": "value", "nparts": "value"}),
    "tile": ("stage", {"x_parent": "axis", "y_parent": "axis", "x_factor": "value", "y_factor": "value"}),
    "fuse": ("stage", {"args": "axes"}),
    "reorder": ("stage", {"args": "axes"}),
    "vectorize": ("stage", {"iv": "axis"}),
    "parallel": ("stage", {"iv": "axis"}),
    "unroll": ("stage", {"iv": "axis"}),
    "bind": ("stage", {"ivar": "axis", "thread_ivar": "thread"}),
    "pragma": ("stage", {"iv": "axis", "key": "value", "value": "value"}),
    "storage_align": ("stage", {"axis": "axis", "factor": "value", "offset": "value"}),
    "reorder_storage": ("stage", {"args": "axes"}),
    "set_scope": ("stage", {"scope": "value"}),
    "compute_at": ("stage", {"parent": "stage", "axis": "parent_axis"}),
    "compute_inline": ("stage", {}),
    "compute_root": ("stage", {}),
    "cache_read": ("schedule", {"tensor": "tensor", "scope": "value", "readers": "stages"}),
    "cache_write": ("schedule", {"tensor": "tensor", "scope": "value"}),
    "rfactor": ("schedule", {"tensor": "tensor", "axis": "axis", "factor_axis": "value"}),
    "rewrite_layout": ("schedule", {"tensor": "tensor", "reader": "stage", "lengths": "value", "order": "value"}),
}
_DATAFLOW = ("cache_read", "cache_write", "rfactor", "rewrite_layout")  # steps that add stages or replace ops


class _Unrecordable(Exception):
    """An argument a trace cannot name (a symbolic factor, an object of another schedule)."""


def _freeze(v):
    return tuple(_freeze(x) for x in v) if isinstance(v, (list, tuple)) else v


def _thaw(v):
    return [_thaw(x) for x in v] if isinstance(v, tuple) else v


@dataclass(frozen=True)
class Step:
    """One primitive: ``kind`` on stage ``stage`` with ``args`` (parameter -> JSON value)."""

    kind: str
    stage: str
    args: tuple = ()  # ((parameter, value), ...) in the primitive's parameter order

    def __getitem__(self, name: str):
        return dict(self.args)[name]

    def replace(self, **changes) -> "Step":
        """This step with some arguments changed (the search mutates factors this way)."""
        args = dict(self.args)
        for k, v in changes.items():
            if k not in args:
                raise KeyError(f"step {self.kind} has no argument {k!r}; it has {list(args)}")
            args[k] = _freeze(v)
        return Step(self.kind, self.stage, tuple(args.items()))

    def to_json(self) -> list:
        return [self.kind, self.stage, {k: _thaw(v) for k, v in self.args}]

    @classmethod
    def from_json(cls, row) -> "Step":
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[2], dict)):
            raise ValueError(f"a trace step is [kind, stage, {{arguments}}], got {row!r}")
        kind, stage, args = row
        if kind not in KINDS:
            raise ValueError(f"unknown trace step kind {kind!r}; known: {sorted(KINDS)}")
        params = KINDS[kind][1]
        if set(args) != set(params):
            raise ValueError(f"trace step {kind} takes arguments {sorted(params)}, got {sorted(args)}")
        return cls(kind, str(stage), tuple((p, _freeze(args[p])) for p in params))

    def __str__(self) -> str:
        args = ", ".join(f"{k}={_thaw(v)!r}" for k, v in self.args)
        return f"{self.kind}({self.stage!r}{', ' if args else ''}{args})"


class Trace:
    """The steps applied to a schedule, in order (``s.trace``)."""

    def __init__(self, steps=()):
        self.steps: list[Step] = list(steps)
        self.unrecorded: list[str] = []  # primitives applied that this trace cannot replay
        self._depth = 0
        self._kinds: list = []  # the primitives running now, outermost first
        self._roots: list = []  # (step count, {stage ref: root axis names}) for printing

    # data --------------------------------------------------------------------
    def to_json(self) -> list:
        return [s.to_json() for s in self.steps]

    @classmethod
    def from_json(cls, rows) -> "Trace":
        if not isinstance(rows, list):
            raise ValueError(f"a trace is a JSON list of steps, got {type(rows).__name__}")
        return cls(Step.from_json(r) for r in rows)

    def key(self) -> str:
        """A string that is equal for equal traces (records and caches key on it)."""
        return json.dumps(self.to_json(), separators=(",", ":"))

    def __eq__(self, other) -> bool:
        return isinstance(other, Trace) and self.steps == other.steps

    def __hash__(self) -> int:
        return hash(tuple(self.steps))

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __repr__(self) -> str:
        return f"Trace({len(self.steps)} steps)"

    # replay ------------------------------------------------------------------
    def apply(self, sch):
        """Apply every step to ``sch`` (a fresh schedule of the same compute); returns ``sch``."""
        for n, step in enumerate(self.steps):
            apply_step(sch, step, n)
        return sch

    # printing ----------------------------------------------------------------
    def python(self) -> str:
        """The te Python code of these steps (``s`` is the schedule; tensors named as stages)."""
        return trace_python(self)

    def __str__(self) -> str:
        return self.python()


# recording ---------------------------------------------------------------------
def stage_ref(sch, stage) -> str:
    """``stage``'s name, with ``#k`` where earlier stages share it (two caches of one tensor)."""
    same = [s for s in sch.stages if s.name == stage.name]
    k = next(i for i, s in enumerate(same) if s is stage)
    return stage.name if k == 0 else f"{stage.name}#{k}"


def find_stage(sch, ref: str, step: str):
    name, _, k = ref.partition("#")
    same = [s for s in sch.stages if s.name == name]
    k = int(k or 0)
    if k >= len(same):
        raise ScheduleError(
            f"{step} names stage '{ref}', which this schedule does not have. Stages: "
            f"{[s.name for s in sch.stages]}. The trace was recorded on another compute."
        )
    return same[k]


def _encode(sch, stage, kind: str, bound: dict) -> tuple:
    params = KINDS[kind][1]
    out = []
    for name, how in params.items():
        v = bound.get(name)
        if how in ("axis", "parent_axis"):
            if not isinstance(v, E.IterVar):
                raise _Unrecordable(name)
            v = v.var.name
        elif how == "axes":
            v = tuple(v[0]) if len(v) == 1 and isinstance(v[0], (list, tuple)) else tuple(v)
            if not all(isinstance(iv, E.IterVar) for iv in v):
                raise _Unrecordable(name)
            v = tuple(iv.var.name for iv in v)
        elif how == "stage":
            v = stage_ref(sch, v if hasattr(v, "leaf_iter_vars") else sch[v])
        elif how == "stages":
            v = (v,) if not isinstance(v, (list, tuple)) else tuple(v)
            v = tuple(stage_ref(sch, sch[r] if not hasattr(r, "leaf_iter_vars") else r) for r in v)
        elif how == "tensor":
            v = tuple(t.value_index for t in v) if isinstance(v, (list, tuple)) else v.value_index
        elif how == "thread":
            v = getattr(v, "thread_tag", None) or v.var.name
        else:
            v = _freeze(_plain(v))
            if not _json_scalar_tree(v):
                raise _Unrecordable(name)
        out.append((name, v))
    return tuple(out)


def _plain(v):
    if isinstance(v, E.IntImm):
        return v.value
    return [_plain(x) for x in v] if isinstance(v, (list, tuple)) else v


def _json_scalar_tree(v) -> bool:
    if isinstance(v, tuple):
        return all(_json_scalar_tree(x) for x in v)
    return v is None or isinstance(v, (bool, int, float, str))


def recorded(kind: str):
    """Decorate a primitive so that each call from outside any other primitive appends a Step."""
    owner = KINDS[kind][0]

    def deco(fn):
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(self, *args, **kwargs):
            sch = self if owner == "schedule" else self.schedule
            trace = getattr(sch, "trace", None)
            if trace is None:
                return fn(self, *args, **kwargs)
            if trace._depth:
                return _run(trace, kind, fn, self, args, kwargs)
            step = None
            try:
                bound = sig.bind(self, *args, **kwargs)
                bound.apply_defaults()
                values = dict(bound.arguments)
                stage = sch[values["tensor"][0] if isinstance(values.get("tensor"), (list, tuple))
                            else values["tensor"]] if owner == "schedule" else self
                step = Step(kind, stage_ref(sch, stage), _encode(sch, stage, kind, values))
            except Exception:  # the primitive raises its own, better error below
                pass
            out = _run(trace, kind, fn, self, args, kwargs)
            if step is None:
                trace.unrecorded.append(kind)
            else:
                trace.steps.append(step)
                if kind in _DATAFLOW:
                    snapshot_roots(sch)
            return out

        wrapper.trace_kind = kind
        return wrapper

    return deco


COMPOSITE = ("tile",)  # primitives made of others (split, split, reorder): the schedule record keeps those


def _run(trace, kind: str, fn, obj, args, kwargs):
    """Call the primitive; then, where the schedule keeps a record of its states (classic TVM's
    ``te.keep_schedule_record``), append its state after each elementary primitive."""
    outer = list(trace._kinds)
    trace._depth += 1
    trace._kinds.append(kind)
    try:
        out = fn(obj, *args, **kwargs)
    finally:
        trace._depth -= 1
        trace._kinds.pop()
    sch = obj if KINDS[kind][0] == "schedule" else obj.schedule
    if kind not in COMPOSITE and all(k in COMPOSITE for k in outer):
        sch.keep_state(kind)
    return out


def snapshot_roots(sch) -> None:
    """Remember each stage's root axis names now (the printer introduces them by name)."""
    roots = {}
    for st in sch.stages:
        axes = list(getattr(st.op, "axis", ())) + list(getattr(st.op, "reduce_axis", ()))
        roots[stage_ref(sch, st)] = [iv.var.name for iv in axes]
    sch.trace._roots.append((len(sch.trace.steps), roots))


# replay --------------------------------------------------------------------------
def _axis(stage, name: str, where: str, leaf: bool = True):
    pool = stage.leaf_iter_vars if leaf else stage.all_iter_vars
    hits = [iv for iv in pool if iv.var.name == name]
    if not hits and leaf:
        hits = [iv for iv in stage.all_iter_vars if iv.var.name == name]
    if not hits:
        hits = [iv for iv in getattr(stage.op, "axis", ()) if iv.var.name == name]
    if not hits:
        raise ScheduleError(
            f"In schedule for stage '{stage.name}': {where} names axis '{name}', which stage "
            f"{stage.name} does not have. Leaf axes of {stage.name}: {stage._leaf_names()}. "
            f"The trace was recorded on another compute (or other axis names)."
        )
    return hits[-1]


def _decode(sch, stage, step: Step, where: str) -> dict:
    from te.extern import thread_axis

    kw = {}
    args = dict(step.args)
    for name, how in KINDS[step.kind][1].items():
        v = args[name]
        if how == "axis":
            v = _axis(stage, v, where)
        elif how == "axes":
            v = [_axis(stage, a, where) for a in v]
        elif how == "stage":
            v = find_stage(sch, v, where)
        elif how == "parent_axis":
            v = _axis(kw["parent"], v, where)
        elif how == "stages":
            v = [find_stage(sch, r, where).op for r in v]
        elif how == "tensor":
            v = [stage.op.output(i) for i in v] if isinstance(v, tuple) else stage.op.output(v)
        elif how == "thread":
            v = thread_axis(tag=v)
        kw[name] = v
    return kw


def apply_step(sch, step: Step, n: int = 0):
    """Apply one step to ``sch`` and return what the primitive returned."""
    where = f"trace step {n} ({step})"
    if step.kind not in KINDS:
        raise ScheduleError(f"{where}: unknown step kind; known: {sorted(KINDS)}")
    stage = find_stage(sch, step.stage, where)
    kw = _decode(sch, stage, step, where)
    try:
        if KINDS[step.kind][0] == "schedule":
            return getattr(sch, step.kind)(**kw)
        if step.kind in ("fuse", "reorder", "reorder_storage"):
            return getattr(stage, step.kind)(*kw["args"])
        return getattr(stage, step.kind)(**kw)
    except ValueError as err:  # ScheduleError, or a factor no longer legal
        raise ScheduleError(f"{where}: {err}") from None


__all__ = ["KINDS", "Step", "Trace", "apply_step", "find_stage", "py_name", "recorded", "stage_ref"]
