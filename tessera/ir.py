"""``tvm.ir``: the registration hooks the gallery imports.

``register_intrin_lowering`` and ``register_op_attr`` record their rules
(``lowering_rules``, ``op_attrs``); the LLVM backend lowers intrinsics
itself, so the records matter only to a GPU backend, which this build lacks.
"""

from __future__ import annotations

lowering_rules: dict = {}
op_attrs: dict = {}


def register_intrin_lowering(op_name: str, target: str, f=None, level: int = 10):
    """Record ``f`` as the lowering of intrinsic ``op_name`` for ``target``; usable as a decorator."""

    def register(fn):
        lowering_rules[(op_name, target)] = (level, fn)
        return fn

    return register(f) if f is not None else register


def register_op_attr(op_name: str, attr_key: str, value=None, level: int = 10):
    def register(v):
        op_attrs[(op_name, attr_key)] = v
        return v

    return register(value) if value is not None else register


__all__ = ["lowering_rules", "op_attrs", "register_intrin_lowering", "register_op_attr"]
