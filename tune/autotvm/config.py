"""Configs of knob templates: a workload key, a space of legal knob values, a rule default.

A knob template (every templated topi operator) registers a ``Rule`` with its
template name (the first entry of every workload key, classic TVM's task name
such as ``"conv2d_NCHWc.x86"``): a function giving the space of legal configs
of a workload for a target (knob -> list of candidates), a rule giving the
default config, optionally a constraint between knobs, and what the graph layer
needs to weigh a config against its neighbours (:class:`Rule`).  The rule sits
in the one template registry of ``tune.autotvm.task`` beside the template's
tunable function, if it has one.  A ``Config`` is one chosen point::

    >>> wl = ("dense.x86", 4, 1000, 2048, "float32")
    >>> cfg = default_config(wl, target)       # the rule
    >>> cfg["mr"], cfg.template
    (4, 'dense.x86')
    >>> cfg.with_values(mr=9)                  # not a candidate: ValueError naming mr

A workload key is a hashable, printable tuple ``(template, *arguments)``; the
compute stores it in ``op.attrs["workload"]``, the schedule checks the config
against it, the graph stores the config on the node (``tune.autotvm.choose``)
and the kernel cache key prints its values.  A tuner's space point
(``ConfigEntity``) of a knob template becomes a ``Config`` through its knob
values (``tune.autotvm.history.Records`` reads records so; the template
bridge of ``topi.x86.templates`` so reads the point it is asked for).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from tune.autotvm import task as tasks
from tune.autotvm.history import Records


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


class Config:
    """Knob name -> chosen value for one workload of one template.

    Parameters
    ----------
    workload : tuple
        The workload key ``(template name, *arguments)``.
    values : dict
        Knob -> value.
    space : dict, optional
        Knob -> list of legal candidates (default: the template's for the
        current target, when the template is registered).

    Equal configs (same workload and values) compare and hash equal; ``str``
    is the canonical text ``config<template knob=value ...>`` that kernel keys
    and records print.  A Config is immutable: ``with_values`` returns a new,
    checked one.
    """

    __slots__ = ("space", "values", "workload")

    def __init__(self, workload, values: dict, space: dict | None = None):
        if isinstance(workload, str):
            workload = (workload,)
        if space is None:
            space = config_space(workload) if has_rule(workload[0]) else {}
        object.__setattr__(self, "workload", tuple(workload))
        object.__setattr__(self, "values", dict(values))
        object.__setattr__(self, "space", {k: list(v) for k, v in space.items()})

    def __setattr__(self, name, value):
        raise AttributeError(f"Config is immutable; use with_values(...) (setting {name!r})")

    def __reduce__(self):  # pickled into the graph compiler's worker processes
        return Config, (self.workload, self.values, self.space)

    @property
    def template(self) -> str:
        return self.workload[0]

    def __getitem__(self, knob: str):
        try:
            return self.values[knob]
        except KeyError:
            raise KeyError(f"config for {self.template} has no knob {knob!r}; knobs: {sorted(self.values)}") from None

    def get(self, knob: str, default=None):
        return self.values.get(knob, default)

    def with_values(self, **changes) -> Config:
        """A copy with ``changes`` applied, checked against the space."""
        for k in changes:
            if k not in self.values:
                raise KeyError(f"config for {self.template} has no knob {k!r}; knobs: {sorted(self.values)}")
        cfg = Config(self.workload, {**self.values, **changes}, self.space)
        cfg.check()
        return cfg

    def check(self, workload=None) -> Config:
        """Raise ``ValueError`` unless every knob holds a legal value (and, given
        ``workload``, the config was made for it); returns ``self``."""
        if workload is not None and tuple(workload) != self.workload:
            raise ValueError(f"config for workload {self.workload} cannot schedule workload {tuple(workload)}: "
                             f"choose one for that workload (tune.autotvm.config.choose_config)")
        missing = sorted(set(self.space) - set(self.values))
        extra = sorted(set(self.values) - set(self.space)) if self.space else []
        if missing or extra:
            raise ValueError(f"config for {self.template}: knobs {sorted(self.values)} do not match the "
                             f"template's knobs {sorted(self.space)} (missing {missing}, unknown {extra})")
        t = rule_of(self.template) if has_rule(self.template) else None
        for knob, cands in self.space.items():
            v = self.values[knob]
            if not any(_same(v, c) for c in cands):
                why = self._constraint_reason(t)
                raise ValueError(f"config for {self.template}: knob {knob}={v!r} is not allowed; "
                                 f"allowed: {_short(cands)}" + (f" ({why})" if why else ""))
        reason = t.constraint(self.workload, self.values) if t is not None and t.constraint else None
        if reason:
            raise ValueError(f"config for {self.template}: {reason}")
        return self

    def _constraint_reason(self, t) -> str | None:
        """The template constraint's reason against these values, if it can say (it is
        written for values of the space, so any error means it cannot)."""
        try:
            return t.constraint(self.workload, self.values) if t is not None and t.constraint else None
        except Exception:  # noqa: BLE001 (a value outside the space may break the constraint's arithmetic)
            return None

    # value semantics (configs sit in graph node attrs, CSE compares them)
    def _key(self) -> tuple:
        return self.workload, tuple(sorted(self.values.items()))

    def __eq__(self, other) -> bool:
        return isinstance(other, Config) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def text(self) -> str:
        """Canonical text of the chosen values (kernel cache keys, printed graphs)."""
        vals = " ".join(f"{k}={v!r}" for k, v in sorted(self.values.items()))
        return f"config<{self.template} {vals}>"

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return f"Config({self.workload!r}, {self.values!r})"


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


def default_config(workload, target=None) -> Config:
    """The rule's config for ``workload`` on ``target`` (checked)."""
    workload = tuple(workload)
    target = target or current_target()
    t = rule_of(workload[0])
    return Config(workload, t.default(workload, target), t.space(workload, target)).check()


def make_config(workload, values: dict, target=None) -> Config:
    """A checked config of ``workload`` with ``values`` (knobs not given take the default's)."""
    base = default_config(workload, target)
    return Config(base.workload, {**base.values, **values}, base.space).check()


def recorded_values(workload, values: dict) -> dict:
    """``values`` of a tuning record, with the template's ``legacy`` value for each knob the
    record does not name: it was written before that knob existed, so it ran as the
    legacy value says (not as today's rule would choose)."""
    legacy = rule_of(tuple(workload)[0]).legacy
    return {**{k: v for k, v in legacy.items() if k not in values}, **values}


def recorded_config(workload, values: dict | None, target=None) -> Config | None:
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


def choose_config(workload, target=None) -> Config:
    """The config a template called outside a graph gets for ``workload``: the innermost
    ``ApplyChoices`` context's, else the rule's (``tune.autotvm.choose`` chooses for a graph)."""
    target = target or current_target()
    values = Records.current().choice(target, workload)
    return default_config(workload, target) if values is None else make_config(workload, values, target)


def sample_config(workload, rng, target=None, tries: int = 100) -> Config:
    """A random legal config of ``workload``: one candidate per knob drawn with ``rng``
    (a ``numpy.random.Generator``), redrawn while the template's constraint refuses it."""
    workload = tuple(workload)
    space = config_space(workload, target)
    t = rule_of(workload[0])
    for _ in range(tries):
        values = {k: v[int(rng.integers(len(v)))] for k, v in space.items()}
        if t.constraint is None or not t.constraint(workload, values):
            return Config(workload, values, space).check()
    raise ValueError(f"sample_config: no legal config of {workload} in {tries} draws")


__all__ = ["Config", "Rule", "choose_config", "config_space", "current_target", "default_config", "has_rule",
           "make_config", "recorded_config", "recorded_values", "register_rule", "rule_of", "sample_config"]
