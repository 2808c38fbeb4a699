"""COOLEST's conventions for our parameters, vectorised over numpy arrays (posterior
samples): angles from +y in degrees, axis ratios, shear, and Sersic profiles with Capaccioli's
``b_n`` (see the :mod:`twinlens.export` docstring)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from twinlens.kernels.ellipticity import axis_ratio_from_ellipticity, ellipticity_from_axis_ratio
from twinlens.kernels.light import sersic_b, sersic_b_capaccioli, sersic_with_other_b
from twinlens.posterior_stats import fold_angle


def _phi_from_theta(theta_rad: Any) -> Any:
    """COOLEST's angle (degrees from +y, in ``(-90, 90]``) of a direction ``theta_rad``
    (radians from +x)."""
    return fold_angle(np.degrees(theta_rad) + 90.0)


def _theta_from_phi(phi_deg: float) -> float:
    return math.radians(phi_deg - 90.0)


def _q(e1: Any, e2: Any) -> Any:
    return axis_ratio_from_ellipticity(e1, e2)[0]


def _phi(e1: Any, e2: Any) -> Any:
    return _phi_from_theta(axis_ratio_from_ellipticity(e1, e2)[1])


def _gamma_ext(g1: Any, g2: Any) -> Any:
    return np.hypot(g1, g2)


def _phi_ext(g1: Any, g2: Any) -> Any:
    return _phi_from_theta(0.5 * np.arctan2(g2, g1))


def _theta_eff(radius: Any, n: Any) -> Any:
    # COOLEST's Sersic uses Capaccioli's b_n (as coolest.api.profiles.light)
    return sersic_with_other_b(radius, 1.0, n, sersic_b(n), sersic_b_capaccioli(n))[0]


def _i_eff(intensity: Any, n: Any) -> Any:
    return sersic_with_other_b(1.0, intensity, n, sersic_b(n), sersic_b_capaccioli(n))[1]


def _same(value: Any) -> Any:
    return value


def _ell_comps(q: float, phi_deg: float) -> tuple[float, float]:
    e1, e2 = ellipticity_from_axis_ratio(q, _theta_from_phi(phi_deg))
    return float(e1), float(e2)


def _exp_theta_eff(radius: Any) -> Any:
    return _theta_eff(radius, 1.0)


def _exp_i_eff(intensity: Any) -> Any:
    return _i_eff(intensity, 1.0)
