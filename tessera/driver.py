"""``tvm.build`` and ``tvm.lower`` over ``codegen.build`` and ``schedule.lower``."""

from __future__ import annotations

import codegen
import schedule
from tessera.runtime import Module
from tessera.target import Target, check_cpu_target


def lower(sch, args=None, name: str = "main", binds=None, simple_mode: bool = False):
    """The lowered loop nest (``print`` it); ``simple_mode`` is accepted, the body is what prints."""
    if binds:
        raise ValueError("lower: binds= (buffers bound to tensors) is not supported; pass tensors in args")
    return schedule.lower(sch, args, name=name)


def build(
    inputs, args=None, target=None, target_host=None, name: str = "default_function", binds=None
) -> Module:
    """Compile a schedule (or a lowered function) for the CPU (classic ``tvm.build``).

    ``target`` is a string, a ``Target``, or None for the enclosing ``with Target(...)``
    (else "llvm").  GPU targets are refused, naming the target.
    """
    if binds:
        raise ValueError("build: binds= (buffers bound to tensors) is not supported; pass tensors in args")
    if target is None:
        target = Target.current(allow_none=True) or "llvm"
    check_cpu_target(target, "build")
    if target_host is not None:
        check_cpu_target(target_host, "build (target_host)")
    return Module(codegen.build(inputs, args, target=target, name=name))


__all__ = ["build", "lower"]
