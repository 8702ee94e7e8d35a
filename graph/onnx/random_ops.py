"""The random generators: RandomNormal, RandomUniform, their ``Like`` forms, Bernoulli, Multinomial.

They run as host operators (:mod:`graph.onnx.host`) between the compiled
segments of a :class:`graph.onnx.program.Program`, drawing from numpy's
``Generator`` (PCG64), so a draw is never constant-folded or merged with
another node's: each node owns one generator, made on the first run of the
library built from the model and kept by its program.

``seed`` (a float attribute) seeds that generator: two libraries built from
one seeded model give the same sequence of draws, one per run (the stream
advances every run, as onnxruntime's does); without ``seed`` the generator is
seeded from the operating system's entropy, a different stream per library.
The draws follow each operator's distribution, not any other runtime's
stream (no two runtimes share one): tests check them by their properties.

=====================  =============================================================
operator               output
=====================  =============================================================
``RandomNormal``       ``mean + scale * N(0, 1)`` of ``shape``, ``dtype`` (float)
``RandomUniform``      ``U[low, high)`` of ``shape``, ``dtype`` (float)
``*Like``              the same, of the input's shape; ``dtype`` defaults to the input's
``Bernoulli``          1 with probability ``input``, else 0, as ``dtype`` (the input's)
``Multinomial``        ``[batch, sample_size]`` class indices drawn with the
                       probabilities ``softmax(input)`` per row, ``dtype`` int32 or int64
=====================  =============================================================
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

from graph.onnx.host import host

FLOAT_TYPES = (TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.BFLOAT16)


def _error(node, message: str) -> ValueError:
    return ValueError(f"from_onnx: node {node.name!r} ({node.op_type}): {message}")


def generator(program, node, attrs: dict) -> np.random.Generator:
    """The generator of ``node``, made on first use: seeded by the bits of its float ``seed``
    attribute, else by the operating system's entropy."""
    key = (id(node), node.name)
    if key not in program.generators:
        seed = attrs.get("seed")
        if seed is not None and not np.isnan(seed):
            bits = int(np.array(seed, np.float64).view(np.uint64))
            program.generators[key] = np.random.default_rng(bits)
        else:
            program.generators[key] = np.random.default_rng()
    return program.generators[key]


def _numpy_type(node, code: int, allowed) -> np.dtype:
    if code not in allowed:
        names = ", ".join(TensorProto.DataType.Name(c) for c in allowed)
        raise _error(node, f"dtype={code} is not one of {names}")
    return np.dtype(helper.tensor_dtype_to_np_dtype(code))


def _shape(node, attrs: dict, args: list) -> tuple:
    if node.op_type.endswith("Like"):
        return np.shape(args[0])
    if "shape" not in attrs:
        raise _error(node, "attribute shape is required")
    shape = tuple(int(d) for d in attrs["shape"])
    if any(d < 0 for d in shape):
        raise _error(node, f"shape {shape} has a negative extent")
    return shape


def _dtype(node, attrs: dict, args: list, allowed=FLOAT_TYPES) -> np.dtype:
    if "dtype" in attrs:
        return _numpy_type(node, int(attrs["dtype"]), allowed)
    if node.op_type.endswith("Like") or node.op_type == "Bernoulli":
        return _numpy_type(node, helper.np_dtype_to_tensor_dtype(np.asarray(args[0]).dtype), allowed)
    return np.dtype(np.float32)


@host("RandomNormal", "RandomNormalLike")
def run_random_normal(program, node, args, attrs, env) -> list:
    shape, dtype = _shape(node, attrs, args), _dtype(node, attrs, args)
    rng = generator(program, node, attrs)
    draw = float(attrs.get("mean", 0.0)) + float(attrs.get("scale", 1.0)) * rng.standard_normal(shape)
    return [draw.astype(dtype)]


@host("RandomUniform", "RandomUniformLike")
def run_random_uniform(program, node, args, attrs, env) -> list:
    shape, dtype = _shape(node, attrs, args), _dtype(node, attrs, args)
    low, high = float(attrs.get("low", 0.0)), float(attrs.get("high", 1.0))
    if not low <= high:
        raise _error(node, f"low={low} is above high={high}")
    out = (low + (high - low) * generator(program, node, attrs).random(shape)).astype(dtype)
    if high > low and dtype.kind == "f":  # rounding to the type may reach ``high``: keep [low, high)
        out[out >= high] = np.nextafter(dtype.type(high), dtype.type(low))
    return [out]


BERNOULLI_TYPES = FLOAT_TYPES + (TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
                                 TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64,
                                 TensorProto.BOOL)


@host("Bernoulli", since=15)
def run_bernoulli(program, node, args, attrs, env) -> list:
    p = np.asarray(args[0]).astype(np.float64)
    if np.any(~((p >= 0) & (p <= 1))):
        bad = p[~((p >= 0) & (p <= 1))].reshape(-1)[0]
        raise _error(node, f"probability {bad} is outside [0, 1]")
    dtype = _dtype(node, attrs, args, BERNOULLI_TYPES)
    return [(generator(program, node, attrs).random(p.shape) < p).astype(dtype)]


@host("Multinomial", since=7)
def run_multinomial(program, node, args, attrs, env) -> list:
    logits = np.asarray(args[0]).astype(np.float64)
    if logits.ndim != 2:
        raise _error(node, f"input must be [batch_size, class_size], got shape {logits.shape}")
    dtype = _numpy_type(node, int(attrs.get("dtype", TensorProto.INT32)), (TensorProto.INT32, TensorProto.INT64))
    samples = int(attrs.get("sample_size", 1))
    if samples < 1 or logits.shape[1] < 1:
        raise _error(node, f"sample_size={samples} and {logits.shape[1]} classes must both be positive")
    top = np.max(logits, axis=1, keepdims=True)
    if not np.all(np.isfinite(top)):
        raise _error(node, "every row needs a finite largest logit")
    cdf = np.cumsum(np.exp(logits - top), axis=1)
    u = generator(program, node, attrs).random((logits.shape[0], samples)) * cdf[:, -1:]
    index = np.stack([np.searchsorted(cdf[b], u[b], side="right") for b in range(logits.shape[0])])
    return [np.minimum(index, logits.shape[1] - 1).reshape(logits.shape[0], samples).astype(dtype)]
