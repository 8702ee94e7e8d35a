"""Block sizes and register budgets that topi's rules read from a target.

The configs themselves (``ConfigEntity``, the rules' registry, choosing) live in
``tune.autotvm.config``; these are the arithmetic every rule shares: divisors
for block candidates, the accumulators a register tile may hold, the lanes of
one vector; and :func:`records_target`, which marks a schedule with the target
its choices read.
"""

from __future__ import annotations

import functools
import math

from tune.autotvm.config import current_target


def divisors(n: int, limit: int | None = None) -> list[int]:
    """Divisors of ``n`` (up to ``limit``), ascending, in O(sqrt n): candidate block sizes."""
    n = int(n)
    if n < 1:
        return []
    small, large = [], []
    for d in range(1, math.isqrt(n) + 1):
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    out = small + large[::-1]
    return out if limit is None else [d for d in out if d <= limit]


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (1 at least)."""
    n = int(n)
    if at_most >= n:
        return n
    return max(d for d in divisors_upto(n, at_most))


def dividing_split(extent: int, block: int):
    """A classic split knob's entity ``[extent // b, b]`` for ``b`` the largest divisor of ``extent``
    not above ``block`` (a classic split factors its extent; a rule's block may leave a tail)."""
    from tune.autotvm.knobs import SplitEntity

    b = largest_divisor(extent, max(1, block))
    return SplitEntity([extent // b, b])


def divisors_upto(n: int, at_most: int) -> list[int]:
    """Divisors of ``n`` not above ``at_most``, in O(min(at_most, sqrt n)) when ``at_most`` is small."""
    if at_most * at_most <= n:
        return [d for d in range(1, max(at_most, 0) + 1) if n % d == 0]
    return divisors(n, at_most)


def max_accumulators(target=None) -> int:
    """Vector accumulators a register tile may hold on ``target``: 16 of AVX-512's 32 zmm
    (LLVM spills past ~20), 8 of AVX2's 16 ymm (the unrolled conv tile also keeps kernel
    vectors and broadcasts live; with the kernel columns rolled a 16x6 tile fits, see
    ``topi.x86.conv2d_rule.wide_tile_columns``)."""
    return 16 if (target or current_target()).vector_registers >= 32 else 8


# A GEMM-like register tile (``bn`` output lanes by ``mr`` rows, streaming the reduction) keeps
# only its ``bn / lanes`` kernel vectors and one broadcast live beside the accumulators, so on
# 16 registers it holds 12 of them: two vectors by 6 rows, 4 reduction steps unrolled
# (``dense_pack`` and the Winograd products, 0.75-0.94x the time of 4 x 2 with ``ku`` 1).
YMM_GEMM_TILE = (2, 6, 4)  # (vectors of bn, mr, ku)


def gemm_tile(target=None) -> tuple:
    """``(vectors of bn, mr, ku)`` of a GEMM-like register tile on ``target``: four vectors by
    the rows :func:`max_accumulators` allows, rolled, with 32 registers; ``YMM_GEMM_TILE``
    with 16."""
    target = target or current_target()
    return (4, max_accumulators(target) // 4, 1) if target.vector_registers >= 32 else YMM_GEMM_TILE


def vector_lanes(dtype: str = "float32", target=None) -> int:
    """Lanes of one vector register of ``target`` (default: the current one)."""
    return (target or current_target()).lanes(dtype)


def records_target(schedule_fn):
    """Decorate a schedule function whose choices read the current target: the schedule it
    returns records that target (``Schedule.target``), so that ``codegen.build`` for another
    target warns, naming both, instead of running code tuned for the wrong vector width."""

    @functools.wraps(schedule_fn)
    def wrapper(*args, **kwargs):
        s = schedule_fn(*args, **kwargs)
        if hasattr(s, "stages") and getattr(s, "target", None) is None:
            s.target = str(kwargs.get("target") or current_target())
        return s

    return wrapper
