"""partition_loops: cut a loop where its guards start or stop holding, so the main part carries none.

A non-dividing split leaves ``if (likely(x.outer*32 + x.inner < 100))``
around the body.  The loop whose variable decides the guard is cut where the
guard stops holding for every inner iteration (an upper cut: a tail; a guard
such as ``x*2 + kw >= 1``, a conv's left padding, makes a lower cut: a head)::

    for (x.outer, 0, 4) {                   for (x.outer, 0, 3) {
      for (x.inner, 0, 32) {                  for (x.inner, 0, 32) {
        if (likely(x.outer*32 + x.inner         C[...] = ...         // no guard
                   < 100)) {                  }
          C[...] = ...               ->     }
        }                                   for (x.outer, 3, 1) {
      }                                       for (x.inner, 0, 32) {
    }                                           if (likely(...)) { C[...] = ... }

Halide does the same (``loop partitioning``); TVM calls it ``LoopPartition``.

A head or tail whose guards fail everywhere does nothing and is dropped: the
loop is only trimmed.  So the kernel-row loop of a conv over an inlined zero
padding (``guard_zero_terms``) runs only the rows inside the input::

    for (kh, 0, 3) { if (likely(y*2 + kh >= 1)) {..} }  ->  for (kh, max(1 - y*2, 0), ..) {..}

Peeling happens only where it pays: at a constant cut of a loop of constant
extent, and for a guard inside a vectorized or unrolled loop (a symbolic
cut: the main loop ends at ``floordiv(m, 32)``).  A guard against a symbolic
extent in plain loops stays, so the nest prints once, as TVM's::

    for (i.outer, 0, floordiv((m + 9), 10)) {
      for (i.inner, 0, 10) {
        if (likely((((i.outer * 10) + i.inner) < m))) { ... }

A tail is never peeled again (nor a head, except a head or tail of one
iteration whose inner guard pays: a conv's border tile, whose first kernel
column reads the padding in its unrolled tile), and a cut is not taken above a guard, cut at
an inner loop, that pays as much (vectorized > unrolled > plain): the outer
guard stays, as a ``min`` extent of a plain loop or an ``if (likely(...))``
in each copy of an unrolled one (whose extent stays constant), instead of
copying the inner peel into a second tail.  So a nest prints as one main
body plus at most one tail per peeled loop, however many axes were split;
a cut whose tail does nothing only trims the loop (no copy).  A 3-D tile of (37, 41, 43) by
(8, 8, 16) with the innermost vectorized prints two copies (it printed six)::

    for (i.outer, 0, 5) {
      for (j.outer, 0, 6) {
        for (k.outer, 0, 2) {
          for (i.inner, 0, min((37 - (i.outer * 8)), 8)) {
            for (j.inner, 0, min((41 - (j.outer * 8)), 8)) {
              C[ramp(..., 1, 16)] = ...              // main: 16 lanes
        }}}
        for (i.inner, 0, min((37 - (i.outer * 8)), 8)) {
          for (j.inner, 0, min((41 - (j.outer * 8)), 8)) {
            C[ramp(... + 32, 1, 11)] = ...           // tail: 11 lanes
"""

from __future__ import annotations

from te import expr as E
from te.simplify import Linear, const_bounds, linear, simplify
from te.visitor import collect_vars, pre_order, walk
from schedule import stmt as S


# A parallel loop is peeled only when its main part keeps at least this many iterations: the
# tail runs after it as a second launch, so a loop of 2 cut into 1 + 1 would run serially
# (a Winograd block loop did); below it an inner loop takes the cut.
MIN_PARALLEL_MAIN = 4


def partition_loops(body: S.Stmt, ctx: dict) -> S.Stmt:
    return _Partition(dict(ctx.get("ranges", {}))).visit(body)


def _atoms(cond: E.Expr) -> list:
    if isinstance(cond, E.And):
        return _atoms(cond.a) + _atoms(cond.b)
    return [cond]


def _likely_atoms(s: S.Stmt, inner: dict) -> list:
    """(atom, inner-loop ranges, pays) for every atom of every likely guard in ``s``.

    ``pays`` ranks what a guard-free main body is worth a copy of the nest for:
    2 inside a vectorized loop (the guard keeps it scalar), 1 inside an unrolled
    loop (a branch per copy), 0 elsewhere.
    """
    out: list = []

    def visit(x: S.Stmt, loops: dict, pays: int) -> None:
        if isinstance(x, S.For):
            loops = dict(loops)
            loops[x.loop_var] = (x.min, simplify(x.min + x.extent - 1))
            pays = max(pays, _RANK.get(x.kind, 0))
        for e in S.stmt_exprs(x):
            def grab(n, loops=loops, pays=pays):
                if isinstance(n, E.Call) and n.name == "likely":
                    out.extend((a, loops, pays) for a in _atoms(n.args[0]))
            walk(e, grab)
        for name in ("body", "then_case", "else_case"):
            child = getattr(x, name, None)
            if child is not None:
                visit(child, loops, pays)
        if isinstance(x, S.Block):
            for c in x.stmts:
                visit(c, loops, pays)

    visit(s, inner, 0)
    return out


_RANK = {S.VECTORIZED: 2, S.UNROLLED: 1}


def _cut(atom: E.Expr, v: E.Var, inner: dict, ranges: dict):
    """``(side, point, exact)`` if ``atom`` holds for every inner value exactly where
    ``v < point`` (side ``"hi"``) or ``v >= point`` (side ``"lo"``); ``exact``: no inner
    loop takes part, so the atom fails everywhere else."""
    if isinstance(atom, E.LT):
        lin = linear(E.Sub(E.Sub(atom.b, atom.a, "int32"), E.const(1), "int32"))
    elif isinstance(atom, E.LE):
        lin = linear(E.Sub(atom.b, atom.a, "int32"))
    elif isinstance(atom, E.GT):
        lin = linear(E.Sub(E.Sub(atom.a, atom.b, "int32"), E.const(1), "int32"))
    elif isinstance(atom, E.GE):
        lin = linear(E.Sub(atom.a, atom.b, "int32"))
    else:
        return None
    if not _is_int(atom.a):
        return None
    coef = 0
    rest = Linear(lin.dtype)
    rest.const = lin.const
    exact = True
    for t, c in lin.items():
        if t is v:
            coef += c
            continue
        used = collect_vars(t)
        if v in used:
            return None
        if isinstance(t, E.Var) and t in inner:
            worst = inner[t][0 if c > 0 else 1]  # the inner value that makes the atom hardest
            if v in collect_vars(worst):  # an inner extent that depends on v: its loosest constant
                worst = const_bounds(worst, ranges)[0 if c > 0 else 1]
                if worst is None:
                    return None
                worst = E.const(worst)
            rest.add(worst, c)
            exact = False
        elif any(u in inner for u in used):
            return None
        else:
            rest.add(t, c)
    if coef == 0:
        return None
    # atom <=> coef*v + rest >= 0
    if coef < 0:  # v <= rest // -coef
        return "hi", simplify(E.FloorDiv(rest.to_expr(), E.const(-coef), "int32") + 1, ranges), exact
    # v >= ceil(-rest / coef)
    neg = E.Sub(E.const(coef - 1), rest.to_expr(), "int32")
    return "lo", simplify(E.FloorDiv(neg, E.const(coef), "int32"), ranges), exact


def _is_int(e: E.Expr) -> bool:
    from te import dtype as dt

    return dt.is_int(e.dtype) and dt.lanes(e.dtype) == 1


class _Partition:
    """Peel where it pays: a loop of constant extent, or a guard inside a
    vectorized or unrolled loop.  Elsewhere (symbolic extents) the guard stays,
    so the printed nest is one copy, as TVM's.  A tail is not peeled again, and
    a cut is not taken above an inner cut that pays as much: one main body plus
    at most one tail per peeled loop, however many axes were split.
    """

    def __init__(self, ranges: dict):
        self.ranges = ranges
        self.in_tail = False  # inside a head or tail: "one" (of one iteration) or "many"
        self.enclosing: set = set()  # loop variables around the loop being visited

    def visit_in(self, v: E.Var, s: S.Stmt) -> S.Stmt:
        """Visit ``s``, the body of the loop over ``v``."""
        self.enclosing.add(v)
        try:
            return self.visit(s)
        finally:
            self.enclosing.discard(v)

    def visit(self, s: S.Stmt) -> S.Stmt:
        if isinstance(s, S.For):
            split = self.try_split(s) if s.kind != S.THREAD_BOUND else None  # a thread extent stays whole (TVM)
            if split is not None:
                return split
            body = self.visit_in(s.loop_var, s.body)
            return s if body is s.body else S.For(s.loop_var, s.min, s.extent, s.kind, body, s.pragmas)
        return S.map_stmt(s, self.visit)

    def try_split(self, s: S.For):
        v = s.loop_var
        cuts = {"lo": [], "hi": []}  # side -> [(point, atom, exact)]
        const_loop = isinstance(s.extent, E.IntImm)
        any_pays = deeper_pays = 0
        for atom, inner, pays in _likely_atoms(s.body, {}):
            used = collect_vars(atom)
            if v not in used:
                if any(u in inner for u in used) and not any(u in self.enclosing for u in used):
                    deeper_pays = max(deeper_pays, pays)  # a guard cut at a loop inside this one
                continue
            if not (pays or const_loop):
                continue
            r = _cut(atom, v, inner, self.ranges)
            if r is None or not (pays or None not in const_bounds(r[1], self.ranges)):
                continue  # a cut at a symbolic extent in a plain loop: keep the guard, one nest
            any_pays = max(any_pays, pays)
            cuts[r[0]].append((r[1], atom, r[2]))
        if not cuts["lo"] and not cuts["hi"]:
            return None
        end = simplify(s.min + s.extent, self.ranges)
        # the main part [lo, hi): every cut atom holds there
        lo = self.clamp(self.bound(cuts["lo"], E.Max), s.min, end) if cuts["lo"] else s.min
        hi = self.clamp(self.bound(cuts["hi"], E.Min), lo, end) if cuts["hi"] else end
        main_ext = simplify(hi - lo, self.ranges)
        if s.kind == S.UNROLLED and not (isinstance(lo, E.IntImm) and isinstance(hi, E.IntImm)):
            return None  # an unrolled loop keeps its constant extent: the guard stays in each copy
        if s.kind == S.PARALLEL and isinstance(main_ext, E.IntImm) and main_ext.value < MIN_PARALLEL_MAIN:
            return None  # a head or tail, a second launch, would run beside a main part too short to share
        # with a single guard on a side that no inner loop affects, that side is exactly where it fails
        edges = []
        for side, start, stop in (("lo", s.min, lo), ("hi", hi, end)):
            ext = simplify(stop - start, self.ranges)
            if not cuts[side] or (isinstance(ext, E.IntImm) and ext.value <= 0):
                continue
            only = cuts[side][0] if len(cuts[side]) == 1 else None
            body = _replace_atoms(s.body, {only[1]} if only and only[2] else set(), False)
            var = E.Var(v.name, v.dtype)
            self.ranges[var] = (const_bounds(start, self.ranges)[0],
                                const_bounds(simplify(stop - 1, self.ranges), self.ranges)[1])
            body = S.map_stmt_exprs(body, lambda e, var=var: _subst(e, v, var))
            if not _is_dead(body, self.ranges):
                edges.append((side, var, start, ext, body))
        if edges and (self.in_tail == "many" or (self.in_tail and not any_pays)
                      or (deeper_pays and deeper_pays >= any_pays)):
            # no second copy inside a head or tail, and a cut above one that pays as much
            # would copy that peel into its edges: keep the guard
            return None
        atoms = {a for side in cuts.values() for _, a, _ in side}
        main = S.For(v, lo, main_ext, s.kind, self.visit_in(v, _replace_atoms(s.body, atoms, True)), s.pragmas)
        if not edges:
            return main  # the loop only shrank: its head and tail do nothing
        parts = {side: self.edge(S.For(var, start, ext, s.kind, body, s.pragmas))
                 for side, var, start, ext, body in edges}
        return S.seq(*[x for x in (parts.get("lo"), main, parts.get("hi")) if x is not None])

    def edge(self, s: S.For) -> S.For:
        """A head or tail, visited: no cut inside copies it again, unless it is one iteration
        (a border tile) and the cut pays (its guard sits in an unrolled or vectorized loop, as
        the taps of an inlined padding do): that splits the one iteration, not every one."""
        was = self.in_tail
        one = isinstance(s.extent, E.IntImm) and s.extent.value == 1
        self.in_tail = "many" if was == "many" or not one else "one"
        try:
            return S.For(s.loop_var, s.min, s.extent, s.kind, self.visit_in(s.loop_var, s.body), s.pragmas)
        finally:
            self.in_tail = was

    def bound(self, cuts: list, op) -> E.Expr:
        point = cuts[0][0]
        for p, _, _ in cuts[1:]:
            point = simplify(op(point, p, "int32"), self.ranges)
        return point

    def clamp(self, x: E.Expr, lo: E.Expr, hi: E.Expr) -> E.Expr:
        return simplify(E.Min(E.Max(x, lo, "int32"), hi, "int32"), self.ranges)


def _is_dead(s: S.Stmt, ranges: dict) -> bool:
    """True if ``s`` does nothing once its decided guards are folded away."""
    from schedule.passes.simplify_stmt import simplify_stmt

    effects: list = []

    def grab(x):
        if isinstance(x, (S.Store, S.Provide, S.Evaluate)):
            effects.append(x)

    S.walk_stmt(simplify_stmt(s, {"ranges": ranges}), grab)
    return not effects


def _subst(e, v, nv):
    from te.visitor import substitute

    return substitute(e, {v: nv})


def _replace_atoms(s: S.Stmt, atoms: set, value: bool) -> S.Stmt:
    if not atoms:
        return s
    c = E.const(value)

    def fexpr(e):
        return pre_order(e, lambda n: c if n in atoms else None)

    return S.map_stmt_exprs(s, fexpr)
