"""Jeans sums for any spherical mass and light: Gaussian (MGE) light, NFW and Gaussian masses.

The same single-integral form and the same variable ``y = arccosh(r / R)`` as
:mod:`twinlens.kinematics.jeans`, with the light ``nu(r)`` and the mass ``G M(r)`` given as
functions of ``r`` rather than folded into one per-point kernel: at every projected radius
``R`` and line-of-sight node ``y_i``::

    sigma^2 I(R) = sum_i w_i Y K(y_i) 2 nu(r_i) G M(r_i) tanh(y_i),
    I(R)         = sum_i w_i Y 2 nu(r_i) r_i,                          r_i = R cosh(y_i),

``K`` the anisotropy kernel (isotropic ``tanh y``; Osipkov-Merritt and constant ``beta`` as in
:mod:`~twinlens.kinematics.jeans`). The sums over Gaussians are registry kernels summed over
components (a parallel loop on numba, a scan on JAX); the rest is array arithmetic (``xp``).

**Mass**, ``G M(r)`` in units of ``mass_unit`` (:func:`~twinlens.kinematics.jeans.mass_unit`),
i.e. ``M_3D / (pi Sigma_crit)`` per arcsec^2, from a 3D density in units of ``Sigma_crit`` per
arcsec (whose projection is the convergence)::

    NFW, rho = (kappa_s / r_s) / (x (1 + x)^2):  G M = 4 kappa_s r_s^2 (ln(1 + x) - x / (1 + x)),
    3D Gaussian, projected peak convergence A:  G M = 2 A sig^2 (erf(t) - 2 t e^(-t^2) / sqrt(pi)),

``x = r / r_s``, ``t = r / (sqrt(2) sig)``; where those differences cancel (``x < 1e-3``,
``t < 0.2``) their Taylor series are taken instead.

**Light**: a 3D Gaussian of total luminosity ``L`` and width ``sig`` (its projection has the
same ``sig``) is ``nu = L exp(-r^2 / (2 sig^2)) / ((2 pi)^(3/2) sig^3)``.

**Range.** For Gaussian light the integrands fall as ``exp(-(r^2 - R^2) / (2 sig^2))``, so the
sums stop at ``r_max^2 = R^2 + 2 CUT_GAUSS sig_max^2``, ``sig_max`` the widest Gaussian (the
mass and the kernels grow as powers, which the margin of ``CUT_GAUSS`` over ``-ln`` of the
target covers).
For double-power-law light the range is :func:`~twinlens.kinematics.jeans.line_of_sight_range`
with the mass's growth ``d ln M / d ln r`` at large ``r`` (0 for NFW, whose ``ln r`` adds a
factor of order ``Y`` to a tail of ``exp(-CUT)``).
"""

from __future__ import annotations

import math
from typing import Any

from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import erf, exp, log1p, minimum, pointwise, where
from twinlens.kernels.registry import Kernel
from twinlens.kinematics import jeans

#: ``(r_max^2 - R^2) / (2 sig_max^2)`` for Gaussian light: the Gaussian's tail there is
#: ``exp(-CUT_GAUSS)``
CUT_GAUSS = 40.0
_TWO_PI_3_2 = (2.0 * math.pi) ** 1.5
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@pointwise
def gaussian_density(r, luminosity, sigma):
    """3D density of a Gaussian of total ``luminosity`` and width ``sigma``, per arcsec^3."""
    x = r / sigma
    return luminosity * exp(-0.5 * x * x) / (_TWO_PI_3_2 * sigma * sigma * sigma)


@pointwise
def gaussian_enclosed(r, amplitude, sigma):
    """``G M(r) / mass_unit`` of the 3D Gaussian whose projection has peak ``amplitude``."""
    t = r / (1.4142135623730951 * sigma)
    direct = erf(t) - _TWO_OVER_SQRT_PI * t * exp(-t * t)
    # (4 / sqrt(pi)) int_0^t u^2 exp(-u^2) du = (4 / sqrt(pi)) sum_k (-1)^k t^(2k+3) / (k! (2k+3))
    s = minimum(t, 0.2)
    s2 = s * s
    c = (1 / 3, -1 / 5, 1 / 14, -1 / 54, 1 / 264, -1 / 1560, 1 / 10800)
    poly = c[0] + s2 * (c[1] + s2 * (c[2] + s2 * (c[3] + s2 * (c[4] + s2 * (c[5] + s2 * c[6])))))
    series = 2.0 * _TWO_OVER_SQRT_PI * s * s2 * poly
    return 2.0 * amplitude * sigma * sigma * where(t < 0.2, series, direct)


@pointwise
def nfw_enclosed(r, kappa_s, r_s):
    """``G M(r) / mass_unit`` of the NFW density ``(kappa_s / r_s) / (x (1 + x)^2)``."""
    x = r / r_s
    s = minimum(x, 1e-3)
    series = s * s * (0.5 + s * (-2.0 / 3.0 + s * (0.75 + s * (-0.8 + s * (5.0 / 6.0)))))
    direct = log1p(x) - x / (1.0 + x)
    return 4.0 * kappa_s * r_s * r_s * where(x < 1e-3, series, direct)


def _summed(name: str, point: Any, first: str) -> Kernel:
    # not registered: its domains would need the mass's units; tests compare the backends
    return Kernel(
        name=f"kinematics.{name}",
        point=point,
        inputs=(Arg("r", Domain(1e-3, 1e3, log=True)),),
        params=(
            Arg(first, Domain(0.1, 10.0), size=4),
            Arg("sigma", Domain(0.01, 10.0, log=True), size=4),
        ),
        outputs=("value",),
        components=2,
    )


GAUSSIAN_LIGHT = _summed("gaussian_density", gaussian_density, "luminosity")
GAUSSIAN_MASS = _summed("gaussian_enclosed", gaussian_enclosed, "amplitude")


def gaussian_range(radius: Any, s_max: Any, xp: Any) -> Any:
    """``Y = arccosh(r_max / R)`` for Gaussian light whose widest Gaussian is ``s_max``."""
    x2 = 1.0 + 2.0 * CUT_GAUSS * (s_max / radius) ** 2
    return xp.log(xp.sqrt(x2) + xp.sqrt(x2 - 1.0))


def anisotropy_factor(y: Any, radius: Any, kind: str, par: Any, xp: Any) -> Any:
    """``K(y)`` at nodes ``y`` (``radius`` broadcast against them): ``kind`` is ``"iso"``,
    ``"om"`` (``par = r_ani``) or ``"beta"`` (``par = beta``; an inner Gauss-Legendre sum)."""
    if kind == "iso":
        return xp.tanh(y)
    if kind == "om":
        return jeans.om_kernel(radius, par, y)
    t, u = (xp.asarray(a) for a in jeans.gauss_legendre_unit(jeans.N_ETA))
    return xp.sum(u * jeans.beta_kernel_term(par, y[..., None], t), axis=-1)


def radial_sums(
    radius: Any,
    big_y: Any,
    nu: Any,
    enclosed: Any,
    kind: str,
    par: Any,
    xp: Any,
    n_y: int = jeans.N_Y,
) -> tuple[Any, Any]:
    """``(sigma^2 I / mass_unit, I)`` at projected radii ``radius`` (1D), the line of sight cut
    at ``y = big_y`` (per radius, ``n_y`` nodes); ``nu(r)`` and ``enclosed(r) = G M /
    mass_unit`` act on arrays of ``r`` of any shape."""
    z, w = (xp.asarray(a) for a in jeans.gauss_legendre_unit(n_y))
    big_y = big_y[..., None]
    y = big_y * z
    r = radius[..., None] * xp.cosh(y)
    light = 2.0 * nu(r) * (w * big_y)
    kern = anisotropy_factor(y, radius[..., None], kind, par, xp)
    s2i = xp.sum(light * kern * enclosed(r) * xp.tanh(y), axis=-1)
    return s2i, xp.sum(light * r, axis=-1)
