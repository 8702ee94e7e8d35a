"""``narrow_cast``: conversions from and to the storage-only types of :mod:`topi.narrow`.

A graph value of a narrow type (``bfloat16``, ``float8_e4m3fn``, ``int4``...)
keeps that logical name as its dtype; a kernel holds it as its bits
(:func:`topi.narrow.storage_dtype`).  ``narrow_cast`` carries its source type
in ``attrs["from"]`` (a kernel sees only the storage type), its target in
``attrs["dtype"]`` and ONNX's ``saturate`` and ``round_mode`` (float8e8m0 targets); it is elementwise and fuses as a
``cast`` does.  Its numpy twin (constant folding) is
:func:`topi.testing.narrow.narrow_cast_python`.
"""

from __future__ import annotations

from graph.ops.registry import ELEMWISE, OPAQUE, default_schedule, injective_schedule, register
from topi import narrow
from topi.testing.narrow import narrow_cast_python, rounded_sum_python


def _compute(xs, attrs):
    return [narrow.cast(xs[0], attrs["from"], attrs["dtype"], bool(attrs.get("saturate", True)),
                        attrs.get("round_mode", "up"))]


def _types(values, attrs):
    if values[0].dtype != attrs["from"]:
        raise ValueError(f"narrow_cast: attrs from={attrs['from']!r} but the input is {values[0].dtype}")
    if attrs.get("round_mode", "up") not in narrow.ROUND_MODES:
        raise ValueError(f"narrow_cast: round_mode={attrs['round_mode']!r} is not one of {', '.join(narrow.ROUND_MODES)}")
    for name in (attrs["from"], attrs["dtype"]):
        narrow.numpy_dtype(name)  # a narrow type needs ml_dtypes; any other must be a numpy type
    return [(values[0].shape, attrs["dtype"])]


def _evaluate(xs, attrs):
    return [narrow_cast_python(xs[0], attrs["dtype"], bool(attrs.get("saturate", True)), attrs.get("round_mode", "up"))]


register(
    "narrow_cast",
    _compute,
    ELEMWISE,
    injective_schedule,
    _types,
    _evaluate,
    doc="cast from or to a storage-only type (attrs: from, dtype, saturate, round_mode)",
)


def _rounded_sum_types(values, attrs):
    if values[0].dtype != "float32" or attrs["dtype"] not in narrow.FORMATS:
        raise ValueError(f"rounded_sum: a float32 input and a narrow float dtype, got {values[0].dtype} "
                         f"and {attrs['dtype']!r}")
    return [(tuple(values[0].shape[:-1]) + (1,), "float32")]


# Opaque with the default schedule: the reduction runs in index order, as the rounding requires.
register(
    "rounded_sum",
    lambda xs, a: [narrow.rounded_sum(xs[0], a["dtype"])],
    OPAQUE,
    default_schedule,
    _rounded_sum_types,
    lambda xs, a: [rounded_sum_python(xs[0], a["dtype"])],
    doc="sum over the last axis (kept), rounded to a narrow float after every addition (attrs: dtype)",
)
