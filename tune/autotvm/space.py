"""Config spaces: what a template may choose (``ConfigSpace``) and one choice (``ConfigEntity``).

``ConfigEntity`` is the one config type: a classic template's point of its space, and
the config of a knob template (``tune.autotvm.config``: a rule's ``define_knob``
space of one workload, ``cfg.workload`` its key) that the graph stores on a node,
the kernel cache key prints and the records hold.

A template asks ``cfg = autotvm.get_config()`` and defines its knobs on it.
Three kinds of ``cfg`` answer the same calls:

* ``ConfigSpace`` while a task is created: ``define_*`` collects the spaces;
  ``cfg[name]`` is the first entity, so the template runs through once.
* ``ConfigEntity`` while tuning or under ``apply_history_best``: one point of
  the space (its ``index``); ``define_*`` are no-ops.
* ``FallbackConfigEntity`` with no record: ``define_*`` collects as a space,
  ``cfg[name]`` is the first entity unless the template set its own default
  (``if cfg.is_fallback: cfg["tile_x"] = SplitEntity([-1, 8])``).

The space is the product of the knob spaces; index ``i`` picks entity
``i % len(k1)`` of the first knob, then divides, and so on (as classic TVM).
"""

from __future__ import annotations

import math
import random

from tune.autotvm.errors import FallbackSplitError, KnobError, MissingKnobError
from tune.autotvm.knobs import (
    ENTITY_OF_KIND,
    AnnotateSpace,
    OtherOptionEntity,
    OtherOptionSpace,
    ReorderSpace,
    SplitEntity,
    SplitSpace,
    VirtualAxis,
    axis_extent,
)


class ConfigSpace:
    """The knobs of a template and their legal values."""

    is_fallback = False

    def __init__(self, one_definition: bool = False):
        self.space_map: dict = {}
        self._entity_map: dict = {}
        self._collect = True
        # True while a template runs (task.create): a knob defined again with other candidates is
        # a template bug; afterwards a new definition replaces the old (classic: narrowing a space)
        self.one_definition = one_definition
        self.flop = 0
        self.code_hash = None
        self.errors: list = []
        self._filter = None  # multi_filter's predicate over a config's entities
        self._valid = None  # its verdict per index, computed on first use

    # ------------------------------------------------------------ defining --
    def axis(self, var) -> VirtualAxis:
        return VirtualAxis(axis_extent(var, "cfg.axis"), getattr(var, "name", "axis"))

    reduce_axis = axis

    def define_split(self, name: str, axis, policy: str = "factors", **kwargs) -> list:
        """Split ``axis`` into ``num_outputs`` loops; see :class:`SplitSpace` for the policies."""
        num = kwargs.get("num_outputs", 2)
        if self._collect:
            extent = axis_extent(axis, f"define_split {name!r}")
            self._add(
                name,
                lambda: SplitSpace(
                    extent,
                    policy,
                    num,
                    kwargs.get("max_factor"),
                    kwargs.get("filter"),
                    kwargs.get("candidate"),
                    name,
                ),
            )
        return [VirtualAxis(-1, f"{name}.{k}") for k in range(num)]

    def define_knob(self, name: str, candidate) -> None:
        """A knob with a list of candidate values (``cfg[name].val`` reads the choice)."""
        if self._collect:
            self._add(name, lambda: OtherOptionSpace(candidate, name))

    def define_reorder(self, name: str, axes, policy: str = "all", **kwargs) -> None:
        if self._collect:
            self._add(name, lambda: ReorderSpace(axes, policy, kwargs.get("candidate"), name))

    def define_annotate(self, name: str, axes, policy: str = "try_unroll", **kwargs) -> None:
        if self._collect:
            self._add(name, lambda: AnnotateSpace(axes, policy, kwargs.get("candidate"), name))

    def _add(self, name: str, make) -> None:
        space = make()
        old = self.space_map.get(name)
        if old is not None and old.same(space):
            return
        if old is not None and self.one_definition:
            raise KnobError(
                f"knob {name!r} defined twice with different candidates: first {old!r}, then {space!r}; "
                f"give each knob one definition (or a distinct name)"
            )
        self.space_map[name] = space
        if old is None:
            self._entity_map.setdefault(name, space[0])
        else:
            self._entity_map[name] = space[0]
        self._valid = None

    def add_flop(self, flop) -> None:
        """Floating-point operations of one call (GFLOP/s in progress bars and records)."""
        self.flop += float(flop)

    def raise_error(self, msg: str) -> None:
        """Mark this config invalid (the measurement becomes an instantiation error)."""
        self.errors.append(msg)

    def valid(self) -> bool:
        return not self.errors

    # ------------------------------------------------------------- reading --
    def knob_values(self) -> dict:
        """Knob -> chosen value of a config: an option knob's value, any other knob's entity."""
        return {k: getattr(e, "val", e) for k, e in self._entity_map.items()}

    def __getitem__(self, name: str):
        try:
            return self._entity_map[name]
        except KeyError:
            raise MissingKnobError(
                f"config has no knob {name!r}; knobs: {list(self._entity_map) or 'none'}. "
                f"Define it first (cfg.define_split / define_knob / define_reorder / define_annotate)"
            ) from None

    def __contains__(self, name: str) -> bool:
        return name in self._entity_map

    def candidates(self, name: str) -> list:
        """The values knob ``name`` may take (an option knob's values, any other knob's entities)."""
        if name not in self.space_map:
            raise MissingKnobError(f"config has no knob {name!r} in its space; "
                                   f"knobs: {list(self.space_map) or 'none'}")
        return [e.val if isinstance(e, OtherOptionEntity) else e for e in self.space_map[name].entities]

    @property
    def range_length(self) -> int:
        """The number of indices: the product of the knobs' lengths (valid or not)."""
        return math.prod(len(s) for s in self.space_map.values())

    @property
    def dims(self) -> list:
        """The length of each knob's space, in definition order."""
        return [len(s) for s in self.space_map.values()]

    def __len__(self) -> int:
        """The number of valid configs (all indices unless ``multi_filter`` removed some)."""
        return self.range_length if self._filter is None else sum(self._validity())

    def __iter__(self):
        """The knob names (classic TVM: a space iterates as its entity map)."""
        return iter(self._entity_map)

    def multi_filter(self, filter) -> None:  # noqa: A002 (classic keyword)
        """Keep only the configs whose entities ``filter({knob: entity})`` accepts (a constraint
        between knobs, where ``define_split(filter=)`` constrains one).  Indices keep their
        meaning; the others become invalid (``is_index_valid``), which tuners skip."""
        self._filter, self._valid = filter, None

    def _validity(self) -> tuple:
        if self._valid is None:
            self._valid = tuple(bool(self._filter(self._entities(i))) for i in range(self.range_length))
        return self._valid

    def is_index_valid(self, index: int) -> bool:
        return self._filter is None or self._validity()[index]

    def subrange_length(self, start: int, end: int) -> int:
        """Valid indices in ``[start, end)``."""
        if not 0 <= start <= end <= self.range_length:
            raise IndexError(f"subrange [{start}, {end}) is not inside [0, {self.range_length})")
        return end - start if self._filter is None else sum(self._validity()[start:end])

    def point2knob(self, point: int) -> list:
        """Index -> one choice per knob (the first knob varies fastest)."""
        knob = []
        for dim in self.dims:
            knob.append(point % dim)
            point //= dim
        return knob

    def knob2point(self, knob) -> int:
        point, stride = 0, 1
        for k, dim in zip(knob, self.dims):
            point += k * stride
            stride *= dim
        return point

    def _entities(self, index: int) -> dict:
        return {name: space[k] for (name, space), k in zip(self.space_map.items(), self.point2knob(index))}

    def get(self, index: int) -> ConfigEntity:
        """The config at ``index`` (0 <= index < range_length, and valid)."""
        n = self.range_length
        if not 0 <= index < n:
            raise IndexError(f"config index {index} out of range; this space has {n} configs")
        if not self.is_index_valid(index):
            raise IndexError(f"config index {index} is removed by the space's multi_filter; "
                             f"check is_index_valid(index) first")
        return ConfigEntity(index, self.code_hash, self._entities(index), self.errors)

    def get_rand_index(self, start=None, end=None, to_exclude=None, rng=random) -> int:
        """A random valid index in ``[start, end)`` not in ``to_exclude``."""
        start, end = start or 0, end or self.range_length
        exclude = to_exclude if isinstance(to_exclude, (set, dict)) else set(to_exclude or ())
        for _ in range(64):
            index = rng.randrange(start, end)
            if self.is_index_valid(index) and index not in exclude:
                return index
        rest = [i for i in range(start, end) if self.is_index_valid(i) and i not in exclude]
        if not rest:
            raise IndexError(f"no valid index left in [{start}, {end})")
        return rng.choice(rest)

    def get_next_index(self, index: int, n: int = 1, start=None, end=None) -> int | None:
        """The ``n``-th valid index after ``index`` (before it for ``n < 0``) inside
        ``[start, end)``, or None past the range."""
        if n == 0:
            raise ValueError("get_next_index: n must not be 0")
        start, end = start or 0, end or self.range_length
        step, count = (1, n) if n > 0 else (-1, -n)
        while count:
            index += step
            if not start <= index < end:
                return None
            if self.is_index_valid(index):
                count -= 1
        return index

    def sample_ints(self, m: int, rng=random) -> list:
        """``m`` distinct valid indices drawn at random."""
        if self._filter is None:
            return rng.sample(range(self.range_length), m)
        return rng.sample([i for i, ok in enumerate(self._validity()) if ok], m)

    def random_walk(self, point: int, rng=random) -> int:
        """A valid index that differs from ``point`` in one knob's choice."""
        old = self.point2knob(point)
        moves = [(k, v) for k, dim in enumerate(self.dims) for v in range(dim) if v != old[k]]
        rng.shuffle(moves)
        for k, v in moves:
            knob = list(old)
            knob[k] = v
            if self.is_index_valid(self.knob2point(knob)):
                return self.knob2point(knob)
        raise IndexError(f"config {point} has no valid neighbour one knob away")

    def index_of(self, entity_map: dict) -> int | None:
        """The index of the config choosing ``entity_map`` (None if a choice is not in the space)."""
        index, stride = 0, 1
        for name, space in self.space_map.items():
            if name not in entity_map:
                return None
            k = space.index(entity_map[name])
            if k is None:
                return None
            index += k * stride
            stride *= len(space)
        return index

    def sample(self, rng: random.Random) -> ConfigEntity:
        return self.get(self.get_rand_index(rng=rng))

    def __repr__(self) -> str:
        lines = [f"ConfigSpace (len={len(self)}, space_map="]
        for k, (name, space) in enumerate(self.space_map.items()):
            lines.append(f"  {k:2d} {name}: {space!r}")
        return "\n".join(lines) + "\n)"


class ConfigEntity(ConfigSpace):
    """One config: ``index`` in its space and the chosen entity of every knob.

    ``workload``: the key ``(template, *arguments)`` the config was made for (knob templates;
    None for a point a tuner hands a classic template); ``space_map``: the knobs' spaces it
    was drawn from, when known.  Configs of a workload compare and hash by their values, and
    ``str`` is the canonical text ``config<template knob=value ...>`` that kernel cache keys
    and printed graphs show.  Immutable: ``tune.autotvm.config.with_values`` makes a changed copy."""

    def __init__(self, index: int, code_hash, entity_map: dict, errors=(), workload=None, space_map=None):
        super().__init__()
        self.index = index
        self.code_hash = code_hash
        self._entity_map = dict(entity_map)
        self._collect = False
        self.errors = list(errors)
        self.workload = None if workload is None else tuple(workload)
        if space_map is not None:
            self.space_map = dict(space_map)

    @property
    def template(self) -> str | None:
        return None if self.workload is None else self.workload[0]

    @property
    def values(self) -> dict:
        """Knob -> chosen value (:meth:`knob_values`)."""
        return self.knob_values()

    def _key(self) -> tuple:
        return self.workload, tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                           for k, v in self.knob_values().items()))

    def __eq__(self, other) -> bool:
        return isinstance(other, ConfigEntity) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def text(self) -> str:
        """Canonical text of the chosen values (kernel cache keys, printed graphs)."""
        vals = " ".join(f"{k}={v!r}" for k, v in sorted(self.knob_values().items()))
        return f"config<{self.template} {vals}>"

    def __str__(self) -> str:
        return self.text() if self.workload is not None else repr(self)

    def get_other_option(self) -> dict:
        return {k: v.val for k, v in self._entity_map.items() if isinstance(v, OtherOptionEntity)}

    def to_json_dict(self) -> dict:
        entity = []
        for name, e in self._entity_map.items():
            kind = {
                "SplitEntity": "sp",
                "OtherOptionEntity": "ot",
                "ReorderEntity": "re",
                "AnnotateEntity": "an",
            }[type(e).__name__]
            entity.append([name, kind, e.to_json()])
        return {"index": self.index, "code_hash": self.code_hash, "entity": entity}

    @staticmethod
    def from_json_dict(d: dict) -> ConfigEntity:
        entity_map = {}
        for name, kind, value in d["entity"]:
            if kind not in ENTITY_OF_KIND:
                raise KnobError(f"config entity {name!r}: unknown kind {kind!r} (sp, ot, re or an)")
            entity_map[name] = ENTITY_OF_KIND[kind](value)
        return ConfigEntity(int(d.get("index", -1)), d.get("code_hash"), entity_map)

    def key(self) -> str:
        """A canonical text of the choices (equal configs, equal keys, whatever the index)."""
        return repr(sorted((k, repr(v)) for k, v in self._entity_map.items()))

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"{self.index},{self.code_hash},{list(self._entity_map.values())}"


class FallbackConfigEntity(ConfigSpace):
    """The config with no record: each knob's first choice or the template's own default."""

    is_fallback = True

    def __setitem__(self, name: str, entity) -> None:
        if not hasattr(entity, "to_json"):
            entity = OtherOptionEntity(entity)
        self._entity_map[name] = entity

    def fallback_split(self, name: str, constraints: list) -> None:
        """Pick the split of ``name`` nearest ``constraints`` (``-1``: any): classic TVM's default split."""
        space = self.space_map.get(name)
        if space is None:
            raise MissingKnobError(f"fallback_split: no split named {name!r}; define it first")
        best = None
        for e in space.entities:
            if all(c == -1 or c >= s for c, s in zip(constraints, e.size)):
                if best is None or list(e.size[1:]) > list(best.size[1:]):
                    best = e
        if best is None:
            raise FallbackSplitError(
                f"fallback_split {name!r}: no split of {space.product} into {len(constraints)} parts "
                f"has every size within {constraints} (-1: any); relax the constraints")
        self._entity_map[name] = best

    def to_entity(self, space: ConfigSpace) -> ConfigEntity:
        """This fallback as a config of ``space`` (index -1 when a choice is outside it)."""
        em = {k: _normal_split(v, space.space_map.get(k)) for k, v in self._entity_map.items()}
        index = space.index_of(em)
        return ConfigEntity(-1 if index is None else index, space.code_hash, em)


def _normal_split(entity, space):
    """``[-1, 8]`` as ``[64, 8]`` for a split of 512 (records carry the outer size)."""
    if isinstance(entity, SplitEntity) and isinstance(space, SplitSpace) and -1 in entity.size:
        rest = math.prod(s for s in entity.size if s != -1)
        return SplitEntity(tuple(-(-space.product // rest) if s == -1 else s for s in entity.size))
    return entity


__all__ = ["ConfigEntity", "ConfigSpace", "FallbackConfigEntity"]
