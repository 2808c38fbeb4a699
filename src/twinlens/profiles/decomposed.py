"""Mass profiles evaluated through their decomposition into elliptical Gaussians.

Each profile is a radial convergence (or a 3D density, projected) on concentric ellipses of the
package's convention (radius ``sqrt(q x'^2 + y'^2 / q)``), decomposed into Gaussians by
:mod:`twinlens.kernels.gauss_decomposition` and evaluated as an :class:`~twinlens.mass.MGE`.
With concrete parameters the decomposition is computed once per distinct profile (it is
cached by value identity); with traced parameters (a free Sersic index, say) it is part of the
traced program.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from twinlens.fields import static_field
from twinlens.kernels import gauss_decomposition as gd
from twinlens.profiles.base import MassProfile, _numbers, all_concrete
from twinlens.profiles.checks import (
    check_ellipticity,
    check_finite,
    check_pair,
    check_positive,
    check_range,
)
from twinlens.profiles.gaussian import MGE


@functools.lru_cache(maxsize=512)
def _cached_mge(profile: _Decomposed) -> MGE:
    return profile._build_mge()


class _Decomposed(MassProfile):
    """Shared behaviour: decompose, then delegate every quantity to the equivalent MGE."""

    def _decompose(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _build_mge(self) -> MGE:
        kappas, sigmas = self._decompose()
        return MGE(sigmas, kappas, centre=self.centre, ell_comps=self.ell_comps)

    def mge(self) -> MGE:
        """The equivalent multi-Gaussian expansion (cached when every parameter is concrete)."""
        if all_concrete(*_numbers(self)):
            return _cached_mge(self)
        return self._build_mge()

    def _convergence(self, x, y, backend):
        return self.mge()._convergence(x, y, backend)

    def _deflections(self, x, y, backend):
        return self.mge()._deflections(x, y, backend)

    def _hessian(self, x, y, backend):
        return self.mge()._hessian(x, y, backend)

    def _potential(self, x, y, backend):
        return self.mge()._potential(x, y, backend)

    def _check_shape(self) -> None:
        check_pair(self, "centre", self.centre)  # type: ignore[attr-defined]
        check_ellipticity(self, "ell_comps", self.ell_comps)  # type: ignore[attr-defined]
        n = self.n_gaussians  # type: ignore[attr-defined]
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise ValueError(f"{type(self).__name__}.n_gaussians must be an int >= 2, got {n!r}")


@dataclass(frozen=True, eq=False)
class SersicMass(_Decomposed):
    """Elliptical Sersic mass: a mass-to-light ratio times a Sersic light profile.

    ``kappa(R) = mass_to_light_ratio * intensity * exp(-b_n ((R / effective_radius)^(1/n) - 1))``
    with ``R = sqrt(q x'^2 + y'^2 / q)`` and ``b_n`` such that ``effective_radius`` encloses half
    the mass.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    effective_radius : float
        Half-mass radius (intermediate axis), arcsec, > 0.
    sersic_index : float
        ``n``, >= 0.5 (accuracy documented for 0.5 and 0.85 to 10; see the decomposition docs).
    intensity : float
        Light at ``effective_radius``.
    mass_to_light_ratio : float
    n_gaussians : int
        Gaussians in the decomposition (static; default 48: deflections within 1e-6).
    """

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    effective_radius: float = 1.0
    sersic_index: float = 4.0
    intensity: float = 1.0
    mass_to_light_ratio: float = 1.0
    n_gaussians: int = static_field(default=gd.SERSIC_DEFAULTS["n_sigma"])

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_positive(self, "effective_radius", self.effective_radius)
        check_range(self, "sersic_index", self.sersic_index, 0.5)
        check_finite(self, "intensity", self.intensity)
        check_finite(self, "mass_to_light_ratio", self.mass_to_light_ratio)

    def _decompose(self):
        k_eff = self.mass_to_light_ratio * self.intensity
        return gd.decompose_sersic(
            k_eff, self.effective_radius, self.sersic_index, n_sigma=self.n_gaussians
        )


@dataclass(frozen=True, eq=False)
class _Halo(_Decomposed):
    """The fields and checks every decomposed halo shares (``n_gaussians`` is keyword-only,
    so each halo's own parameter follows ``r_s`` in positional order)."""

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    rho_s: float = 0.1
    r_s: float = 10.0
    n_gaussians: int = static_field(default=gd.NFW_DEFAULTS["n_sigma"], kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_shape()
        check_finite(self, "rho_s", self.rho_s)
        check_positive(self, "r_s", self.r_s)


@dataclass(frozen=True, eq=False)
class GNFW(_Halo):
    """Generalised NFW halo with a free inner slope, projected, elliptical in projection.

    3D density ``rho(r) = rho_s / ((r / r_s)^gamma (1 + r / r_s)^(3 - gamma))`` with ``rho_s``
    in units of the critical surface density per arcsec, so the projection is a convergence.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    rho_s : float
        Density normalisation, ``Sigma_crit`` / arcsec.
    r_s : float
        Scale radius, arcsec, > 0.
    gamma : float
        Inner slope, in [0, 3) (accuracy measured to 2.8); 1 is NFW.
    n_gaussians : int
        Gaussians in the decomposition (static; default 45: deflections within 1e-6).
    """

    gamma: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range(self, "gamma", self.gamma, 0.0, 3.0, high_open=True)

    def _decompose(self):
        return gd.decompose_gnfw(self.rho_s, self.r_s, self.gamma, n_sigma=self.n_gaussians)


@dataclass(frozen=True, eq=False)
class CoredNFW(_Halo):
    """Cored NFW halo, projected, elliptical in projection.

    3D density ``rho(r) = rho_s / ((r + r_c) / r_s * (1 + r / r_s)^2)`` (lenstronomy's CNFW form),
    ``rho_s`` in ``Sigma_crit`` / arcsec.

    Parameters
    ----------
    centre, ell_comps
        As for :class:`~twinlens.mass.Gaussian`.
    rho_s : float
        Density normalisation, ``Sigma_crit`` / arcsec.
    r_s : float
        Scale radius, arcsec, > 0.
    r_c : float
        Core radius, arcsec, > 0 (accuracy measured for 1e-3 to 10 ``r_s``).
    n_gaussians : int
        Gaussians in the decomposition (static; default 45).
    """

    r_c: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        check_positive(self, "r_c", self.r_c)

    def _decompose(self):
        return gd.decompose_cored_nfw(self.rho_s, self.r_s, self.r_c, n_sigma=self.n_gaussians)
