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


class IRModule:
    """What ``tvm.lower`` returns: lowered functions by name (``mod["main"]``), printable.

    Each function is a ``schedule.LoweredFunc`` (``.body`` the loop nest, ``.params``);
    ``tvm.build(mod)`` builds it."""

    def __init__(self, functions: dict):
        self.functions = dict(functions)

    @classmethod
    def from_lowered(cls, func, name: str = "main") -> "IRModule":
        return cls({name: func})

    def __getitem__(self, name: str):
        if name in self.functions:
            return self.functions[name]
        if len(self.functions) == 1 and name == "main":
            return next(iter(self.functions.values()))
        raise KeyError(f"IRModule has no function {name!r}; it has {sorted(self.functions)}")

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def items(self):
        return self.functions.items()

    def get_global_vars(self) -> list:
        return list(self.functions)

    def __str__(self) -> str:
        if len(self.functions) == 1:  # the loop nest, as the tutorials print it
            return str(next(iter(self.functions.values())))
        return "\n".join(f"// function {name}\n{func}" for name, func in self.functions.items())

    def script(self) -> str:
        return str(self)

    astext = script
    __repr__ = __str__


def structural_equal(a, b) -> bool:
    """Whether two expressions or statements have the same structure (``te.visitor``)."""
    from te.visitor import structural_equal as equal

    return bool(equal(a, b))


from te.serialize import load_json, save_json  # noqa: E402


def Range(begin, end=None):  # noqa: N802 (classic TVM's name)
    """``tvm.ir.Range(begin, end)``: ``[begin, end)`` (``Range(end)``: from 0) as a te Range."""
    from te.expr import Range as _Range
    from te.expr import as_expr

    begin, end = (0, begin) if end is None else (begin, end)
    return _Range(as_expr(begin), as_expr(end) - as_expr(begin))


def _from_min_extent(min_value, extent):
    from te.expr import Range as _Range
    from te.expr import as_expr

    return _Range(as_expr(min_value), as_expr(extent))


Range.from_min_extent = _from_min_extent


def assert_structural_equal(a, b) -> None:
    if not structural_equal(a, b):
        raise ValueError(f"structures differ:\n{a}\n---\n{b}")


__all__ = ["IRModule", "Range", "load_json", "save_json", "assert_structural_equal", "lowering_rules", "op_attrs", "register_intrin_lowering",
           "register_op_attr", "structural_equal"]
