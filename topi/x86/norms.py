"""x86 schedule of batch normalisation: the output as an injective kernel (fused, vectorized,
parallel: :mod:`topi.x86.injective`); the training statistics are reduction stages at root,
each channel's row reduced in order."""

from __future__ import annotations

from topi.generic.nn import _as_list
from topi.x86.injective import schedule_injective


def schedule_batch_norm(outs):
    """Schedule ``topi.nn.batch_norm``'s ``[out, moving_mean, moving_var]``.

    Returns
    -------
    schedule.Schedule
    """
    return schedule_injective(_as_list(outs))


__all__ = ["schedule_batch_norm"]
