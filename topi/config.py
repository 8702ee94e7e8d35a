"""Schedule configs: named knobs with good defaults, for hand schedules and a tuner.

An x86 schedule reads every choice it makes (tile sizes, block sizes, unroll
and vectorize decisions, layout block) from a ``Config``.  The default config
for a workload comes from a rule in the operator's module; a tuner (later)
searches ``Config.space`` and passes the best config back in.

>>> cfg = Config("conv2d_NCHWc", {"ic_bn": 16, "oc_bn": 16, "ow_bn": 8, "unroll_kw": True})
>>> cfg["oc_bn"]
16
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Config:
    """Knob name -> chosen value, plus (optionally) the candidates of each knob."""

    workload: str
    values: dict
    space: dict = field(default_factory=dict)  # knob -> list of legal values

    def __getitem__(self, knob: str):
        try:
            return self.values[knob]
        except KeyError:
            raise KeyError(
                f"config for {self.workload} has no knob {knob!r}; knobs: {sorted(self.values)}"
            ) from None

    def get(self, knob: str, default=None):
        return self.values.get(knob, default)

    def with_values(self, **changes) -> "Config":
        for k in changes:
            if k not in self.values:
                raise KeyError(f"config for {self.workload} has no knob {k!r}; knobs: {sorted(self.values)}")
        return Config(self.workload, {**self.values, **changes}, self.space)


def divisors(n: int, limit: int | None = None) -> list[int]:
    """Divisors of ``n`` (up to ``limit``), ascending: candidate block sizes."""
    out = [d for d in range(1, n + 1) if n % d == 0]
    return [d for d in out if limit is None or d <= limit]


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most``."""
    return max(d for d in divisors(n) if d <= at_most)
