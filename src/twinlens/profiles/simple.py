"""Point mass, external shear and uniform convergence sheet (lenstronomy's ``POINT_MASS``,
``SHEAR`` / ``SHEAR_GAMMA_PSI`` and ``CONVERGENCE``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from twinlens.backend.concrete import is_concrete
from twinlens.kernels import point_mass, sheet
from twinlens.kernels import shear as shear_kernels
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import MassProfile
from twinlens.profiles.checks import check_finite, check_pair, check_positive, check_range


@dataclass(frozen=True, eq=False)
class PointMass(MassProfile):
    """A point mass: ``psi = theta_E^2 ln r``, ``alpha = theta_E^2 theta / r^2``.

    The convergence is a delta function at the centre (total mass ``pi theta_E^2`` in units of
    the critical density): :meth:`convergence` returns 0 everywhere. At the centre itself the
    deflection and hessian are 0 and the potential ``theta_E^2 ln(1e-25)`` (finite, documented
    limits; see :mod:`twinlens.kernels.point_mass`).

    Parameters
    ----------
    centre : (float, float)
        Position, arcsec.
    einstein_radius : float
        ``theta_E``, arcsec, > 0.
    """

    centre: tuple[float, float] = (0.0, 0.0)
    einstein_radius: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_pair(self, "centre", self.centre)
        check_positive(self, "einstein_radius", self.einstein_radius)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The point mass's kernel of ``quantity``."""
        return KernelCall(point_mass.KERNELS[quantity], (*self.centre, self.einstein_radius))


@dataclass(frozen=True, eq=False)
class ExternalShear(MassProfile):
    """External shear, lenstronomy's ``SHEAR`` convention.

    About ``origin`` (lenstronomy's ``(ra_0, dec_0)``)::

        psi = gamma_1 (dx^2 - dy^2) / 2 + gamma_2 dx dy,   dx = x - origin_x, dy = y - origin_y.

    Parameters
    ----------
    gamma_1, gamma_2 : float
        Shear components (dimensionless).
    origin : (float, float)
        Expansion point, arcsec, where the deflection vanishes (it changes the deflection by a
        constant and the potential by a linear term, never the hessian).
    """

    gamma_1: float = 0.0
    gamma_2: float = 0.0
    origin: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "gamma_1", self.gamma_1)
        check_finite(self, "gamma_2", self.gamma_2)
        check_pair(self, "origin", self.origin)

    @classmethod
    def from_magnitude_angle(
        cls, gamma: float, angle_deg: float, origin: tuple[float, float] = (0.0, 0.0)
    ) -> ExternalShear:
        """lenstronomy's ``SHEAR_GAMMA_PSI``: ``gamma_1 = gamma cos(2 psi)``, ``gamma_2 = gamma
        sin(2 psi)``, with ``psi = angle_deg`` in degrees counter-clockwise from +x (the
        direction along which images are stretched is ``psi + 90`` degrees for ``gamma > 0``).

        Parameters
        ----------
        gamma : float
            Shear magnitude, >= 0.
        angle_deg : float
            Shear angle ``psi``, degrees.
        origin : (float, float)
            As for the class.
        """
        check_range(cls, "gamma", gamma, 0.0)
        check_finite(cls, "angle_deg", angle_deg)
        g1, g2 = shear_kernels.components_from_magnitude_angle(gamma, angle_deg * (math.pi / 180))
        if is_concrete(g1) and is_concrete(g2):
            g1, g2 = float(g1), float(g2)
        return cls(gamma_1=g1, gamma_2=g2, origin=origin)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The external shear's kernel of ``quantity``."""
        params = (*self.origin, self.gamma_1, self.gamma_2)
        return KernelCall(shear_kernels.KERNELS[quantity], params)


@dataclass(frozen=True, eq=False)
class MassSheet(MassProfile):
    """Uniform convergence ``kappa`` (lenstronomy's ``CONVERGENCE``): ``psi = kappa r^2 / 2``
    about ``centre`` (lenstronomy's ``(ra_0, dec_0)``).

    Parameters
    ----------
    kappa : float
        Convergence (may be negative).
    centre : (float, float)
        Where the deflection vanishes, arcsec.
    """

    kappa: float = 0.0
    centre: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_finite(self, "kappa", self.kappa)
        check_pair(self, "centre", self.centre)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The mass sheet's kernel of ``quantity``."""
        return KernelCall(sheet.KERNELS[quantity], (*self.centre, self.kappa))
