"""``tvm.testing.check_numerical_grads``: analytic gradients against central differences."""

from __future__ import annotations

import numpy as np


def check_numerical_grads(function, input_values, grad_values, function_value=None, delta: float = 1e-3,
                          atol: float = 1e-2, rtol: float = 0.1) -> None:
    """Compare ``grad_values`` with the gradient of the scalar ``function`` at ``input_values`` taken
    by central differences of step ``delta``: per input, the L2 distance must be at most
    ``atol + rtol * |numerical gradient|``.  Inputs and gradients are lists (``function(*inputs)``)
    or dicts keyed by argument name (``function(**inputs)``); a gradient of None is skipped."""
    if isinstance(input_values, dict):
        names = list(input_values)
        values = [np.asarray(input_values[n]) for n in names]
        grads = [grad_values.get(n) for n in names] if isinstance(grad_values, dict) else list(grad_values)

        def call(vals):
            return function(**dict(zip(names, vals)))
    else:
        names = [f"input {k}" for k in range(len(input_values))]
        values = [np.asarray(v) for v in input_values]
        grads = list(grad_values)

        def call(vals):
            return function(*vals)

    for k, grad in enumerate(grads):
        if grad is None:
            continue
        grad = np.asarray(grad)
        x = values[k].astype(np.float64 if values[k].dtype == np.float64 else values[k].dtype, copy=True)
        if grad.shape != x.shape:
            raise AssertionError(f"check_numerical_grads: the gradient of {names[k]} has shape {grad.shape}, "
                                 f"the input {x.shape}")
        numeric = np.zeros(x.shape, np.float64)
        vals = list(values)
        for j in np.ndindex(*x.shape):
            orig = x[j]
            x[j] = orig + delta
            vals[k] = x
            up = float(np.asarray(call(vals)).sum())
            x[j] = orig - delta
            down = float(np.asarray(call(vals)).sum())
            x[j] = orig
            numeric[j] = (up - down) / (2 * delta)
        dist = float(np.sqrt(np.sum((numeric - grad) ** 2)))
        norm = float(np.sqrt(np.sum(numeric ** 2)))
        if not (np.isfinite(dist) and np.isfinite(norm)) or dist > atol + rtol * norm:
            worst = np.unravel_index(int(np.argmax(np.abs(numeric - grad))), x.shape) if x.shape else ()
            raise AssertionError(
                f"check_numerical_grads: the gradient of {names[k]} is off by {dist:.3g} (L2), allowed "
                f"{atol + rtol * norm:.3g}; worst at {worst}: analytic {grad[worst]!r}, numerical {numeric[worst]!r}")


__all__ = ["check_numerical_grads"]
