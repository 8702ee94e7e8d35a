"""The graph pass database: one ordered, tagged table of ``Graph -> Graph`` passes.

In the manner of Theano/PyTensor's ``optdb``: every pass is registered once
with a position (passes run in position order; leave gaps so later passes
slot in between), tags (``"cleanup"``, ``"fold"``, ``"simplify"``,
``"layout"``, ``"fusion"``) and the lowest ``opt_level`` that enables it::

    db = PassDatabase()
    db.register("eliminate_dead_code", eliminate_dead_code, 10, ("cleanup",), opt_level=0)

    @db.register("fold_constants", position=40, tags=("fold",), opt_level=0)
    def fold_constants(graph): ...

    passes = db.select(opt_level=2, include=("layout",), exclude=("fold_constants",))
    graph = db.run(graph, opt_level=2, profile=profile)
    print(profile.report())

A pass is selected when its ``opt_level <= opt_level`` or when ``include``
names it or one of its tags; ``exclude`` (names or tags) always wins.
Set ``TESSERA_PRINT_GRAPH_PASSES=1`` to print the graph after each pass that
changed it, with the time the pass took (like ``TESSERA_PRINT_PASSES`` for
lowering).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from graph.ir import Graph

# The tag vocabulary of the standard table; include/exclude accept these even
# when no registered pass carries them yet.
STANDARD_TAGS = ("cleanup", "fold", "simplify", "layout", "fusion")


@dataclass(frozen=True, eq=False, slots=True)
class Pass:
    """One entry of the table: ``fn`` is a pure ``Graph -> Graph`` function that
    returns its argument itself when it changes nothing."""

    name: str
    fn: Callable[[Graph], Graph]
    position: float
    tags: tuple = ()
    opt_level: int = 2
    takes_context: bool = False  # fn(graph, context): it decides with the build's target, records, options

    def matches(self, keys: frozenset) -> bool:
        """Whether ``keys`` (names and tags) names this pass or one of its tags."""
        return self.name in keys or any(t in keys for t in self.tags)

    def __repr__(self) -> str:
        return f"Pass({self.name!r}, position={self.position}, tags={self.tags}, opt_level={self.opt_level})"


@dataclass(slots=True)
class PassStats:
    """What one pass did, summed over the runs a profile saw."""

    position: float | None  # None: recorded from outside the table
    time: float = 0.0
    calls: int = 0
    applied: int = 0
    ops_before: int = 0
    ops_after: int = 0
    nodes_before: int = 0
    nodes_after: int = 0
    transforms: int = 0  # layout_transform nodes the pass added (negative: removed)


@dataclass
class PassProfile:
    """Per pass: time, calls, times applied (changed the graph), and node counts
    before/after (``ops``: nodes that are not constants; ``nodes``: all)."""

    stats: dict = field(default_factory=dict)
    runs: int = 0

    def record(
        self,
        name: str,
        seconds: float,
        ops_before: int,
        ops_after: int,
        applied: bool,
        nodes_before: int | None = None,
        nodes_after: int | None = None,
        position: float | None = None,
    ) -> None:
        """Add one run of pass ``name`` (callers outside the table, such as fusion, may record too)."""
        s = self.stats.get(name)
        if s is None:
            s = self.stats[name] = PassStats(position)
        s.time += seconds
        s.calls += 1
        s.applied += bool(applied)
        s.ops_before += ops_before
        s.ops_after += ops_after
        s.nodes_before += ops_before if nodes_before is None else nodes_before
        s.nodes_after += ops_after if nodes_after is None else nodes_after

    def record_pass(self, p: Pass, seconds: float, before: Graph, after: Graph) -> None:
        self.record(
            p.name,
            seconds,
            before.op_count(),
            after.op_count(),
            after is not before,
            len(before),
            len(after),
            p.position,
        )
        if after is not before:
            self.stats[p.name].transforms += _count_op(after, "layout_transform") - _count_op(before, "layout_transform")

    @property
    def transforms_inserted(self) -> int:
        """``layout_transform`` nodes the passes inserted, net, over all runs."""
        return sum(s.transforms for s in self.stats.values())

    @property
    def total_time(self) -> float:
        return sum(s.time for s in self.stats.values())

    def report(self) -> str:
        """An aligned table, one pass a line in position order, then the total time."""
        total = self.total_time
        w = max([len(name) for name in self.stats] + [24])
        head = (
            f"{'pos':>6}  {'pass':<{w}} {'time (s)':>9} {'%':>6} {'calls':>6} {'applied':>8} "
            f"{'ops before':>11} {'ops after':>10} {'nodes before':>13} {'nodes after':>12}"
        )
        lines = [f"Graph pass profile: {self.runs} run(s), {len(self.stats)} passes", head, "-" * len(head)]
        for name, s in sorted(self.stats.items(), key=_order):
            pct = 100.0 * s.time / total if total > 0 else 0.0
            pos = "-" if s.position is None else f"{s.position:g}"
            lines.append(
                f"{pos:>6}  {name:<{w}} {s.time:>9.4f} {pct:>5.1f}% {s.calls:>6} {s.applied:>8} "
                f"{s.ops_before:>11} {s.ops_after:>10} {s.nodes_before:>13} {s.nodes_after:>12}"
            )
        lines.append("-" * len(head))
        lines.append(f"{'':>6}  {'total':<{w}} {total:>9.4f}")
        layout = [f"{name} {s.transforms:+d}" for name, s in sorted(self.stats.items(), key=_order) if s.transforms]
        if layout:
            lines.append(f"layout_transform nodes inserted: {', '.join(layout)} (net {self.transforms_inserted})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


class PassDatabase:
    """An ordered, tagged table of graph passes (see the module docstring)."""

    def __init__(self, name: str = "optdb"):
        self.name = name
        self._passes: dict = {}

    def register(
        self,
        name: str,
        fn: Callable | None = None,
        position: float | None = None,
        tags: Iterable[str] = (),
        opt_level: int = 2,
        context: bool = False,
    ):
        """Add a pass; without ``fn`` returns a decorator.  Names are unique.  ``context``: ``fn``
        takes the build's ``BuildContext`` as its second argument."""
        if fn is None:

            def decorate(f: Callable) -> Callable:
                self.register(name, f, position, tags, opt_level, context)
                return f

            return decorate
        if position is None:
            raise ValueError(
                f"{self.name}: register {name!r}: give a position (the table now holds {self._describe()})"
            )
        if name in self._passes:
            raise ValueError(
                f"{self.name}: a pass named {name!r} is already registered at position "
                f"{self._passes[name].position}; pick another name (Theano style: "
                f"{name}_2) or remove the old one first"
            )
        if not callable(fn):
            raise TypeError(
                f"{self.name}: register {name!r}: fn is {type(fn).__name__}, expected a "
                f"Graph -> Graph function"
            )
        p = Pass(name, fn, position, tuple(tags), int(opt_level), bool(context))
        self._passes[name] = p
        return p

    def remove(self, name: str) -> Pass:
        self._check_keys([name], "remove")
        return self._passes.pop(name)

    def __getitem__(self, name: str) -> Pass:
        self._check_keys([name], "lookup")
        return self._passes[name]

    def __contains__(self, name: str) -> bool:
        return name in self._passes

    def __len__(self) -> int:
        return len(self._passes)

    def passes(self) -> list:
        """All passes in position order (ties keep registration order)."""
        return sorted(self._passes.values(), key=lambda p: p.position)

    def tags(self) -> set:
        return set(STANDARD_TAGS).union(*(p.tags for p in self._passes.values()))

    def select(self, opt_level: int = 2, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> list:
        """The passes to run, in position order (see the module docstring for the rule)."""
        include, exclude = _keys(include), _keys(exclude)
        self._check_keys(include, "include")
        self._check_keys(exclude, "exclude")
        return [
            p
            for p in self.passes()
            if (p.opt_level <= opt_level or p.matches(include)) and not p.matches(exclude)
        ]

    def run(
        self,
        graph: Graph,
        opt_level: int = 2,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        profile: PassProfile | None = None,
        context=None,
    ) -> Graph:
        """Run the selected passes in order; returns ``graph`` itself when none changed it.
        ``context``: the ``BuildContext`` passes registered with ``context=True`` get."""
        trace = os.environ.get("TESSERA_PRINT_GRAPH_PASSES", "") not in ("", "0")
        if profile is not None:
            profile.runs += 1
        for p in self.select(opt_level, include, exclude):
            t0 = time.perf_counter()
            new = p.fn(graph, context) if p.takes_context else p.fn(graph)
            dt = time.perf_counter() - t0
            if not isinstance(new, Graph):
                raise TypeError(f"graph pass {p.name!r} returned {type(new).__name__}, expected a Graph")
            if profile is not None:
                profile.record_pass(p, dt, graph, new)
            if trace and new is not graph:
                print(f"// after {p.name} ({dt * 1e3:.2f} ms)\n{new}", file=sys.stderr)
            graph = new
        return graph

    def _check_keys(self, keys: Iterable[str], what: str) -> None:
        known = set(self._passes) | self.tags()
        bad = sorted(k for k in keys if k not in known)
        if bad:
            raise ValueError(
                f"{self.name}: cannot {what} {bad}: no pass has that name or tag. "
                f"Table: {self._describe()}; tags: {sorted(self.tags())}"
            )

    def _describe(self) -> str:
        return "[" + ", ".join(f"{p.position:g} {p.name}" for p in self.passes()) + "]"

    def __repr__(self) -> str:
        return f"PassDatabase({self.name!r}, {self._describe()})"


def _order(item) -> float:
    position = item[1].position
    return float("inf") if position is None else position


def _count_op(graph: Graph, op: str) -> int:
    """Nodes of ``op`` in ``graph``, inside fused groups too."""
    return sum(_count_op(n.attrs["body"], op) if n.op == "fused" else n.op == op for n in graph.nodes)


def _keys(names: Iterable[str] | str) -> frozenset:
    if isinstance(names, str):
        return frozenset([names])
    return frozenset(names)
