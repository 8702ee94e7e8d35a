"""Graph operators: name -> compute, shape inference, schedule, numpy twin, fusion pattern.

See :mod:`graph.ops.registry` for the ``OpDef`` contract.  Modules register
their operators on import: ``elemwise`` (unary and broadcast binary ops),
``transform`` (reshape, transpose, slices, gathers, padding, full, shape_of),
``nn`` (convolutions, dense, pooling, softmax, norms, reductions).
"""

from graph.ops import (  # noqa: F401
    elemwise,
    extra,
    indexing,
    layout,
    math,
    narrow,
    nn,
    quantize,
    transform,
    transformer,
    winograd,
)
from graph.ops.registry import (  # noqa: F401
    BROADCAST,
    COMM_REDUCE,
    ELEMWISE,
    INJECTIVE,
    OPAQUE,
    OUT_ELEMWISE_FUSABLE,
    PATTERN_NAMES,
    OpDef,
    get_op,
    register,
    registered_ops,
)


def _register_constant() -> None:
    def types(values, attrs):
        v = attrs["value"]
        return [(tuple(v.shape), str(v.dtype))]

    register("constant", None, OPAQUE, None, types, lambda xs, a: [a["value"]],
             doc="a constant array (attrs: value)")


_register_constant()
