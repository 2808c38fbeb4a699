"""Elliptical Gaussian and multi-Gaussian mass profiles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from twinlens.fields import canonical
from twinlens.kernels.registry import get
from twinlens.profiles.base import MassProfile, axis_ratio_angle, ellipse_form
from twinlens.profiles.checks import (
    check_ellipticity,
    check_finite,
    check_pair,
    check_positive,
    real_array,
)

#: Dispersions of an :class:`MGE`, arcsec (its ``sigmas``).
MGE_SIGMA_RANGE = (1e-40, 1e40)


class _GaussianFamily(MassProfile):
    """What Gaussian and MGE share: the choice of exact form and the kernel calls.

    Subclasses set ``_family`` (the kernel module) and ``_amplitudes()`` (their
    ``(sigma, kappa0)`` or ``(sigmas, kappas)``).
    """

    _family = ""

    def _amplitudes(self) -> tuple:
        raise NotImplementedError

    def _form(self) -> str:
        return ellipse_form(*self.ell_comps)  # type: ignore[attr-defined]

    def _args(self, form: str) -> tuple:
        # the kernel parameters for one form: centre, shape, then the amplitudes
        ell = self.ell_comps  # type: ignore[attr-defined]
        shape = (
            () if form == "spherical" else axis_ratio_angle(*ell) if form == "elliptical" else ell
        )
        return (*self.centre, *shape, *self._amplitudes())  # type: ignore[attr-defined]

    def _call(self, quantity: str, form: str, x: Any, y: Any, backend: str) -> Any:
        suffix = "" if form == "traced" else f"_{form}"
        return get(f"{self._family}.{quantity}{suffix}")(x, y, *self._args(form), backend=backend)

    def _convergence(self, x, y, backend):
        return self._call("convergence", "traced", x, y, backend)

    def _deflections(self, x, y, backend):
        return self._call("deflections", self._form(), x, y, backend)

    def _hessian(self, x, y, backend):
        # the near-round form (exact at e = 0 too) serves round profiles
        form = {"spherical": "near_round"}.get(self._form(), self._form())
        return self._call("hessian", form, x, y, backend)

    def _potential(self, x, y, backend):
        return self._call("potential", "traced", x, y, backend)


@dataclass(frozen=True, eq=False)
class Gaussian(_GaussianFamily):
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

    _family = "gaussian"
    linear_parameter: ClassVar[str | None] = "mass_to_light_ratio"

    @property
    def kappa0(self) -> Any:
        """Peak convergence."""
        return self.mass_to_light_ratio * self.intensity

    def _amplitudes(self) -> tuple:
        return self.sigma, self.kappa0


@dataclass(frozen=True, eq=False)
class MGE(_GaussianFamily):
    """A multi-Gaussian expansion: concentric elliptical Gaussians sharing centre and
    ellipticity, linear in one mass-to-light ratio (the lens light as mass).

    ``kappa = mass_to_light_ratio * sum_k intensities[k] * exp(-(q x'^2 + y'^2/q)
    / (2 sigmas[k]^2))``. The sum runs inside one kernel, in one pass over the points.

    Parameters
    ----------
    sigmas : array, shape (K,)
        Dispersions along the intermediate axis, arcsec, > 0 (``(n_batch, K)``: one row per
        member of a numba or numpy batch).
    intensities : array, shape (K,)
        Peak intensities of the components (shaped like ``sigmas``).
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
        for name in ("sigmas", "intensities"):  # lists and tuples become float arrays
            value = getattr(self, name)
            if isinstance(value, tuple):
                object.__setattr__(self, name, canonical(real_array(self, name, value)))
        check_pair(self, "centre", self.centre)
        check_ellipticity(self, "ell_comps", self.ell_comps)
        # wider than other lengths: a decomposed profile's Gaussians reach 1e4 times beyond
        # its scale radius, itself in POSITIVE_RANGE
        check_positive(self, "sigmas", self.sigmas, *MGE_SIGMA_RANGE)
        check_finite(self, "intensities", self.intensities)
        check_finite(self, "mass_to_light_ratio", self.mass_to_light_ratio)
        # (K,), or (n_batch, K) with one row per member of a numba/numpy batch (the Gaussians
        # of a decomposed profile whose shape parameter is a Batched column)
        n_s, n_i = np.shape(self.sigmas), np.shape(self.intensities)
        if len(n_s) not in (1, 2) or n_s != n_i or n_s[-1] == 0:
            raise ValueError(
                f"MGE.sigmas and MGE.intensities must have one shape, (K,) or (n_batch, K) with "
                f"K > 0, got shapes {n_s} and {n_i}"
            )

    _family = "mge"
    linear_parameter: ClassVar[str | None] = "mass_to_light_ratio"

    @property
    def kappas(self) -> Any:
        """Peak convergence of each component."""
        return self.mass_to_light_ratio * self.intensities

    def _amplitudes(self) -> tuple:
        return self.sigmas, self.kappas
