"""``tvm.build`` and ``tvm.lower`` over ``codegen.build`` and ``schedule.lower``."""

from __future__ import annotations

import codegen
import schedule
from tessera.ir import IRModule
from tessera.runtime import Module
from tessera.target import Target, check_cpu_target


def lower(sch, args=None, name: str = "main", binds=None, simple_mode: bool = False) -> IRModule:
    """An ``IRModule`` holding the lowered function under ``name`` (``mod["main"]``); printing it
    prints the loop nest.  ``simple_mode`` is accepted: the loop nest is what prints either way.  An
    output left out of ``args`` is computed into a scratch buffer (classic TVM; ``build`` refuses it)."""
    if binds:
        raise ValueError("lower: binds= (buffers bound to tensors) is not supported; pass tensors in args")
    return IRModule.from_lowered(schedule.lower(sch, args, name=name, scratch_outputs=True), name)


def schedule_to_module(sch, args=None, name: str = "main", binds=None) -> IRModule:
    """The schedule's first loop nest (bounds inferred, loops built, no lowering pass run) as an
    ``IRModule`` (classic ``driver.build_module.schedule_to_module``)."""
    if binds:
        raise ValueError("schedule_to_module: binds= is not supported; pass tensors in args")
    return IRModule.from_lowered(schedule.lower(sch, args, name=name, pipeline=()), name)


def build(
    inputs, args=None, target=None, target_host=None, name: str = "default_function", binds=None
) -> Module:
    """Compile a schedule (or a lowered function) for the CPU (classic ``tvm.build``).

    ``target`` is a string, a ``Target``, or None for the enclosing ``with Target(...)``
    (else "llvm").  GPU targets are refused, naming the target.
    """
    if binds:
        raise ValueError("build: binds= (buffers bound to tensors) is not supported; pass tensors in args")
    if isinstance(inputs, IRModule):
        if len(inputs.functions) != 1:
            raise ValueError(f"build: the IRModule holds {len(inputs.functions)} functions; build one at a time")
        ((name, inputs),) = inputs.functions.items()
    if target is None:
        target = Target.current(allow_none=True) or "llvm"
    check_cpu_target(target, "build")
    if target_host is not None:
        check_cpu_target(target_host, "build (target_host)")
    return Module(codegen.build(inputs, args, target=target, name=name))


__all__ = ["build", "lower", "schedule_to_module"]
