"""``SearchTask``: a search task with classic TVM's entry points (``tune``, ``apply_best``,
``print_best``)."""

from __future__ import annotations

from tune.auto_scheduler.cost_model import XGBModel
from tune.auto_scheduler.measure_record import load_best_record
from tune.auto_scheduler.search_policy import SketchPolicy
from tune.auto_scheduler.search_task import LayoutRewriteOption, Task
from tune.errors import TuneError


class SearchTask(Task):
    """A computation to schedule for a target (classic ``auto_scheduler.SearchTask``): made from a
    registered workload (``func``, ``args``) or from a ``compute_dag``."""

    def tune(self, tuning_options, search_policy=None, adaptive_training=False):
        if search_policy is None:
            search_policy = SketchPolicy(self, XGBModel(), verbose=tuning_options.verbose)
        return search_policy.tune(tuning_options)

    def apply_best(self, log_file, include_compatible=False, layout_rewrite_option=None):
        """``(schedule, tensors)`` of the best record of this task in ``log_file``: a kernel of the
        DAG's own tensors, its weights packed inside (``LayoutRewriteOption.INSERT_TRANSFORM_STAGE``)
        unless ``layout_rewrite_option`` says otherwise."""
        inp, _ = load_best_record(log_file, self.workload_key, self.target)
        if inp is None:
            raise TuneError(f"apply_best: no valid record of task {self.workload_key} for target "
                            f"{self.target_key!r} in {log_file!r}; tune it first")
        if layout_rewrite_option is None:
            layout_rewrite_option = LayoutRewriteOption.INSERT_TRANSFORM_STAGE
        return self.instantiate(inp.config, layout_rewrite_option)

    def print_best(self, log_file, print_mode="schedule") -> str:
        """The best record's schedule as te Python code."""
        sch, _ = self.apply_best(log_file)
        return str(sch.trace)


__all__ = ["SearchTask"]
