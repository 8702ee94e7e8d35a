"""Template-free auto-scheduling (classic TVM's ``auto_scheduler``, Ansor): ``from tune import
auto_scheduler`` replaces ``from tvm import auto_scheduler``.

A task is a te computation (``register_workload`` + ``SearchTask``); the
search generates sketches of good schedules from the compute itself
(``sketch``), fills in their choices at random and evolves them under a
learned cost model (``search_policy``, ``cost_model``), and measures programs
with the builder and runner every tuner shares (``tune.measure``).  Every
program is a schedule trace (``schedule.trace``): what the records hold, what
``task.apply_best`` replays and ``task.print_best`` prints as te code.
"""

from tune.auto_scheduler.compute_dag import ComputeDAG
from tune.auto_scheduler.cost_model import RandomModel, XGBModel
from tune.auto_scheduler.dispatcher import ApplyHistoryBest, extract_tasks, register_extractor
from tune.auto_scheduler.measure_record import RecordReader, load_best_record, load_records, save_records
from tune.auto_scheduler.search_policy import PreloadMeasuredStates, SketchPolicy
from tune.auto_scheduler.search_task import LayoutRewriteOption, State, register_workload
from tune.auto_scheduler.task import SearchTask
from tune.auto_scheduler.task_scheduler import TaskScheduler
from tune.auto_scheduler.tuning import LocalBuilder, LocalRunner, RecordToFile, TuningOptions
from tune.measure import MeasureInput, MeasureResult

__all__ = [
    "ApplyHistoryBest",
    "ComputeDAG",
    "LayoutRewriteOption",
    "LocalBuilder",
    "LocalRunner",
    "MeasureInput",
    "MeasureResult",
    "PreloadMeasuredStates",
    "RandomModel",
    "RecordReader",
    "RecordToFile",
    "SearchTask",
    "SketchPolicy",
    "State",
    "TaskScheduler",
    "TuningOptions",
    "XGBModel",
    "extract_tasks",
    "load_best_record",
    "load_records",
    "register_extractor",
    "register_workload",
    "save_records",
]
