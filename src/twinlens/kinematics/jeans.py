"""Spherical Jeans kinematics: the radial math, as plain functions of one projected radius.

**Units.** Radii are angles on the sky, arcsec; the mass enters as ``G M(r)`` in
(km/s)^2 times arcsec, so that ``G M(r) / r`` is a squared velocity. For a lens normalised by its
Einstein radius, ``D_d`` cancels: only ``D_s / D_ds`` remains (:func:`mass_unit`).

**Mass.** A spherical power law, 3D density ``rho ~ r^-gamma`` (``1 < gamma < 3``; 2 is the
SIS), whose mean convergence inside ``theta_E`` is 1::

    G M(r) = mass_unit * f(gamma) * theta_E^(gamma - 1) * r^(3 - gamma),
    f(gamma) = 2 Gamma(gamma / 2) / (sqrt(pi) Gamma((gamma - 1) / 2)),
    mass_unit = c^2 ARCSEC D_s / (4 D_ds).

``f`` is the ratio of the mass inside a sphere of radius ``r`` to the mass inside a cylinder
of radius ``r``; a point mass is ``gamma = 3`` with ``f = 1`` (``G M = mass_unit theta_E^2``).

**Light.** A double power law ``nu(r) = norm (r / a)^-p (1 + r / a)^-q``: the Hernquist
profile is ``p = 1, q = 3, norm = L / (2 pi a^3)``; ``q = 0`` is a pure power law tracer.

**Projected dispersion** (Mamon & Lokas 2005, single-integral form)::

    sigma_los^2(R) I(R) = 2 int_R^inf K(r / R) nu(r) G M(r) dr / r,
    I(R)                = 2 int_R^inf nu(r) r dr / sqrt(r^2 - R^2),

with the kernels, ``u = r / R``, ``u_a = r_ani / R``:

* isotropic: ``K = sqrt(1 - 1 / u^2)``;
* Osipkov-Merritt, ``beta = r^2 / (r^2 + r_ani^2)``:
  ``K = (u_a^2 + 1/2) / (u_a^2 + 1)^(3/2) (u^2 + u_a^2) / u arctan(sqrt((u^2 - 1) / (u_a^2 + 1)))
  - sqrt(1 - 1 / u^2) / (2 (u_a^2 + 1))``;
* constant ``beta``: ``K = int_0^(arccosh u) (1 - beta / cosh^2 e) (cosh e / u)^(1 - 2 beta) de``,
  the integral that defines it (Mamon & Lokas write it with incomplete beta functions of
  possibly negative first argument, which JAX lacks and cannot differentiate in ``beta``).

Both integrals are taken in ``y = arccosh(r / R)``: ``dr / r = tanh y dy``, the kernels'
square-root edge at ``r = R`` becomes smooth, and ``y`` grows like ``ln r``, so the integrands
decay exponentially. The range is cut at ``r_max = max(R, a) exp(CUT / rate)``, where ``rate``
is the slowest decay rate of the integrands in ``ln r``: the neglected tail is of order
``exp(-CUT)``. Gauss-Legendre nodes on ``[0, 1]`` scaled to ``[0, Y]`` do the sums; they are
the kernel's component arrays, so one per-point source runs on numpy, numba and JAX.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from twinlens.cosmology import ARCSEC, C_M_PER_S
from twinlens.kernels.domains import Arg, Domain
from twinlens.kernels.ops import arctan, exp, log, log1p, maximum, minimum, pointwise, sqrt
from twinlens.kernels.registry import Kernel

#: speed of light, km/s
C_KM_S = C_M_PER_S / 1000.0
#: ``-ln`` of the relative size of the neglected tail of the radial integrals
CUT = 34.0
#: Gauss-Legendre orders: along the line of sight (``y``) and inside the constant-beta kernel
N_Y, N_ETA = 160, 40


def mass_unit(d_s: Any, d_ds: Any) -> Any:
    """``c^2 ARCSEC D_s / (4 D_ds)``, (km/s)^2 per arcsec: ``G M / r`` of a unit-Einstein-radius
    point mass at 1 arcsec (distances in any one unit)."""
    return C_KM_S**2 * ARCSEC * d_s / (4.0 * d_ds)


def sphere_to_cylinder(gamma: Any, xp: Any = np) -> Any:
    """``f(gamma) = M_3D(r) / M_2D(r)`` of a power law ``rho ~ r^-gamma``, ``1 < gamma <= 3``."""
    if xp is np:
        from scipy.special import gammaln
    else:
        from jax.scipy.special import gammaln
    return 2.0 * xp.exp(gammaln(gamma / 2.0) - gammaln((gamma - 1.0) / 2.0)) / math.sqrt(math.pi)


def hernquist_density(r: Any, a: Any, luminosity: Any = 1.0) -> Any:
    """Hernquist luminosity density ``L a / (2 pi r (r + a)^3)``, per arcsec^3."""
    return luminosity * a / (2.0 * np.pi * r * (r + a) ** 3)


def hernquist_surface_brightness(radius: Any, a: Any, luminosity: Any = 1.0) -> Any:
    """Hernquist projected surface brightness, per arcsec^2, in closed form (numpy).

    Near ``R = a`` the closed form cancels (use :func:`~twinlens.kinematics.projected_dispersion`,
    whose ``I`` is integrated)::

        I(R) = L ((2 + s^2) X(s) - 3) / (2 pi a^2 (1 - s^2)^2),   s = R / a,

    ``X = arccosh(1/s) / sqrt(1 - s^2)`` for ``s < 1``, ``arccos(1/s) / sqrt(s^2 - 1)`` above.
    """
    s = np.asarray(radius, dtype=float) / a
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(
            s < 1.0,
            np.arccosh(1.0 / np.minimum(s, 1.0)) / np.sqrt(np.abs(1.0 - s * s)),
            np.arccos(1.0 / np.maximum(s, 1.0)) / np.sqrt(np.abs(s * s - 1.0)),
        )
    return luminosity * ((2.0 + s * s) * x - 3.0) / (2.0 * np.pi * a * a * (1.0 - s * s) ** 2)


# ------------------------------------------------------------------------------------------
# per-point math: R is the projected radius; (z, w) a Gauss-Legendre node and weight on [0, 1]


@pointwise
def log_cosh(y):
    """``ln cosh y`` for ``y >= 0`` without overflow."""
    return y + log1p(exp(-2.0 * y)) - 0.6931471805599453


@pointwise
def light_density(r, a, p, q):
    """``(r / a)^-p (1 + r / a)^-q``: the light profile's shape (norm applied by the caller)."""
    x = r / a
    return exp(-p * log(x) - q * log1p(x))


@pointwise
def line_of_sight_range(radius, gamma, a, p, q, extra):
    """``Y = arccosh(r_max / R)``: the slowest decay rate in ``ln r`` of the two integrands
    (``extra``: what the anisotropy kernel's growth takes off the dispersion's rate)."""
    rate = minimum(p + q + gamma - 3.0 - extra, p + q - 1.0)
    x = maximum(radius, a) / radius * exp(CUT / rate)
    return log(x + sqrt(x * x - 1.0))


@pointwise
def _radial_terms(radius, gamma, a, p, q, y):
    """``(2 nu G M / (norm unit) * tanh y, 2 nu r / norm)`` at ``r = R cosh y``."""
    ch = 0.5 * (exp(y) + exp(-y))
    r = radius * ch
    nu = light_density(r, a, p, q)
    th = (1.0 - exp(-2.0 * y)) / (1.0 + exp(-2.0 * y))
    return 2.0 * nu * exp((3.0 - gamma) * log(r)) * th, 2.0 * nu * r


@pointwise
def isotropic(radius, gamma, a, p, q, z, w):
    """One node's share of ``(sigma^2 I, I)``, isotropic orbits."""
    big_y = line_of_sight_range(radius, gamma, a, p, q, 0.0)
    y = big_y * z
    mass, light = _radial_terms(radius, gamma, a, p, q, y)
    th = (1.0 - exp(-2.0 * y)) / (1.0 + exp(-2.0 * y))
    return w * big_y * th * mass, w * big_y * light


@pointwise
def om_kernel(radius, r_ani, y):
    """The Osipkov-Merritt kernel ``K(u = cosh y, u_a = r_ani / R)``."""
    e = exp(-y)
    u = 0.5 * (1.0 / e + e)
    th = (1.0 - e * e) / (1.0 + e * e)
    ua2 = (r_ani / radius) ** 2
    c2 = ua2 + 1.0
    c = sqrt(c2)
    sh = 0.5 * (1.0 / e - e)
    return (ua2 + 0.5) / (c2 * c) * (u * u + ua2) / u * arctan(sh / c) - th / (2.0 * c2)


@pointwise
def beta_kernel_term(beta, y, t):
    """The constant-beta kernel's integrand at ``eta = y t``, times ``y`` (``dt`` on [0, 1])."""
    eta = y * t
    ce = exp(-eta)
    sech2 = 4.0 * ce * ce / ((1.0 + ce * ce) * (1.0 + ce * ce))
    ratio = exp((1.0 - 2.0 * beta) * (log_cosh(eta) - log_cosh(y)))
    return y * (1.0 - beta * sech2) * ratio


@pointwise
def osipkov_merritt(radius, gamma, a, p, q, r_ani, z, w):
    """One node's share of ``(sigma^2 I, I)``, Osipkov-Merritt anisotropy radius ``r_ani``."""
    big_y = line_of_sight_range(radius, gamma, a, p, q, 1.0)
    y = big_y * z
    mass, light = _radial_terms(radius, gamma, a, p, q, y)
    kern = om_kernel(radius, r_ani, y)
    return w * big_y * kern * mass, w * big_y * light


@pointwise
def constant_beta(radius, gamma, a, p, q, beta, z, t, w):
    """One (outer, inner) node pair's share of ``(sigma^2 I, I)``, constant ``beta``; the
    weight ``w`` is the product of both Gauss-Legendre weights on ``[0, 1]``."""
    big_y = line_of_sight_range(radius, gamma, a, p, q, maximum(2.0 * beta - 1.0, 0.0))
    y = big_y * z
    mass, light = _radial_terms(radius, gamma, a, p, q, y)
    kern = beta_kernel_term(beta, y, t)
    return w * big_y * kern * mass, w * big_y * light


# ------------------------------------------------------------------------------------------
# quadrature nodes and the kernels


@cache
def gauss_legendre_unit(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on ``[0, 1]`` (read-only)."""
    x, w = np.polynomial.legendre.leggauss(n)
    z, v = 0.5 * (x + 1.0), 0.5 * w
    z.setflags(write=False)
    v.setflags(write=False)
    return z, v


@cache
def constant_beta_nodes(n_y: int = N_Y, n_eta: int = N_ETA) -> tuple[np.ndarray, ...]:
    """The flattened product grid ``(z, t, w)`` of :data:`CONSTANT_BETA`'s components."""
    z, v = gauss_legendre_unit(n_y)
    t, u = gauss_legendre_unit(n_eta)
    out = (np.repeat(z, n_eta), np.tile(t, n_y), np.outer(v, u).reshape(-1))
    for arr in out:
        arr.setflags(write=False)
    return out


_R = Domain(1e-3, 20.0, log=True)
_SHAPE = (
    Arg("gamma", Domain(1.1, 2.9)),
    Arg("a", Domain(0.05, 20.0, log=True)),
    Arg("p", Domain(1.0, 1.0)),
    Arg("q", Domain(3.0, 3.0)),
)
_NODE = Domain(0.0, 1.0)
_OUT = ("sigma2_intensity", "intensity")


def _kernel(name: str, point: Any, extra: tuple[Arg, ...], n_comp: int) -> Kernel:
    comps = tuple(Arg(c, _NODE, size=4) for c in ("z", "t", "w")[3 - n_comp :])
    if n_comp == 2:
        comps = (Arg("z", _NODE, size=4), Arg("w", _NODE, size=4))
    return Kernel(
        name=f"kinematics.{name}",
        point=point,
        inputs=(Arg("radius", _R),),
        params=(*_SHAPE, *extra, *comps),
        outputs=_OUT,
        components=n_comp,
    )


# not registered: the registry's generic agreement test draws node arrays at random, which
# are not a quadrature rule; tests/test_kinematics.py compares the backends instead
ISOTROPIC = _kernel("isotropic", isotropic, (), 2)
OSIPKOV_MERRITT = _kernel(
    "osipkov_merritt", osipkov_merritt, (Arg("r_ani", Domain(0.01, 100.0, log=True)),), 2
)
CONSTANT_BETA = _kernel("constant_beta", constant_beta, (Arg("beta", Domain(-2.0, 0.9)),), 3)
