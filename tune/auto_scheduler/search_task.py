"""``SearchTask``, ``State`` (a candidate: a schedule trace) and ``register_workload``.

A search task is a te computation (a ``ComputeDAG``) with a target.  It is
made from a function registered with ``@auto_scheduler.register_workload`` and
its arguments (classic TVM's tutorial), or from a DAG directly (the fused
kernels of a graph, ``extract_tasks``).  Its candidates are ``State`` s: a
schedule trace (``schedule.trace``) with the sketch and the choices it was
realised from.  The task offers what ``tune.measure`` asks of every tuner's
tasks (``instantiate_with_layouts``, ``default_config``, ``source``), so the
shared builder and runner measure its candidates; the DAG travels with the
task to the worker processes, which replay the trace on it.
"""

from __future__ import annotations

import json
import warnings

from codegen.target import create
from schedule.layout_rewrite import pre_transformed
from schedule.trace import Trace
from tune import record
from tune.errors import TuneError
from tune.measure.measure import MeasureInput
from tune.auto_scheduler.compute_dag import ComputeDAG

WORKLOADS: dict = {}  # name -> function returning [te tensors]
DAGS: dict = {}  # name -> ComputeDAG of the tasks made from a DAG in this process (a graph's kernels)


def register_workload(func_name, f=None, override: bool = False):
    """Register a function returning the te tensors of a computation (decorator or plain call)."""
    if callable(func_name) and f is None:
        return register_workload(func_name.__name__, func_name, override)

    def register(fn):
        if func_name in WORKLOADS and not override and WORKLOADS[func_name] is not fn:
            if getattr(WORKLOADS[func_name], "__code__", None) is not getattr(fn, "__code__", None):
                warnings.warn(f"register_workload: {func_name!r} registered again; the new function replaces it",
                              stacklevel=3)
        WORKLOADS[func_name] = fn
        return fn

    return register(f) if f is not None else register


class LayoutRewriteOption:
    """How a candidate that packs its weights (``rewrite_layout`` of a ``layout_free_placeholders``
    tensor) is built (classic TVM's names).  ``INSERT_TRANSFORM_STAGE``: the packing runs in the
    kernel, which takes the weights as they are (a graph's kernels; ``apply_best``).
    ``REWRITE_FOR_PRE_TRANSFORMED``: the kernel takes the weights packed, as a build folds them
    on constant weights; what a search task measures unless told otherwise."""

    NO_REWRITE = 0  # classic: no layout rewrite; here the trace's steps decide, as INSERT_TRANSFORM_STAGE
    INSERT_TRANSFORM_STAGE = 1
    REWRITE_FOR_PRE_TRANSFORMED = 2


def _freeze(x):
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    return x


class State:
    """A candidate schedule: its ``trace``, and the ``sketch`` and ``genes`` it was realised from
    (None for a trace made otherwise: by hand, or read from an older log); ``own``: the trace of the
    kernel's own schedule (a graph operator's), which a build need not replay."""

    def __init__(self, trace: Trace, sketch: int | None = None, genes: dict | None = None, own: bool = False):
        self.trace = trace
        self.sketch = sketch
        self.genes = genes
        self.own = own

    def key(self) -> str:
        return self.trace.key()

    def to_json_dict(self) -> dict:
        out = {"steps": self.trace.to_json()}
        if self.sketch is not None:
            out["sketch"], out["genes"] = self.sketch, self.genes
        if self.own:
            out["own"] = True
        return out

    @classmethod
    def from_json_dict(cls, row: dict) -> "State":
        if not isinstance(row, dict) or "steps" not in row:
            raise ValueError("an auto_scheduler record's trace is {'steps': [...], ...}")
        return cls(Trace.from_json(row["steps"]), row.get("sketch"), row.get("genes"), bool(row.get("own")))

    def __str__(self) -> str:
        return str(self.trace)

    def __repr__(self) -> str:
        return f"State({len(self.trace)} steps, sketch={self.sketch})"


class Task:
    """A computation to schedule for a target: what measurement and records need of a search task
    (``tune.auto_scheduler.task.SearchTask`` adds the classic entry points)."""

    def __init__(self, func=None, args=None, compute_dag: ComputeDAG | None = None, workload_key=None,
                 target="llvm", target_host=None, hardware_params=None, layout_rewrite_option=None,
                 task_inputs=None, task_inputs_overwrite=False, task_inputs_save_to_file=False, desc="",
                 baseline: State | None = None):
        self.target = create(target)
        self.baseline = baseline  # a schedule to measure first (a graph kernel's own), or None
        self.args = tuple(_freeze(a) for a in (args or ()))
        self.desc = desc
        if layout_rewrite_option is None:
            layout_rewrite_option = LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED
        if layout_rewrite_option not in (0, 1, 2):
            raise ValueError(f"layout_rewrite_option: one of LayoutRewriteOption's values (0, 1, 2), "
                             f"got {layout_rewrite_option!r}")
        self.layout_rewrite_option = int(layout_rewrite_option)
        self._dag = compute_dag
        if func is not None:
            name = func if isinstance(func, str) else getattr(func, "__name__", None)
            if not isinstance(func, str):
                register_workload(name, func, override=True)
            self.name = name
        elif compute_dag is not None:
            self.name = workload_key or f"dag_{compute_dag.key}"
            DAGS[self.name] = compute_dag  # records of this name read in this process replay on it
        elif workload_key is not None:
            self.name = workload_key
        else:
            raise TuneError("SearchTask needs func= (a registered workload) or compute_dag=")

    @property
    def flop(self) -> float:
        """Float operations of one call (0 where the computation is not known here)."""
        return self.compute_dag.flop_ct if self.known else 0.0

    @property
    def known(self) -> bool:
        """Whether this process knows the computation (a registered workload or a DAG)."""
        return self._dag is not None or self.name in WORKLOADS or self.name in DAGS

    # what the measurement layer asks of a task -------------------------------------
    @property
    def compute_dag(self) -> ComputeDAG:
        if self._dag is None and self.name in DAGS:
            self._dag = DAGS[self.name]
        if self._dag is None:
            fn = WORKLOADS.get(self.name)
            if fn is None:
                raise TuneError(f"auto_scheduler workload {self.name!r} is not registered in this process; "
                                f"registered: {sorted(WORKLOADS) or 'none'}. Define it with "
                                f"@auto_scheduler.register_workload before reading its records")
            self._dag = ComputeDAG(fn(*self.args))
        return self._dag

    @property
    def workload_key(self) -> str:
        return json.dumps([self.name, *self.args])

    @property
    def workload(self) -> tuple:
        return (self.name,) + self.args

    @property
    def target_key(self) -> str:
        return str(self.target)

    @property
    def source(self) -> tuple:
        """The DAG travels with the task: a worker replays traces on it without importing anything."""
        return __name__, __file__

    def prepare(self) -> None:
        """Nothing to import: the DAG came with the task."""

    def instantiate(self, state: State, layout_rewrite_option=LayoutRewriteOption.INSERT_TRANSFORM_STAGE):
        """``(schedule, tensors)`` of ``state``: by default a kernel of the DAG's own tensors."""
        return self.instantiate_with_layouts(state, layout_rewrite_option)[:2]

    def instantiate_with_layouts(self, state: State, layout_rewrite_option=None) -> tuple:
        """``(schedule, tensors, layouts)`` of ``state``'s trace replayed on the DAG, built as
        ``layout_rewrite_option`` says (default: the task's).  Pre-transformed, a packed weight is an
        argument in its packed layout: its entry of ``layouts`` is ``(layout, shape)`` (``tune.layout``),
        so the runner checks the candidate on the same weights as the reference."""
        try:
            sch = state.trace.apply(self.compute_dag.schedule())
        except ValueError as err:
            raise TuneError(f"auto_scheduler task {self.name!r}: {err}") from None
        return self.as_built(sch, layout_rewrite_option)

    def as_built(self, sch, layout_rewrite_option=None) -> tuple:
        """``(schedule, tensors, layouts)``: ``sch`` (a schedule of the DAG) as
        ``instantiate_with_layouts`` builds it."""
        dag = self.compute_dag
        option = self.layout_rewrite_option if layout_rewrite_option is None else layout_rewrite_option
        if option != LayoutRewriteOption.REWRITE_FOR_PRE_TRANSFORMED:
            return sch, list(dag.tensors), None
        sch, args, packs = pre_transformed(sch, dag.tensors)
        layouts = [None if a not in packs else
                   (packs[a].op.attrs["layout"], tuple(int(d) for d in packs[a].op.input_tensors[0].shape))
                   for a in args]
        return sch, args, (layouts if packs else None)

    def default_config(self) -> State:
        """The reference every candidate is checked against: the default schedule with each
        reduction's reduce loops moved outside its innermost data loop and its outer data loop
        run in parallel (the plain default of a 1024^3 matmul reads B down its columns, ~20 s)."""
        sch = self.compute_dag.schedule()
        for st in sch.stages:
            axes = list(getattr(st.op, "axis", ()))
            if getattr(st.op, "reduce_axis", ()) and axes:
                st.reorder(*axes[:-1], *st.op.reduce_axis, axes[-1])
                if len(axes) > 1:
                    st.parallel(axes[0])
        return State(sch.trace)

    def __getstate__(self) -> dict:
        return {"name": self.name, "args": self.args, "target": self.target.spec, "desc": self.desc,
                "baseline": self.baseline, "layout_rewrite_option": self.layout_rewrite_option,
                "tensors": self.compute_dag.tensors if self.known else None}

    def __setstate__(self, state: dict) -> None:
        dag = ComputeDAG(state["tensors"]) if state["tensors"] is not None else None
        self.__init__(workload_key=state["name"], args=state["args"], compute_dag=dag,
                      target=state["target"], desc=state["desc"], baseline=state.get("baseline"),
                      layout_rewrite_option=state.get("layout_rewrite_option"))
        if dag is None:
            self._dag = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.workload_key}, target={self.target_key!r})"


def record_input(target: str, name: str, args: tuple, candidate: dict) -> MeasureInput:
    """The ``MeasureInput`` of an auto_scheduler record line (``tune.record``'s "trace" kind)."""
    task = Task(workload_key=name, args=args, target=target)
    return MeasureInput(task.target, task, State.from_json_dict(candidate))


record.register_kind("trace", State, record_input)

__all__ = ["DAGS", "LayoutRewriteOption", "State", "Task", "WORKLOADS", "register_workload"]
