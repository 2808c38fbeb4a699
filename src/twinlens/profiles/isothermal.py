"""Isothermal mass profiles: SIS, SIE and the cored NIE."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twinlens.backend.concrete import is_batched
from twinlens.kernels import isothermal
from twinlens.kernels.registry import KernelCall
from twinlens.profiles.base import MassProfile, all_concrete, shape_parameters
from twinlens.profiles.checks import (
    check_ellipticity,
    check_non_negative,
    check_pair,
    check_positive,
)


class _Isothermal(MassProfile):
    """What SIS, SIE and NIE share: the choice of kernel form and the kernel calls.

    Forms: ``spherical`` (ellipticity exactly (0, 0)), ``elliptical`` (a concrete ellipticity;
    exact for every q in (0, 1]) and ``traced`` (JAX tracers; smooth through e = 0).
    """

    # Declared for the type checker only (the concrete dataclasses define the fields): at run
    # time an annotation on a class that is not a dataclass trips the ValueIdentity guard.
    if TYPE_CHECKING:
        centre: tuple
        einstein_radius: float

    def _ell(self) -> tuple:
        return (0.0, 0.0)

    def _core(self) -> Any:
        return 0.0

    def _form(self) -> str:
        e1, e2 = self._ell()
        if is_batched(e1, e2):  # per-member (q, phi), computed once per member
            return "elliptical"
        if not all_concrete(e1, e2):
            return "traced"
        return "spherical" if float(e1) == 0.0 and float(e2) == 0.0 else "elliptical"

    def kernel_call(self, quantity: str) -> KernelCall:
        """The isothermal kernel of ``quantity`` in the form the ellipticity allows (the
        convergence has one form for every ellipticity)."""
        form = "traced" if quantity == "convergence" else self._form()
        e1, e2 = self._ell()
        shape = shape_parameters(e1, e2, form)
        return KernelCall(
            isothermal.KERNELS[(quantity, form)],
            (*self.centre, *shape, self.einstein_radius, self._core()),
        )

    def _check_common(self) -> None:
        check_pair(self, "centre", self.centre)
        check_positive(self, "einstein_radius", self.einstein_radius)


@dataclass(frozen=True, eq=False)
class SIS(_Isothermal):
    """Singular isothermal sphere: ``kappa = theta_E / (2 r)``.

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    einstein_radius : float
        ``theta_E`` > 0, arcsec: the deflection's magnitude everywhere, and the radius inside
        which the mean convergence is 1.
    """

    centre: tuple = (0.0, 0.0)
    einstein_radius: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_common()


@dataclass(frozen=True, eq=False)
class SIE(_Isothermal):
    """Singular isothermal ellipsoid, exactly isothermal (no hidden core):
    ``kappa = theta_E / (2 sqrt(q x'^2 + y'^2 / q))`` with ``x'`` along the major axis
    (lenstronomy's SIE convention: ``theta_E`` is the intermediate-axis Einstein radius, and the
    mean convergence inside the ellipse ``q x'^2 + y'^2 / q = theta_E^2`` is 1).

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    ell_comps : (float, float)
        Ellipticity components ``(e1, e2)``, ``|e| < 1``; or use
        ``SIE.from_axis_ratio(q=..., angle=...)``.
    einstein_radius : float
        ``theta_E`` > 0, arcsec.
    """

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    einstein_radius: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_common()
        check_ellipticity(self, "ell_comps", self.ell_comps)

    def _ell(self) -> tuple:
        return self.ell_comps


@dataclass(frozen=True, eq=False)
class NIE(_Isothermal):
    """Non-singular (cored) isothermal ellipsoid:
    ``kappa = theta_E / (2 sqrt(q x'^2 + y'^2 / q + s^2))``, ``s`` the core radius.

    Parameters
    ----------
    centre : (float, float)
        ``(x, y)`` of the centre, arcsec.
    ell_comps : (float, float)
        Ellipticity components ``(e1, e2)``, ``|e| < 1``.
    einstein_radius : float
        ``theta_E`` > 0, arcsec (the SIE's at ``core_radius = 0``).
    core_radius : float
        ``s`` >= 0, arcsec; 0 gives the SIE exactly.
    """

    centre: tuple = (0.0, 0.0)
    ell_comps: tuple = (0.0, 0.0)
    einstein_radius: float = 1.0
    core_radius: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        self._check_common()
        check_ellipticity(self, "ell_comps", self.ell_comps)
        check_non_negative(self, "core_radius", self.core_radius)

    def _ell(self) -> tuple:
        return self.ell_comps

    def _core(self) -> Any:
        return self.core_radius
