"""Templates and tasks: ``@autotvm.template(name)``, ``get_config()``, ``task.create``.

A template is a function ``(*args) -> (schedule, tensors)`` that asks
``autotvm.get_config()`` for its choices.  Registering it under a name lets a
task be created from the name and plain arguments, and lets a worker process
(which imports the template's module) rebuild any config of it::

    task = autotvm.task.create("tutorial/matmul", args=(512, 512, 512, "float32"), target="llvm")
    print(task.config_space)          # knobs and their sizes
    s, args = task.instantiate(task.config_space.get(17))
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from dataclasses import dataclass

from tune import record
from tune.autotvm import dispatch
from tune.autotvm.errors import TemplateError, TemplateNotFoundError, TuneError
from tune.autotvm.space import ConfigEntity, ConfigSpace, FallbackConfigEntity
from tune.measure.builder import defining_file, load_by_path
from tune.measure.measure import MeasureInput


@dataclass(frozen=True)
class TemplateEntry:
    """One template of the one registry: its tunable function (``@template``: the registered
    wrapper, and the module a worker imports to find it) and/or its knob rule
    (``tune.autotvm.config.Rule``: the space, rule default and constraint of a topi template)."""

    name: str
    func: object = None
    module: str | None = None
    rule: object = None
    path: str | None = None  # the file that defines it, where a worker can load it from


_TEMPLATES: dict = {}


def registered(name: str) -> TemplateEntry | None:
    """The registry's entry of ``name`` (None: nothing registered under it)."""
    return _TEMPLATES.get(name)


def set_rule(name: str, rule) -> None:
    """Attach a knob rule to template ``name`` (``tune.autotvm.config.register_rule``)."""
    _TEMPLATES[name] = dataclasses.replace(_TEMPLATES.get(name) or TemplateEntry(name), rule=rule)


def rule_names() -> list:
    return [name for name, entry in _TEMPLATES.items() if entry.rule is not None]


def args_to_workload(args, name: str) -> tuple:
    """``(name, *args)`` with lists as tuples: the hashable key of a template call."""
    return (name,) + tuple(_freeze(a) for a in args)


def _freeze(x):
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    if hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "op"):  # a te Tensor argument
        return ("TENSOR", tuple(int(d) for d in x.shape), str(x.dtype))
    return x


def template(task_name, func=None):
    """Register ``func`` as the tunable template ``task_name`` (decorator or plain call)."""
    if callable(task_name) and func is None:  # bare @template: the function's own name
        return template(task_name.__name__, task_name)

    def register(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            from codegen.target import Target

            workload = args_to_workload(args, task_name)
            with dispatch.ApplyConfig(dispatch.query(Target.current(), workload)):  # classic AutoTVM's
                return f(*args, **kwargs)

        wrapper.template_name = task_name
        old = _TEMPLATES.get(task_name) or TemplateEntry(task_name)
        _TEMPLATES[task_name] = dataclasses.replace(old, func=wrapper, module=f.__module__,
                                                    path=defining_file(f.__module__))
        return wrapper

    return register(func) if func is not None else register


register_template = template


def get_config() -> ConfigSpace:
    """The config of the template being run: the dispatch stack's answer (inside a template its
    wrapper's ``ApplyConfig``; a fallback config outside any)."""
    from codegen.target import Target

    return dispatch.query(Target.current(), None)


def lookup(name: str, module: str | None = None, path: str | None = None) -> TemplateEntry:
    """The template ``name``; where it is not registered yet (a measuring worker), its ``module``
    is imported first, by name, else from the file ``path`` that defined it."""
    missing = lambda: getattr(_TEMPLATES.get(name), "func", None) is None  # noqa: E731
    if missing() and module and module != "__main__":
        try:
            importlib.import_module(module)
        except ImportError:
            pass
    if missing() and module and module != "__main__" and path:
        load_by_path(module, path)
    entry = _TEMPLATES.get(name)
    if entry is None or entry.func is None:
        known = ", ".join(sorted(n for n, e in _TEMPLATES.items() if e.func is not None)) or "none"
        where = f" (looked in module {module!r})" if module else ""
        raise TemplateNotFoundError(
            f"no autotvm template named {name!r}{where}; registered templates: {known}. "
            f"Register one with @autotvm.template({name!r}) at module level"
        )
    return entry


class Task:
    """A template with its arguments and target: what a tuner tunes."""

    def __init__(self, name: str, args: tuple, target="llvm", module: str | None = None, path: str | None = None):
        from codegen.target import create

        self.name = name
        self.args = tuple(args)
        self.target = create(target)
        self.module = module
        self.path = path
        self.config_space: ConfigSpace | None = None
        self.flop = 0.0
        self._default = None

    @property
    def workload(self) -> tuple:
        return args_to_workload(self.args, self.name)

    @property
    def target_key(self) -> str:
        return str(self.target)

    @property
    def source(self) -> tuple:
        """``(module, file)`` that define the template (``tune.measure.builder`` reads it)."""
        return self.module, self.path

    def func(self):
        return lookup(self.name, self.module, self.path).func

    def prepare(self) -> None:
        """Make the template callable in this process (a measuring worker imports its module)."""
        self.func()

    def instantiate(self, config: ConfigSpace):
        """``(schedule, tensors)`` of the template under ``config``; a template error is a TemplateError."""
        return self.instantiate_with_layouts(config)[:2]

    def instantiate_with_layouts(self, config: ConfigSpace) -> tuple:
        """``(schedule, tensors, layouts)``: per tensor, ``(layout, logical shape)`` where the
        template declared one (``autotvm.layout.declare``), else None."""
        from tune.layout import collecting

        with dispatch.ApplyConfig(config), self.target, collecting() as declared:
            try:
                out = self.func()(*self.args)
            except TuneError:
                raise
            except Exception as err:
                what = (
                    "while defining its config space"
                    if type(config) is ConfigSpace
                    else f"with config {config!r}"
                )
                raise TemplateError(
                    f"template {self.name!r} raised {what} (args {self.args}): {type(err).__name__}: {err}"
                ) from err
        if not config.valid():
            raise TemplateError(
                f"template {self.name!r}: config {config!r} is invalid: {'; '.join(config.errors)}"
            )
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TemplateError(
                f"template {self.name!r} must return (schedule, [tensors]), got {type(out).__name__}"
            )
        return out[0], out[1], declared.of(out[1])

    def default_config(self) -> ConfigEntity:
        """The fallback config (the template's own defaults) as a point of the space."""
        if self._default is None:
            fb = FallbackConfigEntity()
            self.instantiate(fb)
            self._default = fb.to_entity(self.config_space)
        return self._default

    def __getstate__(self) -> dict:  # workers rebuild the template from its name and module
        return {
            "name": self.name,
            "args": self.args,
            "target": self.target.spec,
            "module": self.module,
            "path": self.path,
            "flop": self.flop,
            "space": None,
        }

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["name"], state["args"], state["target"], state["module"], state.get("path"))
        self.flop = state["flop"]

    def __repr__(self) -> str:
        return f"Task(func_name={self.name}, args={self.args}, workload={self.workload})"


def record_input(target: str, name: str, args: tuple, config: dict) -> MeasureInput:
    """The ``MeasureInput`` of an AutoTVM record line (``tune.record``'s "config" kind)."""
    entry = _TEMPLATES.get(name)
    task = Task(name, args, target, *((entry.module, entry.path) if entry is not None else ()))
    return MeasureInput(task.target, task, ConfigEntity.from_json_dict(config))


record.register_kind("config", ConfigEntity, record_input)


def create(task_name: str, args, target="llvm", target_host=None, template_key=None) -> Task:
    """A tuning task of the registered template ``task_name`` on ``args`` for ``target``."""
    entry = lookup(task_name)
    task = Task(task_name, tuple(args), target, entry.module, entry.path)
    space = ConfigSpace(one_definition=True)
    sch, tensors = task.instantiate(space)
    space.one_definition = False
    task.config_space = space
    try:
        task.flop = space.flop or compute_flop(sch)
    except FlopCalculationError:  # a copy, or symbolic lengths: GFLOP/s are not shown
        task.flop = 0.0
    return task


class FlopCalculationError(TuneError, RuntimeError):
    """The operations of a schedule cannot be counted (classic ``FlopCalculationError``)."""


def compute_flop(sch) -> float:
    """Arithmetic operations of one call, as classic AutoTVM counts them (:func:`count_flop`);
    a schedule with none (a copy) raises :class:`FlopCalculationError`: give a template's
    count with ``cfg.add_flop``."""
    flop = count_flop(sch)
    if flop == 0:
        raise FlopCalculationError(
            "no arithmetic operation in this schedule's computes; set the template's count with "
            "cfg.add_flop(n)")
    return flop


def count_flop(sch) -> float:
    """Arithmetic operations of one call, counted on the compute definitions as classic AutoTVM
    did: every arithmetic, comparison and logic operation of any dtype once per point of the
    compute's axes (and reduce axes, with the combiner's own), a cast or an intrinsic call as
    its arguments, a select as its condition and its costlier branch, index arithmetic never."""
    from te import expr as E
    from te.tensor import ComputeOp
    from te.visitor import children

    def extent(axes) -> int:
        n = 1
        for iv in axes:
            try:
                n *= int(iv.dom.extent)
            except (TypeError, ValueError):
                raise FlopCalculationError(
                    f"axis '{iv.var.name}' has no constant length ({iv.dom.extent})") from None
        return n

    def ops(e) -> int:
        if isinstance(e, E.Reduce):
            combine = sum(ops(r) for r in e.combiner.result)
            return extent(e.axis) * (combine + sum(ops(x) for x in e.source))
        if isinstance(e, (E.TensorRead, E.IntImm, E.FloatImm, E.Var, E.StringImm)):
            return 0
        if isinstance(e, E.Select):
            return ops(e.cond) + max(ops(e.true_value), ops(e.false_value))
        own = 1 if isinstance(e, (E.BinaryOp, E.Not)) else 0  # Cast, Call: their arguments only
        return own + sum(ops(c) for c in children(e))

    total, seen, todo = 0, set(), list(sch.outputs)  # the definitions, whatever the schedule did
    while todo:
        op = todo.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        todo.extend(t.op for t in op.input_tensors)
        if isinstance(op, ComputeOp) and op.body:
            bodies = op.body[:1] if isinstance(op.body[0], E.Reduce) else op.body  # one multi-value reduction
            total += extent(op.axis) * sum(ops(b) for b in bodies)
    return float(total)


# ------------------------------------------------- whole programs (hook) ---
_EXTRACTORS: list = []


def register_extractor(fn) -> None:
    """Register ``fn(program, params, target) -> list[Task] | None`` for :func:`extract_from_program`.

    A layer above (``graph``, on import) registers one that knows its program
    objects and answers None for any other; tune itself imports no such layer.
    """
    if fn not in _EXTRACTORS:
        _EXTRACTORS.append(fn)


def extract_from_program(program, params=None, target="llvm", ops=None) -> list:
    """One task per distinct tunable kernel of ``program`` (a ``graph.Graph`` or an ONNX
    ``ModelProto``), asked of the registered extractors, the latest first (classic
    ``autotvm.task.extract_from_program``; ``ops`` is accepted and ignored)."""
    for fn in reversed(_EXTRACTORS):
        tasks = fn(program, params, target)
        if tasks is not None:
            return tasks
    raise TuneError(
        f"extract_from_program: no extractor knows a {type(program).__name__}; "
        f"pass a graph.Graph or an onnx ModelProto after 'import graph' (which registers one)"
    )


__all__ = [
    "Task",
    "TemplateEntry",
    "args_to_workload",
    "FlopCalculationError",
    "compute_flop",
    "count_flop",
    "create",
    "extract_from_program",
    "get_config",
    "lookup",
    "register_extractor",
    "register_template",
    "template",
]
