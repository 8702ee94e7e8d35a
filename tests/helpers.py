"""One numeric-test helper, ``check_build``, and the guard canaries it uses.

Every buffer handed to a built kernel lives inside a larger allocation whose
guard regions (before and after) are filled with a sentinel: NaN for floats,
a magic value for integers, the byte ``0xA5`` for bools.  The kernel sees only
the inner, C-contiguous view.  After the call the guards must be
byte-for-byte untouched (no out-of-bounds write), the inputs must be
unchanged, and outputs -- which start out filled with the sentinel too, so an
element the kernel forgot to write shows up -- must match the numpy
reference.  A float input's NaN guards also catch out-of-bounds reads, since
NaN then propagates into the output.
"""

from __future__ import annotations

import numpy as np

import codegen
from te import expr as E
from te.tensor import PlaceholderOp, Tensor

GUARD_BYTES = 64  # keeps the inner view as aligned as the allocation itself

_INT_SENTINEL = {
    "int8": -91, "int16": -23131, "int32": -1515870811, "int64": -6510615555426900571,
    "uint8": 0xA5, "uint16": 0xA5A5, "uint32": 0xA5A5A5A5, "uint64": 0xA5A5A5A5A5A5A5A5,
}


class GuardedArray:
    """An array of ``shape``/``dtype`` inside a sentinel-filled allocation."""

    def __init__(self, shape, dtype, fill=None):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(d) for d in shape)
        n = int(np.prod(self.shape, dtype=np.int64))
        item = self.dtype.itemsize
        self.guard = max(1, GUARD_BYTES // item)
        total = n + 2 * self.guard
        if self.dtype == np.bool_:
            self.raw = np.full(total, 0xA5, dtype=np.uint8).view(np.bool_)
        elif self.dtype.kind == "f":
            self.raw = np.full(total, np.nan, dtype=self.dtype)
        else:
            self.raw = np.full(total, _INT_SENTINEL[self.dtype.name], dtype=self.dtype)
        self.inner = self.raw[self.guard:self.guard + n].reshape(self.shape)
        if fill is not None:
            self.inner[...] = fill
        self._guard_bytes = self._guards()
        assert self.inner.flags.c_contiguous

    def _guards(self) -> bytes:
        b = self.raw.view(np.uint8)
        g = self.guard * self.dtype.itemsize
        return bytes(b[:g]) + bytes(b[len(b) - g:])

    def guards_intact(self) -> bool:
        return self._guards() == self._guard_bytes

    def sentinel_mask(self) -> np.ndarray:
        """Where the inner view still holds the sentinel (never written)."""
        if self.dtype.kind == "f":
            return np.isnan(self.inner)
        if self.dtype == np.bool_:
            return self.inner.view(np.uint8) == 0xA5
        return self.inner == _INT_SENTINEL[self.dtype.name]


def random_array(shape, dtype, rng: np.random.Generator) -> np.ndarray:
    """Random values that suit ``dtype`` (floats in [-1, 1), small ints, bools)."""
    dtype = np.dtype(dtype)
    shape = tuple(int(d) for d in shape)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind == "f":
        return (rng.random(shape) * 2 - 1).astype(dtype)
    if dtype.kind == "u":
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.integers(-50, 50, size=shape).astype(dtype)


_BINOPS = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b,
    "FloorDiv": lambda a, b: a // b, "FloorMod": lambda a, b: a % b,
    "Min": min, "Max": max,
}


def eval_extent(e, var_values: dict) -> int:
    """Evaluate an integer shape expression (``n + 2``) with the given var values."""
    if isinstance(e, int):
        return e
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        if e in var_values:
            return int(var_values[e])
        if e.name in var_values:
            return int(var_values[e.name])
        raise KeyError(f"check_build: give a value for symbolic extent '{e.name}' in var_values")
    fn = _BINOPS.get(type(e).__name__)
    if fn is None:
        raise TypeError(f"check_build: cannot evaluate shape expression {e}")
    return fn(eval_extent(e.a, var_values), eval_extent(e.b, var_values))


def _resolve_shape(t: Tensor, var_values: dict) -> tuple:
    return tuple(eval_extent(d, var_values) for d in t.shape)


def _var_value(v: E.Var, var_values: dict) -> int:
    if v in var_values:
        return int(var_values[v])
    return int(var_values[v.name])


def check_build(s, args, ref_fn, inputs=None, rtol: float = 1e-5, atol: float = 1e-6,
                name: str = "f", var_values: dict | None = None, seed: int = 0,
                equal_nan: bool = False, module=None):
    """Build ``s`` over ``args``, run it on guarded buffers, compare with numpy.

    Parameters
    ----------
    s, args
        What ``codegen.build`` takes.  A ``te.var`` in ``args`` is passed as an
        int taken from ``var_values``.
    ref_fn
        ``ref_fn(*input_arrays)`` -> the expected output (or a tuple of them, in
        the order the outputs appear in ``args``).  Inputs are the placeholder
        tensors of ``args`` in order.
    inputs
        A list of arrays (one per placeholder in ``args``), or ``None`` for
        seeded random values.
    var_values
        Values of symbolic extents, keyed by ``te.var`` or by its name.

    Returns the output arrays (copies) in ``args`` order.
    """
    var_values = dict(var_values or {})
    rng = np.random.default_rng(seed)
    f = module if module is not None else codegen.build(s, args, target="llvm", name=name)
    tensors = [a for a in args if isinstance(a, Tensor)]
    in_tensors = [t for t in tensors if isinstance(t.op, PlaceholderOp)]
    out_tensors = [t for t in tensors if not isinstance(t.op, PlaceholderOp)]
    if inputs is None:
        inputs = [random_array(_resolve_shape(t, var_values), t.dtype, rng) for t in in_tensors]
    inputs = [np.asarray(x) for x in inputs]
    assert len(inputs) == len(in_tensors), "check_build: one input array per placeholder"
    # symbolic extents bound by the input shapes
    for t, x in zip(in_tensors, inputs):
        for d, n in zip(t.shape, x.shape):
            if isinstance(d, E.Var) and d not in var_values and d.name not in var_values:
                var_values[d] = n

    guarded: list[GuardedArray] = []
    call_args = []
    it = iter(inputs)
    for a in args:
        if isinstance(a, E.Var):
            call_args.append(_var_value(a, var_values))
            continue
        if isinstance(a.op, PlaceholderOp):
            x = next(it)
            g = GuardedArray(x.shape, a.dtype, fill=x)
        else:
            g = GuardedArray(_resolve_shape(a, var_values), a.dtype)
        guarded.append(g)
        call_args.append(g.inner)
    f(*call_args)

    names = [t.name for t in tensors]
    for nm, g in zip(names, guarded):
        assert g.guards_intact(), f"out-of-bounds write: a guard region around '{nm}' was overwritten"
    in_guarded = [g for t, g in zip(tensors, guarded) if isinstance(t.op, PlaceholderOp)]
    for t, x, g in zip(in_tensors, inputs, in_guarded):
        np.testing.assert_array_equal(g.inner, x, err_msg=f"input '{t.name}' was modified")

    expected = ref_fn(*inputs)
    if not isinstance(expected, (tuple, list)):
        expected = (expected,)
    assert len(expected) == len(out_tensors), "ref_fn must return one array per output"
    out_guarded = [g for t, g in zip(tensors, guarded) if not isinstance(t.op, PlaceholderOp)]
    results = []
    for t, g, want in zip(out_tensors, out_guarded, expected):
        want = np.asarray(want)
        got = g.inner
        if not equal_nan:
            unwritten = g.sentinel_mask() & ~_sentinel_like(want, g)
            assert not unwritten.any(), (
                f"output '{t.name}': {int(unwritten.sum())} elements never written, first at "
                f"{tuple(int(i) for i in np.argwhere(unwritten)[0])}"
            )
        if got.dtype.kind == "f":
            np.testing.assert_allclose(got, want.astype(got.dtype) if want.dtype != got.dtype else want,
                                       rtol=rtol, atol=atol, equal_nan=equal_nan,
                                       err_msg=f"output '{t.name}'")
        else:
            np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"output '{t.name}'")
        results.append(got.copy())
    return results


def _sentinel_like(want: np.ndarray, g: GuardedArray) -> np.ndarray:
    """Where the reference itself equals the sentinel (then 'unwritten' is ambiguous)."""
    if g.dtype.kind == "f":
        return np.isnan(want)
    if g.dtype == np.bool_:
        return np.zeros(want.shape, dtype=bool)
    return want.astype(g.dtype) == _INT_SENTINEL[g.dtype.name]
