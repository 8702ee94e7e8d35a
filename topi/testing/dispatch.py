"""Each target's schedule or implementation of an operator, as classic topi tests pick them.

``get_injective_schedule(target)`` and the others look the target's keys up in a table
(``"cpu"``: the x86 schedules; anything else: the generic ones), as classic TVM's
``topi.testing.dispatch`` did.
"""

from __future__ import annotations

import numpy as np

from codegen.target import Target
from topi import generic, nn, x86

_INJECTIVE = {"generic": generic.schedule_injective, "cpu": x86.schedule_injective}
_REDUCE = {"generic": generic.schedule_reduce, "cpu": x86.schedule_reduce}
_CONV2D_NCHW = {
    "generic": (nn.conv2d_nchw, generic.schedule_conv2d_nchw),
    "cpu": (x86.conv2d_nchw_x86, x86.schedule_conv2d_nchw),
}


def dispatch(target, table: dict):
    """The entry of ``table`` for the first of ``target``'s keys it holds, else ``"generic"``'s."""
    target = Target(target) if isinstance(target, str) else target
    for key in target.keys:
        if key in table:
            return table[key]
    return table["generic"]


def get_injective_schedule(target):
    return dispatch(target, _INJECTIVE)


def get_reduce_schedule(target):
    return dispatch(target, _REDUCE)


get_broadcast_schedule = get_elemwise_schedule = get_injective_schedule


def get_conv2d_nchw_implement(target) -> tuple:
    """``(compute, schedule)`` of an NCHW convolution for ``target``."""
    return dispatch(target, _CONV2D_NCHW)


def compare_numpy_tvm(inputs, output, target, device, compute, schedule) -> None:  # noqa: ARG001
    """Build ``schedule([compute(*placeholders)])`` for ``target``, run it on ``inputs`` and
    check the result against ``output``."""
    import codegen
    import te

    placeholders = [te.placeholder(x.shape, str(x.dtype)) for x in inputs]
    target = Target(target) if isinstance(target, str) else target
    with target:
        out = compute(*placeholders)
        s = schedule([out])
        func = codegen.build(s, placeholders + [out], target=target)
    result = np.zeros(output.shape, output.dtype)  # the CPU's memory: ``device`` is the host
    func(*inputs, result)
    np.testing.assert_allclose(result, output, atol=1e-4, rtol=1e-4)


__all__ = ["compare_numpy_tvm", "dispatch", "get_broadcast_schedule", "get_conv2d_nchw_implement",
           "get_elemwise_schedule", "get_injective_schedule", "get_reduce_schedule"]
