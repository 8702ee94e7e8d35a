"""Sketches for CPUs: the shapes of good schedules, generated from the compute DAG by Ansor's rules.

Each stage gets a *plan*, chosen by the rules below, read from the outputs
back to the inputs; a stage with two applicable rules doubles the sketches:

* always-inline: an elementwise (injective, non-output) stage is inlined into
  its consumers; one read by a tiled stage may instead be computed at root
  (a gene: a padding stage inlined puts a select in the innermost loop);
* multi-level tiling, for a reduction with data reuse (an input read without
  some output axis: matmul, conv): the "SSRSRS" structure
  ``S0 S1 R0 S2 R1 S3`` (each data axis cut in four, each reduce axis in two)
  either in place, or with its elementwise consumer fused into the tile (the
  consumer tiled as ``S0 S1 | S2*S3``, the reduction computed at its level 1
  or 2: a gene), or through a local write cache when it has no such consumer;
  the register tile's vector loop is the last data axis or (a gene, fused or
  cached) an axis packed weights hold contiguous: a conv's output channels,
  the tile's buffer laid out channel-innermost (``reorder_storage``), as the
  NCHWc template's tile of columns x channel vectors, from NCHW in and out;
* rfactor, for a reduction with little data parallelism: the innermost reduce
  axis split and factored into a vectorizable axis of a new stage;
* otherwise ("skip"), the stage keeps its loops: parallel outer axes,
  vectorized innermost, an unroll pragma.

The choices a sketch leaves open are genes (``tune.auto_scheduler.genes``):
tile sizes, unroll depth, how many outer loops run in parallel, compute
location, vector length and axis, weight packing.  A tiled stage's draws start
from its register tile (whole vectors, half or more of the accumulators the
registers hold, its loops unrolled; along an axis no weight is packed by, a
length that may leave a tail), drawn by multiply-adds per load and cache line
(``Tiled.register_score``); the outer levels are dealt at random.
``Sketch.realize(genes)`` applies the primitives to a fresh schedule, whose
trace is the candidate.
"""

from __future__ import annotations

import math

from te import expr as E
from te.tensor import ComputeOp
from te.visitor import walk
from tune.auto_scheduler.compute_dag import ComputeDAG, extent
from tune.auto_scheduler.plans import RFACTOR_SPACE, Inline, Rfactor, Simple, Tiled, reads

MAX_SKETCHES = 16


def has_reuse(op: ComputeOp) -> bool:
    """A reduction some input of which is read without one of the output axes (matmul, conv)."""
    if not op.reduce_axis:
        return False
    axes = {iv.var for iv in op.axis}
    for r in reads(op):
        used = set()
        for i in r.indices:
            walk(i, lambda x: used.add(x) if isinstance(x, E.Var) else None)
        if axes - used:
            return True
    return False


class Sketch:
    """One combination of plans; ``realize(genes)`` applies them to a fresh schedule."""

    def __init__(self, dag: ComputeDAG, plans: list, index: int):
        self.dag, self.plans, self.index = dag, plans, index
        self.genes = [gene for p in plans for gene in p.genes()]
        self.by_key = {gene.key: gene for gene in self.genes}

    def describe(self) -> str:
        return ", ".join(f"{p.name}:{p.kind}" + (f"/{p.mode}" if isinstance(p, Tiled) else "")
                         for p in self.plans)

    def accept(self, values: dict) -> tuple:
        verdicts = [p.accept(values) for p in self.plans]
        return all(v[0] for v in verdicts), all(v[1] for v in verdicts)

    def sample(self, rng, tries: int = 32) -> dict:
        """Random genes: the first draw the plans prefer, else the first legal one."""
        legal = None
        for _ in range(tries):
            values = {k: v for p in self.plans for k, v in p.sample(rng).items()}
            ok, preferred = self.accept(values)
            if ok and preferred:
                return values
            legal = legal or (values if ok else None)
        return legal or values

    def mutate(self, values: dict, rng, tries: int = 8) -> dict:
        """``values`` with one gene changed (a legal change; ``values`` when none was found)."""
        for _ in range(tries if self.genes else 0):
            out = dict(values)
            gene = self.genes[int(rng.integers(len(self.genes)))]
            out[gene.key] = gene.mutate(out[gene.key], rng)
            if self.accept(out)[0]:
                return out
        return dict(values)

    def valid(self, values: dict) -> bool:
        return set(values) == set(self.by_key) and all(self.by_key[k].valid(v) for k, v in values.items())

    def realize(self, values: dict):
        sch = self.dag.schedule()
        ctx: dict = {}
        for plan in self.plans:
            plan.emit(sch, values, ctx)
        return sch


def _consumers(dag: ComputeDAG) -> dict:
    out: dict = {op: [] for op in dag.ops}
    for op in dag.ops:
        for t in op.input_tensors:
            if op not in out[t.op]:
                out[t.op].append(op)
    return out


def generate_sketches(dag: ComputeDAG, target) -> list[Sketch]:
    """The sketches of ``dag`` for a CPU ``target`` (at most ``MAX_SKETCHES``)."""
    lanes = target.lanes("float32") if target is not None else 8
    regs = target.vector_registers if target is not None else 16
    consumers = _consumers(dag)
    outputs = {t.op for t in dag.outputs}
    tiled = {op for op in dag.ops if isinstance(op, ComputeOp) and has_reuse(op) and op.num_outputs == 1}
    inlined = {op for op in dag.ops if isinstance(op, ComputeOp) and not op.reduce_axis and op not in outputs
               and consumers[op] and all(isinstance(c, ComputeOp) for c in consumers[op])}
    fused_into: dict = {}
    for op in tiled:
        real = _effective(op, consumers, inlined)
        if (len(real) == 1 and not real[0].reduce_axis and real[0] not in tiled and real[0] not in inlined
                and [extent(iv) for iv in real[0].axis] == [extent(iv) for iv in op.axis]):
            fused_into[op] = real[0]
    options: list = []  # per op (outputs first): its alternatives, each a list of plans
    for op in reversed(dag.ops):
        if not isinstance(op, ComputeOp) or op in fused_into.values():
            continue
        simple_consumer = _simple_consumer(op, consumers, inlined, tiled, fused_into, outputs)
        if op in inlined:
            reads_tiled = any(c in tiled for c in consumers[op])
            options.append([[Inline(op, reads_tiled, Simple(op, lanes))]])
        elif op in tiled:
            o = fused_into.get(op)
            first = [Tiled(op, "fused", o.name, lanes, regs)] if o is not None else [Tiled(op, "cache", None, lanes, regs)]
            options.append([first, ([Simple(o, lanes)] if o is not None else []) + [Tiled(op, "inplace", None, lanes, regs)]])
        elif op.reduce_axis and math.prod(extent(iv) for iv in op.axis) < RFACTOR_SPACE \
                and extent(op.reduce_axis[-1]) >= 64 and op.num_outputs == 1:
            options.append([[Rfactor(op)], [Simple(op, lanes, simple_consumer)]])
        else:
            options.append([[Simple(op, lanes, simple_consumer)]])
    combos: list = [[]]
    for alts in options:
        combos = [c + a for c in combos for a in alts][:MAX_SKETCHES]
    return [Sketch(dag, plans, k) for k, plans in enumerate(combos)]


def _effective(op, consumers, inlined) -> list:
    """The consumers of ``op``, looking through inlined stages."""
    out, todo = [], list(consumers[op])
    while todo:
        c = todo.pop()
        if c in inlined:
            todo.extend(consumers[c])
        elif c not in out:
            out.append(c)
    return out


def _simple_consumer(op, consumers, inlined, tiled, fused_into, outputs) -> str | None:
    """The one consumer a non-output stage may be computed inside (a simple stage), if any."""
    if op in outputs:
        return None
    real = _effective(op, consumers, inlined)
    if len(real) != 1 or real[0] in tiled or real[0] in fused_into.values() or real[0] in inlined:
        return None
    return real[0].name


__all__ = ["Sketch", "generate_sketches", "has_reuse"]
