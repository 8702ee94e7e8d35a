"""``SketchPolicy``: random annotation of sketches, then evolution under the cost model.

One round of the search (``search_round``)::

    population = best measured programs + random annotations of every sketch
    for each of `evolutionary_search_num_iters` generations:
        score the population with the cost model
        children = mutations of parents drawn by score (tile sizes, unroll,
                   parallel depth, compute location, vector length)
    the round's batch = the default schedule (until measured), the best-scored
                        unmeasured programs, and an `eps_greedy` share of random ones

The round's random draws are seeded by ``(seed, programs measured so far)``:
a search resumed from its log (``PreloadMeasuredStates`` and
``XGBModel.update_from_file``) draws what the uninterrupted search would have.
"""

from __future__ import annotations

import hashlib
import math
import time

import numpy as np

from schedule.errors import ScheduleError
from tune.auto_scheduler.cost_model import RandomModel, program_features
from tune.auto_scheduler.search_task import State
from tune.auto_scheduler.sketch import generate_sketches
from tune.auto_scheduler.tuning import tune_tasks
from tune.record import load_records, target_key

MIN_PART = 8  # programs per worker call at least (fewer: realised here, a call costs more than they do)

DEFAULT_PARAMS = {
    "eps_greedy": 0.05,
    "population": 32,  # programs per generation (at least twice the round's batch)
    "evolutionary_search_num_iters": 2,
    "mutation_prob": 0.85,
    "sample_init_min_population": 16,  # random annotations per round (at least the round's batch)
    "best_measured_in_population": 16,
}


class SketchPolicy:
    """The search policy of classic TVM's auto_scheduler (``program_cost_model``: ``XGBModel()``,
    ``RandomModel()``; ``init_search_callbacks``: ``PreloadMeasuredStates(log)``)."""

    def __init__(self, task, program_cost_model=None, params=None, seed=None, verbose=1,
                 init_search_callbacks=None):
        self.task = task
        self.model = program_cost_model if program_cost_model is not None else RandomModel()
        self.params = dict(DEFAULT_PARAMS, **(params or {}))
        unknown = set(self.params) - set(DEFAULT_PARAMS)
        if unknown:
            raise ValueError(f"SketchPolicy: unknown params {sorted(unknown)}; known: {sorted(DEFAULT_PARAMS)}")
        self.seed = 0 if seed is None else int(seed)
        self.verbose = verbose
        self.sketches = generate_sketches(task.compute_dag, task.target)
        self.measured: dict = {}  # state key -> (State, seconds or inf)
        self.search_seconds = 0.0
        self._pool = None  # during search_round: the builder whose workers realise programs
        self._features: dict = getattr(self.model, "features", {})  # shared with the model
        for cb in init_search_callbacks or []:
            cb.enter(self)

    # ---------------------------------------------------------------- programs --
    def realize(self, sketch: int, genes: dict) -> State | None:
        """The program of ``genes`` in sketch ``sketch`` (None where the primitives refuse it)."""
        try:
            sch = self.sketches[sketch].realize(genes)
        except (ScheduleError, ValueError, KeyError):
            return None
        state = State(sch.trace, sketch, genes)
        key = (self.task.workload, state.key())
        if key not in self._features:
            program_features(self.task, _Realized(state, sch), self._features)
        return state

    def realize_all(self, items: list) -> list:
        """``realize`` of each ``(sketch, genes)``: in the worker processes of the round's ``pool``
        (``search_round``) where it has them, in parts, else here; the same States and features."""
        pool = self._pool
        if pool is None or len(items) < 2 * MIN_PART:
            return [self.realize(sk, genes) for sk, genes in items]
        parts = min(pool.n_parallel, len(items) // MIN_PART)
        chunks = [items[k * len(items) // parts:(k + 1) * len(items) // parts] for k in range(parts)]
        known = {digest(key) for wl, key in self._features if wl == self.task.workload}
        answers = pool.map_calls(f"{__name__}:realize_in_worker",
                                 [{"task": self.task, "sketches": len(self.sketches), "items": c, "known": known}
                                  for c in chunks])
        out = []
        for chunk, (status, value) in zip(chunks, answers):
            if status != "ok":  # a worker that failed: this process realises its part
                out.extend(self.realize(sk, genes) for sk, genes in chunk)
                continue
            for state, feats in value:
                if state is not None and not isinstance(feats, str):  # "known": scored here already
                    self._features.setdefault((self.task.workload, state.key()), feats)
                out.append(state)
        return out

    def sample(self, n: int, rng) -> list[State]:
        """``n`` distinct random programs (at most ``4 n`` draws, in turn from each sketch)."""
        out, seen, k = [], set(), 0
        while len(out) < n and k < 4 * n and self.sketches:
            items = []
            for _ in range(min(n - len(out), 4 * n - k)):  # each draw adds at most one: as drawn one by one
                sk = k % len(self.sketches)
                items.append((sk, self.sketches[sk].sample(rng)))
                k += 1
            for st in self.realize_all(items):
                if st is not None and st.key() not in seen:
                    seen.add(st.key())
                    out.append(st)
        return out

    def note_measured(self, inputs, results) -> None:
        for inp, res in zip(inputs, results):
            cost = res.cost if res.error_no == 0 and res.costs else float("inf")
            old = self.measured.get(inp.config.key())
            if old is None or cost < old[1]:
                self.measured[inp.config.key()] = (inp.config, cost)

    def best(self) -> tuple:
        """``(State, seconds)`` of the fastest measured program (``(None, inf)`` before any)."""
        return min(self.measured.values(), key=lambda sc: sc[1], default=(None, float("inf")))

    # ------------------------------------------------------------------ search --
    def search_round(self, n: int, pool=None) -> list[State]:
        """The next ``n`` programs to measure (``pool``: a builder whose idle worker processes
        realise and score programs, ``LocalBuilder.map_calls``)."""
        self._pool = pool
        try:
            return self._search_round(n)
        finally:
            self._pool = None

    def _search_round(self, n: int) -> list[State]:
        t0 = time.perf_counter()
        rng = np.random.default_rng([self.seed, len(self.measured)])
        p = self.params
        good = sorted((sc for sc in self.measured.values() if math.isfinite(sc[1]) and sc[0].sketch is not None
                       and sc[0].sketch < len(self.sketches) and self.sketches[sc[0].sketch].valid(sc[0].genes)),
                      key=lambda sc: sc[1])
        init = [sc[0] for sc in good[: p["best_measured_in_population"]]]
        randoms = self.sample(max(p["sample_init_min_population"], n), rng)
        self._batch = n
        population = init + randoms
        pool = self.evolve(population, rng)
        fresh = [s for s in pool if s.key() not in self.measured]
        n_random = int(round(n * p["eps_greedy"])) if len(fresh) > n else 0
        chosen, keys = [], set()
        # The kernel's own schedule (a graph kernel's) or the default one goes first, so the search
        # never ends on a program slower than what the compute runs without it.
        base = getattr(self.task, "baseline", None) or self.task.default_config()
        if base.key() not in self.measured:
            chosen.append(base)
            keys.add(base.key())
        for s in fresh[: n - n_random - len(chosen)]:
            chosen.append(s)
            keys.add(s.key())
        for s in randoms:
            if len(chosen) >= n:
                break
            if s.key() not in keys and s.key() not in self.measured:
                chosen.append(s)
                keys.add(s.key())
        self.search_seconds += time.perf_counter() - t0
        return chosen

    def evolve(self, population: list[State], rng) -> list[State]:
        """Every program seen in ``evolutionary_search_num_iters`` generations, best-scored first."""
        p = self.params
        seen: dict = {}
        for _ in range(p["evolutionary_search_num_iters"] + 1):
            population = [s for s in population if s.key() not in seen or seen[s.key()][0] is s]
            if not population:
                break
            scores = np.asarray(self.model.predict(self.task, population), dtype=np.float64)
            for s, sc in zip(population, scores):
                seen[s.key()] = (s, float(sc))
            population = self._children(population, scores, rng)
        return [s for s, _ in sorted(seen.values(), key=lambda v: -v[1])]

    def _children(self, population, scores, rng) -> list[State]:
        p = self.params
        finite = np.where(np.isfinite(scores), scores, np.nan)
        lo = np.nanmin(finite) if np.isfinite(finite).any() else 0.0
        w = np.nan_to_num(finite - lo, nan=0.0) + 1e-3
        mutable = [k for k, s in enumerate(population) if s.sketch is not None]
        if not mutable:
            return []
        wm = w[mutable] / w[mutable].sum()
        items = []
        for _ in range(max(p["population"], 2 * self._batch)):
            parent = population[mutable[int(rng.choice(len(mutable), p=wm))]]
            genes = dict(parent.genes)
            sketch = self.sketches[parent.sketch]
            for _ in range(1 + int(rng.random() < 1 - p["mutation_prob"])):
                genes = sketch.mutate(genes, rng)
            items.append((parent.sketch, genes))
        return [child for child in self.realize_all(items) if child is not None]

    # ----------------------------------------------------------------- tuning --
    def tune(self, options):
        """Search and measure ``options.num_measure_trials`` programs; returns the best State."""
        tune_tasks([self], options)
        return self.best()[0]


class _Realized:
    """A State with the schedule it was realised as (features without replaying the trace)."""

    def __init__(self, state: State, sch):
        self.state, self.sch = state, sch

    def key(self) -> str:
        return self.state.key()


_in_worker: dict = {}  # in a builder worker: (workload, target) -> (task, its sketches, features scored here)


def realize_in_worker(payload: dict) -> list:
    """In a builder worker: ``(State, features)`` of each ``(sketch, genes)`` of ``payload["items"]``
    (``(None, None)`` where the primitives refuse it; ``"known"`` for features where the search has
    them: ``payload["known"]``, digests of their keys), the task's sketches made here once (the
    evolution draws the same children often: four in ten of a round's)."""
    task = payload["task"]
    key = (task.workload, task.target_key)
    if key not in _in_worker or len(_in_worker[key][2]) > 50_000:
        _in_worker.clear()
        _in_worker[key] = (task, generate_sketches(task.compute_dag, task.target), {})
    task, sketches, features = _in_worker[key]
    if len(sketches) != payload["sketches"]:
        raise RuntimeError(f"{len(sketches)} sketches here, {payload['sketches']} in the search")
    out = []
    for sk, genes in payload["items"]:
        try:
            sch = sketches[sk].realize(genes)
        except (ScheduleError, ValueError, KeyError):
            out.append((None, None))
            continue
        state = State(sch.trace, sk, genes)
        if digest(state.key()) in payload["known"]:
            out.append((state, "known"))
        else:
            out.append((state, program_features(task, _Realized(state, sch), features)))
    return out


def digest(key: str) -> bytes:
    """8 bytes that stand for a program's key (the search tells its workers which it has scored)."""
    return hashlib.blake2b(key.encode(), digest_size=8).digest()


class PreloadMeasuredStates:
    """Init callback: the measured programs of the task in a log count as measured (not measured
    again) and seed the evolution (classic ``auto_scheduler.PreloadMeasuredStates``)."""

    def __init__(self, filename):
        self.filename = filename

    def enter(self, policy: SketchPolicy) -> None:
        mine = [(i, r) for i, r in load_records(self.filename)
                if hasattr(i.config, "trace") and not r.in_place and i.task.workload == policy.task.workload
                and target_key(i.target) == policy.task.target_key]
        policy.note_measured([i for i, _ in mine], [r for _, r in mine])


__all__ = ["DEFAULT_PARAMS", "PreloadMeasuredStates", "SketchPolicy"]
