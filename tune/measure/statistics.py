"""The one statistic a measurement is ranked by: the median of its repeats.

A repeat caught by a burst of other work reads slow; the median of three
moves with none of them alone, where the mean moves with each.  Rankings,
tuners, curves and the records' best all read ``MeasureResult.cost``, which
is :func:`robust_cost` of its repeats.
"""

from __future__ import annotations

import statistics


def robust_cost(costs) -> float:
    """Seconds per call of a measurement: the median of its repeats' costs."""
    return float(statistics.median(costs))


__all__ = ["robust_cost"]
