"""The plans a sketch is made of: how one stage is scheduled, and the genes it leaves open.

``Inline`` (always-inline, or optionally computed at root), ``Simple``
("skip": parallel outer axes, vectorized innermost, unroll, compute location),
``Tiled`` (multi-level tiling "SSRSRS", in place, fused with its consumer or
through a write cache; weights packed in the tiles' layout; the vector loop on
the last data axis or on one the packed weights hold contiguous) and ``Rfactor``.
``emit(sch, genes, ctx)`` applies a plan's primitives to a schedule (whose
trace records them); ``accept(genes)`` says which draws are legal and which
are preferred.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator

import numpy as np

from te import expr as E
from te.visitor import collect_reads, walk
from tune.auto_scheduler.compute_dag import extent
from tune.auto_scheduler.genes import ChoiceGene, TileGene

UNROLL = (0, 16, 64, 512)
VECTOR = (1, 4, 8, 16, 32, 64)
RFACTOR_SPACE = 256  # a reduction with fewer output elements than this gets an rfactor sketch


def _stage(sch, name):
    return next(st for st in sch.stages if st.name == name)


def reads(op) -> list:
    out = []
    for b in op.body:
        out.extend(collect_reads(b))
    return out


def multi_split(stage, axis, lengths) -> list:
    """Cut ``axis`` into ``len(lengths)`` loops of those lengths, outermost first."""
    out = []
    for k in range(len(lengths) - 1):
        axis_o, axis = stage.split(axis, factor=math.prod(lengths[k + 1:]))
        out.append(axis_o)
    return out + [axis]


class Plan:
    """How one stage is scheduled in a sketch; ``emit`` applies it to a schedule."""

    name: str
    kind = "skip"

    def genes(self) -> list:
        return []

    def accept(self, g: dict) -> tuple:
        """``(legal, preferred)``: whether genes ``g`` may be built at all, and whether they are
        the kind the search should draw first."""
        return True, True

    def sample(self, rng) -> dict:
        """Random values of this plan's genes."""
        return {gene.key: gene.sample(rng) for gene in self.genes()}

    def emit(self, sch, g: dict, ctx: dict) -> None:
        raise NotImplementedError


class Inline(Plan):
    kind = "inline"

    def __init__(self, op, optional: bool, fallback: Plan):
        self.name, self.optional, self.fallback = op.name, optional, fallback

    def genes(self):
        if not self.optional:
            return []
        return [ChoiceGene(f"{self.name}.inline", (1, 0), (3, 1))] + self.fallback.genes()

    def emit(self, sch, g, ctx):
        if not self.optional or g[f"{self.name}.inline"]:
            _stage(sch, self.name).compute_inline()
        else:
            self.fallback.emit(sch, g, ctx)


class Simple(Plan):
    """Parallel outer data axes (fused), the innermost data axis split and vectorized, unroll."""

    def __init__(self, op, lanes: int, consumer: str | None = None):
        self.name = op.name
        self.space = [extent(iv) for iv in op.axis]
        self.reduce = bool(op.reduce_axis)
        self.consumer = consumer  # a simple consumer this stage may be computed inside
        last = self.space[-1] if self.space else 1
        self.vecs = (1,) if self.reduce or last < 2 else tuple(v for v in VECTOR if v <= max(last, lanes))

    def genes(self):
        n = len(self.space)
        out = [ChoiceGene(f"{self.name}.par", tuple(range(n + 1)), tuple(1 if k == 0 else 2 for k in range(n + 1))),
               ChoiceGene(f"{self.name}.unroll", UNROLL[:3])]
        if len(self.vecs) > 1:
            out.append(ChoiceGene(f"{self.name}.vec", self.vecs))
        if self.consumer is not None:
            out.append(ChoiceGene(f"{self.name}.at", ("root", "consumer")))
        return out

    def emit(self, sch, g, ctx):
        st = _stage(sch, self.name)
        axes = list(st.op.axis)
        vec = g.get(f"{self.name}.vec", 1)
        inner = None
        if vec > 1:
            axes[-1], inner = st.split(axes[-1], factor=vec)
        at_consumer = g.get(f"{self.name}.at") == "consumer" and self.consumer in ctx
        par = 0 if at_consumer else g[f"{self.name}.par"]
        if par:
            fused = st.fuse(*axes[:par]) if par > 1 else axes[0]
            st.parallel(fused)
            axes = [fused] + axes[par:]
        if inner is not None:
            st.vectorize(inner)
        if g[f"{self.name}.unroll"] and st.leaf_iter_vars:
            st.pragma(st.leaf_iter_vars[0], "auto_unroll_max_step", g[f"{self.name}.unroll"])
        if at_consumer:
            consumer = _stage(sch, self.consumer)
            st.compute_at(consumer, ctx[self.consumer])
        ctx[self.name] = st.leaf_iter_vars[0] if st.leaf_iter_vars else None


class Tiled(Plan):
    """Multi-level tiling "SSRSRS"; ``mode``: "inplace", "fused" (with ``consumer``) or "cache"."""

    kind = "tile"

    def __init__(self, op, mode: str, consumer: str | None = None, lanes: int = 8, registers: int = 16):
        self.name, self.mode, self.consumer = op.name, mode, consumer
        self.space = [extent(iv) for iv in op.axis]
        self.reduce = [extent(iv) for iv in op.reduce_axis]
        self.lanes = lanes
        # the innermost tile (S3 of every data axis) stays in registers: the vector registers less
        # the operands' (one vector row of the vector axis, one broadcast; ``register_tile``)
        self.registers = registers
        # a last axis that whole vectors do not divide (a 28- or 14-wide image) may also be tiled as
        # if rounded up to them: the splits then leave a tail, the vector loop none
        last = self.space[-1] if self.space else 1
        self.padded = last > lanes and last % lanes != 0
        # weights ("layout_free_placeholders": constant tensors) may be copied in the tiles' layout
        dims = {t.op.name: pack_dims(op, t) for t in op.attrs.get("layout_free_placeholders", ())}
        self.free = [name for name, d in dims.items() if d is not None]
        self.dims = dims  # of the stage as defined: its write cache reads an axis of extent 1 as 0
        # the data axis of the innermost (vector) loop: the last one, or through a write cache laid
        # out with it innermost, an axis a packed weight has contiguous (a conv's output channels:
        # NCHW in, NCHW out, the NCHWc template's register tile of columns x channel vectors)
        last_axis = len(self.space) - 1
        packed = {k for name in self.free for kind, k in dims[name] if kind == "S" and self.space[k] > 1}
        self.vaxes = [last_axis] + sorted(packed - {last_axis} if mode != "inplace" else ())
        # the register tile of an axis no weight is packed along may leave a tail (``TileGene.rounded``):
        # 16 channels x 6 columns of a 56-wide image (12 accumulators; tiles dividing 56 give 8 or 14,
        # a spill) ran 1.2x the divisor tiles' best (benchmarks/auto_scheduler.py conv, 1x1 layers)
        self.roundable = {k for k in range(len(self.space)) if k not in packed}
        # per input: the data axes that index it, and the one its innermost (contiguous) dimension
        # follows (packed weights: their last data axis), for ``register_score``
        self.operands = _operands(op, {name: dims[name] for name in self.free})
        self._draws: dict = {}

    def tiles(self, g) -> list:
        """The loop lengths of each data axis, outermost first."""
        out = [g[f"{self.name}.S{k}"] for k in range(len(self.space))]
        if self.padded and g[f"{self.name}.vpad"] and self.vaxis(g) == len(self.space) - 1:
            out[-1] = g[f"{self.name}.SV"]
        return out

    def register_tile(self, vector_len: int) -> int:
        """The most elements the innermost tile may hold: the accumulators fill the registers but
        a row of ``vector_len`` along the vector axis and one broadcast (a conv's 8 channels x 14
        columns: 14 accumulators, 16 registers of AVX2)."""
        return self.lanes * max(self.registers - -(-vector_len // self.lanes) - 1, 4)

    def tile_registers(self, s3: list, v: int) -> int:
        """The registers the innermost tile ``s3`` fills: a vector per row of the vector axis ``v``
        and part vector (7 columns of a 7x7 image take a whole register: 16 of them are 16
        registers, not 14), in the units of ``register_tile``."""
        return math.prod(t for k, t in enumerate(s3) if k != v) * -(-s3[v] // self.lanes) * self.lanes

    def vaxis(self, g) -> int:
        """The data axis whose innermost tile is the vector loop."""
        return g.get(f"{self.name}.vaxis", len(self.space) - 1)

    def accept(self, g):
        n = self.name
        s3 = [t[3] for t in self.tiles(g)]
        if s3 and self.tile_registers(s3, self.vaxis(g)) > self.register_tile(s3[self.vaxis(g)]):
            return False, False
        # draws vectorize whole vectors (a 14-wide vector runs as 8 + 4 + 2: ResNet-50's 14x14 3x3 conv
        # ran 20 GFLOPS a thread, 56 with 8-wide tiles of the image rounded up to 16), or the whole of
        # an axis shorter than a vector
        v = self.vaxis(g)
        last, ext = (s3[v], self.space[v]) if s3 else (1, 1)
        vector_ok = last % self.lanes == 0 or (last == ext and ext < self.lanes)
        outer = math.prod(t[0] for t in self.tiles(g)[: g[f"{n}.par"]])
        return True, vector_ok and outer >= 2

    def sample(self, rng) -> dict:
        """Random genes, the register tile drawn first (``register_draws``: whole vectors along the
        vector axis, at least half of the accumulators the registers hold, drawn by how many
        multiply-adds it does per load), the rest of each axis dealt at random to the outer
        levels.  (Ansor fills every level at random and leaves the rest to the cost model: most
        such draws of a ResNet-50 1x1 conv hold a few accumulators or a scalar tail, and 150
        trials ended near half the template's speed.)"""
        g = super().sample(rng)
        # a vector axis that whole vectors tile (a 7-wide vector loop runs as 4 + 2 + 1: the 7x7
        # conv's channels, not its columns)
        whole_axes = [a for a in self.vaxes if self.space[a] % self.lanes == 0
                      or (self.padded and a == len(self.space) - 1)]
        vaxes = tuple(whole_axes) if len(self.vaxes) > 1 and whole_axes else (self.vaxis(g),)
        draws, weights = self.register_draws(vaxes)
        if not draws:
            return g
        v, inner, pick = draws[int(rng.choice(len(draws), p=weights))]
        if len(self.vaxes) > 1:
            g[f"{self.name}.vaxis"] = v
        vkey = f"{self.name}.S{v}"
        if self.padded and v == len(self.space) - 1:  # no whole vectors divide it: tiled rounded up
            g[f"{self.name}.vpad"], vkey = 1, f"{self.name}.SV"
        keys = [f"{self.name}.S{k}" for k in range(len(self.space)) if k != v]
        genes = {gene.key: gene for gene in self.genes()}
        for key, t in zip([vkey] + keys, [inner] + list(pick)):
            g[key] = genes[key].with_inner(t, rng)
        # parallel over enough outer loops to give two threads work, where the outer tiles allow
        outer = list(itertools.accumulate((t[0] for t in self.tiles(g)), operator.mul))
        if outer[g[f"{self.name}.par"] - 1] < 2 and outer[-1] >= 2:
            g[f"{self.name}.par"] = next(k + 1 for k, o in enumerate(outer) if o >= 2)
        return g

    def register_draws(self, vaxes: tuple) -> tuple:
        """``(draws, weights)``: the register tiles ``(vector axis, vector length, other axes'
        lengths)`` a draw takes, with vector axis in ``vaxes``, whole vectors (or the whole of an
        axis shorter than one) and at least half the accumulators ``register_tile`` allows (else
        the fullest), each weighted by ``register_score`` to the 4th power.  Draws favour the NCHWc
        template's shapes that way: a 1x1 conv's 4 channels x 3 rows x 8 columns (vectors of
        columns, 12 accumulators for 3 vector loads and 4 broadcasts from packed weights) or 16
        channels x 6 columns (broadcasts of 6 neighbours of an image row), not 16 channels x 6 rows
        (a cache line a broadcast) nor 1 channel x 14 rows x 8 columns (15 loads)."""
        if vaxes in self._draws:
            return self._draws[vaxes]
        draws, scores = [], []
        for v in vaxes:
            vext = -(-self.space[v] // self.lanes) * self.lanes if self.padded and v == len(self.space) - 1 \
                else self.space[v]
            whole = [d for d in _divisors(vext) if d % self.lanes == 0 and d <= 4 * self.lanes]
            if not whole and vext >= self.lanes:
                continue
            axes = [k for k in range(len(self.space)) if k != v]
            for inner in whole or [vext]:
                room = self.register_tile(inner) // (-(-inner // self.lanes) * self.lanes)
                options = [self.register_options(k, self.space[k], room) for k in axes]
                picks = _products(options, room)
                most = max((math.prod(p) for p in picks), default=1)
                for pick in picks:
                    if 2 * math.prod(pick) >= min(room, 2 * most - 1):  # half full or more, else the fullest
                        s3 = list(pick)
                        s3.insert(v, inner)
                        draws.append((v, inner, pick))
                        scores.append(self.register_score(s3, v) ** 4)
        w = np.asarray(scores, dtype=np.float64)
        self._draws[vaxes] = (draws, w / w.sum() if draws else w)
        return self._draws[vaxes]

    def register_score(self, s3: list, v: int) -> float:
        """Multiply-adds per load of the register tile ``s3`` (vector axis ``v``): its accumulators
        over its loads a reduction step plus the cache lines those touch.  An input indexed by the
        vector axis is loaded as vectors (one per row of its other axes), any other one broadcast
        element by element; neighbours along an input's innermost axis (its last index, or for
        packed weights their packed axis) share a line, other rows do not."""
        vectors = -(-s3[v] // self.lanes)
        acc = vectors * math.prod(t for k, t in enumerate(s3) if k != v)
        cost = 0
        for axes, last in self.operands:
            if v in axes:
                rows = math.prod(s3[k] for k in axes if k != v)
                cost += rows * vectors + rows * -(-s3[v] // 16 if v == last else vectors)
            else:
                count = math.prod(s3[k] for k in axes)
                cost += count + (count // s3[last] * -(-s3[last] // 16) if last in axes else count)
        return acc / max(cost, 1)

    def register_options(self, axis: int, ext: int, room: int) -> list:
        """The register tiles of a (non-vector) data axis of extent ``ext``, at most ``room``: its
        divisors, and where it may leave a tail, lengths whose rounding up wastes at most an eighth."""
        out = [d for d in _divisors(ext) if d <= room]
        if axis in self.roundable:
            out += [t for t in range(2, min(room, ext) + 1) if ext % t and 8 * (-(-ext // t) * t - ext) <= ext]
        return out

    def genes(self):
        n = self.name
        out = [TileGene(f"{n}.S{k}", e, 4, rounded=k in self.roundable) for k, e in enumerate(self.space)]
        if self.padded:
            out += [TileGene(f"{n}.SV", -(-self.space[-1] // self.lanes) * self.lanes, 4),
                    ChoiceGene(f"{n}.vpad", (0, 1))]
        out += [TileGene(f"{n}.R{k}", e, 2, max_inner=e) for k, e in enumerate(self.reduce)]
        out.append(ChoiceGene(f"{n}.par", tuple(range(1, len(self.space) + 1))))
        out.append(ChoiceGene(f"{n}.unroll", UNROLL))
        if self.mode != "inplace":
            out.append(ChoiceGene(f"{n}.at", (1, 2)))
        if len(self.vaxes) > 1:
            out.append(ChoiceGene(f"{n}.vaxis", tuple(self.vaxes)))
        if self.free:
            out.append(ChoiceGene(f"{n}.pack", (1, 0), (3, 1)))
        return out

    def pack(self, sch, x, tiles, rtiles) -> None:
        """Copy each layout-free input of ``x`` in the order its tiles read it: levels S0 S1 R0 S2 R1 S3
        of the dimensions it has, the innermost contiguous (``Schedule.rewrite_layout``)."""
        for name in self.free:
            tensor = _stage(sch, name).op.output(0)
            dims = self.dims[name]
            lengths = [list(tiles[k]) if kind == "S" else list(rtiles[k]) for kind, k in dims]
            order = []
            for kind, level in (("S", 0), ("S", 1), ("R", 0), ("S", 2), ("R", 1), ("S", 3)):
                order += [[d, level] for d, (kd, _) in enumerate(dims) if kd == kind]
            sch.rewrite_layout(tensor, x, lengths, order)

    def emit(self, sch, g, ctx):
        n = self.name
        tiles = self.tiles(g)
        rtiles = [g[f"{n}.R{k}"] for k in range(len(self.reduce))]
        if self.mode == "inplace":
            x = _stage(sch, n)
            if g.get(f"{n}.pack"):
                self.pack(sch, x, tiles, rtiles)
            levels = [multi_split(x, a, t) for a, t in zip(list(x.op.axis), tiles)]
            rlevels = [multi_split(x, a, t) for a, t in zip(list(x.op.reduce_axis), rtiles)]
            s0, s1, s2, s3 = ([lv[k] for lv in levels] for k in range(4))
            x.reorder(*s0, *s1, *[r[0] for r in rlevels], *s2, *[r[1] for r in rlevels], *s3)
            _parallel(x, s0, g[f"{n}.par"])
            first_serial = s1[0] if s1 else None
        else:
            if self.mode == "cache":
                out_name = n
                x = _stage(sch, sch.cache_write(_stage(sch, n).op.output(0), "local").op.name)
            else:
                out_name, x = self.consumer, _stage(sch, n)
            if g.get(f"{n}.pack"):
                self.pack(sch, x, tiles, rtiles)
            o = _stage(sch, out_name)
            levels = [multi_split(o, a, [t[0], t[1], t[2] * t[3]]) for a, t in zip(list(o.op.axis), tiles)]
            o0, o1, orest = ([lv[k] for lv in levels] for k in range(3))
            o.reorder(*o0, *o1, *orest)
            fused = _parallel(o, o0, g[f"{n}.par"])
            if orest and tiles[-1][2] * tiles[-1][3] <= 64 and tiles[-1][2] * tiles[-1][3] > 1:
                o.vectorize(orest[-1])
            at = g[f"{n}.at"]
            attach = o1[-1] if at == 2 else (o0[-1] if g[f"{n}.par"] < len(o0) else fused)
            x.compute_at(o, attach)
            inner = [t[2:] if at == 2 else t[1:] for t in tiles]
            levels = [multi_split(x, a, t) for a, t in zip(list(x.op.axis), inner)]
            rlevels = [multi_split(x, a, t) for a, t in zip(list(x.op.reduce_axis), rtiles)]
            s3 = [lv[-1] for lv in levels]
            s2 = [lv[-2] for lv in levels]
            s1 = [lv[0] for lv in levels] if at == 1 else []
            v = self.vaxis(g)
            if v != len(s3) - 1:  # the vector axis innermost, in the loops and in the register tile's buffer
                s3.append(s3.pop(v))
                axes = list(x.op.axis)
                x.reorder_storage(*axes[:v], *axes[v + 1:], axes[v])
            x.reorder(*s1, *[r[0] for r in rlevels], *s2, *[r[1] for r in rlevels], *s3)
            ctx[out_name] = fused
            first_serial = x.leaf_iter_vars[0]
        if tiles and tiles[self.vaxis(g)][3] > 1:
            x.vectorize(s3[-1])
        v = self.vaxis(g)
        for ax, t in zip(s3[:-1], [t[3] for k, t in enumerate(tiles) if k != v]):
            if t > 1:  # the register tile's other loops, unrolled: its accumulators stay in registers
                x.unroll(ax)
        if g[f"{n}.unroll"] and first_serial is not None:
            x.pragma(first_serial, "auto_unroll_max_step", g[f"{n}.unroll"])


def _operands(op, packed: dict) -> list:
    """``(axes, last)`` per tensor ``op`` reads: the data axes whose variables index it, and the one
    in its last index (None if none, or several), or for a tensor in ``packed`` (its ``pack_dims``)
    its last data dimension, which the packing lays out innermost."""
    var_axis = {iv.var: k for k, iv in enumerate(op.axis)}
    out, seen = [], set()
    for r in reads(op):
        if r.tensor.op in seen:
            continue
        seen.add(r.tensor.op)
        per_index = []
        for i in r.indices:
            used = set()
            walk(i, lambda x: used.add(var_axis[x]) if isinstance(x, E.Var) and x in var_axis else None)
            per_index.append(used)
        axes = frozenset().union(*per_index) if per_index else frozenset()
        dims = packed.get(r.tensor.op.name)
        if dims is not None:
            last = next((k for kind, k in reversed(dims) if kind == "S"), None)
        else:
            last = next(iter(per_index[-1])) if per_index and len(per_index[-1]) == 1 else None
        out.append((axes, last))
    return out


def _products(options: list, room: int) -> list:
    """Every choice of one length per list in ``options`` whose product is at most ``room``."""
    out = [()]
    for opts in options:
        out = [p + (t,) for p in out for t in opts if math.prod(p) * t <= room]
    return out


@functools.lru_cache(maxsize=256)
def _divisors(n: int) -> tuple:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


def pack_dims(op, tensor) -> list | None:
    """Per dimension of ``tensor``, the axis of ``op`` that indexes it in every read: ("S", k) for data
    axis k, ("R", k) for reduce axis k; None where a read indexes it otherwise (``y + ry``)."""
    data = {iv.var: ("S", k) for k, iv in enumerate(op.axis)}
    data.update({iv.var: ("R", k) for k, iv in enumerate(op.reduce_axis)})
    dims = None
    for r in reads(op):
        if r.tensor.op is not tensor.op:
            continue
        got = [data.get(i) if isinstance(i, E.Var) else None for i in r.indices]
        if None in got or (dims is not None and got != dims) or len(set(got)) != len(got):
            return None
        dims = got
    return dims


def _parallel(st, outer: list, depth: int):
    """Fuse the first ``depth`` of ``outer`` and run the fused loop in parallel; returns it."""
    depth = max(1, min(depth, len(outer)))
    fused = st.fuse(*outer[:depth]) if depth > 1 else outer[0]
    st.parallel(fused)
    return fused


class Rfactor(Plan):
    """The innermost reduce axis split, its inner part factored out and vectorized."""

    kind = "rfactor"

    def __init__(self, op):
        self.name = op.name
        self.space = [extent(iv) for iv in op.axis]
        self.last = extent(op.reduce_axis[-1])

    def genes(self):
        opts = tuple(f for f in (4, 8, 16, 32, 64) if f <= self.last) or (1,)
        return [ChoiceGene(f"{self.name}.rf", opts),
                ChoiceGene(f"{self.name}.par", tuple(range(len(self.space) + 1)))]

    def emit(self, sch, g, ctx):
        st = _stage(sch, self.name)
        ko, ki = st.split(st.op.reduce_axis[-1], factor=g[f"{self.name}.rf"])
        rf = _stage(sch, sch.rfactor(st.op.output(0), ki, factor_axis=len(st.op.axis)).op.name)
        kf = rf.op.axis[-1]
        data = list(rf.op.axis[:-1])
        rf.reorder(*data, *[iv for iv in rf.leaf_iter_vars if iv.iter_type == E.COMM_REDUCE], kf)
        rf.vectorize(kf)
        par = g[f"{self.name}.par"]
        if par and data:
            _parallel(rf, data, par)
            _parallel(st, list(st.op.axis), par)


__all__ = ["Inline", "Plan", "RFACTOR_SPACE", "Rfactor", "Simple", "Tiled", "multi_split", "pack_dims", "reads"]
