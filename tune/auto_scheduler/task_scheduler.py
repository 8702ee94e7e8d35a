"""``TaskScheduler``: a network's trials spent where they shorten the network most (Ansor's gradient).

The objective is the network's estimated latency, ``sum_i weight_i * best_i``
(each task's best seconds times its calls per run).  After one warm-up round
per task, each round goes to the task with the most negative gradient::

    dL/dt_i ~ weight_i * (alpha * backward_i + (1 - alpha) * forward_i)
    backward_i = (best_i(now) - best_i(window rounds ago)) / window
    forward_i  = min(best_i - best_i / rounds_i,
                     beta * flop_i / max_{similar k} (flop_k / best_k)) - best_i

``forward`` is an optimistic guess of the next round's gain: the task goes as
its own curve says, or reaches ``beta`` times the speed of the fastest similar
task (same computation up to shapes).  An ``eps_random`` share of rounds
goes to a random task.  Every draw is seeded by ``(seed, rounds so far)``,
and ``load_log_file`` restores each task's rounds and best-cost history from
the log in the order they were measured: a resumed tune continues as the
uninterrupted one would have.
"""

from __future__ import annotations

import math
import time

import numpy as np

from tune.auto_scheduler.cost_model import XGBModel
from tune.auto_scheduler.measure_record import load_records
from tune.auto_scheduler.search_policy import PreloadMeasuredStates, SketchPolicy
from tune.auto_scheduler.tuning import Stats, measure_round
from tune.measure.option import create_measure_batch
from tune.record import target_key


class TaskScheduler:
    """Tune several tasks (a network's) for one objective (classic ``auto_scheduler.TaskScheduler``)."""

    def __init__(self, tasks, task_weights=None, objective_func=None, strategy: str = "gradient",
                 load_model_file=None, load_log_file=None, alpha: float = 0.2, beta: float = 2.0,
                 gamma: float = 0.5, backward_window_size: int = 3, callbacks=None, eps_random: float = 0.05,
                 seed: int = 0):
        if strategy not in ("gradient", "round-robin"):
            raise ValueError(f"TaskScheduler: unknown strategy {strategy!r}; use 'gradient' or 'round-robin'")
        self.tasks = list(tasks)
        self.weights = [1.0] * len(self.tasks) if task_weights is None else [float(w) for w in task_weights]
        if len(self.weights) != len(self.tasks):
            raise ValueError(f"TaskScheduler: {len(self.tasks)} tasks but {len(self.weights)} weights")
        self.objective = objective_func or (lambda costs: sum(w * c for w, c in zip(self.weights, costs)))
        self.strategy, self.alpha, self.beta, self.window = strategy, alpha, beta, int(backward_window_size)
        self.eps_random, self.seed = eps_random, int(seed)
        self.load_log_file = load_log_file
        self.callbacks = list(callbacks or [])
        self.best_costs = [math.inf] * len(self.tasks)
        self.rounds = [0] * len(self.tasks)
        self.history: list = [[] for _ in self.tasks]  # each task's best after each of its rounds
        self.dead: set = set()
        self.trials = 0
        self.curve: list = []  # (trials, estimated latency) after each round
        tags = [t.compute_dag.structure() for t in self.tasks]
        self.similar = [[j for j, tj in enumerate(tags) if tj == ti] for ti in tags]

    # ------------------------------------------------------------------ resume --
    def restore(self, filename, per_round: int) -> None:
        """Each task's rounds and best history from ``filename``, in the order they were measured
        (consecutive records of one task are its rounds, ``per_round`` at most each)."""
        index = {(t.workload, t.target_key): k for k, t in enumerate(self.tasks)}
        runs: list = []  # [task index, records in this run]
        costs: list = []
        for inp, res in load_records(filename):
            k = index.get((inp.task.workload, target_key(inp.target)))
            if k is None or res.in_place:  # readings inside whole runs of a model are no search round
                continue
            cost = res.cost if res.error_no == 0 and res.costs else math.inf
            if not runs or runs[-1][0] != k or len(costs[-1]) == per_round:
                runs.append([k])
                costs.append([])
            costs[-1].append(cost)
        for (k,), cs in zip(runs, costs):
            self.rounds[k] += 1
            self.trials += len(cs)
            self.best_costs[k] = min([self.best_costs[k], *cs])
            self.history[k].append(self.best_costs[k])
            self.curve.append((self.trials, self.estimate()))

    # ---------------------------------------------------------------- choosing --
    def estimate(self) -> float:
        """The objective with the best costs so far (inf until every task has a valid program)."""
        return self.objective(self.best_costs)

    def gradients(self) -> list:
        out = []
        for i, task in enumerate(self.tasks):
            best, curve, t = self.best_costs[i], self.history[i], max(self.rounds[i], 1)
            if not math.isfinite(best):
                out.append(-math.inf if i not in self.dead else math.inf)
                continue
            backward = (curve[-1] - curve[-1 - self.window]) / self.window if len(curve) > self.window else 0.0
            nxt = best - best / t
            speeds = [self.tasks[j].flop / self.best_costs[j] for j in self.similar[i]
                      if j != i and math.isfinite(self.best_costs[j]) and self.best_costs[j] > 0]
            if speeds and task.flop:
                nxt = min(nxt, self.beta * task.flop / max(speeds))
            grad = self.weights[i] * (self.alpha * backward + (1 - self.alpha) * (nxt - best))
            out.append(math.inf if i in self.dead else grad)
        return out

    def next_task(self) -> int | None:
        alive = [i for i in range(len(self.tasks)) if i not in self.dead]
        if not alive:
            return None
        cold = [i for i in alive if self.rounds[i] == 0]
        if cold:
            return cold[0]
        rng = np.random.default_rng([self.seed, sum(self.rounds)])
        if self.strategy == "round-robin":
            return min(alive, key=lambda i: (self.rounds[i], i))
        if rng.random() < self.eps_random:
            return alive[int(rng.integers(len(alive)))]
        grads = self.gradients()
        return int(np.argmin(grads))

    # ------------------------------------------------------------------- tuning --
    def tune(self, tune_option, search_policy="default", search_policy_params=None, adaptive_training=False,
             per_task_early_stopping=None, time_budget_s: float | None = None) -> Stats:
        """Spend ``tune_option.num_measure_trials`` over the tasks (in all, the log resumed from
        included), or stop at the first round that ends after ``time_budget_s`` seconds."""
        model = XGBModel(seed=self.seed)
        preload = []
        if self.load_log_file:
            model.update_from_file(self.load_log_file)
            preload = [PreloadMeasuredStates(self.load_log_file)]
            self.restore(self.load_log_file, tune_option.num_measures_per_round)
        self.policies = [SketchPolicy(t, model, search_policy_params, seed=self.seed, verbose=0,
                                      init_search_callbacks=preload) for t in self.tasks]
        stats, start = Stats(), time.perf_counter()
        while self.trials < tune_option.num_measure_trials:
            if time_budget_s is not None and time.perf_counter() - start > time_budget_s:
                break
            i = self.next_task()
            if i is None:
                break
            policy = self.policies[i]
            batch = create_measure_batch(policy.task, tune_option.measure_option())
            batch.runner.best_cost = self.best_costs[i]  # the bar for rejecting slow candidates
            n = min(tune_option.num_measures_per_round, tune_option.num_measure_trials - self.trials)
            results = measure_round(policy, batch, n, tune_option, stats)
            if not results:
                self.dead.add(i)
                continue
            self.rounds[i] += 1
            self.trials += len(results)
            self.best_costs[i] = min(self.best_costs[i], policy.best()[1])
            self.history[i].append(self.best_costs[i])
            self.curve.append((self.trials, self.estimate()))
            if tune_option.verbose:
                print(self.progress(i, stats), flush=True)
            for cb in self.callbacks:
                cb(self, i)
        stats.wall = time.perf_counter() - start
        return stats

    def progress(self, i: int, stats: Stats) -> str:
        best = self.best_costs[i]
        est = self.estimate()
        est_s = f"{est * 1e3:.3f} ms" if math.isfinite(est) else "- (a task has no valid program yet)"
        label = self.tasks[i].desc or self.tasks[i].name
        return (f"trials {self.trials}: task {i} {label} (x{self.weights[i]:g}) best {best * 1e3:.3f} ms; "
                f"estimated latency {est_s}; search {stats.search:.1f} s, measure {stats.measure:.1f} s")


__all__ = ["TaskScheduler"]
