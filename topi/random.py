"""``topi.random`` (classic name): what a counter-based generator needs of the target.

Classic TVM's Threefry generator (``threefry_generate``/``split``, ``uniform``, ``normal``,
``multinomial``) takes its keys from ``relay.random``, which Tessera does not have, so only
its probe lives here: :func:`threefry_test_wrapping` builds and runs a kernel on the target to
check that unsigned 64-bit additions wrap on overflow, as Threefry's rounds require.
"""

from __future__ import annotations

import numpy as np

import te

__all__ = ["threefry_test_wrapping"]


def threefry_test_wrapping(target, device) -> bool:  # noqa: ARG001 (the host's memory is the device's)
    """True when ``(2**64 - 1) + 1`` computes 0 in uint64 on ``target``.

    The operand is read from a buffer, so the addition runs in the built kernel (it is not
    folded at compile time)."""
    import codegen  # building needs LLVM; the operators of topi do not

    x = te.placeholder((1,), "uint64", name="x")
    y = te.compute((1,), lambda i: x[i] + te.const(1, "uint64"), name="wrapped")
    func = codegen.build(te.create_schedule(y.op), [x, y], target=target, name="threefry_test_wrapping")
    out = np.ones(1, "uint64")
    func(np.array([np.iinfo(np.uint64).max], "uint64"), out)
    return bool(out[0] == 0)
