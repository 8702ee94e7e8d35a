"""Relations between a stage's iteration variables, recorded by the primitives.

``Split``: ``parent = outer * factor + inner`` (``inner`` in ``[0, factor)``).
``Fuse``:  ``fused = outer * extent(inner) + inner``.
``Singleton``: a new outermost axis of extent 1 (``fuse()`` of no axes, as TVM).
Bounds inference and loop-nest building interpret these; nothing else does.
"""

from __future__ import annotations

from dataclasses import dataclass

from te.expr import Expr, IterVar


@dataclass(frozen=True, eq=False)
class Split:
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: Expr | None
    nparts: Expr | None


@dataclass(frozen=True, eq=False)
class Fuse:
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(frozen=True, eq=False)
class Singleton:
    iv: IterVar
