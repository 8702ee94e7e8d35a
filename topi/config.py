"""Schedule configs as data: a workload key, a space of legal knob values, a rule default.

Every templated x86 operator registers a ``Template``: its name (the first
entry of every workload key, classic TVM's task name such as
``"conv2d_NCHWc.x86"``), a function giving the space of legal configs of a
workload for a target (knob -> list of candidates: plain data that a tuner
turns into its own config space), a rule giving the default config, and
optionally a constraint between knobs.  A ``Config`` is one chosen point::

    >>> wl = ("dense.x86", 4, 1000, 2048, "float32")
    >>> cfg = default_config(wl)               # the rule, for Target.current()
    >>> cfg["mr"], cfg.template
    (4, 'dense.x86')
    >>> cfg.with_values(mr=9)                  # not a candidate: ValueError naming mr

A workload key is a hashable, printable tuple ``(template, *arguments)``; the
compute stores it in ``op.attrs["workload"]``, the schedule checks the config
against it, the graph's ``choose_configs`` pass stores the config on the
node and the kernel cache key prints its values.  ``choose_config`` is the one
place a config is chosen: the innermost dispatch context (a tuner's records,
see ``dispatch``) or else the rule default.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Template:
    """One templated operator: ``space(workload, target)`` -> knob -> candidates,
    ``default(workload, target)`` -> knob -> value, ``constraint(workload, values)``
    -> a reason the combination is illegal, or None.  ``legacy``: knob -> the value
    that a record written before the knob existed ran with (see :func:`recorded_config`)."""

    name: str
    space: Callable
    default: Callable
    constraint: Callable | None = None
    doc: str = ""
    legacy: dict = field(default_factory=dict)


TEMPLATES: dict[str, Template] = {}


def register_template(name: str, space: Callable, default: Callable, constraint: Callable | None = None,
                      doc: str = "", legacy: dict | None = None) -> Template:
    """Register (or replace, on module reload) the template ``name``."""
    t = Template(name, space, default, constraint, doc, dict(legacy or {}))
    TEMPLATES[name] = t
    return t


def get_template(name: str) -> Template:
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown schedule template {name!r}; registered: {sorted(TEMPLATES)}") from None


def current_target():
    """``codegen.target.Target.current()``, imported lazily (topi loads without codegen)."""
    from codegen.target import Target

    return Target.current()


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
            space = config_space(workload) if workload[0] in TEMPLATES else {}
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
                             f"choose one for that workload (topi.config.choose_config)")
        missing = sorted(set(self.space) - set(self.values))
        extra = sorted(set(self.values) - set(self.space)) if self.space else []
        if missing or extra:
            raise ValueError(f"config for {self.template}: knobs {sorted(self.values)} do not match the "
                             f"template's knobs {sorted(self.space)} (missing {missing}, unknown {extra})")
        t = TEMPLATES.get(self.template)
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
    t = get_template(workload[0])
    return t.space(tuple(workload), target or current_target())


def default_config(workload, target=None) -> Config:
    """The rule's config for ``workload`` on ``target`` (checked)."""
    workload = tuple(workload)
    target = target or current_target()
    t = get_template(workload[0])
    return Config(workload, t.default(workload, target), t.space(workload, target)).check()


def make_config(workload, values: dict, target=None) -> Config:
    """A checked config of ``workload`` with ``values`` (knobs not given take the default's)."""
    base = default_config(workload, target)
    return Config(base.workload, {**base.values, **values}, base.space).check()


def recorded_values(workload, values: dict) -> dict:
    """``values`` of a tuning record, with the template's ``legacy`` value for each knob the
    record does not name: it was written before that knob existed, so it ran as the
    legacy value says (not as today's rule would choose)."""
    legacy = get_template(tuple(workload)[0]).legacy
    return {**{k: v for k, v in legacy.items() if k not in values}, **values}


def recorded_config(workload, target=None) -> Config | None:
    """The checked config of ``workload``'s best record in the innermost ``apply_history_best``
    context (see :func:`recorded_values`); None without one, or (with a warning naming the
    workload and the reason) when today's space or constraint refuses it: a record of an older
    version whose choice is no longer legal is skipped, never fatal."""
    import warnings

    from tune.autotvm.dispatch import lookup_values

    values = lookup_values(workload, target)
    if values is None:
        return None
    try:
        return make_config(workload, recorded_values(workload, values), target)
    except ValueError as err:
        warnings.warn(f"skipped the tuning record of {tuple(workload)[0]} {tuple(workload)[1:]}: {err}",
                      stacklevel=2)
        return None


_local = threading.local()


class dispatch:
    """A context that chooses configs: ``with dispatch(fn): ...`` where ``fn(workload,
    target)`` returns knob values (a dict or Config) or None for the rule default.
    The tuner's ``apply_history_best`` enters one; innermost wins."""

    def __init__(self, fn: Callable):
        self.fn = fn

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self.fn)
        return self

    def __exit__(self, *exc):
        _local.stack.pop()


def dispatched(workload, target=None) -> Config | None:
    """The innermost dispatch context's config for ``workload`` (None: no context has one)."""
    target = target or current_target()
    for fn in reversed(getattr(_local, "stack", None) or []):
        got = fn(tuple(workload), target)
        if got is not None:
            values = got.values if isinstance(got, Config) else got
            return make_config(workload, values, target)
    return None


def choose_config(workload, target=None) -> Config:
    """The config for ``workload``: the innermost dispatch context's, else the rule default."""
    return dispatched(workload, target) or default_config(workload, target)


def sample_config(workload, rng, target=None, tries: int = 100) -> Config:
    """A random legal config of ``workload``: one candidate per knob drawn with ``rng``
    (a ``numpy.random.Generator``), redrawn while the template's constraint refuses it."""
    workload = tuple(workload)
    space = config_space(workload, target)
    t = get_template(workload[0])
    for _ in range(tries):
        values = {k: v[int(rng.integers(len(v)))] for k, v in space.items()}
        if t.constraint is None or not t.constraint(workload, values):
            return Config(workload, values, space).check()
    raise ValueError(f"sample_config: no legal config of {workload} in {tries} draws")


# -------------------------------------------------------------- helpers ---
def divisors(n: int, limit: int | None = None) -> list[int]:
    """Divisors of ``n`` (up to ``limit``), ascending, in O(sqrt n): candidate block sizes."""
    n = int(n)
    if n < 1:
        return []
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    out = small + large[::-1]
    return out if limit is None else [d for d in out if d <= limit]


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (1 at least)."""
    n = int(n)
    if at_most >= n:
        return n
    return max(d for d in divisors_upto(n, at_most))


def divisors_upto(n: int, at_most: int) -> list[int]:
    """Divisors of ``n`` not above ``at_most``, in O(min(at_most, sqrt n)) when ``at_most`` is small."""
    if at_most * at_most <= n:
        return [d for d in range(1, max(at_most, 0) + 1) if n % d == 0]
    return divisors(n, at_most)


def max_accumulators(target=None) -> int:
    """Vector accumulators a register tile may hold on ``target``: 16 of AVX-512's 32 zmm
    (LLVM spills past ~20), 8 of AVX2's 16 ymm (the unrolled conv tile keeps kernel
    vectors and several broadcasts live: a 16x6 tile of 12 ymm accumulators made 242
    stack references in the ResNet 64->64 @56 kernel, 16x5 43, 16x4 23 -- as many as
    the AVX-512 32x8 tile's 16; with the kernel columns rolled a 16x6 tile does not
    spill, see ``topi.x86.conv2d.wide_tile_columns``)."""
    return 16 if (target or current_target()).vector_registers >= 32 else 8


# A GEMM-like register tile (``bn`` output lanes by ``mr`` rows, streaming the reduction) keeps
# only its ``bn / lanes`` kernel vectors and one broadcast live beside the accumulators, so on
# 16 registers it holds 12 of them: two vectors by 6 rows, 4 reduction steps unrolled
# (``dense_pack`` and the Winograd products, 0.75-0.94x the time of 4 x 2 with ``ku`` 1).
YMM_GEMM_TILE = (2, 6, 4)  # (vectors of bn, mr, ku)


def gemm_tile(target=None) -> tuple:
    """``(vectors of bn, mr, ku)`` of a GEMM-like register tile on ``target``: four vectors by
    the rows :func:`max_accumulators` allows, rolled, with 32 registers; ``YMM_GEMM_TILE``
    with 16."""
    target = target or current_target()
    return (4, max_accumulators(target) // 4, 1) if target.vector_registers >= 32 else YMM_GEMM_TILE


def vector_lanes(dtype: str = "float32", target=None) -> int:
    """Lanes of one vector register of ``target`` (default: the current one)."""
    return (target or current_target()).lanes(dtype)
