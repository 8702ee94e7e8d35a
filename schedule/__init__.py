"""schedule: stages, primitives, bounds inference and lowering to the loop AST."""

from schedule.errors import ScheduleError
from schedule.schedule import Schedule, create_schedule
from schedule.stage import Stage
from schedule import stmt
from schedule.lower import LoweredFunc, lower, InferBound

__all__ = ["Schedule", "Stage", "ScheduleError", "create_schedule", "lower", "LoweredFunc", "InferBound", "stmt"]
