"""Elementwise and broadcast graph operators (patterns ELEMWISE / BROADCAST)."""

from __future__ import annotations

import numpy as np

import topi
from graph.ops.registry import BROADCAST, ELEMWISE, injective_schedule, register


def _broadcast_types(values, attrs):
    shape = topi.broadcast.broadcast_shape("broadcast", *[v.shape for v in values])
    dtype = values[0].dtype
    for v in values[1:]:
        if v.dtype != dtype:
            raise ValueError(f"operand dtypes differ: {[v.dtype for v in values]}")
    return [(shape, dtype)]


def _same_type(values, attrs):
    return [(values[0].shape, values[0].dtype)]


def _bool_types(values, attrs):
    return [(_broadcast_types(values, attrs)[0][0], "bool")]


def _unary(name, fn, np_fn, pattern=ELEMWISE):
    register(name, lambda xs, a: [fn(xs[0], a)], pattern, injective_schedule,
             _same_type, (lambda xs, a: [np_fn(xs[0], a)]) if np_fn else None)


def _np_erf(x):
    import math

    return np.vectorize(math.erf, otypes=[x.dtype])(x)


def _softplus(x):
    return topi.add(topi.maximum(x, 0.0), topi.log(topi.add(topi.exp(topi.negative(topi.abs(x))), 1.0)))


def _np_sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(x.dtype)


_unary("relu", lambda x, a: topi.nn.relu(x), lambda x, a: np.maximum(x, 0).astype(x.dtype))
_unary("sigmoid", lambda x, a: topi.sigmoid(x), lambda x, a: _np_sigmoid(x))
_unary("tanh", lambda x, a: topi.tanh(x), lambda x, a: np.tanh(x))
_unary("exp", lambda x, a: topi.exp(x), lambda x, a: np.exp(x))
_unary("log", lambda x, a: topi.log(x), lambda x, a: np.log(x))
_unary("sqrt", lambda x, a: topi.sqrt(x), lambda x, a: np.sqrt(x))
_unary("rsqrt", lambda x, a: topi.rsqrt(x), lambda x, a: (1.0 / np.sqrt(x)).astype(x.dtype))
_unary("abs", lambda x, a: topi.abs(x), lambda x, a: np.abs(x))
_unary("negative", lambda x, a: topi.negative(x), lambda x, a: np.negative(x))
_unary("floor", lambda x, a: topi.floor(x), lambda x, a: np.floor(x))
_unary("ceil", lambda x, a: topi.ceil(x), lambda x, a: np.ceil(x))
_unary("round", lambda x, a: topi.round(x), lambda x, a: np.round(x))
_unary("sign", lambda x, a: topi.sign(x), lambda x, a: np.sign(x))
_unary("sin", lambda x, a: topi.sin(x), lambda x, a: np.sin(x))
_unary("cos", lambda x, a: topi.cos(x), lambda x, a: np.cos(x))
_unary("erf", lambda x, a: topi.erf(x), lambda x, a: _np_erf(x))
_unary("identity", lambda x, a: topi.identity(x), lambda x, a: x.copy())
_unary("reciprocal", lambda x, a: topi.divide(1.0, x), lambda x, a: (1.0 / x).astype(x.dtype))
_unary("leaky_relu", lambda x, a: topi.nn.leaky_relu(x, a.get("alpha", 0.01)),
       lambda x, a: np.where(x > 0, x, x * a.get("alpha", 0.01)).astype(x.dtype))
_unary("elu", lambda x, a: topi.nn.elu(x, a.get("alpha", 1.0)),
       lambda x, a: np.where(x > 0, x, a.get("alpha", 1.0) * (np.exp(x) - 1)).astype(x.dtype))
_unary("selu", lambda x, a: topi.nn.selu(x), None)
_unary("gelu", lambda x, a: topi.nn.gelu(x), None)
_unary("softplus", lambda x, a: _softplus(x),  # max(x, 0) + log(1 + exp(-|x|)): no overflow for large x
       lambda x, a: (np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))).astype(x.dtype))
_unary("clip", lambda x, a: topi.nn.clip(x, a.get("a_min", -np.inf), a.get("a_max", np.inf)),
       lambda x, a: np.clip(x, a.get("a_min", -np.inf), a.get("a_max", np.inf)).astype(x.dtype))
_unary("logical_not", lambda x, a: topi.logical_not(x), lambda x, a: np.logical_not(x))


def _cast_types(values, attrs):
    return [(values[0].shape, str(np.dtype(attrs["dtype"])))]


register("cast", lambda xs, a: [topi.cast(xs[0], str(np.dtype(a["dtype"])))], ELEMWISE,
         injective_schedule, _cast_types, lambda xs, a: [xs[0].astype(a["dtype"])])


def _binary(name, fn, np_fn, types=_broadcast_types):
    register(name, lambda xs, a: [fn(xs[0], xs[1])], BROADCAST, injective_schedule, types,
             lambda xs, a: [np.asarray(np_fn(xs[0], xs[1]))])


def _np_div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        return np.trunc(a / b).astype(a.dtype)
    return (a / b).astype(a.dtype)


_binary("add", topi.add, np.add)
_binary("subtract", topi.subtract, np.subtract)
_binary("multiply", topi.multiply, np.multiply)
_binary("divide", topi.divide, _np_div)
_binary("power", topi.power, lambda a, b: np.power(a, b).astype(a.dtype))
_binary("maximum", topi.maximum, np.maximum)
_binary("minimum", topi.minimum, np.minimum)
_binary("floor_mod", topi.floor_mod, np.mod)
_binary("equal", topi.equal, np.equal, _bool_types)
_binary("not_equal", topi.not_equal, np.not_equal, _bool_types)
_binary("less", topi.less, np.less, _bool_types)
_binary("less_equal", topi.less_equal, np.less_equal, _bool_types)
_binary("greater", topi.greater, np.greater, _bool_types)
_binary("greater_equal", topi.greater_equal, np.greater_equal, _bool_types)
_binary("logical_and", topi.logical_and, np.logical_and, _bool_types)
_binary("logical_or", topi.logical_or, np.logical_or, _bool_types)
_binary("logical_xor", topi.logical_xor, np.logical_xor, _bool_types)


def _where_types(values, attrs):
    shape = topi.broadcast.broadcast_shape("where", *[v.shape for v in values])
    return [(shape, values[1].dtype)]


register("where", lambda xs, a: [topi.where(xs[0], xs[1], xs[2])], BROADCAST, injective_schedule,
         _where_types, lambda xs, a: [np.where(xs[0], xs[1], xs[2])])


def _prelu(xs, a):
    x, slope = xs
    return [topi.where(topi.greater(x, 0.0), x, topi.multiply(x, slope))]


register("prelu", _prelu, BROADCAST, injective_schedule, lambda v, a: [(v[0].shape, v[0].dtype)],
         lambda xs, a: [np.where(xs[0] > 0, xs[0], xs[0] * xs[1]).astype(xs[0].dtype)])
