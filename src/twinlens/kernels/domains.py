"""Where a kernel's arguments live, and how to draw inputs from there on purpose.

A :class:`Domain` says the range of one argument and the *special* values inside it where
bugs live (axis ratio exactly 1 and within 1e-8 of 1, zero, the smallest and largest scales).
Inputs are drawn so that special values, and ties between arguments (a point exactly on the
profile centre), occur in every draw rather than by luck.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Domain:
    """The range ``[lo, hi]`` of a real argument.

    Parameters
    ----------
    lo, hi
        Inclusive bounds.
    specials
        Values drawn on purpose, every time (degenerate and extreme cases).
    log
        Draw log-uniformly (for scales spanning decades; requires ``lo > 0``).
    """

    lo: float
    hi: float
    specials: tuple[float, ...] = ()
    log: bool = False

    def __post_init__(self) -> None:
        if not self.lo <= self.hi:
            raise ValueError(f"Domain needs lo <= hi, got [{self.lo}, {self.hi}]")
        if self.log and self.lo <= 0:
            raise ValueError("a log Domain needs lo > 0")
        for s in self.specials:
            if not self.lo <= s <= self.hi:
                raise ValueError(f"special value {s} lies outside [{self.lo}, {self.hi}]")

    def uniform(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` random values (log-uniform for a log domain), no specials."""
        if self.log:
            return np.exp(rng.uniform(np.log(self.lo), np.log(self.hi), n))
        return rng.uniform(self.lo, self.hi, n)

    def draw(self, rng: np.random.Generator, p_special: float = 0.3) -> float:
        """One value: a special one with probability ``p_special``, else a random one."""
        if self.specials and rng.random() < p_special:
            return float(self.specials[rng.integers(len(self.specials))])
        return float(self.uniform(rng, 1)[0])

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` values, every special among them (cyclically, up to an eighth of ``n``)."""
        draws = self.uniform(rng, n)
        k = min(n, max(len(self.specials), n // 8)) if self.specials else 0
        if k:
            draws[:k] = np.resize(np.asarray(self.specials, dtype=float), k)
        return draws


@dataclass(frozen=True)
class Arg:
    """A named kernel argument with its domain.

    ``size`` makes a parameter an array of that many values drawn from the domain (the sigmas
    of a multi-Gaussian expansion, say); per-point inputs ignore it.
    """

    name: str
    domain: Domain
    doc: str = field(default="", compare=False)
    size: int | None = None

    def draw(self, rng: np.random.Generator) -> float | np.ndarray:
        """A parameter value: a scalar, or an array of ``size`` values with every special."""
        if self.size is None:
            return self.domain.draw(rng)
        return rng.permutation(self.domain.sample(rng, self.size))
