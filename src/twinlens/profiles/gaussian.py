"""Elliptical Gaussian and multi-Gaussian mass profiles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from twinlens.fields import canonical
from twinlens.kernels import gaussian, mge
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import MassProfile, ellipse_form, shape_parameters
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

    Subclasses set ``_kernels`` (their kernel module's table) and ``_amplitudes()`` (their
    ``(sigma, kappa0)`` or ``(sigmas, kappas)``).
    """

    #: the kernel module's table, ``KERNELS[(quantity, form)]``
    _kernels: ClassVar[dict] = {}

    # Declared for the type checker only (the concrete dataclasses define the fields): at run
    # time an annotation on a class that is not a dataclass trips the ValueIdentity guard.
    if TYPE_CHECKING:
        centre: tuple[float, float]
        ell_comps: tuple[float, float]

    def _amplitudes(self) -> tuple:
        raise NotImplementedError

    def _form(self) -> str:
        return ellipse_form(*self.ell_comps)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The kernel of ``quantity`` in the exact form the ellipticity selects: one form for
        the convergence and potential; the round hessian is the near-round form's."""
        if quantity in ("convergence", "potential"):
            form = "traced"
        elif quantity == "hessian" and self._form() == "spherical":
            form = "near_round"  # exact at e = 0 too
        else:
            form = self._form()
        e1, e2 = self.ell_comps
        shape = shape_parameters(e1, e2, form)
        return KernelCall(
            self._kernels[(quantity, form)],
            (*self.centre, *shape, *self._amplitudes()),
        )


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

    _kernels: ClassVar[dict] = gaussian.KERNELS
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

    _kernels: ClassVar[dict] = mge.KERNELS
    linear_parameter: ClassVar[str | None] = "mass_to_light_ratio"

    @property
    def kappas(self) -> Any:
        """Peak convergence of each component."""
        return self.mass_to_light_ratio * self.intensities

    def _amplitudes(self) -> tuple:
        return self.sigmas, self.kappas
