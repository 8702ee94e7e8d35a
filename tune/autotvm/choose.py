"""Choosing a knob template's config for one kernel of a graph: one function, explicit inputs.

``choose(workload, target, records, options, data_block)`` decides, for the
workload of one kernel of a model (a graph layer names it per node):

1. an ``ApplyChoices`` answer in ``records`` (a whole-model tune's variant
   builds): taken as it is;
2. which implementation runs the operator, where another template implements
   it too (a rule with ``implements``, such as Winograd for a 3x3 conv): the
   faster best record of the two, else the one the rule prefers
   (``Rule.preferred``); a build option may switch an implementation off
   (``Rule.option``, e.g. ``Options(winograd=False)``);
3. the chosen template's config: its best record that the graph runs as
   measured (an implementation switched to: only where it beats the rule's
   config by more than ``RECORD_MARGIN``, :func:`record_candidates`), else the
   rule's config reading its input in the block its data already has
   (``data_block``; :func:`rule_in_block`).  A graph layer may first weigh a
   conv's records against the layout transforms they cost its neighbours, with
   the same margin (:func:`record_candidates`).

``records`` is a ``tune.autotvm.history.Records`` (or anything ``Records.of``
takes); the graph layer reads the user's ``apply_history_best`` once, at
``graph.build``, and passes it down with the build's target and options::

    cfg = choose(("conv2d_NCHWc.x86", (1, 64, 56, 56), (64, 64, 3, 3), ...), target,
                 Records.of("resnet.jsonl"), Options(winograd=False))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from tune.autotvm.config import default_config, has_rule, make_config, recorded_config, rule_of
from tune.autotvm.space import ConfigEntity
from tune.autotvm.history import Records
from tune.autotvm.task import rule_names

# A record must beat the rule's config by this much to replace it: re-measuring one config varies
# by a few percent, and a record within that of the rule ran no faster in a graph while its other
# blocks cost layout transforms.
RECORD_MARGIN = 0.05


@dataclass(frozen=True)
class Options:
    """Build options that change which kernels a graph runs.

    ``winograd``: 3x3 stride-1 convolutions may run as Winograd (``conv2d_winograd.x86``);
    False keeps every convolution direct."""

    winograd: bool = True

    @staticmethod
    def of(options) -> Options:
        """``options`` (None, a dict or an ``Options``) as ``Options``; ``ValueError`` naming an
        unknown option and the allowed ones, ``TypeError`` for a value of the wrong type."""
        if options is None:
            return Options()
        if isinstance(options, Options):
            return options
        if not isinstance(options, dict):
            raise TypeError(f"build options must be a dict or Options, got {type(options).__name__}")
        allowed = {f.name: f.type for f in dataclasses.fields(Options)}
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise ValueError(f"unknown build option(s) {unknown}; allowed: {sorted(allowed)}")
        for name, value in options.items():
            if not isinstance(value, bool):
                raise TypeError(f"build option {name!r} takes True or False, got {value!r}")
        return Options(**options)

    def allows(self, template: str) -> bool:
        """Whether the template may run (its rule's ``option``, if any, is on)."""
        option = rule_of(template).option if has_rule(template) else None
        return option is None or bool(getattr(self, option))


def alternatives(workload: tuple, options: Options = Options()) -> list:
    """``[(workload, preferred)]``: the other templates' workloads of the operator ``workload``
    computes, each with whether the rule prefers it to ``workload`` (without records)."""
    workload = tuple(workload)
    out = []
    mine = rule_of(workload[0])
    if mine.implements:  # an alternative implementation: the base one, never preferred to it
        out.append(((mine.implements, *workload[1:]), False))
    for name in _implementations_of(workload[0]):
        alt = (name, *workload[1:])
        rule = rule_of(name)
        if rule.applicable is None or rule.applicable(alt):
            out.append((alt, bool(rule.preferred and rule.preferred(alt))))
    return [(alt, pref) for alt, pref in out if options.allows(alt[0])]


def _implementations_of(template: str) -> list:
    return [name for name in rule_names() if rule_of(name).implements == template]


def tuning_alternatives(workload: tuple, options: Options = Options()) -> list:
    """The other implementations worth tuning beside ``workload``: those the rule prefers to it,
    and those it is preferred to (a graph runs one of them, whichever the records favour)."""
    out = []
    for alt, preferred in alternatives(workload, options):
        back = any(pref for other, pref in alternatives(alt, options) if other == tuple(workload))
        if preferred or back:
            out.append(alt)
    return out


def choose(workload, target, records=None, options=None, data_block: int | None = None) -> ConfigEntity:
    """The config a graph runs for ``workload`` on ``target`` (see the module doc)."""
    workload, records, options = tuple(workload), Records.of(records), Options.of(options)
    exact = records.choice(target, workload)
    if exact is not None:
        return make_config(workload, exact, target)
    for alt, preferred in alternatives(workload, options):
        exact = records.choice(target, alt)
        if exact is not None:
            return make_config(alt, exact, target)
        alt_cost, own_cost = records.best_cost(target, alt), records.best_cost(target, workload)
        if alt_cost is not None and own_cost is not None:
            preferred = alt_cost < own_cost
        # records of one implementation tune it; they do not say it beats the other
        if preferred:
            return _switched(alt, target, records, data_block)
    return _recorded(workload, target, records, data_block)


def _recorded(workload: tuple, target, records: Records, data_block: int | None) -> ConfigEntity:
    """The best record of ``workload`` (the fastest the graph runs as measured, where the best is
    not), else the rule's config in the data's block."""
    cfg = recorded_config(workload, records.best(target, workload), target)
    if cfg is not None and not deployable(workload, cfg.values):
        rows = record_candidates(workload, target, records)
        cfg = make_config(workload, rows[0][0], target) if rows else None
    return cfg or rule_in_block(workload, data_block, target) or default_config(workload, target)


def _switched(workload: tuple, target, records: Records, data_block: int | None) -> ConfigEntity:
    """The config of an implementation chosen over another: its best record where that beats the
    rule's variants by ``RECORD_MARGIN`` (:func:`record_candidates`; a knob the record predates
    reads as its template's legacy value, a record no longer legal is skipped with a warning),
    else the rule's config in the data's block."""
    if records.best(target, workload) is not None:
        best = record_candidates(workload, target, records)[0][0]
        if best not in rule_variants(workload, target):
            cfg = recorded_config(workload, best, target)  # None (warned): no longer legal
            if cfg is not None:
                return cfg
    return rule_in_block(workload, data_block, target) or default_config(workload, target)


def rule_in_block(workload: tuple, block: int | None, target) -> ConfigEntity | None:
    """The rule's config of ``workload`` reading its input in blocks of ``block`` (its rule's
    ``in_block``, else the rule's with ``input_knob`` set), as it runs on data blocked so; None
    where the template has no input block or ``block`` is not a legal one for this workload
    (``workload[1]`` is the NCHW data shape of a template with an ``input_knob``)."""
    rule = rule_of(workload[0])
    knob = rule.input_knob
    if knob is None or not block:
        return None
    cfg = default_config(workload, target)
    if block not in cfg.candidates(knob) or workload[1][1] % block:
        return None
    if block == cfg[knob].val:
        return cfg
    values = rule.in_block(workload, block, target) if rule.in_block else {**cfg.values, knob: block}
    return make_config(workload, values, target)


def rule_variants(workload: tuple, target) -> list:
    """The knob values of the rule's config of ``workload`` in every legal input block, its own
    first (:func:`rule_in_block`): what the rule runs as on data in each block."""
    rule = default_config(workload, target)
    knob = rule_of(workload[0]).input_knob
    others = [] if knob is None else [rule_in_block(workload, b, target) for b in rule.candidates(knob)
                                      if b != rule[knob].val]
    return [rule.values] + [c.values for c in others if c is not None]


def deployable(workload: tuple, values: dict) -> bool:
    """Whether a graph runs ``values`` of ``workload`` as they were measured (the rule's
    ``deployable``; True where it says nothing)."""
    check = rule_of(workload[0]).deployable
    return check is None or check(tuple(workload), values)


def out_block(cfg: ConfigEntity, target) -> int:
    """The channel block of the output a kernel with ``cfg`` writes in a graph (0: none)."""
    hook = rule_of(cfg.template).out_block
    return hook(cfg, target) if hook else 0


def record_candidates(workload: tuple, target, records) -> list:
    """``[(knob values, seconds), ...]`` measured for ``workload`` (fastest first) that the graph
    runs as measured (:func:`deployable`), or []: where the rule's config was measured, only its
    variants (:func:`rule_variants`) and the records faster than the fastest of them by more than
    ``RECORD_MARGIN``.  The bar is the rule's config in every input block measured, for in a
    graph it reads its data's block."""
    workload = tuple(workload)
    rows = [(values, seconds) for values, seconds in Records.of(records).ranked(target, workload)
            if deployable(workload, values)]
    if not rows:
        return rows
    variants = rule_variants(workload, target)
    measured = [seconds for values, seconds in rows if values in variants]
    if not measured:
        return rows
    limit = min(measured) * (1 - RECORD_MARGIN)
    return [(values, seconds) for values, seconds in rows if seconds < limit or values in variants]


def held(old: ConfigEntity, workload: tuple, target, data_block: int | None) -> ConfigEntity:
    """The config a node holding ``old`` keeps: ``old``, but the rule's own config of a template
    with an input block (as a record or ``tune_layouts`` may store it) takes its input in its
    data's block, as the rule does without records."""
    if rule_of(workload[0]).input_knob is None or old.values != default_config(old.workload, target).values:
        return old
    cfg = rule_in_block(old.workload, data_block, target)
    return old if cfg is None or cfg.values == old.values else cfg


def holds(cfg: ConfigEntity, workload: tuple) -> bool:
    """Whether ``cfg`` is a config of ``workload``'s operator: for the workload itself, or for an
    alternative implementation of it."""
    workload = tuple(workload)
    return cfg.workload == workload or any(alt == cfg.workload for alt, _ in alternatives(workload))


__all__ = ["RECORD_MARGIN", "Options", "alternatives", "choose", "deployable", "held", "holds", "out_block",
           "record_candidates", "rule_in_block", "rule_variants", "tuning_alternatives"]
