"""The converter table: ONNX operator type -> the converters of its versions.

Each converter is one function ``fn(ctx, node) -> list[Value]`` registered
with the range of *operator versions* it implements::

    @converter("Softmax", since=1, until=12)   # coerce to 2-D at `axis`
    def softmax_v1(ctx, node): ...

    @converter("Softmax", since=13)            # one axis
    def softmax_v13(ctx, node): ...

The operator version of a node is the ``since_version`` of its schema at the
model's opset (ONNX's own resolution: a model at opset 17 runs ``Relu``-14).
``until`` defaults to :data:`LATEST`: the schema bumps from 22 to 28 of the
operators converted here add element types (bfloat16, 4-bit, float8, float6)
or an attribute the converter reads (Mod's ``fmod`` for floats, Range's
``stash_type``, SpaceToDepth's ``mode``), so they convert like their
predecessor; anything newer is refused until a converter claims it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx.defs

LATEST = 28
DEFAULT_DOMAINS = ("", "ai.onnx")


@dataclass(frozen=True)
class Converter:
    op_type: str
    fn: Callable
    since: int
    until: int


_TABLE: dict = {}


def converter(op_type: str, since: int = 1, until: int = LATEST) -> Callable:
    """Register ``fn`` as the converter of ``op_type`` versions ``since..until`` (inclusive)."""

    def register(fn: Callable) -> Callable:
        entries = _TABLE.setdefault(op_type, [])
        for other in entries:
            if other.since <= until and since <= other.until:
                raise ValueError(f"converter {fn.__name__}: {op_type} versions {since}..{until} overlap "
                                 f"{other.fn.__name__} ({other.since}..{other.until})")
        entries.append(Converter(op_type, fn, since, until))
        return fn

    return register


def op_version(op_type: str, opset: int) -> int:
    """The version of ``op_type`` that a model at ``opset`` runs (``opset`` for unknown operators)."""
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError:
        return opset


def table_name(op_type: str, domain: str) -> str:
    """The table's key of an operator: its type in the default domain, ``domain.op_type`` in
    another (``com.microsoft.QLinearAdd``)."""
    return op_type if domain in DEFAULT_DOMAINS else f"{domain}.{op_type}"


def lookup(op_type: str, opset: int) -> Converter | None:
    """The converter for ``op_type`` in a model at ``opset``, or None."""
    version = op_version(op_type, opset)
    for entry in _TABLE.get(op_type, ()):
        if entry.since <= version <= entry.until:
            return entry
    return None


def supported_ops() -> dict:
    """op type -> sorted list of (since, until) version ranges with a converter."""
    return {op: sorted((e.since, e.until) for e in entries) for op, entries in sorted(_TABLE.items())}
