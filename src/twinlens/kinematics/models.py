"""Parameter classes of the kinematics: mass, light, anisotropy, aperture, seeing.

Frozen value-identity dataclasses (:class:`~twinlens.fields.ValueIdentity`): numeric fields
are JAX leaves (a search may vary them), and a bad concrete value raises ValueError naming the
parameter and its allowed range. Radii are arcsec.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens.backend import array_module
from twinlens.backend.concrete import is_concrete
from twinlens.fields import ValueIdentity
from twinlens.kernels import gauss_decomposition as gd
from twinlens.kinematics import general, jeans
from twinlens.profiles import checks


def check_range(owner: Any, name: str, value: Any, lo: float, hi: float, closed: str = "") -> None:
    """Raise ValueError unless a concrete ``value`` lies in ``(lo, hi)`` (``closed`` holds
    ``"lo"`` and/or ``"hi"`` for a bound that is allowed); a traced or batched value records
    its condition instead (:func:`~twinlens.profiles.checks.collect_validity`), so that a
    search's likelihood gives ``-inf`` there."""
    checks.check_range(
        owner, name, value, lo, hi, low_open="lo" not in closed, high_open="hi" not in closed
    )


def check_positive_array(owner: Any, name: str, value: Any, positive: bool = True) -> None:
    """Raise ValueError unless a concrete ``value`` is a non-empty 1D array of finite numbers
    (all > 0 when ``positive``)."""
    items = value if isinstance(value, tuple) else (value,)  # lists are stored as tuples
    if not all(is_concrete(v) for v in items):
        return
    arr = np.asarray(value, dtype=float)
    ok = arr.ndim == 1 and arr.size > 0 and bool(np.all(np.isfinite(arr)))
    if not ok or (positive and not bool(np.all(arr > 0.0))):
        need = "> 0" if positive else "finite"
        raise ValueError(
            f"{type(owner).__name__}.{name} must be a non-empty 1D array of values {need}, "
            f"got {value!r}"
        )


def _same_length(owner: Any, first: str, second: str) -> None:
    a, b = getattr(owner, first), getattr(owner, second)
    if np.shape(a) != np.shape(b):
        raise ValueError(
            f"{type(owner).__name__}.{first} and .{second} must have one shape, got "
            f"{np.shape(a)} and {np.shape(b)}"
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

    def growth(self) -> Any:
        """``d ln M / d ln r`` at large ``r``: ``3 - gamma``."""
        return 3.0 - self.gamma

    def enclosed(self, r: Any, backend: str) -> Any:
        """``G M(r) / mass_unit = f(gamma) theta_e^(gamma - 1) r^(3 - gamma)``."""
        xp = array_module(backend)
        f = jeans.sphere_to_cylinder(self.gamma, xp)
        return f * self.theta_e ** (self.gamma - 1.0) * r ** (3.0 - self.gamma)


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

    def growth(self) -> float:
        """``0``: the mass is bounded."""
        return 0.0

    def enclosed(self, r: Any, backend: str) -> Any:
        """``G M / mass_unit = theta_e^2`` at every ``r``."""
        return self.theta_e**2 + 0.0 * r


@dataclass(frozen=True, eq=False)
class NFWMass(ValueIdentity):
    """Spherical NFW halo, the convention of :class:`twinlens.profiles.NFW`: 3D density
    ``(kappa_s / r_s) / (x (1 + x)^2)`` in units of ``Sigma_crit`` per arcsec, ``x = r / r_s``,
    so that ``kappa_s = rho_s r_s / Sigma_crit`` (> 0) and ``scale_radius = r_s`` (arcsec, > 0)."""

    kappa_s: Any = 0.1
    scale_radius: Any = 10.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "kappa_s", self.kappa_s, 0.0, math.inf)
        check_range(self, "scale_radius", self.scale_radius, 0.0, math.inf)

    def growth(self) -> float:
        """``0``: ``M ~ ln r`` at large ``r``."""
        return 0.0

    def enclosed(self, r: Any, backend: str) -> Any:
        """``G M(r) / mass_unit = 4 kappa_s r_s^2 (ln(1 + x) - x / (1 + x))``."""
        return general.nfw_enclosed(r, self.kappa_s, self.scale_radius)


@dataclass(frozen=True, eq=False)
class GaussianMass(ValueIdentity):
    """A sum of concentric spherical 3D Gaussians, given by their projections: peak
    convergences ``amplitudes`` (any sign, finite) and widths ``sigmas`` (arcsec, > 0), as
    :mod:`twinlens.kernels.gauss_decomposition` returns them (``decompose_gnfw``,
    ``decompose_3d``; a 2D decomposition is deprojected Gaussian by Gaussian)."""

    amplitudes: Any = (1.0,)
    sigmas: Any = (1.0,)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_array(self, "amplitudes", self.amplitudes, positive=False)
        check_positive_array(self, "sigmas", self.sigmas)
        _same_length(self, "amplitudes", "sigmas")

    def growth(self) -> float:
        """``0``: the mass is bounded."""
        return 0.0

    def enclosed(self, r: Any, backend: str) -> Any:
        """``G M(r) / mass_unit = sum_j 2 A_j s_j^2 (erf(t_j) - 2 t_j exp(-t_j^2) / sqrt(pi))``,
        ``t_j = r / (sqrt(2) s_j)``."""
        xp = array_module(backend)
        amps, sigmas = xp.asarray(self.amplitudes), xp.asarray(self.sigmas)
        flat = general.GAUSSIAN_MASS(r.reshape(-1), amps, sigmas, backend=backend)
        return flat.reshape(r.shape)


@dataclass(frozen=True, eq=False)
class MassSum(ValueIdentity):
    """The sum of spherical masses (``masses``: a non-empty tuple of PowerLawMass, PointMass,
    NFWMass and GaussianMass), e.g. stars and a dark halo."""

    masses: tuple = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        kinds = (PowerLawMass, PointMass, NFWMass, GaussianMass)
        if not self.masses or not all(isinstance(m, kinds) for m in self.masses):
            raise ValueError(
                "MassSum.masses must be a non-empty tuple of PowerLawMass, PointMass, NFWMass "
                f"or GaussianMass, got {self.masses!r}"
            )

    def growth(self) -> Any:
        """The largest of the components' growths."""
        out = self.masses[0].growth()
        for m in self.masses[1:]:
            g = m.growth()
            # a traced slope means JAX is loaded
            both = is_concrete(out) and is_concrete(g)
            out = max(out, g) if both else sys.modules["jax.numpy"].maximum(out, g)
        return out

    def enclosed(self, r: Any, backend: str) -> Any:
        """The sum of the components' ``G M(r) / mass_unit``."""
        out = self.masses[0].enclosed(r, backend)
        for m in self.masses[1:]:
            out = out + m.enclosed(r, backend)
        return out


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


@dataclass(frozen=True, eq=False)
class GaussianLight(ValueIdentity):
    """A multi-Gaussian expansion of the light: concentric round Gaussians of total
    luminosities ``amplitudes`` (> 0) and widths ``sigmas`` (arcsec, > 0), in projection
    ``I(R) = sum_j L_j exp(-R^2 / 2 s_j^2) / (2 pi s_j^2)``, which deprojects to the 3D
    Gaussians of the same widths."""

    amplitudes: Any = (1.0,)
    sigmas: Any = (1.0,)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive_array(self, "amplitudes", self.amplitudes)
        check_positive_array(self, "sigmas", self.sigmas)
        _same_length(self, "amplitudes", "sigmas")

    def gaussians(self, xp: Any) -> tuple[Any, Any]:
        """``(luminosities, sigmas)`` as ``xp`` arrays."""
        return xp.asarray(self.amplitudes, dtype=float), xp.asarray(self.sigmas, dtype=float)


#: The same class under the name the literature uses.
MGELight = GaussianLight


@dataclass(frozen=True, eq=False)
class SersicLight(ValueIdentity):
    """Round Sersic light of unit luminosity, ``effective_radius`` (arcsec, > 0) and
    ``sersic_index`` (0.5 to 10), through its Gaussian decomposition
    (:func:`twinlens.kernels.gauss_decomposition.decompose_sersic`, 48 Gaussians; the
    luminosities are scaled to sum to 1)."""

    effective_radius: Any = 1.0
    sersic_index: Any = 4.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "effective_radius", self.effective_radius, 0.0, math.inf)
        check_range(self, "sersic_index", self.sersic_index, 0.5, 10.0, closed="lohi")

    def gaussians(self, xp: Any) -> tuple[Any, Any]:
        """``(luminosities, sigmas)`` of the decomposition, as ``xp`` arrays."""
        amps, sigmas = gd.decompose_sersic(1.0, self.effective_radius, self.sersic_index)
        amps, sigmas = xp.asarray(amps), xp.asarray(sigmas)
        lums = 2.0 * math.pi * amps * sigmas * sigmas
        return lums / xp.sum(lums), sigmas


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
class Annulus(ValueIdentity):
    """A ring on the lens centre between radii ``r_in`` and ``r_out`` arcsec
    (``0 < r_in < r_out``): a radial bin of an integral-field spectrum (lenstronomy's
    "shell")."""

    r_in: Any = 0.5
    r_out: Any = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "r_in", self.r_in, 0.0, math.inf)
        check_range(self, "r_out", self.r_out, 0.0, math.inf)
        if is_concrete(self.r_in) and is_concrete(self.r_out) and not self.r_in < self.r_out:
            raise ValueError(
                f"Annulus.r_in must be below r_out, got r_in = {self.r_in!r}, "
                f"r_out = {self.r_out!r}"
            )


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
