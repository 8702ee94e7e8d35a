"""The four kinds of knob a template defines, each a space of legal choices and its entities.

=================  ================================  =====================  ==========
define_...         space                             entity (``cfg[name]``)  record tag
=================  ================================  =====================  ==========
``define_split``   ordered factorisations of a loop  ``SplitEntity.size``    ``"sp"``
``define_knob``    a list of candidate values        ``OtherOptionEntity``   ``"ot"``
``define_reorder`` permutations of some axes         ``ReorderEntity.perm``  ``"re"``
``define_annotate`` unroll / vectorize per axis      ``AnnotateEntity.anns`` ``"an"``
=================  ================================  =====================  ==========

``cfg["tile_y"].apply(s, C, y)`` replays an entity on a stage: a split entity
``[4, 8, 16]`` of a 512-long axis ``y`` becomes::

    for (y, 0, 512)        ->   for (y.outer, 0, 4)
                                  for (y.inner.outer, 0, 8)
                                    for (y.inner.inner, 0, 16)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from tune.autotvm.errors import KnobError


def get_factors(n: int) -> list[int]:
    """The divisors of ``n``, ascending, found in O(sqrt n) steps."""
    if n < 1:
        raise KnobError(f"get_factors: expects a positive integer, got {n}")
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d * d != n:
                large.append(n // d)
        d += 1
    return small + large[::-1]


def get_pow2s(n: int) -> list[int]:
    """Powers of two up to ``n`` (1, 2, 4, ...)."""
    return [1 << k for k in range(max(n, 1).bit_length()) if (1 << k) <= n]


def axis_extent(axis, what: str) -> int:
    """A loop length from an IterVar, a ``cfg.axis(...)`` or an int."""
    if isinstance(axis, VirtualAxis):
        return axis.length
    if isinstance(axis, int):
        return axis
    dom = getattr(axis, "dom", None)
    ext = getattr(dom, "extent", None)
    try:
        return int(ext)
    except (TypeError, ValueError):
        raise KnobError(
            f"{what}: axis {axis!r} has no constant extent; knobs need constant loop lengths "
            f"(pass an int or an IterVar of a constant-shaped compute)"
        ) from None


@dataclass(frozen=True)
class VirtualAxis:
    """``cfg.axis(x)``: a loop length standing for an axis (classic ``VirtualAxis``)."""

    length: int
    name: str = "axis"


# ----------------------------------------------------------------- entities --
@dataclass(frozen=True, eq=False)
class SplitEntity:
    """Sizes of a split, outermost first: ``[outer, f1, ..., f_inner]`` (``-1``: the rest); a
    list, as classic TVM's (``cfg["tile_x"].size == [4, 8]``)."""

    size: list

    def __post_init__(self):
        object.__setattr__(self, "size", [int(x) for x in self.size])

    def __eq__(self, other) -> bool:
        return isinstance(other, SplitEntity) and self.size == other.size

    def __hash__(self) -> int:
        return hash(tuple(self.size))

    def apply(self, sch, op, axis) -> list:
        """Split ``axis`` of stage ``op`` into ``len(size)`` loops; returns them outermost first."""
        stage = sch[op]
        out = []
        for k in range(1, len(self.size)):
            outer, axis = stage.split(axis, factor=int(math.prod(self.size[k:])))
            out.append(outer)
        return out + [axis]

    @property
    def val(self) -> list:
        return list(self.size)

    def to_json(self) -> list:
        return [int(x) for x in self.size]

    def __repr__(self) -> str:
        return f"sp{list(self.size)}"


@dataclass(frozen=True)
class OtherOptionEntity:
    """One value of a ``define_knob``."""

    val: object

    def to_json(self):
        return self.val

    def __bool__(self):
        raise TypeError(f"the truth of a knob's entity is ambiguous: read its value, cfg[name].val "
                        f"(here {self.val!r})")

    def __repr__(self) -> str:
        return repr(self.val)


@dataclass(frozen=True)
class ReorderEntity:
    """A permutation of the axes given to ``define_reorder``."""

    perm: tuple

    def apply(self, sch, op, axes) -> list:
        if len(axes) != len(self.perm):
            raise KnobError(
                f"reorder entity {list(self.perm)} applied to {len(axes)} axes; "
                f"pass the {len(self.perm)} axes given to define_reorder"
            )
        new = [axes[i] for i in self.perm]
        sch[op].reorder(*new)
        return new

    @property
    def val(self) -> list:
        return list(self.perm)

    def to_json(self) -> list:
        return list(self.perm)

    def __repr__(self) -> str:
        return f"re{list(self.perm)}"


@dataclass(frozen=True)
class AnnotateEntity:
    """Per axis one of ``"none"``, ``"unroll"``, ``"vec"``, ``"parallel"``."""

    anns: tuple

    def apply(
        self, sch, op, axes, axis_lens=None, max_unroll=None, vec_size=None, cfg=None, source=None
    ) -> list:
        stage = sch[op]
        for k, (ax, ann) in enumerate(zip(axes, self.anns)):
            length = axis_lens[k] if axis_lens is not None else None
            if ann == "unroll":
                if max_unroll is None or length is None or length <= max_unroll:
                    stage.unroll(ax)
            elif ann == "vec":
                if (
                    vec_size is None
                    or length is None
                    or length in (vec_size if isinstance(vec_size, (list, tuple)) else [vec_size])
                ):
                    stage.vectorize(ax)
            elif ann == "parallel":
                stage.parallel(ax)
            elif ann != "none":
                raise KnobError(
                    f"annotate entity: unknown annotation {ann!r}; use none, unroll, vec or parallel"
                )
        return list(axes)

    @property
    def val(self) -> list:
        return list(self.anns)

    def to_json(self) -> list:
        return list(self.anns)

    def __repr__(self) -> str:
        return f"an{list(self.anns)}"


# ------------------------------------------------------------------- spaces --
class KnobSpace:
    """A list of entities; ``kind`` is the record tag."""

    kind = "?"
    entities: list

    def __len__(self) -> int:
        return len(self.entities)

    def __getitem__(self, i: int):
        return self.entities[i]

    def index(self, entity) -> int | None:
        key = self.normal(entity)
        for k, e in enumerate(self.entities):
            if self.normal(e) == key:
                return k
        return None

    def normal(self, entity):
        return entity

    def same(self, other: KnobSpace) -> bool:
        return type(self) is type(other) and [self.normal(e) for e in self.entities] == [
            other.normal(e) for e in other.entities
        ]


class SplitSpace(KnobSpace):
    """Ways to split a loop of ``product`` iterations into ``num_outputs`` nested loops.

    Policies: ``"factors"`` (every size divides: no tail), ``"power2"`` (inner
    sizes are powers of two, a tail allowed), ``"verbose"`` (both), and
    ``"candidate"`` (the list given as ``candidate=``).  ``max_factor`` bounds
    every inner size; ``filter(entity) -> bool`` drops entities.
    """

    kind = "sp"

    def __init__(
        self,
        product: int,
        policy: str = "factors",
        num_outputs: int = 2,
        max_factor=None,
        filter=None,
        candidate=None,
        name: str = "split",
    ):
        if num_outputs < 1:
            raise KnobError(f"define_split {name!r}: num_outputs must be >= 1, got {num_outputs}")
        self.product, self.policy, self.num_outputs = product, policy, num_outputs
        limit = max_factor if max_factor is not None else product
        if policy == "candidate":
            if not candidate:
                raise KnobError(f"define_split {name!r}: policy 'candidate' needs candidate=[[...], ...]")
            entities = [SplitEntity(tuple(c)) for c in candidate]
            bad = [c for c in candidate if len(c) != num_outputs]
            if bad:
                raise KnobError(
                    f"define_split {name!r}: candidate {bad[0]} has {len(bad[0])} sizes, "
                    f"num_outputs={num_outputs}"
                )
        elif policy in ("factors", "power2", "verbose"):
            entities = self._enumerate(policy, limit)
        else:
            raise KnobError(
                f"define_split {name!r}: unknown policy {policy!r}; use factors, power2, verbose or candidate"
            )
        if filter is not None:
            entities = [e for e in entities if filter(e)]
        if not entities:
            raise KnobError(
                f"define_split {name!r}: no legal split of {product} into {num_outputs} "
                f"(policy {policy!r}, max_factor {max_factor}); relax the filter or max_factor"
            )
        self.entities = entities

    def _enumerate(self, policy: str, limit: int) -> list:
        n = self.product
        inner_n = self.num_outputs - 1
        if policy == "factors":
            out: list = []

            def rec(rem: int, inner: tuple) -> None:  # inner sizes chosen from the innermost out
                if len(inner) == inner_n:
                    out.append(SplitEntity((rem,) + inner))
                    return
                for d in get_factors(rem):
                    if d <= limit:
                        rec(rem // d, (d,) + inner)

            rec(n, ())
            return sorted(out, key=lambda e: e.size[::-1])
        cands = set(get_pow2s(n))
        if policy == "verbose":
            cands |= set(get_factors(n))
        cands = sorted(c for c in cands if c <= limit)
        out = []
        for inner in itertools.product(cands, repeat=inner_n):
            p = math.prod(inner)
            if p <= n:
                out.append(SplitEntity((-(-n // p),) + tuple(inner)))
        return sorted(out, key=lambda e: e.size[::-1])

    def normal(self, entity) -> tuple:
        size = tuple(entity.size)
        return size[1:]  # the outer size follows from the inner ones

    def __repr__(self) -> str:
        return f"Split(policy={self.policy}, product={self.product}, num_outputs={self.num_outputs}) len={len(self)}"


class OtherOptionSpace(KnobSpace):
    kind = "ot"

    def __init__(self, candidate, name: str = "knob"):
        candidate = list(candidate)
        if not candidate:
            raise KnobError(f"define_knob {name!r}: needs at least one candidate")
        self.candidate = candidate
        self.entities = [OtherOptionEntity(c) for c in candidate]

    def normal(self, entity):
        v = entity.val
        return tuple(v) if isinstance(v, list) else v

    def __repr__(self) -> str:
        return f"OtherOption({self.candidate}) len={len(self)}"


class ReorderSpace(KnobSpace):
    """Policies ``"identity"``, ``"all"`` (every permutation) and ``"candidate"`` (orders of the axes)."""

    kind = "re"

    def __init__(self, axes, policy: str = "all", candidate=None, name: str = "reorder"):
        n = len(axes)
        if policy == "identity":
            perms = [tuple(range(n))]
        elif policy == "all":
            perms = list(itertools.permutations(range(n)))
        elif policy == "candidate":
            if not candidate:
                raise KnobError(
                    f"define_reorder {name!r}: policy 'candidate' needs candidate=[[axes...], ...]"
                )
            perms = [tuple(_position(axes, a, name) for a in order) for order in candidate]
        else:
            raise KnobError(
                f"define_reorder {name!r}: unknown policy {policy!r}; use identity, all or candidate"
            )
        self.policy = policy
        self.entities = [ReorderEntity(p) for p in perms]

    def normal(self, entity) -> tuple:
        return tuple(entity.perm)

    def __repr__(self) -> str:
        return f"Reorder(policy={self.policy}) len={len(self)}"


def _position(axes, ax, name: str) -> int:
    for k, a in enumerate(axes):
        if a is ax:
            return k
    raise KnobError(f"define_reorder {name!r}: candidate names an axis {ax!r} not among the axes given")


class AnnotateSpace(KnobSpace):
    """Policies ``"try_unroll"``, ``"try_vec"`` (last axis), ``"try_unroll_vec"``, ``"candidate"``."""

    kind = "an"

    def __init__(self, axes, policy: str = "try_unroll", candidate=None, name: str = "annotate"):
        n = len(axes)
        if policy == "try_unroll":
            choices = [("none", "unroll")] * n
        elif policy == "try_vec":
            choices = [("none",)] * (n - 1) + [("none", "vec")]
        elif policy == "try_unroll_vec":
            choices = [("none", "unroll")] * (n - 1) + [("none", "unroll", "vec")]
        elif policy == "candidate":
            if not candidate:
                raise KnobError(
                    f"define_annotate {name!r}: policy 'candidate' needs candidate=[[ann, ...], ...]"
                )
            self.policy, self.entities = policy, [AnnotateEntity(tuple(c)) for c in candidate]
            return
        else:
            raise KnobError(
                f"define_annotate {name!r}: unknown policy {policy!r}; use try_unroll, try_vec, "
                f"try_unroll_vec or candidate"
            )
        self.policy = policy
        self.entities = (
            [AnnotateEntity(c) for c in itertools.product(*choices)] if n else [AnnotateEntity(())]
        )

    def normal(self, entity) -> tuple:
        return tuple(entity.anns)

    def __repr__(self) -> str:
        return f"Annotate(policy={self.policy}) len={len(self)}"


def _tuplify(v):
    return tuple(_tuplify(x) for x in v) if isinstance(v, list) else v


ENTITY_OF_KIND = {
    "sp": lambda v: SplitEntity(tuple(v)),
    "ot": lambda v: OtherOptionEntity(_tuplify(v)),
    "re": lambda v: ReorderEntity(tuple(v)),
    "an": lambda v: AnnotateEntity(tuple(v)),
}


__all__ = [
    "ENTITY_OF_KIND",
    "AnnotateEntity",
    "AnnotateSpace",
    "OtherOptionEntity",
    "OtherOptionSpace",
    "ReorderEntity",
    "ReorderSpace",
    "SplitEntity",
    "SplitSpace",
    "VirtualAxis",
    "get_factors",
    "get_pow2s",
]
