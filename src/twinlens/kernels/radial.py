"""Radial profiles for multi-Gaussian decompositions, and their Mellin transforms.

Three profiles, each a plain function of the radius and its parameters:

* the Sersic convergence ``kappa(R)`` (a projected, 2D profile);
* the generalised NFW density ``rho(r)`` with a free inner slope (3D);
* the cored NFW density ``rho(r)`` (3D), in the convention of lenstronomy's ``CNFW``.

Every function runs on numpy arrays (the reference, with scipy for special functions) and on
JAX arrays or tracers (``jax.numpy``); the backend follows the arguments, as everywhere in
twinlens. The radial functions also accept complex radii with a positive real part, where they
are the analytic continuation on the principal branch (what the Euler inversion of
:func:`twinlens.kernels.gauss_decomposition.euler_density` evaluates).

The decomposition itself (:mod:`twinlens.kernels.gauss_decomposition`) needs each profile's
**Mellin transform**

    M[f](z) = int_0^inf r^(z - 1) f(r) dr,

which for these three profiles is a closed form in Gamma functions, valid in a vertical strip of
the complex ``z`` plane (stated in each docstring). Units: radii in any length or angle unit
(arcsec for lensing), the same for all arguments; ``M[f](z)`` then carries ``unit^z`` times the
unit of ``f``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.special as sc

from twinlens.backend import jax_runtime
from twinlens.backend.concrete import any_jax
from twinlens.kernels.sersic_index import sersic_b

ArrayLike = Any

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def xp_for(*args: Any) -> Any:
    """``jax.numpy`` (loaded and configured) when any argument is a JAX array or tracer, else
    ``numpy``."""
    if any_jax(*args):
        return jax_runtime.load().numpy
    return np


# --- complex log-gamma ---------------------------------------------------------------------

# B_2k / (2k (2k - 1)) for k = 1..8: the Stirling series of log Gamma.
_STIRLING = (
    1.0 / 12.0,
    -1.0 / 360.0,
    1.0 / 1260.0,
    -1.0 / 1680.0,
    1.0 / 1188.0,
    -691.0 / 360360.0,
    1.0 / 156.0,
    -3617.0 / 122400.0,
)
_SHIFT = 8


def loggamma_stirling(z: ArrayLike, xp: Any = None) -> ArrayLike:
    """``log Gamma(z)`` for complex ``z`` with ``Re z > 0``, on numpy or ``jax.numpy``.

    The recurrence moves ``z`` to ``w = z + 8`` and the Stirling series with eight terms is
    summed there; its truncation error is below ``1e-16`` relative for ``|w| >= 8``. The result
    may differ from the principal branch of ``log Gamma`` by a multiple of ``2 pi i``; only
    ``exp`` of sums of these values is used, where that does not matter. JAX has no complex
    log-gamma, so this is what the traced path uses (differentiable, no branch on values).

    Parameters
    ----------
    z : complex array_like
        Arguments, ``Re z > 0`` (the series is also accurate for ``Re z > -7`` away from the
        poles, but the decomposition never needs it there).
    xp : module, optional
        ``numpy`` or ``jax.numpy``; by default chosen from ``z``.

    Returns
    -------
    complex array
        ``log Gamma(z)``, same shape as ``z``.
    """
    if xp is None:
        xp = xp_for(z)
    prod = z
    for k in range(1, _SHIFT):
        prod = prod * (z + k)
    w = z + _SHIFT
    inv = 1.0 / w
    inv2 = inv * inv
    series = _STIRLING[-1]
    for c in _STIRLING[-2::-1]:
        series = c + inv2 * series
    return (w - 0.5) * xp.log(w) - w + LOG_SQRT_2PI + inv * series - xp.log(prod)


def loggamma(z: ArrayLike) -> ArrayLike:
    """Complex ``log Gamma(z)``, ``Re z > 0``: scipy's ``loggamma`` on numpy, the Stirling
    series of :func:`loggamma_stirling` on JAX (up to ``2 pi i`` multiples)."""
    if any_jax(z):
        return loggamma_stirling(z, jax_runtime.load().numpy)
    return sc.loggamma(z)


def _gammaln(x: ArrayLike) -> ArrayLike:
    """Real ``log |Gamma(x)|`` on numpy or JAX."""
    if any_jax(x):
        jax_runtime.load()
        import jax.scipy.special as jsc

        return jsc.gammaln(x)
    return sc.gammaln(x)


# --- Sersic ----------------------------------------------------------------------------------


def sersic_convergence(R: ArrayLike, k_eff: ArrayLike, R_eff: ArrayLike, n: ArrayLike) -> ArrayLike:
    """Sersic convergence ``kappa(R) = k_eff exp(-b_n ((R / R_eff)^(1/n) - 1))``.

    ``b_n`` is :func:`sersic_b`, so ``R_eff`` is the half-mass radius and ``k_eff`` the
    convergence there; the central value is ``k_eff exp(b_n)``.

    Parameters
    ----------
    R : array_like, real or complex
        Projected radius, same unit as ``R_eff`` (arcsec). Complex ``R`` with ``Re R > 0``
        gives the analytic continuation (principal branch of the power).
    k_eff : float
        Convergence at ``R_eff``, dimensionless.
    R_eff : float
        Half-mass radius, ``> 0``.
    n : float
        Sersic index, ``> 0``.

    Returns
    -------
    array
        ``kappa(R)``, dimensionless, the shape of ``R``.
    """
    xp = xp_for(R, k_eff, R_eff, n)
    b = sersic_b(n)
    t = R / R_eff
    if xp.iscomplexobj(t):
        u = t ** (1.0 / n)
    else:
        # (0)^(1/n) has a NaN derivative in n; keep both sides of the where finite.
        pos = t > 0
        u = xp.where(pos, xp.where(pos, t, 1.0) ** (1.0 / n), 0.0)
    return k_eff * xp.exp(-b * (u - 1.0))


def sersic_mellin(z: ArrayLike, k_eff: ArrayLike, R_eff: ArrayLike, n: ArrayLike) -> ArrayLike:
    """Mellin transform of the Sersic convergence, ``int_0^inf R^(z-1) kappa(R) dR``.

    ``= k_eff exp(b_n) n R_eff^z b_n^(-n z) Gamma(n z)``, for ``Re z > 0``.

    Parameters
    ----------
    z : complex array_like
        ``Re z > 0``.
    k_eff, R_eff, n : float
        As in :func:`sersic_convergence`.

    Returns
    -------
    complex array
        The transform, shape of ``z``, in units of ``R_eff^z``.
    """
    xp = xp_for(z, k_eff, R_eff, n)
    b = sersic_b(n)
    log_m = xp.log(n) + b + z * (xp.log(R_eff) - n * xp.log(b)) + loggamma(n * z)
    return k_eff * xp.exp(log_m)


def sersic_total_mass(k_eff: ArrayLike, R_eff: ArrayLike, n: ArrayLike) -> ArrayLike:
    """Total mass ``2 pi int_0^inf R kappa dR = 2 pi n R_eff^2 k_eff exp(b_n) Gamma(2n) /
    b_n^(2n)``, in units of ``R_eff^2`` (times the critical density for a physical mass)."""
    xp = xp_for(k_eff, R_eff, n)
    b = sersic_b(n)
    return 2.0 * np.pi * n * R_eff**2 * k_eff * xp.exp(b + _gammaln(2.0 * n) - 2.0 * n * xp.log(b))


# --- generalised NFW ---------------------------------------------------------------------------


def gnfw_density(r: ArrayLike, rho_s: ArrayLike, r_s: ArrayLike, gamma: ArrayLike) -> ArrayLike:
    """Generalised NFW density ``rho(r) = rho_s / ((r/r_s)^gamma (1 + r/r_s)^(3 - gamma))``.

    ``gamma = 1`` is NFW; the outer slope is always 3.

    Parameters
    ----------
    r : array_like, real or complex
        3D radius, unit of ``r_s``; ``r > 0`` (``Re r > 0`` for the analytic continuation).
    rho_s : float
        Density normalisation (for lensing: convergence per unit length, i.e. ``rho / Sigma_crit``
        in ``1 / unit``, so that the projection is a convergence).
    r_s : float
        Scale radius, ``> 0``.
    gamma : float
        Inner logarithmic slope, ``0 <= gamma < 3``.

    Returns
    -------
    array
        ``rho(r)``, shape of ``r``.
    """
    x = r / r_s
    return rho_s / (x**gamma * (1.0 + x) ** (3.0 - gamma))


def gnfw_mellin(z: ArrayLike, rho_s: ArrayLike, r_s: ArrayLike, gamma: ArrayLike) -> ArrayLike:
    """Mellin transform of the gNFW density, ``int_0^inf r^(z-1) rho(r) dr``.

    ``= rho_s r_s^z B(z - gamma, 3 - z) = rho_s r_s^z Gamma(z - gamma) Gamma(3 - z) /
    Gamma(3 - gamma)``, for ``gamma < Re z < 3``.
    """
    xp = xp_for(z, rho_s, r_s, gamma)
    log_m = z * xp.log(r_s) + loggamma(z - gamma) + loggamma(3.0 - z) - _gammaln(3.0 - gamma)
    return rho_s * xp.exp(log_m)


# --- cored NFW ----------------------------------------------------------------------------------


def cored_nfw_density(r: ArrayLike, rho_s: ArrayLike, r_s: ArrayLike, r_c: ArrayLike) -> ArrayLike:
    """Cored NFW density ``rho(r) = rho_s / ((r + r_c)/r_s (1 + r/r_s)^2)``.

    This is lenstronomy's ``CNFW`` profile, ``rho = rho0 (r + r_core)^-1 (r + Rs)^-2``, with
    ``rho0 = rho_s r_s^3``: NFW with the inner ``1/r`` replaced by ``1/(r + r_c)``, so the
    centre is finite, ``rho(0) = rho_s r_s / r_c``, and ``r_c -> 0`` is NFW.

    Parameters
    ----------
    r : array_like, real or complex
        3D radius, unit of ``r_s`` (``Re r > 0`` for the analytic continuation).
    rho_s : float
        Normalisation, as in :func:`gnfw_density`.
    r_s : float
        Scale radius, ``> 0``.
    r_c : float
        Core radius, ``> 0``.

    Returns
    -------
    array
        ``rho(r)``, shape of ``r``.
    """
    x = r / r_s
    return rho_s / ((x + r_c / r_s) * (1.0 + x) ** 2)


_SERIES_EPS = 0.1  # |c - 1| below which the near-c = 1 series is used
_SERIES_X = 0.5  # |x| below which (e^x - 1 - x) / x^2 is summed as a series


def _exprel2(x: ArrayLike, xp: Any) -> ArrayLike:
    """``(e^x - 1 - x) / x^2`` for complex ``x``, accurate near 0 (series) and elsewhere."""
    small = xp.abs(x) < _SERIES_X
    xs = xp.where(small, x, 0.0)
    term = 0.0 * xs + 0.5
    total = term
    for k in range(3, 22):  # x^(k-2) / k!
        term = term * xs / k
        total = total + term
    xl = xp.where(small, 1.0, x)
    direct = (xp.expm1(xl) - xl) / (xl * xl)
    return xp.where(small, total, direct)


def _log1p_rel(e: ArrayLike, xp: Any) -> tuple[ArrayLike, ArrayLike]:
    """``log1p(e) / e`` and ``(log1p(e) - e) / e^2`` for real ``e > -1``, accurate near 0."""
    small = xp.abs(e) < _SERIES_EPS
    es = xp.where(small, e, 0.0)
    # log1p(e) / e = sum_{k>=1} (-1)^(k+1) e^(k-1) / k and
    # (log1p(e) - e) / e^2 = sum_{k>=2} (-1)^(k+1) e^(k-2) / k; |e| < 0.1, 20 terms.
    r1 = 0.0 * es
    r2 = 0.0 * es
    p = 1.0 + 0.0 * es  # e^(k-1) at step k
    for k in range(1, 22):
        r1 = r1 + (-1.0) ** (k + 1) * p / k
        r2 = r2 + (-1.0) ** k * p / (k + 1)  # the k+1 term of the second series
        p = p * es
    el = xp.where(small, 1.0, e)
    l1 = xp.log1p(el)
    return xp.where(small, r1, l1 / el), xp.where(small, r2, (l1 - el) / (el * el))


def _pi_over_sin_pi(z: ArrayLike, xp: Any) -> ArrayLike:
    """``pi / sin(pi z)`` without overflow for large ``|Im z|`` (``Im z != 0``)."""
    s = xp.where(xp.imag(z) <= 0.0, 1.0, -1.0)
    e = xp.exp(-1j * np.pi * s * z)  # |e| = exp(-pi |Im z|) <= 1
    return 2j * np.pi * s * e / (1.0 - e * e)


def cored_nfw_mellin(z: ArrayLike, rho_s: ArrayLike, r_s: ArrayLike, r_c: ArrayLike) -> ArrayLike:
    """Mellin transform of the cored NFW density, ``int_0^inf r^(z-1) rho(r) dr``.

    With ``c = r_c / r_s``, partial fractions of ``1 / ((x + c)(1 + x)^2)`` and the transforms
    of ``1/(x + c)``, ``1/(1 + x)`` and ``1/(1 + x)^2`` give, for ``0 < Re z < 3``,

        rho_s r_s^z (pi / sin(pi z)) [ (c^(z-1) - 1) / (1 - c)^2 - (z - 1) / (c - 1) ],

    the poles of ``1/sin`` at ``z = 1, 2`` being cancelled by zeros of the bracket. The bracket
    is a 0/0 form at ``c = 1``; within ``|c - 1| < 0.1`` it is evaluated as
    ``u^2 (L/e)^2 E2(u L) + u G2(e)`` (``u = z - 1``, ``e = c - 1``, ``L = log c``,
    ``E2(x) = (e^x - 1 - x)/x^2``, ``G2(e) = (log1p(e) - e)/e^2``), which has no cancellation.
    ``Im z`` must be nonzero (the decomposition never evaluates the real axis).
    """
    xp = xp_for(z, rho_s, r_s, r_c)
    c = r_c / r_s
    u = z - 1.0
    e = c - 1.0
    near = xp.abs(e) < _SERIES_EPS
    log_c = xp.log(c)
    lr, g2 = _log1p_rel(e, xp)
    ul = u * log_c
    series = u * u * lr * lr * _exprel2(ul, xp) + u * g2
    e_far = xp.where(near, 1.0, e)
    direct = (xp.expm1(ul) - u * e_far) / (e_far * e_far)
    bracket = xp.where(near, series, direct)
    return rho_s * xp.exp(z * xp.log(r_s)) * _pi_over_sin_pi(z, xp) * bracket
