"""Static memory planning: intermediates share storage by liveness.

Walk the kernels in execution order.  Each intermediate value needs a
storage block from the moment its kernel writes it until its last reader
has run.  A block is taken from the free list (the smallest free block that
fits, else the largest free block, grown), and a value's block returns to
the free list after the last kernel that reads it: a kernel never writes
into a block that one of its own inputs occupies.  Aliases (a reshape that
only renames a buffer) extend the life of the value they alias.

The plan is one arena: each block gets an offset (64-byte aligned), each
value an offset into the arena.  ``naive_bytes`` is what one buffer per
intermediate would take; ``arena_bytes`` is the planned peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALIGN = 64


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class MemoryPlan:
    offsets: dict = field(default_factory=dict)  # id(value) -> byte offset in the arena
    arena_bytes: int = 0
    naive_bytes: int = 0
    blocks: int = 0

    def report(self) -> str:
        ratio = self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0
        return (f"memory plan: {self.blocks} shared blocks, arena {self.arena_bytes / 2**20:.2f} MiB "
                f"vs {self.naive_bytes / 2**20:.2f} MiB naive ({ratio:.1%})")


def plan_memory(steps: list, intermediates: set, alias: dict) -> MemoryPlan:
    """Assign arena offsets to intermediate values.

    Parameters
    ----------
    steps : list of (inputs, outputs)
        Each kernel in execution order: the Values it reads and writes.
    intermediates : set
        ids of the Values that live in the arena (not inputs, constants or outputs).
    alias : dict
        id(value) -> Value it shares storage with (already planned before it).
    """
    last_use: dict = {}
    for k, (ins, _) in enumerate(steps):
        for v in ins:
            root = _root(v, alias)
            last_use[id(root)] = k
    size_of: list = []  # block index -> size
    free: list = []
    block_of: dict = {}
    plan = MemoryPlan()
    for k, (ins, outs) in enumerate(steps):
        for v in outs:
            if id(v) not in intermediates or id(v) in alias:
                continue
            need = _aligned(v.nbytes)
            plan.naive_bytes += need
            block_of[id(v)] = _take(free, size_of, need)
            last_use.setdefault(id(v), k)
        for v in ins:
            root = _root(v, alias)
            if id(root) in block_of and last_use.get(id(root)) == k:
                free.append(block_of[id(root)])
                last_use[id(root)] = -1
    starts, total = [], 0
    for size in size_of:
        starts.append(total)
        total += size
    plan.arena_bytes, plan.blocks = total, len(size_of)
    for vid, b in block_of.items():
        plan.offsets[vid] = starts[b]
    return plan


def _root(v, alias: dict):
    while id(v) in alias:
        v = alias[id(v)]
    return v


def _take(free: list, size_of: list, need: int) -> int:
    fitting = [b for b in free if size_of[b] >= need]
    if fitting:
        b = min(fitting, key=lambda b: size_of[b])
    elif free:
        b = max(free, key=lambda b: size_of[b])
        size_of[b] = need
    else:
        size_of.append(need)
        return len(size_of) - 1
    free.remove(b)
    return b
