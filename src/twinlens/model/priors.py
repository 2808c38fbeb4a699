"""Priors on free parameters: densities and the unit-cube transform of nested sampling.

Every prior maps ``u`` in (0, 1) to a parameter value by its inverse cumulative distribution
(:meth:`Prior.from_unit`), on numpy or JAX, and gives its log density (:meth:`Prior.log_density`,
``-inf`` outside its support). The priors are value-identity objects, so a model holding them
hashes by value like everything else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from twinlens.fields import ValueIdentity
from twinlens.messages import shown

__all__ = [
    "GaussianPrior",
    "LogUniformPrior",
    "Prior",
    "SampledPrior",
    "TruncatedGaussianPrior",
    "UniformPrior",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _special(xp: Any) -> Any:
    if xp is np:
        return special
    import jax.scipy.special as jsp  # only reached with xp = jax.numpy, so jax is loaded

    return jsp


def _finite(owner: str, **values: float) -> None:
    for name, v in values.items():
        if not (isinstance(v, (int, float)) and math.isfinite(v)):
            raise ValueError(f"{owner}.{name} must be a finite number, got {shown(v)}")


class Prior(ValueIdentity):
    """Base class: ``from_unit(u, xp)`` (inverse CDF), ``log_density(x)`` and ``support``."""

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """The inverse CDF at ``u`` in ``[0, 1]``, computed with ``xp`` (numpy or
        ``jax.numpy``)."""
        raise NotImplementedError

    def to_unit(self, x: Any) -> np.ndarray:
        """The CDF at ``x`` (numpy): ``from_unit``'s inverse, so a chosen start can be
        placed in the coordinates that the searches move in."""
        raise NotImplementedError

    def log_density(self, x: Any) -> np.ndarray:
        """The normalised log density at ``x`` (``-inf`` outside the support)."""
        raise NotImplementedError

    @property
    def support(self) -> tuple[float, float]:
        """``(lower, upper)``: the values of nonzero density (infinite when unbounded)."""
        raise NotImplementedError

    @property
    def median(self) -> float:
        """The prior's median."""
        return float(self.from_unit(np.array(0.5)))

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the support (bounds included)."""
        lo, hi = self.support
        return lo <= value <= hi


@dataclass(frozen=True, eq=False)
class UniformPrior(Prior):
    """Uniform on ``[lower, upper]``."""

    lower: float = 0.0
    upper: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite("UniformPrior", lower=self.lower, upper=self.upper)
        if not self.lower < self.upper:
            raise ValueError(f"UniformPrior needs lower < upper, got [{self.lower}, {self.upper}]")

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """``lower + (upper - lower) u``."""
        return self.lower + (self.upper - self.lower) * u

    def to_unit(self, x: Any) -> np.ndarray:
        """``(x - lower) / (upper - lower)``, clipped to ``[0, 1]``."""
        return np.clip((np.asarray(x, dtype=float) - self.lower) / (self.upper - self.lower), 0, 1)

    def log_density(self, x: Any) -> np.ndarray:
        """``-log(upper - lower)`` inside ``[lower, upper]``, ``-inf`` outside."""
        x = np.asarray(x, dtype=float)
        inside = (x >= self.lower) & (x <= self.upper)
        return np.where(inside, -math.log(self.upper - self.lower), -np.inf)

    @property
    def support(self) -> tuple[float, float]:
        """``(lower, upper)``."""
        return (self.lower, self.upper)


@dataclass(frozen=True, eq=False)
class LogUniformPrior(Prior):
    """Uniform in ``log x`` on ``[lower, upper]``, ``0 < lower < upper``."""

    lower: float = 1e-3
    upper: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite("LogUniformPrior", lower=self.lower, upper=self.upper)
        if not 0.0 < self.lower < self.upper:
            raise ValueError(
                f"LogUniformPrior needs 0 < lower < upper, got [{self.lower}, {self.upper}]"
            )

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """``lower (upper / lower)^u``."""
        return self.lower * xp.exp(u * math.log(self.upper / self.lower))

    def to_unit(self, x: Any) -> np.ndarray:
        """``log(x / lower) / log(upper / lower)``, clipped to ``[0, 1]``."""
        x = np.maximum(np.asarray(x, dtype=float), self.lower)
        return np.clip(np.log(x / self.lower) / math.log(self.upper / self.lower), 0, 1)

    def log_density(self, x: Any) -> np.ndarray:
        """``-log(x log(upper / lower))`` inside ``[lower, upper]``, ``-inf`` outside."""
        x = np.asarray(x, dtype=float)
        inside = (x >= self.lower) & (x <= self.upper)
        with np.errstate(divide="ignore", invalid="ignore"):
            value = -np.log(x) - math.log(math.log(self.upper / self.lower))
        return np.where(inside, value, -np.inf)

    @property
    def support(self) -> tuple[float, float]:
        """``(lower, upper)``."""
        return (self.lower, self.upper)


@dataclass(frozen=True, eq=False)
class GaussianPrior(Prior):
    """Normal with ``mean`` and standard deviation ``sigma > 0``."""

    mean: float = 0.0
    sigma: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite("GaussianPrior", mean=self.mean, sigma=self.sigma)
        if not self.sigma > 0:
            raise ValueError(f"GaussianPrior.sigma must be > 0, got {self.sigma}")

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """``mean + sigma ndtri(u)``."""
        return self.mean + self.sigma * _special(xp).ndtri(u)

    def to_unit(self, x: Any) -> np.ndarray:
        """``ndtr((x - mean) / sigma)``."""
        return special.ndtr((np.asarray(x, dtype=float) - self.mean) / self.sigma)

    def log_density(self, x: Any) -> np.ndarray:
        """The normal log density at ``x``."""
        z = (np.asarray(x, dtype=float) - self.mean) / self.sigma
        return -0.5 * z * z - math.log(self.sigma) - _LOG_SQRT_2PI

    @property
    def support(self) -> tuple[float, float]:
        """``(-inf, inf)``."""
        return (-math.inf, math.inf)


@dataclass(frozen=True, eq=False)
class TruncatedGaussianPrior(Prior):
    """Normal with ``mean`` and ``sigma``, restricted to ``[lower, upper]`` (either may be
    infinite)."""

    mean: float = 0.0
    sigma: float = 1.0
    lower: float = -math.inf
    upper: float = math.inf

    def __post_init__(self) -> None:
        super().__post_init__()
        _finite("TruncatedGaussianPrior", mean=self.mean, sigma=self.sigma)
        if not self.sigma > 0:
            raise ValueError(f"TruncatedGaussianPrior.sigma must be > 0, got {self.sigma}")
        if not self.lower < self.upper:
            raise ValueError(
                f"TruncatedGaussianPrior needs lower < upper, got [{self.lower}, {self.upper}]"
            )
        if special.ndtr(self._z(self.upper)) - special.ndtr(self._z(self.lower)) <= 0.0:
            raise ValueError(
                f"TruncatedGaussianPrior: [{self.lower}, {self.upper}] holds no probability of a "
                f"normal with mean {self.mean} and sigma {self.sigma} at double precision"
            )

    def _z(self, x: float) -> float:
        return (x - self.mean) / self.sigma

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """The truncated normal's inverse CDF (mirrored for an upper tail, to keep digits)."""
        sp = _special(xp)
        a, b = self._z(self.lower), self._z(self.upper)
        if a > 0:  # the upper tail: work with the mirrored bounds, where ndtr keeps its digits
            lo, hi = special.ndtr(-b), special.ndtr(-a)
            return self.mean - self.sigma * sp.ndtri(hi - u * (hi - lo))
        lo, hi = special.ndtr(a), special.ndtr(b)
        return self.mean + self.sigma * sp.ndtri(lo + u * (hi - lo))

    def to_unit(self, x: Any) -> np.ndarray:
        """The truncated normal's CDF, clipped to ``[0, 1]`` (mirrored as ``from_unit``)."""
        z = (np.asarray(x, dtype=float) - self.mean) / self.sigma
        a, b = self._z(self.lower), self._z(self.upper)
        if a > 0:
            lo, hi = special.ndtr(-b), special.ndtr(-a)
            return np.clip((hi - special.ndtr(-z)) / (hi - lo), 0, 1)
        lo, hi = special.ndtr(a), special.ndtr(b)
        return np.clip((special.ndtr(z) - lo) / (hi - lo), 0, 1)

    def log_density(self, x: Any) -> np.ndarray:
        """The normal log density renormalised to ``[lower, upper]``, ``-inf`` outside."""
        x = np.asarray(x, dtype=float)
        z = (x - self.mean) / self.sigma
        a, b = self._z(self.lower), self._z(self.upper)
        mass = special.ndtr(-a) - special.ndtr(-b) if a > 0 else special.ndtr(b) - special.ndtr(a)
        value = -0.5 * z * z - math.log(self.sigma) - _LOG_SQRT_2PI - math.log(mass)
        return np.where((x >= self.lower) & (x <= self.upper), value, -np.inf)

    @property
    def support(self) -> tuple[float, float]:
        """``(lower, upper)``."""
        return (self.lower, self.upper)


@dataclass(frozen=True, eq=False)
class SampledPrior(Prior):
    """A prior given by samples of it (an external convergence from ray tracing through a
    simulation, a posterior of an earlier analysis), as a histogram of equal-count bins.

    ``edges`` are the samples' quantiles at ``k / K``, ``k = 0..K``: the density is
    ``1 / (K width)`` in each bin, so the CDF is piecewise linear through ``(edges[k], k / K)``
    and :meth:`from_unit` interpolates its inverse (exact, on numpy and JAX). Build one with
    :meth:`from_samples`.
    """

    edges: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        e = np.asarray(self.edges, dtype=float)
        if e.ndim != 1 or e.size < 3 or not np.all(np.isfinite(e)) or np.any(np.diff(e) <= 0):
            raise ValueError(
                "SampledPrior.edges must be at least 3 finite, increasing numbers (build it "
                "with SampledPrior.from_samples)"
            )

    @classmethod
    def from_samples(cls, samples: Any, n_bins: int | None = None) -> SampledPrior:
        """From ``samples`` (at least 20 finite numbers, not all equal); ``n_bins`` default
        ``n / 20`` within ``[5, 100]``."""
        s = np.asarray(samples, dtype=float).reshape(-1)
        if s.size < 20 or not np.all(np.isfinite(s)):
            raise ValueError(
                f"SampledPrior needs at least 20 finite samples, got {s.size} "
                f"({int(np.sum(~np.isfinite(s)))} not finite)"
            )
        k = int(np.clip(s.size // 20, 5, 100)) if n_bins is None else int(n_bins)
        edges = np.quantile(s, np.linspace(0.0, 1.0, k + 1))
        if np.any(np.diff(edges) <= 0):
            raise ValueError(
                "SampledPrior: the samples repeat values, so some equal-count bins have no "
                "width; give fewer bins (n_bins) or continuous samples"
            )
        return cls(tuple(float(v) for v in edges))

    def __repr__(self) -> str:
        e = self.edges
        return (
            f"SampledPrior({len(e) - 1} bins on [{e[0]:.6g}, {e[-1]:.6g}], median "
            f"{self.median:.6g}, edges digest {self.digest()})"
        )

    def digest(self) -> str:
        """A short digest of the edges (so that reprs of different priors differ)."""
        import hashlib

        return hashlib.sha256(np.asarray(self.edges).tobytes()).hexdigest()[:12]

    def _levels(self) -> np.ndarray:
        return np.linspace(0.0, 1.0, len(self.edges))

    def from_unit(self, u: Any, xp: Any = np) -> Any:
        """The piecewise-linear inverse CDF."""
        return xp.interp(u, xp.asarray(self._levels()), xp.asarray(self.edges))

    def to_unit(self, x: Any) -> np.ndarray:
        """The piecewise-linear CDF (0 below the first edge, 1 above the last)."""
        return np.interp(np.asarray(x, dtype=float), self.edges, self._levels())

    def log_density(self, x: Any) -> np.ndarray:
        """``log(1 / (K width))`` of the bin holding ``x``; ``-inf`` outside the edges."""
        x = np.asarray(x, dtype=float)
        e = np.asarray(self.edges)
        k = len(e) - 1
        i = np.clip(np.searchsorted(e, x, side="right") - 1, 0, k - 1)
        inside = (x >= e[0]) & (x <= e[-1])
        return np.where(inside, -np.log(k * (e[i + 1] - e[i])), -np.inf)

    @property
    def support(self) -> tuple[float, float]:
        """The first and last edges (the samples' range)."""
        return (float(self.edges[0]), float(self.edges[-1]))
