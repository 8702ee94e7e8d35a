"""``tvm.driver``: ``build`` and ``lower`` (``tvm.driver.build_module``, as classic TVM lays it out)."""

from tessera.driver.build_module import build, lower, schedule_to_module

__all__ = ["build", "lower", "schedule_to_module"]
