"""Distances for strong lensing, from :mod:`astropy.cosmology`, and the time-delay units.

A lens at redshift ``z_lens`` and a source at ``z_source`` have angular-diameter distances
``D_d`` (observer to lens), ``D_s`` (observer to source) and ``D_ds`` (lens to source), and the
time-delay distance ``D_dt = (1 + z_lens) D_d D_s / D_ds``. An image at ``theta`` of a source
at ``beta`` arrives at ``t = D_dt / c * phi(theta)``, with the Fermat potential
``phi = |theta - beta|^2 / 2 - psi(theta)``
(:func:`twinlens.lensing.point_sources.fermat_potential`); only differences of arrival
times are observable.

The default cosmology is flat LambdaCDM with ``H0 = 70`` km/s/Mpc and ``Omega_m = 0.3``; any
``astropy.cosmology`` instance is accepted. astropy is imported on first use, so importing
this module costs nothing.

The arithmetic of :func:`time_delay_days` is plain multiplication, so a time-delay distance
(or anything it is computed from) may be a JAX tracer: a search may vary ``D_dt`` directly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache
from typing import Any

from twinlens.messages import shown

__all__ = [
    "ARCSEC",
    "LensDistances",
    "check_redshifts",
    "default_cosmology",
    "flat_lcdm_distances",
    "lens_distances",
    "time_delay_days",
    "time_delay_distance",
]

#: speed of light, m/s (exact, SI)
C_M_PER_S = 299_792_458.0
#: one megaparsec in metres (IAU 2015: 1 pc = 648000 / pi au, 1 au = 149597870700 m)
MPC_M = 1e6 * 149_597_870_700.0 * 648_000.0 / math.pi
#: one arcsecond in radians
ARCSEC = math.pi / 648_000.0
#: seconds in a day
DAY_S = 86_400.0
#: days per (Mpc * arcsec^2): ``t [days] = D_dt [Mpc] * phi [arcsec^2] * DAYS_PER_MPC_ARCSEC2``
DAYS_PER_MPC_ARCSEC2 = MPC_M / C_M_PER_S * ARCSEC**2 / DAY_S


@cache
def default_cosmology() -> Any:
    """Flat LambdaCDM with ``H0 = 70`` km/s/Mpc and ``Omega_m = 0.3`` (an astropy
    ``FlatLambdaCDM``; no radiation, as astropy's default ``Tcmb0 = 0``)."""
    from astropy.cosmology import FlatLambdaCDM

    return FlatLambdaCDM(H0=70.0, Om0=0.3)


def check_redshifts(z_lens: float, z_source: float) -> tuple[float, float]:
    """``(z_lens, z_source)`` as floats, once checked: finite, ``>= 0``, the source behind
    the lens (a ValueError naming the parameter otherwise)."""
    values = []
    for name, z in (("z_lens", z_lens), ("z_source", z_source)):
        try:
            value = float(z)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a real number, got {type(z).__name__}") from None
        if not math.isfinite(value) or value < 0.0:
            raise ValueError(f"{name} must be a finite redshift >= 0, got {shown(z)}")
        values.append(value)
    if not values[1] > values[0]:
        raise ValueError(
            f"z_source must be greater than z_lens (the source lies behind the lens), got "
            f"z_lens = {z_lens!r}, z_source = {z_source!r}"
        )
    return values[0], values[1]


@dataclass(frozen=True)
class LensDistances:
    """Angular-diameter distances of one lens and one source, Mpc.

    Attributes
    ----------
    z_lens, z_source : float
        Redshifts of the lens (deflector) and the source, ``0 <= z_lens < z_source``.
    d_d, d_s, d_ds : float
        Angular-diameter distances observer-lens, observer-source and lens-source, Mpc.
    """

    z_lens: float
    z_source: float
    d_d: float
    d_s: float
    d_ds: float

    @property
    def d_dt(self) -> float:
        """Time-delay distance ``(1 + z_lens) D_d D_s / D_ds``, Mpc."""
        return (1.0 + self.z_lens) * self.d_d * self.d_s / self.d_ds

    def time_delay_days(self, fermat_difference: Any) -> Any:
        """Time delay, days, of a Fermat-potential difference in arcsec^2 (any shape)."""
        return time_delay_days(fermat_difference, self.d_dt)


def lens_distances(z_lens: float, z_source: float, cosmology: Any = None) -> LensDistances:
    """The angular-diameter distances of a lens at ``z_lens`` and a source at ``z_source``.

    Parameters
    ----------
    z_lens, z_source : float
        Redshifts, ``0 <= z_lens < z_source`` (ValueError otherwise, naming the parameter).
    cosmology : astropy.cosmology.FLRW, optional
        Any astropy cosmology; default :func:`default_cosmology` (flat LambdaCDM, ``H0 = 70``,
        ``Omega_m = 0.3``).

    Returns
    -------
    LensDistances
        ``d_d``, ``d_s``, ``d_ds`` in Mpc, and ``d_dt``.
    """
    zl, zs = check_redshifts(z_lens, z_source)
    cosmo = default_cosmology() if cosmology is None else cosmology
    if not hasattr(cosmo, "angular_diameter_distance"):
        raise TypeError(
            f"cosmology must be an astropy.cosmology instance, got {type(cosmo).__name__}"
        )
    d_d = angular_diameter_distance(cosmo, 0.0, zl)
    d_s = angular_diameter_distance(cosmo, 0.0, zs)
    return LensDistances(zl, zs, d_d, d_s, angular_diameter_distance(cosmo, zl, zs))


def angular_diameter_distance(cosmo: Any, z1: float, z2: float) -> float:
    """``D(z1, z2)``, Mpc, of an astropy cosmology (``z1 = 0``: from the observer)."""
    if z1 == 0.0:
        return float(cosmo.angular_diameter_distance(z2).to_value("Mpc"))
    try:  # astropy >= 7.1 takes (z1, z2); older releases have only the _z1z2 method
        between = cosmo.angular_diameter_distance(z1, z2)
    except TypeError:
        between = cosmo.angular_diameter_distance_z1z2(z1, z2)
    return float(between.to_value("Mpc"))


def time_delay_distance(z_lens: float, z_source: float, cosmology: Any = None) -> float:
    """Time-delay distance ``D_dt = (1 + z_lens) D_d D_s / D_ds``, Mpc (arguments as
    :func:`lens_distances`, with ``z_lens > 0``: at ``z_lens = 0`` it vanishes and no delay or
    ``H0`` follows from it)."""
    if isinstance(z_lens, (int, float)) and z_lens == 0:
        raise ValueError("z_lens must be > 0 for a time-delay distance (D_dt = 0 at z_lens = 0)")
    return lens_distances(z_lens, z_source, cosmology).d_dt


def time_delay_days(fermat_difference: Any, time_delay_distance: Any) -> Any:
    """``Delta t = D_dt / c * Delta phi`` in days.

    Parameters
    ----------
    fermat_difference : float or array
        Fermat-potential difference ``Delta phi``, arcsec^2 (any shape).
    time_delay_distance : float or array
        ``D_dt``, Mpc (broadcast against ``fermat_difference``; may be a JAX tracer).

    Returns
    -------
    float or array
        Days; positive when the first image's Fermat potential is the larger (it arrives
        later).
    """
    return fermat_difference * (time_delay_distance * DAYS_PER_MPC_ARCSEC2)


#: Gauss-Legendre order of :func:`flat_lcdm_distances`' comoving-distance integrals
N_COMOVING = 48


@cache
def _legendre() -> tuple[Any, Any]:
    import numpy as np

    return np.polynomial.legendre.leggauss(N_COMOVING)


def _comoving_unit(z: Any, omega_m: Any, xp: Any) -> Any:
    """``int_0^z dz' / E(z')`` of flat LambdaCDM (no radiation), ``E = sqrt(Om (1+z)^3 + 1 -
    Om)``: Gauss-Legendre on ``[0, z]`` (smooth integrand; exact to rounding below z ~ 10)."""
    x, w = _legendre()
    zz = 0.5 * z * (xp.asarray(x) + 1.0)
    e = xp.sqrt(omega_m * (1.0 + zz) ** 3 + (1.0 - omega_m))
    return 0.5 * z * xp.sum(xp.asarray(w) / e, axis=-1)


def flat_lcdm_distances(
    z_lens: float, z_source: float, h0: Any, omega_m: Any, xp: Any = None
) -> tuple[Any, Any, Any]:
    """``(D_d, D_s, D_ds)``, Mpc, of flat LambdaCDM with ``H0 = h0`` (km/s/Mpc) and
    ``Omega_m = omega_m`` (no radiation, as :func:`default_cosmology`).

    Plain arithmetic with a fixed quadrature, so ``h0`` and ``omega_m`` may be arrays (any
    shape; the distances broadcast) or JAX tracers that a search varies and differentiates;
    ``xp`` is numpy (default) or ``jax.numpy``. The redshifts are fixed numbers.
    """
    import numpy as np

    xp = np if xp is None else xp
    zl, zs = check_redshifts(z_lens, z_source)
    om = xp.asarray(omega_m)[..., None]
    hubble = C_M_PER_S / 1000.0 / xp.asarray(h0)  # c / H0, Mpc
    chi_l = hubble * _comoving_unit(zl, om, xp)
    chi_s = hubble * _comoving_unit(zs, om, xp)
    return chi_l / (1.0 + zl), chi_s / (1.0 + zs), (chi_s - chi_l) / (1.0 + zs)
