"""Common-subexpression elimination over graph nodes (constants included)."""

from __future__ import annotations

import numpy as np

from graph.ir import Graph, copy_node, rebuild

# Arrays up to this many bytes are keyed by their full contents; bigger ones by
# dtype, shape and a strided sample of SAMPLE elements, and compared in full
# only when two keys collide (so each weight is read once at most per duplicate).
SMALL_BYTES = 4096
SAMPLE = 64


def merge_common_subexpressions(graph: Graph) -> Graph:
    """Merge nodes with the same op, the same inputs (by identity) and equal attrs.

    Attributes compare by value; numpy arrays (a constant's ``value``) by
    dtype, shape and bitwise content, so identical constant arrays become one
    node.  Linear in the node count: nodes are bucketed by a hashable key and
    only colliding big arrays are compared element by element.  TVM's
    ``relay.transform.EliminateCommonSubexpr``; Theano's ``MergeOptimizer``.

    Examples
    --------
    Before::

        graph main(%x: float32[4]) {
          %c = constant float32[4]
          %c_1 = constant float32[4]          # same contents as %c
          %a: float32[4] = add(%x, %c)
          %b: float32[4] = add(%x, %c_1)
          %m: float32[4] = multiply(%a, %b)
          return %m
        }

    After::

        graph main(%x: float32[4]) {
          %c = constant float32[4]
          %a: float32[4] = add(%x, %c)
          %m: float32[4] = multiply(%a, %a)
          return %m
        }
    """
    table: dict = {}

    def rewrite(node, ins):
        key = (node.op, tuple(id(v) for v in ins), attr_key(node.attrs))
        bucket = table.setdefault(key, [])
        for other in bucket:
            if attrs_equal(node.attrs, other.attrs):
                return other.outputs
        changed = any(a is not b for a, b in zip(ins, node.inputs))
        kept = copy_node(node, ins) if changed else node
        bucket.append(kept)
        return kept.outputs if changed else None

    return rebuild(graph, rewrite)


def attr_key(value) -> object:
    """A hashable key such that equal attributes have equal keys."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, _fingerprint(value))
    if isinstance(value, dict):
        return ("dict",) + tuple(sorted((k, attr_key(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq",) + tuple(attr_key(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return value


def attrs_equal(a, b) -> bool:
    """Exact equality of two attribute values (arrays bitwise)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and arrays_equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(attrs_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return (
            isinstance(b, (list, tuple)) and len(a) == len(b) and all(attrs_equal(x, y) for x, y in zip(a, b))
        )
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bits (so -0.0 differs from 0.0 and equal NaNs match)."""
    if a is b:
        return True
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.nbytes <= SMALL_BYTES:
        return a.tobytes() == b.tobytes()
    if a.flags.c_contiguous and b.flags.c_contiguous and a.dtype.itemsize in (1, 2, 4, 8):
        bits = np.dtype(f"u{a.dtype.itemsize}")
        return bool(np.array_equal(a.view(bits), b.view(bits)))
    return bool(np.array_equal(a, b))


def _fingerprint(a: np.ndarray) -> bytes:
    if a.nbytes <= SMALL_BYTES:
        return a.tobytes()
    idx = np.linspace(0, a.size - 1, SAMPLE).astype(np.int64)
    if a.flags.c_contiguous:
        return a.reshape(-1)[idx].tobytes()
    return a[np.unravel_index(idx, a.shape)].tobytes()
