"""The choices a sketch leaves open ("genes"), how to draw them at random and how to mutate them.

``TileGene``: an axis of extent ``n`` cut into ``parts`` loop lengths whose
product is ``n`` (every length a divisor: no partial tiles), outermost first;
drawn by dealing ``n``'s prime factors to the parts at random (Ansor's
"fill tile sizes"), mutated by moving one prime factor to another part.  A
``rounded`` one may also tile ``n`` as if rounded up to less than one more
innermost tile (56 columns as 10 tiles of 6: the splits leave a tail, which
lowering peels), so that a register tile need not divide the axis; its
mutations keep the innermost length and move factors between the outer ones.
``ChoiceGene``: one of a few options (unroll depth, parallel depth, compute
location, vector length), mutated by drawing another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


@dataclass(frozen=True)
class TileGene:
    key: str
    extent: int
    parts: int
    max_inner: int = 64  # the innermost length is at most this (a register tile, a vector)
    rounded: bool = False  # the product may exceed the extent by less than the innermost length

    def sample(self, rng) -> list[int]:
        for _ in range(16):
            lengths = [1] * self.parts
            for p in prime_factors(self.extent):
                lengths[int(rng.integers(self.parts))] *= p
            if lengths[-1] <= self.max_inner:
                return lengths
        return [self.extent] + [1] * (self.parts - 1)

    def mutate(self, value: list[int], rng) -> list[int]:
        value = list(value)
        if math.prod(value) != self.extent:  # rounded up: the innermost stays, the outer parts trade
            return self.with_inner(value[-1], rng) if self.parts > 2 else value
        donors = [k for k, v in enumerate(value) if v > 1]
        if not donors or self.parts < 2:
            return value
        src = donors[int(rng.integers(len(donors)))]
        dst = int(rng.integers(self.parts - 1))
        dst += dst >= src
        p = prime_factors(value[src])
        f = p[int(rng.integers(len(p)))]
        value[src] //= f
        value[dst] *= f
        return value if value[-1] <= self.max_inner else self.sample(rng)

    def with_inner(self, inner: int, rng) -> list[int]:
        """Lengths whose innermost is ``inner`` and the rest the extent's remainder rounded up
        (``rounded``) or divided (``inner`` a divisor), dealt at random."""
        outer = TileGene(self.key, -(-self.extent // inner), self.parts - 1, max_inner=self.extent)
        return outer.sample(rng) + [inner]

    def valid(self, value) -> bool:
        if not (isinstance(value, list) and len(value) == self.parts
                and all(isinstance(v, int) and v >= 1 for v in value)):
            return False
        total = math.prod(value)
        return total == self.extent or (self.rounded and self.extent < total < self.extent + value[-1])


@dataclass(frozen=True)
class ChoiceGene:
    key: str
    options: tuple
    weights: tuple | None = None  # drawing weights of the options (uniform when None)

    def sample(self, rng):
        if self.weights is None:
            return self.options[int(rng.integers(len(self.options)))]
        w = [float(x) for x in self.weights]
        return self.options[int(rng.choice(len(self.options), p=[x / sum(w) for x in w]))]

    def mutate(self, value, rng):
        others = [o for o in self.options if o != value]
        return others[int(rng.integers(len(others)))] if others else value

    def valid(self, value) -> bool:
        return value in self.options


__all__ = ["ChoiceGene", "TileGene", "prime_factors"]
