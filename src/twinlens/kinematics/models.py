"""Parameter classes of the kinematics: mass, light, anisotropy, aperture, seeing.

Frozen value-identity dataclasses (:class:`~twinlens.fields.ValueIdentity`): numeric fields
are JAX leaves (a search may vary them), and a bad concrete value raises ValueError naming the
parameter and its allowed range. Radii are arcsec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twinlens.backend.concrete import is_concrete
from twinlens.fields import ValueIdentity


def check_range(owner: Any, name: str, value: Any, lo: float, hi: float, closed: str = "") -> None:
    """Raise ValueError unless a concrete ``value`` lies in ``(lo, hi)`` (``closed`` holds
    ``"lo"`` and/or ``"hi"`` for a bound that is allowed)."""
    if not is_concrete(value):
        return
    v = float(value)
    ok = math.isfinite(v) and (v >= lo if "lo" in closed else v > lo)
    ok = ok and (v <= hi if "hi" in closed else v < hi)
    if not ok:
        left = "[" if "lo" in closed else "("
        right = "]" if "hi" in closed else ")"
        raise ValueError(
            f"{type(owner).__name__}.{name} must lie in {left}{lo}, {hi}{right}, got {value!r}"
        )


# --- mass ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PowerLawMass(ValueIdentity):
    """Spherical power law, 3D density ``~ r^-gamma`` with ``1 < gamma < 3`` (2: the SIS),
    whose mean convergence inside ``theta_e`` (arcsec, > 0) is 1."""

    theta_e: Any = 1.0
    gamma: Any = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "theta_e", self.theta_e, 0.0, math.inf)
        check_range(self, "gamma", self.gamma, 1.0, 3.0)

    def slope(self) -> Any:
        """The 3D slope ``gamma`` the radial kernels take."""
        return self.gamma


@dataclass(frozen=True, eq=False)
class PointMass(ValueIdentity):
    """A point mass of Einstein radius ``theta_e`` (arcsec, > 0): ``gamma = 3`` in the
    kernels, with ``G M = mass_unit theta_e^2``."""

    theta_e: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "theta_e", self.theta_e, 0.0, math.inf)

    def slope(self) -> float:
        """``3.0``: ``G M(r) ~ r^0``."""
        return 3.0


# --- light ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Hernquist(ValueIdentity):
    """Hernquist light, ``nu ~ 1 / (r (r + a)^3)``, scale radius ``a`` (arcsec, > 0; the
    half-light radius is ``1.8153 a``)."""

    a: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "a", self.a, 0.0, math.inf)

    def shape(self) -> tuple[Any, float, float, Any]:
        """``(a, p, q, norm)`` of ``nu = norm (r / a)^-p (1 + r / a)^-q`` (unit luminosity)."""
        return self.a, 1.0, 3.0, 1.0 / (2.0 * math.pi * self.a**3)


@dataclass(frozen=True, eq=False)
class PowerLawTracer(ValueIdentity):
    """A power-law tracer ``nu ~ r^-slope``, ``1 < slope < 4`` (infinite light; a reference
    case: with the SIS and ``slope = 2`` the dispersion is the same everywhere)."""

    slope: Any = 2.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "slope", self.slope, 1.0, 4.0)

    def shape(self) -> tuple[float, Any, float, float]:
        """``(a, p, q, norm)`` with ``a = 1`` arcsec and ``q = 0``."""
        return 1.0, self.slope, 0.0, 1.0


# --- anisotropy -----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Isotropic(ValueIdentity):
    """Isotropic orbits, ``beta = 0``."""


@dataclass(frozen=True, eq=False)
class ConstantBeta(ValueIdentity):
    """Constant anisotropy ``beta = 1 - sigma_t^2 / sigma_r^2``, ``-10 <= beta < 1``."""

    beta: Any = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "beta", self.beta, -10.0, 1.0, closed="lo")


@dataclass(frozen=True, eq=False)
class OsipkovMerritt(ValueIdentity):
    """Osipkov-Merritt anisotropy ``beta = r^2 / (r^2 + r_ani^2)``, ``r_ani`` arcsec, > 0."""

    r_ani: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "r_ani", self.r_ani, 0.0, math.inf)


# --- aperture and seeing --------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CircularAperture(ValueIdentity):
    """A circular aperture of ``radius`` arcsec (> 0) on the lens centre."""

    radius: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "radius", self.radius, 0.0, math.inf)


@dataclass(frozen=True, eq=False)
class Slit(ValueIdentity):
    """A rectangular slit on the lens centre, ``length`` by ``width`` arcsec (both > 0); its
    orientation does not matter for spherical models."""

    length: Any = 1.0
    width: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "length", self.length, 0.0, math.inf)
        check_range(self, "width", self.width, 0.0, math.inf)


@dataclass(frozen=True, eq=False)
class GaussianSeeing(ValueIdentity):
    """Gaussian seeing of full width at half maximum ``fwhm`` arcsec (> 0)."""

    fwhm: Any = 0.7

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "fwhm", self.fwhm, 0.0, math.inf)


@dataclass(frozen=True, eq=False)
class MoffatSeeing(ValueIdentity):
    """Moffat seeing, ``P(r) ~ (1 + r^2 / alpha^2)^-beta``, of full width at half maximum
    ``fwhm`` arcsec (> 0) and ``beta > 1`` (``alpha = fwhm / (2 sqrt(2^(1/beta) - 1))``; large
    ``beta`` tends to Gaussian seeing of the same FWHM)."""

    fwhm: Any = 0.7
    beta: Any = 2.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "fwhm", self.fwhm, 0.0, math.inf)
        check_range(self, "beta", self.beta, 1.0, math.inf)
