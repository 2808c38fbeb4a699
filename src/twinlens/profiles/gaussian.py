"""Elliptical Gaussian and multi-Gaussian mass profiles."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity, ellipticity_from_axis_ratio
from twinlens.kernels.gaussian import E_SWITCH
from twinlens.kernels.registry import get
from twinlens.profiles.base import MassProfile, ellipse_form
from twinlens.profiles.checks import (
    check_axis_ratio,
    check_ellipticity,
    check_finite,
    check_pair,
    check_positive,
)


def _q_phi(ell_comps: tuple) -> tuple[float, float]:
    q, phi = axis_ratio_from_ellipticity(float(ell_comps[0]), float(ell_comps[1]))
    return float(q), float(phi)


def _ell_comps(q: float, angle: float, owner: str) -> tuple[float, float]:
    check_axis_ratio(owner, q)
    e1, e2 = ellipticity_from_axis_ratio(q, math.radians(angle))
    return float(e1), float(e2)


@dataclass(frozen=True, eq=False)
class Gaussian(MassProfile):
    """Elliptical Gaussian convergence.

    ``kappa = mass_to_light_ratio * intensity * exp(-(q x'^2 + y'^2 / q) / (2 sigma^2))`` in the
    frame of the major axis, so the total mass is ``2 pi sigma^2 * mass_to_light_ratio *
    intensity`` whatever the axis ratio ``q`` (lenstronomy's GAUSSIAN_ELLIPSE_KAPPA convention).

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    ell_comps : (float, float)
        Ellipticity components ``(e1, e2)``, ``|e| < 1`` (see :mod:`twinlens.kernels.ellipticity`).
    sigma : float
        Dispersion along the intermediate axis, arcsec, > 0.
    intensity : float
        Peak value of the light profile this mass follows.
    mass_to_light_ratio : float
        Converts ``intensity`` into peak convergence.
    """

    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    sigma: float = 1.0
    intensity: float = 1.0
    mass_to_light_ratio: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)
        check_positive(self, "sigma", self.sigma)
        check_finite(self, "intensity", self.intensity)
        check_finite(self, "mass_to_light_ratio", self.mass_to_light_ratio)

    @classmethod
    def from_axis_ratio(cls, q: float = 1.0, angle: float = 0.0, **kwargs: Any) -> Gaussian:
        """Build from axis ratio ``q`` in (0, 1] and major-axis angle in degrees (CCW from +x)."""
        return cls(ell_comps=_ell_comps(q, angle, cls.__name__), **kwargs)

    @property
    def kappa0(self) -> Any:
        """Peak convergence."""
        return self.mass_to_light_ratio * self.intensity

    def _form(self) -> str:
        return ellipse_form(*self.ell_comps, E_SWITCH)

    def _args(self, form: str) -> tuple:
        # the kernel parameters for one form: centre, shape, then (sigma, kappa0)
        if form == "spherical":
            shape: tuple = ()
        elif form == "elliptical":
            shape = _q_phi(self.ell_comps)
        else:
            shape = self.ell_comps
        return (*self.centre, *shape, self.sigma, self.kappa0)

    def _run(self, quantity: str, x: Any, y: Any, backend: str) -> Any:
        form = self._form()
        name = f"gaussian.{quantity}" if form == "traced" else f"gaussian.{quantity}_{form}"
        return get(name)(x, y, *self._args(form), backend=backend)

    def _convergence(self, x, y, backend):
        return get("gaussian.convergence")(x, y, *self._args("traced"), backend=backend)

    def _deflections(self, x, y, backend):
        return self._run("deflections", x, y, backend)

    def _hessian(self, x, y, backend):
        form = self._form()
        if form == "near_round":  # one kernel serves near-round and traced ellipticities
            form = "traced"
        name = "gaussian.hessian" if form == "traced" else f"gaussian.hessian_{form}"
        return get(name)(x, y, *self._args(form), backend=backend)

    def _potential(self, x, y, backend):
        return get("gaussian.potential")(x, y, *self._args("traced"), backend=backend)


@dataclass(frozen=True, eq=False)
class MGE(MassProfile):
    """A multi-Gaussian expansion: concentric elliptical Gaussians sharing centre and
    ellipticity, linear in one mass-to-light ratio (the lens light as mass).

    ``kappa = mass_to_light_ratio * sum_k intensities[k] * exp(-(q x'^2 + y'^2/q)
    / (2 sigmas[k]^2))``. The sum runs inside one kernel, in one pass over the points.

    Parameters
    ----------
    sigmas : array, shape (K,)
        Dispersions along the intermediate axis, arcsec, > 0.
    intensities : array, shape (K,)
        Peak intensities of the components.
    centre, ell_comps
        As for :class:`Gaussian`.
    mass_to_light_ratio : float
        The one ratio shared by every component (free in lens-light-as-mass models).
    """

    sigmas: Any
    intensities: Any
    centre: tuple[float, float] = (0.0, 0.0)
    ell_comps: tuple[float, float] = (0.0, 0.0)
    mass_to_light_ratio: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)
        check_positive(self, "sigmas", self.sigmas)
        check_finite(self, "intensities", self.intensities)
        check_finite(self, "mass_to_light_ratio", self.mass_to_light_ratio)
        n_s, n_i = np.shape(self.sigmas), np.shape(self.intensities)
        if len(n_s) != 1 or n_s != n_i or n_s[0] == 0:
            raise ValueError(
                f"MGE.sigmas and MGE.intensities must be 1-D of one non-zero length, got shapes "
                f"{n_s} and {n_i}"
            )

    @classmethod
    def from_axis_ratio(cls, sigmas: Any, intensities: Any, q: float = 1.0, angle: float = 0.0,
                        **kwargs: Any) -> MGE:  # fmt: skip
        """Build from axis ratio ``q`` in (0, 1] and major-axis angle in degrees (CCW from +x)."""
        return cls(sigmas, intensities, ell_comps=_ell_comps(q, angle, cls.__name__), **kwargs)

    @property
    def kappas(self) -> Any:
        """Peak convergence of each component."""
        return self.mass_to_light_ratio * self.intensities

    def _form(self) -> str:
        return ellipse_form(*self.ell_comps, E_SWITCH)

    def _args(self, form: str) -> tuple:
        if form == "spherical":
            shape: tuple = ()
        elif form == "elliptical":
            shape = _q_phi(self.ell_comps)
        else:
            shape = self.ell_comps
        return (*self.centre, *shape, self.sigmas, self.kappas)

    def _convergence(self, x, y, backend):
        return get("mge.convergence")(x, y, *self._args("traced"), backend=backend)

    def _deflections(self, x, y, backend):
        form = self._form()
        name = "mge.deflections" if form == "traced" else f"mge.deflections_{form}"
        return get(name)(x, y, *self._args(form), backend=backend)

    def _hessian(self, x, y, backend):
        form = "elliptical" if self._form() == "elliptical" else "traced"
        name = "mge.hessian_elliptical" if form == "elliptical" else "mge.hessian"
        return get(name)(x, y, *self._args(form), backend=backend)

    def _potential(self, x, y, backend):
        return get("mge.potential")(x, y, *self._args("traced"), backend=backend)
