"""Static memory planning: intermediates share storage by liveness.

Walk the kernels in execution order.  Each intermediate value needs a
storage block from the moment its kernel writes it until its last reader
has run.  A block is taken from the free list (the smallest free block that
fits, else the largest free block, grown), and a value's block returns to
the free list after the last kernel that reads it: a kernel never writes
into a block that one of its own inputs occupies.  Aliases (a reshape that
only renames a buffer) extend the life of the value they alias.

Views (``concat_view``): the inputs of a concatenation whose inputs are
contiguous pieces of its output (the leading dims before the axis all 1:
batch 1, channels or channel blocks) are written in place by their kernels,
each at its offset in the concatenation's block, and the concatenation runs
no kernel.  The block is taken when the first piece is written and lives
until the last reader of the concatenation or of any piece.

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


def plan_memory(steps: list, intermediates: set, alias: dict, views: dict | None = None) -> MemoryPlan:
    """Assign arena offsets to intermediate values.

    Parameters
    ----------
    steps : list of (inputs, outputs)
        Each kernel in execution order: the Values it reads and writes.
    intermediates : set
        ids of the Values that live in the arena (not inputs, constants or outputs).
    alias : dict
        id(value) -> Value it shares storage with (already planned before it).
    views : dict
        id(value) -> (Value, byte offset): the value is written in place inside that value's
        storage (``concat_view``).
    """
    views = views or {}
    last_use: dict = {}
    for k, (ins, _) in enumerate(steps):
        for v in ins:
            root, _ = _root(v, alias, views)
            last_use[id(root)] = k
    size_of: list = []  # block index -> size
    free: list = []
    block_of: dict = {}
    plan = MemoryPlan()
    placed: dict = {}  # id(value) -> (id(root), byte offset) of each value planned
    for k, (ins, outs) in enumerate(steps):
        for v in outs:
            if id(v) not in intermediates or id(v) in alias:
                continue
            root, offset = _root(v, alias, views)
            placed[id(v)] = (id(root), offset)
            if id(root) in block_of:  # a view whose concatenation a previous piece placed
                continue
            need = _aligned(root.nbytes)
            plan.naive_bytes += need
            block_of[id(root)] = _take(free, size_of, need)
            last_use.setdefault(id(root), k)
        for v in ins:
            root, _ = _root(v, alias, views)
            if id(root) in block_of and last_use.get(id(root)) == k:
                free.append(block_of[id(root)])
                last_use[id(root)] = -1
    starts, total = [], 0
    for size in size_of:
        starts.append(total)
        total += size
    plan.arena_bytes, plan.blocks = total, len(size_of)
    for vid, (rid, offset) in placed.items():
        plan.offsets[vid] = starts[block_of[rid]] + offset
    return plan


def _root(v, alias: dict, views: dict) -> tuple:
    """(the value that owns ``v``'s storage, ``v``'s byte offset in it)."""
    offset = 0
    while True:
        if id(v) in alias:
            v = alias[id(v)]
        elif id(v) in views:
            v, at = views[id(v)]
            offset += at
        else:
            return v, offset


def concat_view(out, axis: int, inputs: list, placeable) -> dict:
    """``{id(input): (out, byte offset)}`` when the concatenation of ``inputs`` (in order) along
    ``axis`` into value ``out`` can run in place (its inputs written by their kernels straight
    into its output), else ``{}``.

    ``placeable(v)``: whether ``v`` is an
    intermediate written by a step of its own (a kernel's output or another in-place
    concatenation's, not an alias, constant, graph input or output, nor already a view).
    Each input must be a contiguous piece of the output (every dim before the axis is 1)
    starting at a multiple of ``ALIGN`` bytes (kernels' buffers are aligned), and appear once.
    """
    axis %= len(out.shape)
    if any(d != 1 for d in out.shape[:axis]) or len({id(v) for v in inputs}) != len(inputs):
        return {}
    views, offset = {}, 0
    for v in inputs:
        if offset % ALIGN or v.dtype != out.dtype or not placeable(v):
            return {}
        views[id(v)] = (out, offset)
        offset += v.nbytes
    return views


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
