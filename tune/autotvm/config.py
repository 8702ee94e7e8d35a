"""Configs of knob templates: a workload key, a space of legal knob values, a rule default.

A knob template (every templated topi operator) registers a ``Rule`` with its
template name (the first entry of every workload key, classic TVM's task name
such as ``"conv2d_NCHWc.x86"``): a function giving the space of legal configs
of a workload for a target (knob -> list of candidates), a rule giving the
default config, optionally a constraint between knobs, and what the graph layer
needs to weigh a config against its neighbours (:class:`Rule`).  The rule sits
in the one template registry of ``tune.autotvm.task`` beside the template's
tunable function, if it has one.  A config is one chosen point, autotvm's one
config type (``ConfigEntity``, each knob an ``OtherOptionEntity``)::

    >>> wl = ("dense.x86", 4, 1000, 2048, "float32")
    >>> cfg = default_config(wl, target)       # the rule
    >>> cfg["mr"].val, cfg.template
    (4, 'dense.x86')
    >>> with_values(cfg, mr=9)                 # not a candidate: ValueError naming mr

A workload key is a hashable, printable tuple ``(template, *arguments)``; the
compute stores it in ``op.attrs["workload"]``, the schedule checks the config
against it, the graph stores the config on the node (``tune.autotvm.choose``)
and the kernel cache key prints its values.  A tuner's point of a knob
template's space is read back through its knob values (``template_config`` of
``topi.x86.templates``; ``tune.autotvm.history.Records`` for records).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from tune.autotvm import task as tasks
from tune.autotvm.history import Records
from tune.autotvm.knobs import OtherOptionEntity, OtherOptionSpace
from tune.autotvm.space import ConfigEntity


@dataclass(frozen=True)
class Rule:
    """The knob side of a template: ``space(workload, target)`` -> knob -> candidates,
    ``default(workload, target)`` -> knob -> value, ``constraint(workload, values)`` -> a reason
    the combination is illegal, or None.  ``legacy``: knob -> the value that a record written
    before the knob existed ran with (see :func:`recorded_values`).

    What choosing in a graph reads (all optional; ``tune.autotvm.choose``):
    ``input_knob``, the knob naming the channel block the template reads its input in;
    ``in_block(workload, block, target)``, the rule's knob values reading input blocked so (default:
    the rule's with ``input_knob`` set); ``out_block(config, target)``, the channel block of its
    output (0: none); ``deployable(workload, values)``, whether a graph runs the values as measured.
    An alternative implementation of another template's operator names it (``implements``), says
    where it applies (``applicable(workload)``) and where the rule prefers it without records
    (``preferred(workload)``); ``option`` names the build option that switches it off."""

    space: Callable
    default: Callable
    constraint: Callable | None = None
    doc: str = ""
    legacy: dict = field(default_factory=dict)
    input_knob: str | None = None
    in_block: Callable | None = None
    out_block: Callable | None = None
    deployable: Callable | None = None
    implements: str | None = None
    applicable: Callable | None = None
    preferred: Callable | None = None
    option: str | None = None


def current_target():
    """``codegen.target.Target.current()``, imported on use (codegen loads LLVM; topi's operators,
    which register rules, load without it)."""
    from codegen.target import Target

    return Target.current()


def register_rule(name: str, space: Callable, default: Callable, constraint: Callable | None = None,
                  doc: str = "", legacy: dict | None = None, **graph_hooks) -> Rule:
    """Register (or replace, on module reload) the rule of template ``name`` (see :class:`Rule`)."""
    rule = Rule(space, default, constraint, doc, dict(legacy or {}), **graph_hooks)
    tasks.set_rule(name, rule)
    return rule


def has_rule(name: str) -> bool:
    entry = tasks.registered(name)
    return entry is not None and entry.rule is not None


def rule_of(name: str) -> Rule:
    """The rule of template ``name``; ``ValueError`` naming the registered ones when it has none."""
    entry = tasks.registered(name)
    if entry is None or entry.rule is None:
        raise ValueError(f"unknown schedule template {name!r}; registered: {sorted(tasks.rule_names())}")
    return entry.rule


def config_of(workload, values: dict, space: dict | None = None) -> ConfigEntity:
    """The config choosing ``values`` (knob -> value) of ``workload``, a point of the template's
    ``define_knob`` space ``space`` (knob -> candidates; default: the template's for the current
    target, when it has a rule).  Not checked: :func:`check_config` it (every function below does)."""
    workload = (workload,) if isinstance(workload, str) else tuple(workload)
    if space is None:
        space = config_space(workload) if has_rule(workload[0]) else {}
    space_map = {k: OtherOptionSpace(c, k) for k, c in space.items()}
    entities = {k: OtherOptionEntity(v) for k, v in values.items()}
    index, stride = 0, 1
    for knob, sp in space_map.items():
        k = next((i for i, c in enumerate(sp.candidate) if knob in values and _same(values[knob], c)), None)
        if k is None:
            index = -1
            break
        index += k * stride
        stride *= len(sp)
    return ConfigEntity(index, None, entities, workload=workload, space_map=space_map)


def check_config(cfg: ConfigEntity, workload=None) -> ConfigEntity:
    """Raise ``ValueError`` unless every knob of ``cfg`` holds a value of its space and the
    template's constraint allows them (and, given ``workload``, ``cfg`` was made for it);
    returns ``cfg``."""
    if workload is not None and tuple(workload) != cfg.workload:
        raise ValueError(f"config for workload {cfg.workload} cannot schedule workload {tuple(workload)}: "
                         f"choose one for that workload (tune.autotvm.config.choose_config)")
    values, space = cfg.values, _space(cfg)
    missing = sorted(set(space) - set(values))
    extra = sorted(set(values) - set(space)) if space else []
    if missing or extra:
        raise ValueError(f"config for {cfg.template}: knobs {sorted(values)} do not match the "
                         f"template's knobs {sorted(space)} (missing {missing}, unknown {extra})")
    t = rule_of(cfg.template) if has_rule(cfg.template) else None
    for knob, cands in space.items():
        v = values[knob]
        if not any(_same(v, c) for c in cands):
            why = _constraint_reason(t, cfg.workload, values)
            raise ValueError(f"config for {cfg.template}: knob {knob}={v!r} is not allowed; "
                             f"allowed: {_short(cands)}" + (f" ({why})" if why else ""))
    reason = t.constraint(cfg.workload, values) if t is not None and t.constraint else None
    if reason:
        raise ValueError(f"config for {cfg.template}: {reason}")
    return cfg


def with_values(cfg: ConfigEntity, **changes) -> ConfigEntity:
    """A checked copy of ``cfg`` with ``changes`` (knob -> value) applied, in the same space."""
    values = cfg.values
    for k in changes:
        if k not in values:
            raise KeyError(f"config for {cfg.template} has no knob {k!r}; knobs: {sorted(values)}")
    return check_config(config_of(cfg.workload, {**values, **changes}, _space(cfg)))


def _space(cfg: ConfigEntity) -> dict:
    """Knob -> candidates of the space ``cfg`` was drawn from."""
    return {k: cfg.candidates(k) for k in cfg.space_map}


def _constraint_reason(t, workload, values) -> str | None:
    """The template constraint's reason against ``values``, if it can say (it is written
    for values of the space, so any error means it cannot)."""
    try:
        return t.constraint(workload, values) if t is not None and t.constraint else None
    except Exception:  # noqa: BLE001 (a value outside the space may break the constraint's arithmetic)
        return None


def _same(v, c) -> bool:
    """Equal values; a bool matches only a bool (True is not the block size 1)."""
    if isinstance(v, bool) or isinstance(c, bool):
        return isinstance(v, bool) and isinstance(c, bool) and v == c
    return v == c


def _short(cands: list) -> str:
    return repr(cands) if len(cands) <= 24 else repr(cands[:12])[:-1] + f", ... ({len(cands)} in all)]"


# ------------------------------------------------------------ choosing ---
def config_space(workload, target=None) -> dict:
    """Knob -> candidates of ``workload`` for ``target`` (default: the current one)."""
    return rule_of(workload[0]).space(tuple(workload), target or current_target())


def default_config(workload, target=None) -> ConfigEntity:
    """The rule's config for ``workload`` on ``target`` (checked)."""
    workload = tuple(workload)
    target = target or current_target()
    t = rule_of(workload[0])
    return check_config(config_of(workload, t.default(workload, target), t.space(workload, target)))


def make_config(workload, values: dict, target=None) -> ConfigEntity:
    """A checked config of ``workload`` with ``values`` (knobs not given take the default's)."""
    base = default_config(workload, target)
    return check_config(config_of(base.workload, {**base.values, **values}, _space(base)))


def recorded_values(workload, values: dict) -> dict:
    """``values`` of a tuning record, with the template's ``legacy`` value for each knob the
    record does not name: it was written before that knob existed, so it ran as the
    legacy value says (not as today's rule would choose)."""
    legacy = rule_of(tuple(workload)[0]).legacy
    return {**{k: v for k, v in legacy.items() if k not in values}, **values}


def recorded_config(workload, values: dict | None, target=None) -> ConfigEntity | None:
    """The checked config of a record's ``values`` for ``workload`` (see :func:`recorded_values`);
    None without values, or (with a warning naming the workload and the reason) when today's
    space or constraint refuses them: a record of an older version whose choice is no longer
    legal is skipped, never fatal."""
    if values is None:
        return None
    try:
        return make_config(workload, recorded_values(workload, values), target)
    except ValueError as err:
        warnings.warn(f"skipped the tuning record of {tuple(workload)[0]} {tuple(workload)[1:]}: {err}",
                      stacklevel=2)
        return None


def choose_config(workload, target=None) -> ConfigEntity:
    """The config a template called outside a graph gets for ``workload``: the innermost
    ``ApplyChoices`` context's, else the rule's (``tune.autotvm.choose`` chooses for a graph)."""
    target = target or current_target()
    values = Records.current().choice(target, workload)
    return default_config(workload, target) if values is None else make_config(workload, values, target)


def sample_config(workload, rng, target=None, tries: int = 100) -> ConfigEntity:
    """A random legal config of ``workload``: one candidate per knob drawn with ``rng``
    (a ``numpy.random.Generator``), redrawn while the template's constraint refuses it."""
    workload = tuple(workload)
    space = config_space(workload, target)
    t = rule_of(workload[0])
    for _ in range(tries):
        values = {k: v[int(rng.integers(len(v)))] for k, v in space.items()}
        if t.constraint is None or not t.constraint(workload, values):
            return check_config(config_of(workload, values, space))
    raise ValueError(f"sample_config: no legal config of {workload} in {tries} draws")


__all__ = ["Rule", "check_config", "choose_config", "config_of", "config_space", "current_target",
           "default_config", "has_rule", "make_config", "recorded_config", "recorded_values", "register_rule",
           "rule_of", "sample_config", "with_values"]
