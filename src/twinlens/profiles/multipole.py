"""Circular and elliptical multipole mass perturbations (lenstronomy's ``MULTIPOLE`` and
``MULTIPOLE_ELL``); the math and conventions are in :mod:`twinlens.kernels.multipole`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from twinlens.backend.concrete import is_concrete
from twinlens.fields import static_field
from twinlens.kernels import multipole
from twinlens.kernels.multipole import ELLIPTICAL_ORDERS, is_near_round
from twinlens.kernels.registry import KernelCall
from twinlens.messages import shown
from twinlens.profiles.base import MassProfile
from twinlens.profiles.checks import check_axis_ratio, check_finite, check_pair, check_positive

_DEG = math.pi / 180.0
#: The highest order: far beyond any lens model, and ``m`` stays an exact float (a huge int
#: would overflow ``float(m)`` at evaluation).
MAX_ORDER = 100


def _check_order(owner: object, m: Any, allowed: tuple[int, ...] | None) -> None:
    name = type(owner).__name__
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= MAX_ORDER:
        raise ValueError(f"{name}.m must be an integer >= 1 and <= {MAX_ORDER}, got {shown(m)}")
    if allowed is not None and m not in allowed:
        raise ValueError(f"{name}.m must be one of {allowed}, got {shown(m)}")


@dataclass(frozen=True, eq=False)
class Multipole(MassProfile):
    """Circular multipole of order ``m`` (lenstronomy's ``MULTIPOLE``).

    In polar coordinates about the centre::

        kappa = amplitude cos(m (phi - angle)) / (2 r),

    with potential ``amplitude r cos(m (phi - angle)) / (1 - m^2)`` for ``m >= 2`` and
    ``(amplitude / 2) r ln(r / einstein_radius) cos(phi - angle)`` for ``m = 1``.

    lenstronomy kwargs ``{m, a_m, phi_m, center_x, center_y, r_E}`` map to ``m=m,
    amplitude=a_m, angle=degrees(phi_m), centre=(center_x, center_y), einstein_radius=r_E``.

    Parameters
    ----------
    m : int
        Order, 1 to 100; static (each order compiles its own program).
    amplitude : float
        ``a_m``, arcsec (the convergence is ``a_m / (2 r)`` times the angular factor).
    angle : float
        ``phi_m``, degrees counter-clockwise from +x.
    centre : (float, float)
        Arcsec.
    einstein_radius : float
        ``r_E``, arcsec, > 0: the radius where the ``m = 1`` potential's logarithm vanishes
        (unused for ``m >= 2``).
    """

    m: int = static_field(default=4)
    amplitude: float = 0.0
    angle: float = 0.0
    centre: tuple[float, float] = (0.0, 0.0)
    einstein_radius: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_order(self, self.m, None)
        check_finite(self, "amplitude", self.amplitude)
        check_finite(self, "angle", self.angle)
        check_pair(self, "centre", self.centre)
        check_positive(self, "einstein_radius", self.einstein_radius)

    def kernel_call(self, quantity: str) -> KernelCall:
        """The circular multipole's kernel of ``quantity`` (``m = 1`` has its own deflection,
        hessian and potential, with a logarithm)."""
        phi_m = self.angle * _DEG
        if self.m == 1 and quantity != "convergence":
            params: tuple = (*self.centre, self.amplitude, phi_m, self.einstein_radius)
            return KernelCall(multipole.KERNELS_M1[quantity], params)
        params = (*self.centre, float(self.m), self.amplitude, phi_m)
        return KernelCall(multipole.KERNELS[quantity], params)


@dataclass(frozen=True, eq=False)
class EllipticalMultipole(MassProfile):
    """Elliptical multipole of order ``m`` in {1, 3, 4} (lenstronomy's ``MULTIPOLE_ELL``).

    After Paugnat & Gilman (2025)::

        kappa = amplitude cos(m (varphi - angle)) / (2 R),

    in the frame of the reference ellipse (major axis at ``reference_angle``), with
    ``R = sqrt(q x'^2 + y'^2 / q)`` and eccentric anomaly ``varphi = arctan2(y', q x')``. At
    ``axis_ratio = 1`` it equals :class:`Multipole` with angle ``reference_angle + angle``.

    Gauge: the potential's part proportional to ``r`` has no first angular harmonic (see
    :mod:`twinlens.kernels.multipole`); lenstronomy's deflection is ours plus a uniform vector,
    :func:`twinlens.kernels.multipole.lenstronomy_gauge`.

    lenstronomy kwargs (1.12 to 1.14, reference ellipse along +x) ``{m, a_m, phi_m, q,
    center_x, center_y, r_E}`` map to ``m=m, amplitude=a_m, angle=degrees(phi_m),
    axis_ratio=q, reference_angle=0, centre=(center_x, center_y), einstein_radius=r_E``; later
    versions' ``{varphi_m, phi_ref}`` map to ``angle=degrees(varphi_m)``,
    ``reference_angle=degrees(phi_ref)``.

    Parameters
    ----------
    m : int
        Order, 1, 3 or 4; static.
    amplitude : float
        ``a_m``, arcsec.
    angle : float
        ``phi_m``, degrees, measured in the reference frame as an eccentric anomaly.
    axis_ratio : float
        ``q`` of the reference ellipse, in [1e-6, 1].
    centre : (float, float)
        Arcsec.
    einstein_radius : float
        ``r_E``, arcsec, > 0 (the radius where the odd orders' logarithm vanishes).
    reference_angle : float
        Position angle of the reference ellipse's major axis, degrees counter-clockwise from +x.
    """

    m: int = static_field(default=4)
    amplitude: float = 0.0
    angle: float = 0.0
    axis_ratio: float = 1.0
    centre: tuple[float, float] = (0.0, 0.0)
    einstein_radius: float = 1.0
    reference_angle: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_order(self, self.m, ELLIPTICAL_ORDERS)
        check_finite(self, "amplitude", self.amplitude)
        check_finite(self, "angle", self.angle)
        check_axis_ratio(self, self.axis_ratio, "axis_ratio")
        check_pair(self, "centre", self.centre)
        check_positive(self, "einstein_radius", self.einstein_radius)
        check_finite(self, "reference_angle", self.reference_angle)

    def _form(self) -> str:
        if not is_concrete(self.axis_ratio):
            return ""
        return "_near_round" if is_near_round(float(self.axis_ratio)) else "_closed"

    def kernel_call(self, quantity: str) -> KernelCall:
        """The elliptical multipole's kernel of ``quantity``; the deflection and potential in
        the form ``axis_ratio`` selects (either form, per point, when it is traced)."""
        name = quantity + (self._form() if quantity in ("deflections", "potential") else "")
        params = (
            *self.centre,
            self.reference_angle * _DEG,
            self.axis_ratio,
            self.amplitude,
            self.angle * _DEG,
            self.einstein_radius,
        )
        return KernelCall(multipole.ELLIPTICAL[self.m][name], params)
